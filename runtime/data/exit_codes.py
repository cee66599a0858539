"""The process exit codes of every run operation, in one place (docs/spec/execution.md "Exit codes").

0 completed / clean / Matched / intact, 1 refused (diagnostics, bad input, missing binding,
unknown run), 3 paused / Incomplete, 4 faulted, 5 Diverged, 6 chain broken, and 130 -- as a
shell reports a process ended by SIGINT (128 + 2) -- when Ctrl-C, a Tool's sys.exit or quitting
pdb halted the run or the command (docs/spec/execution.md "Interruptions"). The outcomes carry
theirs (`Outcome.exit_code`), the host's `Report`/`Refused` and the CLI read them from here.
This module imports nothing: every floor of the runtime may use it.
"""

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_PAUSED = 3
EXIT_FAULTED = 4
EXIT_DIVERGED = 5
EXIT_BROKEN = 6
EXIT_HALTED = 130

__all__ = [
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_PAUSED",
    "EXIT_FAULTED",
    "EXIT_DIVERGED",
    "EXIT_BROKEN",
    "EXIT_HALTED",
]
