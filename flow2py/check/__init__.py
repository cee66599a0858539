"""The Flow checker: modules, names, types, effects and checks. See driver.py for the pipeline.

Two stages: `read_modules` (the module graph, read and parsed: `Modules`) and `check_modules`
(a `CheckResult`: every diagnostic, or the checked program); `check_program` runs both.
"""

from flow2py.check.driver import (
    CheckResult,
    Modules,
    check_modules,
    check_program,
    check_source,
    read_modules,
)

__all__ = ["CheckResult", "Modules", "check_modules", "check_program", "check_source", "read_modules"]
