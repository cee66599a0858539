"""flowrt: the runtime that generated Flow code imports (docs/spec/abi.md).

Each submodule lists its public names in `__all__`; this package re-exports them so generated
code and hosts write `import flowrt as rt` / `from flowrt import bind, pending, NotRun`.
"""
from flowrt.facts import *  # noqa: F401,F403
