"""flowrt.engine, floor 3 of the runtime: running a program, live or in replay, over a history.

Within the floor, lowest first: interrupts, describe, outcomes, tools (binding and admitting
Tool replies), retry (a binding's retries inside one call) < state (`RunState`, the one state of a drive) < record (facts and calls out)
< task_ops < calls < checkpoints < run_loop (the scheduler and the trampoline) < drive
(`drive`, `DriveOptions`, `start_run`: the one entry for live runs and replay). Above state,
each module is plain functions taking the RunState first.

Floors, lowest first: data < history < engine < host. This floor imports flowrt.data and
flowrt.history only, and never the compiler (tests/test_layering.py).
"""
