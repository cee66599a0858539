"""std@v1/json's parse and render side by side with Python's json (issue 14 point 4; not a test).

    .venv/bin/python bench/bench_json.py [--runs 9] [--items 2000]

A document of `--items` order lines (text, exact decimals, integers, a list, true, null; about 90
characters a line) is parsed by `json.parse` (flowrt.data.jsonvalue.json_parse: bounded JSON text
to exact numbers, then Values) and by `json.loads(parse_float=Decimal)`, and rendered by
`json.render` and by `json.dumps(sort_keys=True, separators=(",", ":"))`, alternating, median of
`--runs` rounds. The ratios are std / Python: what building Flow values (and keeping numbers
exact and the bounds of admitted data) costs over Python's own C parser and writer.
"""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, side_by_side  # noqa: E402

from flowrt.data.jsonvalue import json_parse, json_render  # noqa: E402


def document(n: int) -> str:
    lines = [
        {"sku": f"s{i}", "price": float(f"{i}.25"), "qty": i, "tags": ["a", "b"], "ok": True, "n": None}
        for i in range(n)
    ]
    return json.dumps({"items": lines})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--items", type=int, default=2000)
    a = ap.parse_args()
    text = document(a.items)
    value = json_parse(text)._0
    plain = json.loads(text, parse_float=Decimal)
    t = side_by_side(
        {
            "json.parse": lambda: json_parse(text),
            "json.loads": lambda: json.loads(text, parse_float=Decimal),
            "json.render": lambda: json_render(value),
            "json.dumps": lambda: json.dumps(plain, sort_keys=True, separators=(",", ":"), default=str),
        },
        a.runs,
    )
    m = {k: median(v) for k, v in t.items()}
    print(f"document: {len(text):,} characters, {a.items} lines; median of {a.runs} rounds")
    print(
        f"parse   {m['json.parse'] * 1e3:7.1f} ms  vs json.loads {m['json.loads'] * 1e3:6.1f} ms  ({m['json.parse'] / m['json.loads']:.1f}x)"
    )
    print(
        f"render  {m['json.render'] * 1e3:7.1f} ms  vs json.dumps {m['json.dumps'] * 1e3:6.1f} ms  ({m['json.render'] / m['json.dumps']:.1f}x)"
    )
    print(f"parse   {m['json.parse'] / len(text) * 1e9:7.0f} ns a character")


if __name__ == "__main__":
    main()
