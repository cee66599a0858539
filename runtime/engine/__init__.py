"""flowrt.engine, floor 3 of the runtime: running a program, live or in replay, over a history.

Within the floor, lowest first: interrupts, describe, outcomes, tools (binding and admitting
Tool replies) < calls, task_ops (one request each) < checkpoints < run_loop (the trampoline)
< drive (`drive`, `start_run`: the one entry for live runs and replay).

Floors, lowest first: data < history < engine < host. This floor imports flowrt.data and
flowrt.history only, and never the compiler (tests/test_layering.py).
"""
