"""flow2py.pipeline: text -> modules -> checked program -> generated package -> loaded program, in one place."""

from pathlib import Path

import pytest
from flowrt.host import Refused

from flow2py import host, pipeline
from flow2py.pipeline import ProgramText

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "support" / "main.flow"

PROGRAM = "pub flow main(n: Int) -> Int = n + 1\n"


def _sources(program) -> dict[str, str]:
    """Module key -> text of every module, std's too: what a run's history stores."""
    return {k: m.ast.source for k, m in program.modules.items()}


def test_the_stages_called_one_by_one_give_the_program_compile_program_gives(tmp_path):
    path = tmp_path / "main.flow"
    path.write_text(PROGRAM)
    text = ProgramText(str(path))
    modules = pipeline.read(text)
    assert [m.key for m in modules.modules][-1] == "main" and modules.readable
    result = pipeline.check(modules)
    assert result.diagnostics == []
    program = pipeline.checked(result, text)
    package = pipeline.generate(program)
    assert package.name == f"_flow_{program.identity[:16]}"
    assert "__init__.py" in package.files and "main.py" in package.files
    loaded = pipeline.compile_program(text)
    assert loaded.checked.identity == program.identity
    fn, params = loaded.entry("main")
    assert [name for name, _ in params] == ["n"]
    assert fn(41) == 42


def test_a_program_loaded_once_in_a_process_is_found_again_not_regenerated():
    first = host.compile_path(str(EXAMPLE))
    assert pipeline.already_loaded(first.checked) is first.program
    again = pipeline.compile_program(ProgramText(str(EXAMPLE)))
    assert again.program is first.program


def test_a_missing_entry_file_is_refused_before_checking(tmp_path):
    with pytest.raises(Refused, match=r"main\.flow: no such file"):
        pipeline.read(ProgramText(str(tmp_path / "main.flow")))


def test_a_program_that_does_not_check_stops_the_pipeline_with_every_diagnostic(tmp_path):
    path = tmp_path / "main.flow"
    path.write_text("pub flow main() -> Int = missing_one() + missing_two()\n")
    with pytest.raises(Refused) as e:
        pipeline.compile_program(ProgramText(str(path)))
    assert e.value.diagnostics
    assert "missing_one" in str(e.value) and "missing_two" in str(e.value)


def test_stored_sources_that_no_longer_check_are_refused_naming_the_run_and_the_first_diagnostic(tmp_path):
    path = tmp_path / "main.flow"
    path.write_text(PROGRAM)
    sources = _sources(host.compile_path(str(path)).checked)
    sources["main"] = "pub flow main() -> Int = nope()\n"
    text = ProgramText.stored("r-1", "0" * 64, sources, {})
    with pytest.raises(
        Refused, match=r"^run r-1: its stored program no longer checks: error\[E\d+\]: .*nope"
    ) as e:
        pipeline.compile_program(text)
    assert "\n" not in str(e.value)


def test_stored_sources_giving_another_program_identity_are_refused(tmp_path):
    path = tmp_path / "main.flow"
    path.write_text(PROGRAM)
    program = host.compile_path(str(path)).checked
    stored = ProgramText.stored("r-2", "f" * 64, _sources(program), {"entry_module": "main"})
    with pytest.raises(
        Refused,
        match=rf"^run r-2: the stored sources give program {program.identity[:12]}, "
        r"but the run started on ffffffffffff; refusing to continue",
    ):
        pipeline.compile_program(stored)


def test_stored_sources_with_the_run_s_identity_compile_to_that_program(tmp_path):
    path = tmp_path / "main.flow"
    path.write_text(PROGRAM)
    program = host.compile_path(str(path)).checked
    stored = ProgramText.stored("r-3", program.identity, _sources(program), {"entry_module": "main"})
    assert stored.entry_path == "main.flow" and stored.sources is not None
    assert pipeline.compile_program(stored).checked.identity == program.identity


def test_modules_that_do_not_parse_are_checked_for_what_parsed_and_never_compiled(tmp_path):
    path = tmp_path / "main.flow"
    path.write_text('pub flow main() -> Int = (\npub flow other() -> Int = "one"\n')
    modules = pipeline.read(ProgramText(str(path)))
    assert not modules.readable and modules.diagnostics
    result = pipeline.check(modules)
    assert result.program is None
    assert set(modules.diagnostics) < set(result.diagnostics)
    # the broken `main` says nothing more than its syntax error; the clean `other` is checked
    assert [d.code for d in result.diagnostics] == ["E005", "E201"]


def test_checking_the_same_modules_twice_gives_the_same_answer(tmp_path):
    path = tmp_path / "main.flow"
    path.write_text("pub flow main() -> Int = missing_one()\n")
    modules = pipeline.read(ProgramText(str(path)))
    assert modules.readable and modules.diagnostics == ()
    first, again = pipeline.check(modules), pipeline.check(modules)
    assert first.diagnostics == again.diagnostics and len(first.diagnostics) == 1
    assert modules.diagnostics == ()  # checking reports into its own result, never into its input
