"""Golden histories: each folder of golden/history holds a program and its Tools (or names
an example's folder as run.json's "program"), how it is run (`run.json`: input, checkpoint_every,
resumes with replies) and `expected.txt`, the history in the
seed's text notation after the last step, then the replay verdict. The program's identity is
masked (it is tested elsewhere and changes with std). FLOW2PY_UPDATE_GOLDEN=1 rewrites them."""

import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

import flowrt.engine.tools
from flow2py import host
from flowrt.host import operations as rh

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "history"
UPDATE = os.environ.get("FLOW2PY_UPDATE_GOLDEN") == "1"
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def _program(case: Path) -> Path:
    """The folder holding the case's main.flow and tools.py: the case itself, or the folder its
    run.json names as "program" (relative to the case), so an example is not copied."""
    plan = json.loads((case / "run.json").read_text())
    return (case / plan["program"]).resolve() if "program" in plan else case


def _bindings(case: Path, monkeypatch) -> flowrt.Bindings:
    """The case's tools.py, registered into bindings of its own (not the process-wide ones)."""
    own = flowrt.Bindings()
    monkeypatch.setattr(flowrt.engine.tools, "BINDINGS", own)
    spec = importlib.util.spec_from_file_location(f"_golden_tools_{case.name}", _program(case) / "tools.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return own


def _run(case: Path, store_path: str, bindings) -> str:
    plan = json.loads((case / "run.json").read_text())
    loaded = host.compile_path(str(_program(case) / "main.flow"))
    store = rh.open_store(store_path)
    steps = [
        rh.start(
            store,
            loaded,
            input=plan.get("input"),
            bindings=bindings,
            run_id=case.name,
            checkpoint_every=plan.get("checkpoint_every"),
        )
    ]
    for resume in plan.get("resume", []):
        stored = host.compile_stored(store, case.name)
        steps.append(
            rh.resume(
                store,
                stored,
                case.name,
                replies=resume.get("replies"),
                bindings=bindings,
                checkpoint_every=plan.get("checkpoint_every"),
            )
        )
    text = host.history(case.name, store_path=store_path)
    verdict = host.replay(case.name, store_path=store_path).text
    outcomes = "".join(f"step {i + 1}: exit {r.exit_code}: {r.text}\n" for i, r in enumerate(steps))
    text = re.sub(r"program=[0-9a-f]{12}", "program=<identity>", text)
    return f"{outcomes}\n{text}\nreplay: {verdict}\n"


@pytest.mark.parametrize("name", CASES)
def test_history_matches_golden(name, tmp_path, monkeypatch):
    case = GOLDEN / name
    got = _run(case, str(tmp_path / "runs.db"), _bindings(case, monkeypatch))
    expected = case / "expected.txt"
    if UPDATE or not expected.exists():
        expected.write_text(got)
    assert got == expected.read_text()


def test_every_golden_history_folder_is_complete():
    for name in CASES:
        case = GOLDEN / name
        for part in ("run.json", "expected.txt"):
            assert (case / part).exists(), f"golden/history/{name} lacks {part}"
        for part in ("main.flow", "tools.py"):
            assert (_program(case) / part).exists(), f"golden/history/{name}: its program lacks {part}"
