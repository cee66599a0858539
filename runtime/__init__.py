"""flowrt: the runtime that generated Flow code imports (docs/spec/abi.md).

Each submodule lists its public names in `__all__`; this package re-exports them so generated
code and hosts write `import flowrt as rt` / `from flowrt import bind, pending, NotRun`.
"""
from flowrt.facts import *  # noqa: F401,F403
from flowrt.values import *  # noqa: F401,F403
from flowrt.types import *  # noqa: F401,F403
from flowrt.ops import *  # noqa: F401,F403
from flowrt.trace import *  # noqa: F401,F403
from flowrt.store import *  # noqa: F401,F403
from flowrt.history_view import *  # noqa: F401,F403
from flowrt import lang  # noqa: F401  (std's @lang bodies: rt.lang.list_map, ...)
from flowrt.requests import *  # noqa: F401,F403  (added by codegen helper: generated code needs rt.fn, rt.ToolCall, ...)
from flowrt.loader import *  # noqa: F401,F403
from flowrt.tasks import *  # noqa: F401,F403
from flowrt.tools import *  # noqa: F401,F403
from flowrt.driver import *  # noqa: F401,F403
from flowrt.lang_task import *  # noqa: F401,F403
