"""The process-wide binding registry (`flowrt.BINDINGS`, which `--tools` fills) restored after a
test, for the test files that load binding files and start Tool servers."""

from __future__ import annotations

from contextlib import contextmanager

import flowrt as rt
from flowrt.host.binding_files import close


@contextmanager
def restored_bindings(*, stop_servers: bool = True):
    """The registry as it was before the block; with `stop_servers`, every Tool server process a
    binding of the block started is stopped (a test module that shares one server passes False)."""
    before = dict(rt.BINDINGS._impls)
    try:
        yield
    finally:
        if stop_servers:
            close(rt.BINDINGS)
        rt.BINDINGS._impls.clear()
        rt.BINDINGS._impls.update(before)
        rt.BINDINGS._cache.clear()
