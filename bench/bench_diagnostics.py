"""Score the checker's diagnostics on a corpus of authoring mistakes (issue 13's table).

    .venv/bin/python bench/bench_diagnostics.py CORPUS_DIR [--verbose]

The corpus is kept outside the repository, so that it measures rather than trains: CORPUS_DIR
holds one directory per case, whose entry module is `main.flow` (other modules beside it). Each
line holding a mistake ends with a comment `// @m [other] [safe]`: `other` when there is another
place that matters (a declaration, a signature, a record, the other `use`), `safe` when a fix
exists that needs no choice. Each case is checked with `flow2py check --format json` (the
interface users and agents see) and scored:

- mistakes reported at the right line: a diagnostic at each marked line;
- diagnostics that are real mistakes: one diagnostic per marked line counts, every other is a
  cascade or a false report;
- files with several mistakes reported whole in one pass;
- the other place shown: a related note at another line or file, where `other` is marked;
- a safe fix offered, where `safe` is marked;
- safe fixes that are correct: each applied alone leaves fewer diagnostics and no code more often;
- files clean after applying every safe fix (one at a time, re-checking), where every mistake is
  marked `safe`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FLOW2PY = os.path.join(os.path.dirname(sys.executable), "flow2py")


def marked(case: str) -> list[dict]:
    out = []
    for dirpath, _, files in os.walk(case):
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(dirpath, f), case)
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                for i, line in enumerate(fh.read().splitlines(), 1):
                    m = re.search(r"// @m\b(.*)$", line)
                    if m:
                        tags = m.group(1).split()
                        out.append({"at": (rel, i), "other": "other" in tags, "safe": "safe" in tags})
    return out


def check(case: str) -> list[dict] | None:
    r = subprocess.run(
        [FLOW2PY, "check", "--format", "json", "main.flow"], cwd=case, capture_output=True, text=True
    )
    try:
        ds = json.loads(r.stdout) if r.stdout.strip() else []
    except ValueError:
        return None
    for d in ds:
        d["at"] = (os.path.normpath(d["file"]), d["line"])
        for rel in d["related"]:
            rel["at"] = (os.path.normpath(rel["file"]), rel["line"])
    return ds


def apply(case: str, fix: dict) -> None:
    by_file: dict[str, list] = {}
    for e in fix["edits"]:
        by_file.setdefault(e["file"], []).append(e)
    for f, edits in by_file.items():
        path = os.path.join(case, f)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for e in sorted(edits, key=lambda e: e["start"], reverse=True):
            text = text[: e["start"]] + e["text"] + text[e["end"] :]
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def copy(case: str) -> str:
    dst = os.path.join(tempfile.mkdtemp(), "case")
    shutil.copytree(case, dst)
    return dst


def score(corpus: str, verbose: bool = False) -> dict:
    t = dict.fromkeys(
        "mistakes at diags real multi whole other other_ok safe safe_ok fixes fixes_ok allsafe clean".split(),
        0,
    )
    for name in sorted(os.listdir(corpus)):
        case = os.path.join(corpus, name)
        if not os.path.isdir(case):
            continue
        ms, ds = marked(case), check(case)
        if ds is None:
            print(f"{name}: check printed no JSON")
            continue
        t["mistakes"] += len(ms)
        t["diags"] += len(ds)
        t["real"] += len({d["at"] for d in ds} & {m["at"] for m in ms})
        found = 0
        for m in ms:
            here = [d for d in ds if d["at"] == m["at"]]
            found += bool(here)
            t["at"] += bool(here)
            if m["other"]:
                t["other"] += 1
                t["other_ok"] += any(r["at"] != d["at"] for d in here for r in d["related"])
            if m["safe"]:
                t["safe"] += 1
                t["safe_ok"] += any(f["safe"] for d in here for f in d["fixes"])
        if len(ms) > 1:
            t["multi"] += 1
            t["whole"] += found == len(ms)
        for d in ds:
            for f in (f for f in d["fixes"] if f["safe"]):
                t["fixes"] += 1
                c = copy(case)
                apply(c, f)
                after = check(c)
                ok = after is not None and len(after) < len(ds)
                ok = ok and all(
                    sum(a["code"] == x["code"] for a in after) <= sum(b["code"] == x["code"] for b in ds)
                    for x in after
                )
                t["fixes_ok"] += ok
                if verbose and not ok:
                    print(f"  {name}: fix `{f['message']}` left", [(a["code"], a["at"]) for a in after or []])
        if ms and all(m["safe"] for m in ms):
            t["allsafe"] += 1
            c, now = copy(case), ds
            for _ in range(3 * len(ms) + 2):
                fixes = [f for d in now for f in d["fixes"] if f["safe"]]
                if not fixes:
                    break
                apply(c, fixes[0])
                now = check(c) or []
            t["clean"] += now == []
        if verbose:
            print(name, "marked", [m["at"] for m in ms])
            for d in ds:
                print(
                    f"    {d['code']} {d['at']} {d['message'][:80]}",
                    "| related",
                    [r["at"] for r in d["related"]],
                    "| fixes",
                    [(f["safe"], f["message"][:40]) for f in d["fixes"]],
                )
    return t


def report(t: dict) -> list[tuple[str, str]]:
    def pc(a, b):
        return f"{100 * a / b:.0f}% ({a}/{b})" if b else "n/a"

    return [
        ("mistakes reported at the right line", pc(t["at"], t["mistakes"])),
        ("diagnostics that are real mistakes (not cascades)", pc(t["real"], t["diags"])),
        ("files with several mistakes reported whole in one pass", pc(t["whole"], t["multi"])),
        ("the other place that matters shown, where there is one", pc(t["other_ok"], t["other"])),
        ("a safe fix offered, where one exists without a choice", pc(t["safe_ok"], t["safe"])),
        ("safe fixes that are correct", pc(t["fixes_ok"], t["fixes"])),
        (
            "files clean after applying every safe fix, where every mistake has one",
            pc(t["clean"], t["allsafe"]),
        ),
    ]


def main(argv: list[str]) -> None:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.exit("usage: bench_diagnostics.py CORPUS_DIR [--verbose]")
    for k, v in report(score(args[0], "--verbose" in argv)):
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main(sys.argv[1:])
