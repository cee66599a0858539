"""Start-up cost of the CLI (not a test): each figure is a fresh process, as a user runs it.

    .venv/bin/python bench/bench_startup.py [--runs 7] [--dir DIR]

Side by side in one run, alternating the sides every round; medians of the rounds, and ratios:

1. `flow2py --version`: wall time and CPU time (user + system of the child; the machine is
   noisy, CPU time much less so). Goal: under 0.15 s. `python -c pass` is shown as the floor.
2. `flow2py run` of the support example (examples/support/main.flow) to its first Tool call, the
   program in the cache beside the store (flow2py/cache.py), against a host script running the
   package `flow2py build` made (`import pkg; Host(store).start(pkg.PROGRAM, ...)`), with the
   same Tools file. The first Tool (`planner.next`) ends the process (`os._exit`) once it is
   called, after its Call is recorded: the time is spawn to first Tool call. Goal: cached within
   1.5x of the built package. `run` with the cache off (FLOW2PY_PROGRAM_CACHE=off) is shown too.
3. `flow2py history RUN` of a run whose stored program is in the cache, against `flow2py runs`
   on the same store. Goal: within 1.5x. `history` with the cache off is shown too.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, verdict  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "support" / "main.flow"
INPUT = '{"ticket": "Login fails on Safari"}'
GOAL_VERSION_S = 0.15
GOAL_RATIO = 1.5

TOOLS = """\
import os
from flowrt import bind, pending


@bind("planner.next")
def next_step(ticket, notes):
    if os.environ.get("BENCH_STOP_AT_FIRST_CALL"):
        os._exit(0)  # the Call is recorded: spawn to here is the start-up cost
    if len(notes) == 0:
        return {"Ok": {"Search": "safari login cookie"}}
    return {"Ok": {"Ask": "Which Safari version does the customer use?"}}


@bind("web.search")
def web_search(query):
    return pending


@bind("docs.search")
def docs_search(query):
    return {"Ok": "SameSite=None requires Secure ..."}


@bind("human.ask")
def ask(question):
    return pending
"""

HOST = """\
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import support_pkg
import bench_tools  # noqa: F401  (its @bind registrations)
from flowrt.host import Host

Host(sys.argv[3]).start(support_pkg.PROGRAM, input={"ticket": "Login fails on Safari"})
"""


def flow2py_cmd() -> list[str]:
    script = Path(sys.executable).parent / "flow2py"
    return [str(script)] if script.exists() else [sys.executable, "-m", "flow2py.cli"]


def timed_process(cmd: list[str], env: dict, ok=(0, 3)) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def alternate(cases: dict, runs: int) -> dict:
    """Each case once a round, alternating, `runs` rounds: {name: ([wall...], [cpu...])}."""
    out = {k: ([], []) for k in cases}
    for _ in range(runs):
        for name, (cmd, env) in cases.items():
            wall, cpu = timed_process(cmd, env)
            out[name][0].append(wall)
            out[name][1].append(cpu)
    return out


def setup(work: Path, env: dict) -> dict:
    """The Tools file, the built package, the stores, and a warm cache for each."""
    tools = work / "bench_tools.py"
    tools.write_text(TOOLS)
    (work / "host.py").write_text(HOST)
    f2p = flow2py_cmd()
    subprocess.run(
        [*f2p, "build", str(EXAMPLE), "-o", str(work / "pkg"), "--name", "support_pkg"],
        check=True,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    hist_store = str(work / "hist" / "runs.db")
    os.makedirs(os.path.dirname(hist_store))
    run = [*f2p, "run", str(EXAMPLE), "--input", INPUT, "--tools", str(tools)]
    subprocess.run(
        [*run, "--store", hist_store, "--run-id", "h"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL
    )
    # warm the caches: the run's program (from the path) and the stored program (history)
    timed_process([*f2p, "history", "h", "--store", hist_store], env)
    stop = dict(env, BENCH_STOP_AT_FIRST_CALL="1")
    for store in ("cli", "built", "nocache"):
        os.makedirs(work / store)
    timed_process([*run, "--store", str(work / "cli" / "runs.db")], stop)
    return {"f2p": f2p, "run": run, "tools": tools, "hist_store": hist_store, "stop": stop}


def report_pair(title, res, a, b, goal_ratio=GOAL_RATIO):
    wa, wb = median(res[a][0]), median(res[b][0])
    ca, cb = median(res[a][1]), median(res[b][1])
    ratio, cpu_ratio = wa / wb, ca / cb
    print(f"\n{title}")
    for name in res:
        print(
            f"  {name:<34} wall {median(res[name][0]) * 1e3:7.1f} ms   cpu {median(res[name][1]) * 1e3:7.1f} ms"
        )
    print(
        f"  ratio {a} / {b}: wall {ratio:.2f}x, cpu {cpu_ratio:.2f}x "
        f"(goal <= {goal_ratio}x: {verdict(ratio <= goal_ratio)})"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--dir", default=None, help="where the stores go (default: a folder under bench/)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="startup-", dir=args.dir or str(ROOT / "bench")))
    env = dict(os.environ)
    env.pop("FLOW2PY_PROGRAM_CACHE", None)
    try:
        s = setup(work, env)
        f2p = s["f2p"]
        print(f"bench_startup: {args.runs} rounds, alternating; medians")

        res = alternate(
            {
                "flow2py --version": ([*f2p, "--version"], env),
                "python -c pass": ([sys.executable, "-c", "pass"], env),
            },
            args.runs,
        )
        wall, cpu = median(res["flow2py --version"][0]), median(res["flow2py --version"][1])
        print("\n1. flow2py --version")
        for name in res:
            print(
                f"  {name:<34} wall {median(res[name][0]) * 1e3:7.1f} ms   cpu {median(res[name][1]) * 1e3:7.1f} ms"
            )
        print(
            f"  goal: under {GOAL_VERSION_S} s wall: {verdict(wall < GOAL_VERSION_S)} ({wall:.3f} s; cpu {cpu:.3f} s)"
        )

        stop = s["stop"]
        nocache = dict(stop, FLOW2PY_PROGRAM_CACHE="off")
        host = [
            sys.executable,
            str(work / "host.py"),
            str(work / "pkg"),
            str(work),
            str(work / "built" / "runs.db"),
        ]
        res = alternate(
            {
                "run, program cached": ([*s["run"], "--store", str(work / "cli" / "runs.db")], stop),
                "built package (Host.start)": (host, stop),
                "run, cache off (compiles)": (
                    [*s["run"], "--store", str(work / "nocache" / "runs.db")],
                    nocache,
                ),
            },
            args.runs,
        )
        report_pair(
            "2. spawn to the first Tool call (examples/support)",
            res,
            "run, program cached",
            "built package (Host.start)",
        )

        hist = s["hist_store"]
        res = alternate(
            {
                "history h, program cached": ([*f2p, "history", "h", "--store", hist], env),
                "runs": ([*f2p, "runs", "--store", hist], env),
                "history h, cache off (compiles)": (
                    [*f2p, "history", "h", "--store", hist],
                    dict(env, FLOW2PY_PROGRAM_CACHE="off"),
                ),
            },
            args.runs,
        )
        report_pair("3. history of a run vs runs (same store)", res, "history h, program cached", "runs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
