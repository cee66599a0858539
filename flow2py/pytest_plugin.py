"""pytest plugin: collects Flow `@test` functions from `test_*.flow` files, and gives Python
tests the `flow_env` fixture (flow2py.testenv) to drive a Flow program themselves.

Collecting checks and compiles the file; each `@test` function is one item, run (in memory, with
its `@fake` bindings, on virtual time: flow2py.testing) when pytest runs it. A file that does not
check is one failing item showing its diagnostics.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def flow_env(tmp_path):
    """A FlowEnv (flow2py.testenv): a store of its own under `tmp_path`, a virtual clock, and
    runs started with Python fakes."""
    from flow2py.testenv import FlowEnv

    env = FlowEnv(str(tmp_path / "flow-runs.db"))
    try:
        yield env
    finally:
        env.close()


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".flow" and file_path.name.startswith("test_"):
        return FlowFile.from_parent(parent, path=file_path)
    return None


class FlowFile(pytest.File):
    def collect(self):
        from flow2py.testing import load_suite

        suite, diagnostics = load_suite(str(self.path))
        if suite is None:
            yield FlowItem.from_parent(self, name="check", suite=None, info=None, diagnostics=diagnostics)
            return
        for info in suite.tests:
            yield FlowItem.from_parent(self, name=info.name, suite=suite, info=info, diagnostics="")


class FlowTestFailed(Exception):
    pass


class FlowItem(pytest.Item):
    def __init__(self, *, suite, info, diagnostics, **kw):
        super().__init__(**kw)
        self.suite, self.info, self.diagnostics = suite, info, diagnostics

    def runtest(self):
        if self.suite is None:
            raise FlowTestFailed(self.diagnostics)
        result = self.suite.run(self.info)
        if not result.passed:
            raise FlowTestFailed(f"{result.file}:{result.line}: {result.message}")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, FlowTestFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        line = self.info.line if self.info is not None and self.info.line else 1
        return self.path, line - 1, f"flow test {self.name}"
