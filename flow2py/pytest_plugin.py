"""pytest plugin: collects Flow `@test` functions from `test_*.flow` files.

Each `@test` function is one pytest item, run by flow2py.testing with the program's `@fake`
bindings. A file that does not check is one failing item showing its diagnostics.
"""
from __future__ import annotations

import pytest


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".flow" and file_path.name.startswith("test_"):
        return FlowFile.from_parent(parent, path=file_path)
    return None


class FlowFile(pytest.File):
    def collect(self):
        from flow2py.testing import run_file

        results, diagnostics = run_file(str(self.path))
        if results is None:
            yield FlowItem.from_parent(self, name="check", result=None, diagnostics=diagnostics)
            return
        for r in results:
            yield FlowItem.from_parent(self, name=r.name.split("::")[-1], result=r, diagnostics="")


class FlowTestFailed(Exception):
    pass


class FlowItem(pytest.Item):
    def __init__(self, *, result, diagnostics, **kw):
        super().__init__(**kw)
        self.result = result
        self.diagnostics = diagnostics

    def runtest(self):
        if self.result is None:
            raise FlowTestFailed(self.diagnostics)
        if not self.result.passed:
            raise FlowTestFailed(self.result.message)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, FlowTestFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        line = self.result.line if self.result else 0
        return self.path, max(line - 1, 0), f"flow test {self.name}"
