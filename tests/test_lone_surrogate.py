"""A lone surrogate in a source (E011): Flow text is Unicode scalar values, and a surrogate has no
UTF-8 form, so a literal holding one could be neither hashed into the program's identity, stored,
printed nor sent to a Tool. It is refused where it is, as a diagnostic; nothing after the parser
(identity, codegen, value text, the store) ever sees one."""

import json
import os

from click.testing import CliRunner

from flow2py.check import check_program
from flow2py.cli import main
from flow2py.diagnostics import render_text, to_json


def test_lone_surrogate_in_a_text_literal_is_refused_where_it_is():
    r = check_program("main.flow", source='pub flow main() -> Text = "a\ud800b"\n')
    [d] = r.diagnostics
    assert (d.code, d.span.line, d.span.column) == ("E011", 1, 29)
    assert "U+D800" in d.message
    # what the checker renders and reports encodes as UTF-8 (the source shown is the parsed text)
    render_text(r.diagnostics, r.sources).encode("utf-8")
    json.loads(to_json(r.diagnostics))


def test_lone_surrogates_in_bytes_literals_and_comments_are_each_reported():
    src = 'pub flow main() -> Bytes = b"\udfff" // \ud83d\n'
    r = check_program("main.flow", source=src)
    assert [(d.code, d.span.column) for d in r.diagnostics] == [("E011", 30), ("E011", 36)]


def test_a_file_whose_bytes_encode_a_surrogate_gets_e011_not_a_traceback(tmp_path):
    path = tmp_path / "main.flow"
    path.write_bytes(b'pub flow main() -> Text = "caf\xed\xa0\x80"\n')
    r = CliRunner().invoke(main, ["check", str(path)])
    assert r.exit_code == 1
    assert "error[E011]" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    assert [d["code"] for d in json.loads(r.stdout)] == ["E011"]


def test_a_run_of_such_a_program_is_refused_and_records_nothing(tmp_path):
    path = tmp_path / "main.flow"
    path.write_bytes(b'pub flow main() -> Text = "caf\xed\xa0\x80"\n')
    db = tmp_path / "r.db"
    r = CliRunner().invoke(main, ["run", str(path), "--store", str(db)])
    assert r.exit_code == 1 and "E011" in r.output
    assert "internal error" not in r.output
    assert not os.path.exists(db)
