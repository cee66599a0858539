"""The TextMate grammar in editors/vscode/ (VS Code and the editors that read TextMate
grammars): its JSON loads, every pattern compiles (Python's `re` stands in for Oniguruma: the
grammar keeps to the syntax both share), and sample lines get the expected scopes. The keyword
list comes from flow2py/syntax/grammar.lark, so a keyword added there that the TextMate
grammar misses fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EDITOR = ROOT / "editors" / "vscode"
GRAMMAR = json.loads((EDITOR / "syntaxes" / "flow.tmLanguage.json").read_text(encoding="utf-8"))


def grammar_keywords() -> set[str]:
    """Every word the Flow grammar writes as a literal token (`"match"`, `PUB: "pub"`)."""
    text = (ROOT / "flow2py" / "syntax" / "grammar.lark").read_text(encoding="utf-8")
    return set(re.findall(r'"([a-z]+)"', text))


def _rules(patterns: list[dict]) -> list[dict]:
    """The patterns with each `include` of the repository replaced by what it holds, compiled."""
    out = []
    for p in patterns:
        if "include" in p:
            assert p["include"].startswith("#"), p
            ref = GRAMMAR["repository"][p["include"][1:]]
            out += _rules(
                ref["patterns"] if "patterns" in ref and "match" not in ref and "begin" not in ref else [ref]
            )
        elif "patterns" in p and "begin" not in p:
            out += _rules(p["patterns"])
        else:
            rule = dict(p)
            for key in ("match", "begin", "end"):
                if key in rule:
                    rule[key] = re.compile(rule[key])
            if "begin" in rule:
                rule["inner"] = _rules(rule.get("patterns", []))
            out.append(rule)
    return out


RULES = _rules(GRAMMAR["patterns"])


def _first(rules: list[dict], line: str, pos: int):
    best = None
    for r in rules:
        m = (r.get("match") or r.get("begin")).search(line, pos)
        if m and (best is None or m.start() < best[1].start()):
            best = (r, m)
    return best


def tokenize(line: str, rules=RULES, outer: str = "") -> list[tuple[str, str]]:
    """(text, scopes) pieces of one line, the way a TextMate engine scans it: at each position
    the pattern matching earliest wins, the first listed on a tie."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(line):
        found = _first(rules, line, pos)
        if found is None:
            out.append((line[pos:], outer))
            break
        r, m = found
        if m.start() > pos:
            out.append((line[pos : m.start()], outer))
        scope = (outer + " " + r.get("name", "")).strip()
        if "match" in r and "captures" in r:
            for g, cap in sorted(r["captures"].items(), key=lambda kv: m.start(int(kv[0]))):
                out.append((m.group(int(g)), (scope + " " + cap["name"]).strip()))
            pos = m.end()
        elif "match" in r:
            out.append((m.group(), scope))
            pos = m.end()
        else:  # begin ... end, with the inner patterns between
            out.append((m.group(), scope))
            pos = m.end()
            while pos <= len(line):
                end = r["end"].search(line, pos)
                inner = _first(r["inner"], line, pos)
                if inner is not None and (end is None or inner[1].start() < end.start()):
                    im = inner[1]
                    if im.start() > pos:
                        out.append((line[pos : im.start()], scope))
                    out.append((im.group(), scope + " " + inner[0]["name"]))
                    pos = im.end()
                    continue
                stop = end.start() if end else len(line)
                if stop > pos:
                    out.append((line[pos:stop], scope))
                if end is not None and end.end() > stop:
                    out.append((end.group(), scope))
                pos = end.end() if end else len(line)
                break
        if m.end() == m.start() and "begin" not in r:
            pos += 1
    return out


def scope_of(line: str, word: str) -> str:
    for text, scope in tokenize(line):
        if text == word:
            return scope
    raise AssertionError(f"no token {word!r} in {tokenize(line)}")


def _patterns(node):
    if isinstance(node, dict):
        for key in ("match", "begin", "end"):
            if key in node:
                yield node[key]
        for v in node.values():
            yield from _patterns(v)
    elif isinstance(node, list):
        for v in node:
            yield from _patterns(v)


def test_the_editor_files_load_and_name_each_other():
    package = json.loads((EDITOR / "package.json").read_text(encoding="utf-8"))
    json.loads((EDITOR / "language-configuration.json").read_text(encoding="utf-8"))
    [grammar] = package["contributes"]["grammars"]
    assert (EDITOR / grammar["path"]).is_file()
    assert grammar["scopeName"] == GRAMMAR["scopeName"] == "source.flow"
    assert package["contributes"]["languages"][0]["extensions"] == [".flow"]


def test_every_pattern_compiles():
    patterns = list(_patterns(GRAMMAR))
    assert len(patterns) > 20
    for p in patterns:
        re.compile(p)


def test_the_keywords_are_the_grammars_and_the_specs():
    words = grammar_keywords()
    assert {"match", "guard", "pub", "true"} <= words
    spec = (ROOT / "docs" / "spec" / "grammar.md").read_text(encoding="utf-8")
    [listed] = re.findall(r"\*\*Keywords:\*\* `([a-z ]+)`", spec)
    assert set(listed.split()) == words


@pytest.mark.parametrize("word", sorted(grammar_keywords()))
def test_each_keyword_of_the_grammar_is_highlighted_as_one(word):
    scope = scope_of(f"{word} ", word)
    assert scope.split()[-1].startswith(("keyword.", "storage.modifier.", "constant.language.")), scope
    assert scope_of(f"x{word}", f"x{word}") == ""  # a name containing it is not a keyword


@pytest.mark.parametrize(
    ("line", "word", "scope"),
    [
        (
            "// a comment with match and 12",
            "// a comment with match and 12",
            "comment.line.double-slash.flow",
        ),
        ('let t = "a \\n {b}" // c', "\\n", "string.quoted.double.flow constant.character.escape.flow"),
        ('let t = "a\\u{1F600}"', "\\u{1F600}", "string.quoted.double.flow constant.character.escape.flow"),
        ('let t = "a\\q"', "\\q", "string.quoted.double.flow invalid.illegal.escape.flow"),
        ('let t = "match"', "match", "string.quoted.double.flow"),
        ('let b = b"\\x00"', "\\x00", "string.quoted.double.bytes.flow constant.character.escape.flow"),
        ("let d = 250ms", "250ms", "constant.numeric.duration.flow"),
        ("let n = 0xff + 1_000", "0xff", "constant.numeric.hex.flow"),
        ("let n = 0xff + 1_000", "1_000", "constant.numeric.integer.flow"),
        ("let n = 2.5", "2.5", "constant.numeric.decimal.flow"),
        (
            "@tool pub flow search(q: Text) -> Result<Text, Text> !tool",
            "@tool",
            "entity.name.function.decorator.annotation.flow",
        ),
        (
            "@tool pub flow search(q: Text) -> Result<Text, Text> !tool",
            "!tool",
            "storage.modifier.effect.flow",
        ),
        ("@tool pub flow search(q: Text) -> Result<Text, Text> !tool", "search", "entity.name.function.flow"),
        ("@tool pub flow search(q: Text) -> Result<Text, Text> !tool", "Result", "entity.name.type.flow"),
        ("@tool pub flow search(q: Text) -> Result<Text, Text> !tool", "->", "keyword.operator.flow"),
        ("pub type Report { Resolved(Text), Unanswered }", "Report", "entity.name.type.flow"),
        ("pub type Report { Resolved(Text), Unanswered }", "Resolved", "entity.name.tag.constructor.flow"),
        ("    Ok(Search(query)) => work(ticket)", "Ok", "entity.name.tag.constructor.flow"),
        ("    Ok(Search(query)) => work(ticket)", "work", "entity.name.function.call.flow"),
        ("    Err(_) => None,", "None", "entity.name.tag.constructor.flow"),
        ("    Err(_) => None,", "_", "variable.language.wildcard.flow"),
        ("    guard round <= 10 else { return GaveUp(notes) }", "<=", "keyword.operator.flow"),
    ],
)
def test_sample_lines_get_their_scopes(line, word, scope):
    assert scope_of(line, word).split()[-1] == scope.split()[-1]
    assert scope_of(line, word) == scope or scope_of(line, word).endswith(scope)
