"""Running Flow programs end to end in tests: real parser, checker, codegen and driver.

    prog = flow_program(tmp_path, {"main.flow": "...", "web.flow": "..."})
    out, rec = prog.run("main", (3,), tools={"web.search": impl}, checkpoint_every=1)
    prog.resume(rec.facts + [Reply(...)], tools={...})
    prog.replay(rec.facts)

Programs kept as files live in tests/flow_programs/<name>/ (`flow_program_dir(name)`).
"""

from __future__ import annotations

import os
from typing import Optional

import flowrt as rt
from flow2py import host
from flow2py.diagnostics import render_text
from flowrt.engine import drive as drv
from flowrt.data.facts import Start

PROGRAMS = os.path.join(os.path.dirname(__file__), "flow_programs")


class FlowProgram:
    def __init__(self, path: str):
        result = host.check(path)
        if result.diagnostics:
            raise AssertionError(render_text(result.diagnostics, result.sources))
        self.checked = result.program
        self.loaded = host.Loaded(result.program)
        self.program = self.loaded.program

    def fn(self, name: str):
        return self.program.entry(name)[0]

    def start(self, entry: str, args: tuple) -> Start:
        params = tuple(p for p, _ in self.program.entry(entry)[1])
        return Start(self.program.identity, self.program.std, rt.DATA_VERSION, entry, tuple(args), params)

    def bindings(self, tools: Optional[dict]) -> rt.Bindings:
        b = rt.Bindings()
        for k, f in (tools or {}).items():
            b.bind(k, f)
        return b

    def run(self, entry: str = "main", args: tuple = (), tools: Optional[dict] = None, **kw):
        """A new live run: (outcome, MemoryRecorder)."""
        rec = drv.MemoryRecorder()
        start = self.start(entry, args)
        rec.record(start)
        out = drv.drive(
            self.fn(entry),
            [start],
            drv.DriveOptions(
                recorder=rec,
                bindings=self.bindings(tools),
                resolve=self.loaded.resolve,
                classes=self.loaded.classes,
                **kw,
            ),
        )
        return out, rec

    def resume(self, history: list, entry: Optional[str] = None, tools: Optional[dict] = None, **kw):
        """A fresh driver over a recorded history (from its latest checkpoint): (outcome, recorder
        holding the history and what the resumed run added)."""
        entry = entry or next((f.entry for f in history if type(f) is Start), "main")
        rec = drv.MemoryRecorder()
        rec.facts = list(history)
        out = drv.drive(
            self.fn(entry),
            list(history),
            drv.DriveOptions(
                recorder=rec,
                bindings=self.bindings(tools),
                resolve=self.loaded.resolve,
                classes=self.loaded.classes,
                **kw,
            ),
        )
        return out, rec

    def replay(self, history: list, entry: Optional[str] = None, begin=1):
        entry = entry or next((f.entry for f in history if type(f) is Start), "main")
        return drv.drive(
            self.fn(entry),
            list(history),
            drv.DriveOptions(
                mode="replay", begin=begin, resolve=self.loaded.resolve, classes=self.loaded.classes
            ),
        )


def flow_program(tmp_path, files: dict, entry: str = "main.flow") -> FlowProgram:
    for name, text in files.items():
        p = os.path.join(str(tmp_path), name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    return FlowProgram(os.path.join(str(tmp_path), entry))


def flow_program_dir(name: str, entry: str = "main.flow") -> FlowProgram:
    return FlowProgram(os.path.join(PROGRAMS, name, entry))


def facts_of(rec, kind) -> list:
    return [f for f in rec.facts if type(f) is kind]
