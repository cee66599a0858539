"""Binding files: TOML saying where each Tool runs (docs/spec/abi.md, "Binding files").

```toml
[tools]
"planner.next" = "python:my_tools.next_step"          # an in-process function
"words.count"  = "exec:node server.js"                  # the Tool protocol over a subprocess's stdio
"web::search"  = { at = "http://127.0.0.1:8765", timeout = 5 }   # over HTTP, with options
```

Keys are qualified names or declaration identities, as for `@bind`. A relative command or module
is found from the file's directory (an `exec:` command runs there; a `python:` module is imported
with it on `sys.path`). Targets naming the same endpoint share one connection (one process).
Every problem is a `BindingFileError` with a one-line message.
"""

from __future__ import annotations

import importlib
import os
import shlex
import sys
import tomllib
from typing import Any, Callable, Optional

from flowrt.engine.tools import Bindings
from flowrt.host.tool_clients import HttpConnection, StdioConnection
from flowrt.host.tool_protocol import RemoteTool

__all__ = [
    "BindingFileError",
    "REPO_BINDING_FILE",
    "load_binding_file",
    "parse_target",
    "where",
    "close",
    "with_repo_defaults",
]

#: The default binding file a module repository may ship at its root for its own Tools.
REPO_BINDING_FILE = "flow.tools.toml"

_OPTIONS = {"at", "timeout"}


class BindingFileError(Exception):
    """A binding file that cannot be used: malformed TOML, an unknown scheme, a missing module."""


def _read(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise BindingFileError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise BindingFileError(f"{path}: not valid TOML: {e}") from None
    except OSError as e:
        raise BindingFileError(f"{path}: cannot be read: {e.strerror or e}") from None
    tools = data.get("tools")
    if not isinstance(tools, dict):
        raise BindingFileError(f"{path}: expected a [tools] table mapping each Tool to where it runs")
    unknown = sorted(set(data) - {"tools"})
    if unknown:
        raise BindingFileError(f"{path}: unknown table {unknown[0]!r} (a binding file has [tools] only)")
    return tools


def _entry(path: str, key: str, value: Any) -> tuple[str, Optional[float]]:
    if isinstance(value, str):
        return value, None
    if not isinstance(value, dict) or not isinstance(value.get("at"), str):
        raise BindingFileError(
            f'{path}: [tools] {key!r}: expected "python:module.function", "exec:command args", '
            f'"http://host:port" or an inline table {{ at = "...", timeout = 5 }}'
        )
    extra = sorted(set(value) - _OPTIONS)
    if extra:
        raise BindingFileError(f"{path}: [tools] {key!r}: unknown option {extra[0]!r} (known: at, timeout)")
    timeout = value.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
    ):
        raise BindingFileError(f"{path}: [tools] {key!r}: timeout must be a positive number of seconds")
    return value["at"], None if timeout is None else float(timeout)


def _python(path: str, key: str, target: str, base: str) -> Callable:
    ref = target[len("python:") :]
    module, _, name = ref.rpartition(".")
    if not module or not name:
        raise BindingFileError(f"{path}: [tools] {key!r}: {target!r} does not name module.function")
    if base not in sys.path:
        sys.path.insert(0, base)
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise BindingFileError(f"{path}: [tools] {key!r}: no module {module!r} ({e})") from None
    except BaseException as e:  # noqa: BLE001  (the host's module: report it, never a traceback)
        raise BindingFileError(
            f"{path}: [tools] {key!r}: importing {module} failed: {type(e).__name__}: {e}"
        ) from None
    f = getattr(mod, name, None)
    if not callable(f):
        raise BindingFileError(f"{path}: [tools] {key!r}: module {module} has no function {name!r}")
    return f


def parse_target(path: str, key: str, target: str, base: str, conns: dict, timeout: Optional[float]):
    """The implementation a target names (`conns` shares a connection between equal targets)."""
    if target.startswith("python:"):
        if timeout is not None:
            raise BindingFileError(
                f"{path}: [tools] {key!r}: a timeout applies to exec:, http:// and mcp+ bindings only"
            )
        return _python(path, key, target, base)
    if target.startswith("exec:"):
        try:
            argv = shlex.split(target[len("exec:") :])
        except ValueError as e:
            raise BindingFileError(f"{path}: [tools] {key!r}: {target!r}: {e}") from None
        if not argv:
            raise BindingFileError(f"{path}: [tools] {key!r}: exec: names no command")
        conn = conns.get(target) or conns.setdefault(target, StdioConnection(argv, cwd=base, label=target))
        return RemoteTool(conn, target, timeout)
    if target.startswith(("http://", "https://")):
        try:
            conn = conns.get(target) or conns.setdefault(target, HttpConnection(target))
        except ValueError as e:
            raise BindingFileError(f"{path}: [tools] {key!r}: {e}") from None
        return RemoteTool(conn, target, timeout)
    if target.startswith("mcp+"):
        return _mcp(path, key, target, base, conns, timeout)
    scheme = target.split(":", 1)[0] if ":" in target else target
    raise BindingFileError(
        f"{path}: [tools] {key!r}: unknown scheme {scheme!r} (use python:module.function, "
        f"exec:command args, http://host:port, mcp+stdio:command args#tool or mcp+http://host:port/mcp#tool)"
    )


def _mcp(path: str, key: str, target: str, base: str, conns: dict, timeout: Optional[float]):
    """`mcp+stdio:command args#tool` or `mcp+http://host:port/mcp#tool` (flowrt.host.mcp_tools);
    without `#tool`, the MCP tool of the Flow Tool's own name; `#*`, every tool of the server."""
    endpoint, _, tool = target.partition("#")
    try:
        import mcp  # noqa: F401  (the SDK: refused here, in one line, when it is not installed)
    except ImportError as e:
        raise BindingFileError(
            f"{path}: [tools] {key!r}: {target!r} needs the MCP SDK (pip install 'flow2py[mcp]'): {e}"
        ) from None
    from flowrt.host.mcp_tools import McpConnection, McpServerTools, McpTool, stdio_params

    rest = endpoint[len("mcp+") :]
    if rest.startswith("stdio:"):
        try:
            argv = shlex.split(rest[len("stdio:") :])
        except ValueError as e:
            raise BindingFileError(f"{path}: [tools] {key!r}: {target!r}: {e}") from None
        if not argv:
            raise BindingFileError(f"{path}: [tools] {key!r}: mcp+stdio: names no command")
        server: Any = stdio_params(argv, base)
    elif rest.startswith(("http://", "https://")):
        server = rest
    else:
        raise BindingFileError(
            f"{path}: [tools] {key!r}: {target!r}: expected mcp+stdio:command args#tool "
            f"or mcp+http://host:port/mcp#tool"
        )
    conn = McpConnection.shared(server, endpoint, base)
    if tool == "*":  # every tool of the server through one generic Tool carrying json.Value
        return McpServerTools(conn, target, timeout)
    return McpTool(conn, target, tool or None, timeout)


def load_binding_file(path: str, into: Optional[Bindings] = None) -> Bindings:
    """Bind every Tool the file names (into `into`, or a new Bindings); raises BindingFileError."""
    tools = _read(path)
    base = os.path.dirname(os.path.abspath(path))
    bindings = into if into is not None else Bindings()
    conns: dict = {}
    for key, value in tools.items():
        target, timeout = _entry(path, key, value)
        bindings.bind(key, parse_target(path, key, target, base, conns, timeout))
    return bindings


def where(impl: Any) -> str:
    """Where a bound implementation runs, for `flow2py tools --tools`."""
    if impl is None:
        return "unbound"
    if isinstance(impl, RemoteTool):
        return impl.label + (f" (timeout {impl.timeout:g} s)" if impl.timeout else "")
    name = getattr(impl, "__qualname__", None) or type(impl).__name__
    module = getattr(impl, "__module__", None) or "?"
    code = getattr(impl, "__code__", None)
    if module.startswith("_flow_tools_") and code is not None:  # a --tools .py file, not a module
        return f"in-process {name} ({os.path.relpath(code.co_filename)}:{code.co_firstlineno})"
    return f"in-process python:{module}.{name}"


def close(bindings: Bindings) -> None:
    """Stop every subprocess the bindings' Tool protocol connections started."""
    for impl in list(bindings._impls.values()):
        if isinstance(impl, RemoteTool):
            impl.conn.close()


def _repo_of(tool_id: str) -> Optional[tuple[str, str]]:
    """(repository, `module::name` inside it) of a repository Tool's declaration identity
    (`github.com/acme/tools@v1.2/catalog::read` -> `github.com/acme/tools`, `catalog::read`)."""
    module, sep, name = tool_id.partition("::")
    repo, at, rest = module.partition("@")
    if not sep or not at or "/" not in rest or repo.startswith("std"):
        return None
    return repo, rest.split("/", 1)[1] + "::" + name


def with_repo_defaults(bindings: Bindings, reachable, commits: dict, cache_dir: str) -> Bindings:
    """`bindings`, plus, for each reachable Tool they leave unbound, the binding its repository's
    default file (`<cache>/<repo>/commits/<commit>/flow.tools.toml`) gives it. The host's own
    bindings always win; a repository file binds only that repository's Tools. Keys there are the
    module path inside the repository and the Tool's name (`catalog::read` or `catalog.read`) or
    the full declaration identity. Returns `bindings` itself when no default applies."""
    files: dict[str, Optional[Bindings]] = {}
    out = None
    for item in reachable:
        tool_id, name = tuple(item) if not hasattr(item, "tool_id") else (item.tool_id, item.name)
        if tool_id in bindings or name in bindings:
            continue
        found = _repo_of(tool_id)
        if found is None or found[0] not in commits:
            continue
        repo, inner = found
        if repo not in files:
            path = os.path.join(cache_dir, *repo.split("/"), "commits", commits[repo], REPO_BINDING_FILE)
            files[repo] = load_binding_file(path) if os.path.isfile(path) else None
        defaults = files[repo]
        if defaults is None:
            continue
        impl = next(
            (defaults._impls[k] for k in (tool_id, inner, inner.replace("::", ".")) if k in defaults),
            None,
        )
        if impl is not None:
            out = out or Bindings().update(bindings)
            out.bind(tool_id, impl)
    return out or bindings
