"""The README's screenshot of the viewer (docs/viewer.png): the served run page of the support
example paused on its question, at 1280×800, taken with Playwright and Debian's Chromium.

    .venv/bin/python docs/tools/screenshot.py [OUT.png]

It starts `flow2py worker support=examples/support/main.flow --tools examples/support/tools.py
--http 127.0.0.1:PORT` on a free port in a temporary folder (the store is that folder's default
`.flow/runs.db`, so the page's commands need no `--store`), submits the ticket as run `s1`, waits
for it to pause on `human.ask`, and photographs `http://127.0.0.1:PORT/runs/s1`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "examples" / "support"


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read())
    except OSError:
        return None


def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (got := predicate()):
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshot: timed out waiting for {what}")
        time.sleep(0.05)
    return got


def main(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "flow2py.cli", "worker", f"support={SUPPORT / 'main.flow'}"]
        cmd += [
            "--tools",
            str(SUPPORT / "tools.py"),
            "--http",
            f"127.0.0.1:{port}",
            "--checkpoint-every",
            "5",
        ]
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _until(lambda: proc.poll() is not None or _get(base + "/openapi.json"), 120, "the worker")
            body = {"program": "support", "input": {"ticket": "Login fails on Safari"}, "run_id": "s1"}
            req = urllib.request.Request(base + "/runs", data=json.dumps(body).encode(), method="POST")
            urllib.request.urlopen(req, timeout=10).close()
            _until(lambda: (_get(base + "/runs/s1") or {}).get("state") == "paused", 60, "the pause")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium")
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(base + "/runs/s1")
                page.screenshot(path=str(out))
                browser.close()
        finally:
            proc.terminate()
            proc.wait(60)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "viewer.png")
