"""Running Flow `@test` functions with `@fake` bindings (docs/spec/testing.md).

A `@test` function takes no parameters. It passes when it returns `true`, `Ok(_)` or Unit, and fails
when it returns `false` or `Err(e)` (the failure shows `e`), faults, or reaches a Tool that no
`@fake` function of the program serves. Each test is its own run, in memory: the same driver as a
live run, with every reachable Tool bound to its fake.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import flowrt as rt
from flowrt.data.facts import Start
from flowrt.engine import drive as drv
from flowrt.host import Refused

from flow2py import pipeline
from flow2py.cache import ProgramCache, cache_for


@dataclass
class TestResult:
    name: str  # "main::adds_numbers"
    file: str
    line: int
    passed: bool
    message: str  # why it failed ("" when it passed)


@dataclass(frozen=True)
class FlowTest:
    """One `@test` function: its declaration id, name, and where it is."""

    decl: str  # "main::adds_numbers"
    name: str
    file: str
    line: int


def test_functions(loaded) -> list[FlowTest]:
    """The @test functions of the program's own modules (std excluded), in source order (from
    the compiled program, `LoadedProgram` or `CachedProgram`: both keep them)."""
    return [FlowTest(**t) for t in loaded.tests]


def fake_bindings(loaded) -> rt.Bindings:
    """Bind every Tool that a `@fake` function names to that function."""
    bindings = rt.Bindings()
    for tool_id, name in loaded.fakes:
        fake, params = loaded.program.entry(name)
        bindings.bind(tool_id, _fake_impl(fake, tuple(d for _, d in params)))
    return bindings


def _fake_impl(fake, descs):
    """Tool implementations receive arguments in JSON form; a fake is Flow code, so decode them
    back to values with its parameter types (the Tool's, E505 checks), and hand its Result
    (runtime values) to the same admission every reply goes through."""

    def impl(*json_args):
        args = tuple(rt.decode(d, a, f"$[{i}]") for i, (d, a) in enumerate(zip(descs, json_args)))
        return fake(*args)

    impl.__qualname__ = getattr(fake, "__qualname__", "fake")
    return impl


def run_test(loaded, info: FlowTest, bindings) -> TestResult:
    fn = loaded.resolve(info.decl)
    file, line = info.file, info.line
    missing = bindings.missing(loaded.reachable(info.name))
    if missing:  # refused before it starts, as a live run with a missing binding is
        return TestResult(info.decl, file, line, False, f"no @fake serves {', '.join(missing)}")
    start = Start(loaded.program.identity, loaded.program.std, rt.DATA_VERSION, info.name, (), ())
    rec = drv.MemoryRecorder()
    rec.record(start)
    outcome = drv.drive(
        fn,
        [start],
        drv.DriveOptions(recorder=rec, bindings=bindings, resolve=loaded.resolve, classes=loaded.classes),
    )
    if isinstance(outcome, drv.RunHalted) and isinstance(outcome.cause, KeyboardInterrupt):
        raise outcome.cause  # Ctrl-C stops the testing, not just this test (sys.exit in a fake fails it)
    return _verdict(info.decl, file, line, outcome)


def _verdict(name, file, line, outcome) -> TestResult:
    if isinstance(outcome, drv.RunCompleted):
        v = outcome.value
        if v is True or v is None or isinstance(v, rt.Ok):
            return TestResult(name, file, line, True, "")
        return TestResult(name, file, line, False, f"returned {rt.show(v)}")
    if isinstance(outcome, drv.RunPaused):
        tools = ", ".join(sorted({c.tool for c in outcome.open}))
        return TestResult(name, file, line, False, f"waits on {tools}, whose fake never answers")
    return TestResult(name, file, line, False, outcome.line())


@dataclass
class Suite:
    """A checked program ready to run its tests: one per `@test` function."""

    loaded: object
    bindings: rt.Bindings
    tests: list

    def run(self, info) -> TestResult:
        return run_test(self.loaded, info, self.bindings)


def load_suite(path: str, cache: ProgramCache | None = None) -> tuple[Optional[Suite], str]:
    """Check and compile one program (or load it from `cache`, flow2py.cache). Returns (suite, "")
    or (None, the rendered diagnostics)."""
    try:
        loaded = pipeline.compile_program(pipeline.ProgramText(path), cache)
    except Refused as e:
        if e.diagnostics:  # shown as the file's one failing test, not refused
            return None, str(e) + "\n"
        raise
    return Suite(loaded, fake_bindings(loaded), test_functions(loaded)), ""


def run_file(path: str, cache: ProgramCache | None = None) -> tuple[Optional[list[TestResult]], str]:
    """Check and run every @test of one program. Returns (results, "") or (None, diagnostics text)."""
    suite, diagnostics = load_suite(path, cache)
    if suite is None:
        return None, diagnostics
    return [suite.run(info) for info in suite.tests], ""


def run_tests(paths, echo=print) -> bool:
    """`flow2py test`: run every @test of each program with its @fake bindings; True when all pass."""
    ok, total, failed = True, 0, 0
    cache = cache_for(None)  # beside the default store: `flow2py test` has no --store
    for path in paths:
        if not os.path.isfile(path):
            raise Refused(f"{path}: no such file")
        results, diagnostics = run_file(path, cache)
        if results is None:
            echo(diagnostics.rstrip("\n"))
            ok = False
            continue
        for r in results:
            total += 1
            if r.passed:
                echo(f"ok    {r.name}")
            else:
                failed += 1
                ok = False
                echo(f"FAIL  {r.name}  ({r.file}:{r.line}): {r.message}")
    echo(f"{total - failed} passed, {failed} failed")
    return ok
