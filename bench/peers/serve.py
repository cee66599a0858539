"""One peer in its own process, measured on request (bench/peers/run.py starts one per system).

    python bench/peers/serve.py PEER BACKEND WORKDIR [PG_URL]

Reads one JSON request a line on stdin (`{"op": "step", "n": 100}`) and answers one JSON line
on the original stdout (`{"wall": s, "cpu": s}` per step, or `{"error": "..."}`); everything else
the peer prints goes to stderr. The first line answered says whether the peer started."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:200]


def main() -> int:
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    peer_name, backend, workdir = sys.argv[1:4]
    pg = sys.argv[4] if len(sys.argv) > 4 else None

    def answer(obj) -> None:
        out.write(json.dumps(obj) + "\n")

    try:
        module = importlib.import_module(f"peer_{peer_name}")
        peer = module.Peer(backend, Path(workdir), pg)
    except BaseException as e:  # noqa: BLE001  (a peer that does not install or start: say why)
        answer({"error": _why(e)})
        return 0
    answer({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "quit":
            break
        try:
            answer({"result": getattr(peer, req["op"])(req["n"])})
        except Exception as e:  # noqa: BLE001  (one failed measurement: the cell says why)
            answer({"error": _why(e)})
    try:
        peer.close()
    except Exception:  # noqa: BLE001
        pass
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
