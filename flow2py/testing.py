"""Running Flow `@test` functions with `@fake` bindings, on virtual time (docs/spec/testing.md).

A `@test` function takes no parameters. It passes when it returns `true`, `Ok(_)` or Unit, and fails
when it returns `false` or `Err(e)` (the failure shows `e`, or both sides of a last `a == b`),
faults (the failure shows the Flow location and call chain), or waits on a call nothing answers.
Each test is its own run, in memory: the same driver as a live run, with every reachable Tool
bound to its fake and std's clock bound to a `VirtualClock`.

Determinism. Every fake runs on the driver's thread as its call is made (`inline="always"`), so
replies are admitted in the order the calls were made; a `clock.sleep` (or a fake that sleeps)
leaves its call open with a timer, and virtual time moves only when no task can move and every
open call waits on the clock: to the earliest timer (ties: the one set first), which fires alone.
Nothing depends on threads or wall time, so a test's outcome and history are the same every time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import GeneratorType
from typing import Callable, Optional

import flowrt as rt
from flowrt.data.facts import Reply, Start
from flowrt.data.ops import FALSE_EQ
from flowrt.data.requests import TailCall
from flowrt.engine import drive as drv
from flowrt.engine.tools import CallContext, WholeCall, admit, current_call
from flowrt.host import Refused

from flow2py import pipeline
from flow2py.cache import ProgramCache, cache_for

#: std's clock Tools, by declaration identity (flowrt.host.worker binds them for live runs)
CLOCK_NOW, CLOCK_SLEEP = "std@v1/clock::now", "std@v1/clock::sleep"

#: virtual "now" when a test starts: 2026-01-01T00:00:00Z, in Unix nanoseconds
EPOCH = 1_767_225_600 * 1_000_000_000


@dataclass
class TestResult:
    name: str  # "main::adds_numbers"
    file: str
    line: int
    passed: bool
    message: str  # why it failed ("" when it passed)
    facts: list = field(default_factory=list, compare=False, repr=False)  # the test run's history


@dataclass(frozen=True)
class FlowTest:
    """One `@test` function: its declaration id, name, where it is, and the fakes it names."""

    decl: str  # "main::adds_numbers"
    name: str
    file: str
    line: int
    fakes: tuple = ()  # the `@fake` functions its `@test(...)` names


def test_functions(loaded) -> list[FlowTest]:
    """The @test functions of the program's own modules (std excluded), in source order (from
    the compiled program, `LoadedProgram` or `CachedProgram`: both keep them)."""
    return [FlowTest(**{**t, "fakes": tuple(t.get("fakes", ()))}) for t in loaded.tests]


# ---- virtual time ----------------------------------------------------------------------------------


@dataclass
class _Timer:
    due: int  # virtual Unix nanoseconds
    seq: int  # the order timers were set: ties fire in it
    run_id: str  # the run whose call it answers (a test, or a fake's own run)
    call_id: str


@dataclass
class _FakeRun:
    """A fake with effects (it sleeps, or calls other fakes): a run of its own, waiting."""

    fake: "_FlowFake"
    spec: object  # the Tool's ToolSpec (its answer is admitted against it)
    recorder: "_Recorder"
    options: drv.DriveOptions
    outer: tuple  # (run id, call id) of the call it answers
    open: tuple = ()  # its open call ids


class VirtualClock:
    """The test's clock: `now` starts at EPOCH; `clock.sleep(d)` sets a timer due at now + d and
    leaves its call open; `idle_for(run_id)` is the drive's `idle` hook that fires timers.

    A fake with effects runs as a run of its own (`_FakeRun`), in memory, on the same clock; its
    call stays open until that run ends, and its answer then reaches the call it serves."""

    def __init__(self, start: int = EPOCH):
        self.now = start
        self.timers: list[_Timer] = []
        self._seq = 0
        self._runs: dict[str, _FakeRun] = {}
        self._n = 0

    # -- the clock's Tools --

    def bindings(self, base: rt.Bindings) -> rt.Bindings:
        """`base` plus std's clock Tools where `base` binds neither (a test's own `@fake` of
        `clock.sleep` wins): `clock.now` answers virtual now, `clock.sleep(d)` sets a timer."""
        out = rt.Bindings().update(base)
        for tool_id, name, impl in (
            (CLOCK_NOW, "clock.now", self._now),
            (CLOCK_SLEEP, "clock.sleep", self._sleep),
        ):
            if tool_id not in base and name not in base:
                out.bind(tool_id, impl)
        return out

    def _now(self):
        return {"Ok": self.now}

    def _sleep(self, nanos):
        ctx = current_call()
        self.set_timer(ctx.run_id, ctx.call_id, self.now + max(0, nanos))
        return rt.pending

    def set_timer(self, run_id: str, call_id: str, due: int) -> None:
        self._seq += 1
        self.timers.append(_Timer(due, self._seq, run_id, call_id))

    # -- moving time --

    def next_timer(self, root: Optional[str] = None) -> Optional[_Timer]:
        """The timer to fire next (earliest due, then the one set first), among those of `root`
        and its fakes' runs when given."""
        mine = [t for t in self.timers if root is None or self.root_of(t.run_id) == root]
        return min(mine, key=lambda t: (t.due, t.seq)) if mine else None

    def root_of(self, run_id: str) -> str:
        while run_id in self._runs:
            run_id = self._runs[run_id].outer[0]
        return run_id

    def waits_on_clock(self, run_id: str, open_ids) -> bool:
        """Whether every open call of `run_id` will be answered by the clock: a timer, or a
        fake's run that itself waits only on the clock."""
        timed = {t.call_id for t in self.timers if t.run_id == run_id}
        fakes = {r.outer[1]: rid for rid, r in self._runs.items() if r.outer[0] == run_id}
        for cid in open_ids:
            if cid in timed:
                continue
            rid = fakes.get(cid)
            if rid is None or not self.waits_on_clock(rid, self._runs[rid].open):
                return False
        return True

    def idle_for(self, run_id: str) -> Callable:
        """The `DriveOptions.idle` of the run `run_id`: when every open call waits on the clock,
        move to the next timer and fire it; the completions that reach the run (a sleep's
        `Ok(())`, a fake's answer), or none (the run pauses: something else must answer)."""

        def idle(open_ids):
            while open_ids and self.waits_on_clock(run_id, open_ids):
                t = self.next_timer(run_id)
                if t is None:
                    break
                got = self.fire(t)  # may only move a fake's own run on
                if got:
                    return got
            return []

        return idle

    def fire(self, t: _Timer) -> list:
        """Fire one timer (virtual now becomes its due time): the completions it gives the
        test's run, if any."""
        self.timers.remove(t)
        self.now = max(self.now, t.due)
        return self.answer(t.run_id, t.call_id, rt.Ok(None))

    def answer(self, run_id: str, call_id: str, outcome) -> list:
        """`outcome` for the call `call_id` of `run_id`: a test's run gets it as a completion; a
        fake's run is continued with it, and its answer, once it ends, goes to its own call."""
        fr = self._runs.get(run_id)
        if fr is None:
            return [(call_id, outcome)]
        fr.recorder.record(Reply(call_id, outcome))
        out = fr.fake.continue_run(fr)
        if out is None:  # waits on more
            return []
        del self._runs[run_id]
        return self.answer(*fr.outer, out)

    def new_fake_run(self, fr: _FakeRun) -> None:
        self._runs[fr.recorder.run_id] = fr

    def fake_run_id(self, outer_run: str, outer_call: str) -> str:
        self._n += 1
        return f"{outer_run}/fake{self._n}:{outer_call}"


class _Recorder(drv.MemoryRecorder):
    """A MemoryRecorder with a run id (the clock's Tools find their run by it)."""

    def __init__(self, run_id: str):
        super().__init__()
        self.run_id = run_id


# ---- fakes ---------------------------------------------------------------------------------------


class _FlowFake(WholeCall):
    """A `@fake` Flow function as a Tool implementation, given the whole call (flowrt.engine.tools
    WholeCall). Its arguments arrive in JSON form and are decoded back with its parameter types
    (the Tool's, E505 checks); its Result goes through the same admission as any
    implementation's. A pure fake answers at once (virtual "now"); a fake with effects runs as a
    run of its own on the test's clock, its call open until that run ends."""

    def __init__(self, loaded, name: str, clock: VirtualClock, bindings: Callable):
        self.loaded, self.name, self.clock, self.bindings = loaded, name, clock, bindings
        self.fn, params = loaded.program.entry(name)
        self.descs = tuple(d for _, d in params)
        self.params = tuple(n for n, _ in params)
        self.__qualname__ = name

    def serve_call(self, spec, jargs, type_args, context):
        ctx = context if isinstance(context, CallContext) else CallContext(*context)
        try:
            args = tuple(rt.decode(d, a, f"$[{i}]") for i, (d, a) in enumerate(zip(self.descs, jargs)))
            value = self.fn(*args)
        except Exception as e:  # a fault in a pure fake: the call may or may not have happened
            return rt.Err(rt.Unknown(f"the fake {self.name} faulted: {type(e).__name__}: {e}"))
        if type(value) is GeneratorType:
            value.close()
        elif type(value) is not TailCall:
            return admit(spec, value)  # a pure fake: answered at virtual "now"
        rec = _Recorder(self.clock.fake_run_id(ctx.run_id, ctx.call_id))
        rec.record(
            Start(
                self.loaded.program.identity,
                self.loaded.program.std,
                rt.DATA_VERSION,
                self.name,
                args,
                self.params,
            )
        )
        fr = _FakeRun(
            self,
            spec,
            rec,
            drive_options(self.loaded, rec, self.bindings(), idle=None),
            (ctx.run_id, ctx.call_id),
        )
        out = self.continue_run(fr)
        if out is not None:
            return out
        self.clock.new_fake_run(fr)
        return rt.pending

    def continue_run(self, fr: "_FakeRun"):
        """Drive the fake's run over its facts so far: its admitted answer when it ends, None
        when it waits (its open calls noted)."""
        outcome = drv.drive(self.fn, list(fr.recorder.facts), fr.options)
        if isinstance(outcome, drv.RunPaused):
            fr.open = tuple(c.id for c in outcome.open)
            return None
        if isinstance(outcome, drv.RunCompleted):
            return admit(fr.spec, outcome.value)
        if isinstance(outcome, drv.RunHalted):
            raise outcome.cause
        return rt.Err(rt.Unknown(f"the fake {self.name} {outcome.line()}"))


def drive_options(loaded, recorder, bindings, idle) -> drv.DriveOptions:
    """A test's drive: its fakes run on the driver's thread as each call is made."""
    return drv.DriveOptions(
        recorder=recorder,
        bindings=bindings,
        resolve=loaded.resolve,
        classes=loaded.classes,
        inline="always",
        idle=idle,
    )


def fake_scopes(loaded) -> tuple[dict, dict]:
    """(the file's fakes {tool id: function name}, every fake {function name: tool id}). A fake
    named by some `@test(...)` serves only the tests naming it (testing.md, "Fakes per test")."""
    named = {n for t in loaded.tests for n in t.get("fakes", ())}
    by_name = {name: tool_id for tool_id, name in loaded.fakes}
    file_fakes = {tool_id: name for tool_id, name in loaded.fakes if name not in named}
    return file_fakes, by_name


def test_bindings(loaded, info: FlowTest, clock: VirtualClock) -> rt.Bindings:
    """The bindings of one test: the file's fakes, its own `@test(...)` fakes in their place for
    their Tools, and std's clock on `clock` unless a fake serves it."""
    file_fakes, by_name = fake_scopes(loaded)
    chosen = dict(file_fakes)
    for name in info.fakes:
        chosen[by_name[name]] = name
    holder: list = []
    base = rt.Bindings()
    for tool_id, name in chosen.items():
        base.bind(tool_id, _FlowFake(loaded, name, clock, lambda: holder[0]))
    holder.append(clock.bindings(base))
    return holder[0]


def fake_bindings(loaded) -> rt.Bindings:
    """Bind every Tool that a file-scope `@fake` function names to that function (a clock of
    its own for the fakes that sleep)."""
    return test_bindings(loaded, FlowTest("", "", "", 0), VirtualClock())


# ---- running a test ------------------------------------------------------------------------------


def run_test(loaded, info: FlowTest, bindings=None) -> TestResult:
    """Run one test on a fresh virtual clock with its fakes (`bindings` replaces them)."""
    fn = loaded.resolve(info.decl)
    clock = VirtualClock()
    if bindings is None:
        bindings = test_bindings(loaded, info, clock)
    else:
        bindings = clock.bindings(bindings)
    missing = bindings.missing(loaded.reachable(info.name))
    if missing:  # refused before it starts, as a live run with a missing binding is
        return TestResult(info.decl, info.file, info.line, False, f"no @fake serves {', '.join(missing)}")
    start = Start(loaded.program.identity, loaded.program.std, rt.DATA_VERSION, info.name, (), ())
    rec = _Recorder("test")
    rec.record(start)
    token = FALSE_EQ.set(None)
    try:
        outcome = drv.drive(fn, [start], drive_options(loaded, rec, bindings, clock.idle_for("test")))
        sides = FALSE_EQ.get()
    finally:
        FALSE_EQ.reset(token)
    if isinstance(outcome, drv.RunHalted) and isinstance(outcome.cause, KeyboardInterrupt):
        raise outcome.cause  # Ctrl-C stops the testing, not just this test (sys.exit in a fake fails it)
    return TestResult(
        info.decl, info.file, info.line, *verdict(outcome, sides, os.path.dirname(info.file)), rec.facts
    )


def verdict(outcome, sides=None, folder: str = "") -> tuple[bool, str]:
    """(passed, the failure's text) of a test's outcome; `sides`: the two sides of the `==`
    that ended the test's body, when it was false; `folder`: the test file's, where the Flow
    files a fault names are."""
    if isinstance(outcome, drv.RunCompleted):
        v = outcome.value
        if v is True or v is None or isinstance(v, rt.Ok):
            return True, ""
        if v is False and sides is not None:
            left, right = sides
            return False, f"`==` is false:\n    left:  {rt.show(left)}\n    right: {rt.show(right)}"
        return False, f"returned {rt.show(v)}"
    if isinstance(outcome, drv.RunPaused):
        calls = ", ".join(f"{c.id} {c.text()}" for c in outcome.open)
        return False, f"waits on {calls}, which nothing answers (a fake that never replies, or no timer left)"
    if isinstance(outcome, drv.RunFaulted):
        return False, fault_text(outcome, folder)
    return False, outcome.line()


def fault_text(outcome: drv.RunFaulted, folder: str = "") -> str:
    """`faulted at f.flow:3: message` and the Flow call chain, innermost first (module files
    shown beside `folder`, the test file's)."""
    f = outcome.fault
    lines = [f"faulted at {_beside(folder, f.file)}:{f.line}: {f.message}"]
    for i, (name, file, line) in enumerate(reversed(outcome.chain)):
        lines.append(
            f"    {'in' if i == 0 else 'called from'} {_flow_name(name)} at {_beside(folder, file)}:{line}"
        )
    return "\n".join(lines)


def _flow_name(code_name: str) -> str:
    """The Flow function a generated code object is (its variants end `__pure`/`__tool`)."""
    for suffix in ("__pure", "__tool"):
        if code_name.endswith(suffix):
            return code_name[: -len(suffix)]
    return code_name


def _beside(folder: str, path: str) -> str:
    """A module's file as generated code names it (relative to the program's folder), joined
    to `folder` so it reads like the test's own location."""
    if os.path.isabs(path) or not folder or path.startswith(("<", "std@")):
        return path
    return os.path.join(folder, path)


@dataclass
class Suite:
    """A checked program ready to run its tests: one per `@test` function."""

    loaded: object
    tests: list
    bindings: Optional[rt.Bindings] = field(default=None)  # None: each test's own fakes

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
    return Suite(loaded, test_functions(loaded)), ""


def run_file(path: str, cache: ProgramCache | None = None) -> tuple[Optional[list[TestResult]], str]:
    """Check and run every @test of one program. Returns (results, "") or (None, diagnostics text)."""
    suite, diagnostics = load_suite(path, cache)
    if suite is None:
        return None, diagnostics
    return [suite.run(info) for info in suite.tests], ""


def test_files(paths) -> list[str]:
    """The programs `flow2py test PATH...` runs: each file named, and every `test_*.flow` below
    each directory named (sorted, hidden directories skipped)."""
    out = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):  # a folder's files, then its subfolders
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                out += [
                    os.path.join(root, f)
                    for f in sorted(files)
                    if f.startswith("test_") and f.endswith(".flow")
                ]
        elif os.path.isfile(path):
            out.append(path)
        else:
            raise Refused(f"{path}: no such file or directory")
    return out


def run_tests(paths, echo=print) -> bool:
    """`flow2py test`: run every @test of each program with its fakes; True when all pass."""
    ok, total, failed = True, 0, 0
    cache = cache_for(None)  # beside the default store: `flow2py test` has no --store
    files = test_files(paths)
    if not files:
        raise Refused(f"no test_*.flow file in {', '.join(paths)}")
    for path in files:
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
