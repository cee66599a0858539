"""The Flow checker: modules, names, types, effects and checks. See driver.py for the pipeline."""
from flow2py.check.driver import CheckResult, check_program, check_source

__all__ = ["CheckResult", "check_program", "check_source"]
