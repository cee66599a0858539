"""The `flow2py` command line (click). Its exit codes are flowrt.data.exit_codes's, and only
those (docs/spec/execution.md "Exit codes").

Every refusal is a message on stderr that says what and where; nothing recorded is rewritten.

Importing this module loads click and nothing heavy: the compiler (lark, libcst, black) and the
runtime are imported by the commands that use them, so `flow2py --version` and `--help` start
fast (tests/test_program_cache.py holds it). A command module registered here keeps to the same.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import click

from flow2py import __version__
from flow2py.diagnostics import render_text, to_json

# The states a run can be in (flowrt.host.runs_view.STATES, which tests/test_cli_output.py holds
# equal): written out here so that declaring `runs --state` imports no runtime.
RUN_STATES = ("submitted", "running", "paused", "completed", "faulted", "halted")


STORE = click.option(
    "--store",
    "store_path",
    default=None,
    envvar="FLOW2PY_STORE",
    help="SQLite file or postgresql:// URL (default .flow/runs.db; env FLOW2PY_STORE).",
)
TOOLS = click.option("--tools", "tools", multiple=True, help="Python file or module binding Tools.")
CHECKPOINT_EVERY = click.option(
    "--checkpoint-every",
    type=click.IntRange(min=1),
    default=None,
    help="Take a checkpoint at an eligible tail call once N facts were recorded since the last.",
)


def _codes():
    """flowrt's exit codes (importing flowrt is what a command pays, not `--version`)."""
    from flowrt.data import exit_codes

    return exit_codes


def _fail(message: str, code: int | None = None) -> None:
    click.echo(f"flow2py: {message}", err=True)
    sys.exit(_codes().EXIT_REFUSED if code is None else code)


def _print_diagnostics(result, fmt: str) -> None:
    if fmt == "json":
        click.echo(to_json(result.diagnostics))
    else:
        click.echo(render_text(result.diagnostics, result.sources), err=True, nl=False)


def _guard(fn):
    """Turn the host's refusals into a message and exit code; never a traceback. A failure the
    host did not foresee is a bug in flow2py: it is reported in one line (FLOW2PY_DEBUG=1 shows
    the traceback) rather than as a Python traceback aimed at the author."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from bdb import BdbQuit

        from flowrt.host import Refused

        try:
            return fn(*args, **kwargs)
        except Refused as e:
            if e.diagnostics:
                click.echo(str(e), err=True)
                sys.exit(e.exit_code)
            _fail(str(e), e.exit_code)
        except KeyboardInterrupt:  # outside a live run's drive (which reports the halted run itself)
            _fail("interrupted (Ctrl-C)", _codes().EXIT_HALTED)
        except BdbQuit:  # pdb quit outside a live run's drive (docs/spec/debugging.md)
            _fail("the debugger was quit", _codes().EXIT_HALTED)
        except Exception as e:  # a bug or an unforeseen state: one line, never a traceback
            if os.environ.get("FLOW2PY_DEBUG"):
                raise
            _fail(f"internal error: {type(e).__name__}: {e} (set FLOW2PY_DEBUG=1 for the traceback)")

    return wrapper


@click.group()
@click.version_option(version=__version__, prog_name="flow2py")
def main() -> None:
    """flow2py: check, build, run, resume, replay and inspect Flow programs."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--checkpoints", is_flag=True, help="List the tail calls where a checkpoint can be taken.")
@_guard
def check(paths, fmt, checkpoints):
    """Check programs; print every independent diagnostic."""
    from flowrt.data.exit_codes import EXIT_OK, EXIT_REFUSED
    from flow2py import host, inspect

    failed = False
    all_diags, all_sources, sites = [], {}, []
    for path in paths:
        result = host.check(path)
        all_diags += result.diagnostics
        all_sources.update(result.sources)
        if result.diagnostics:
            failed = True
        elif checkpoints:
            sites += inspect.checkpoint_sites(result.program)
    if fmt == "json":
        if checkpoints and not failed:
            click.echo(json.dumps(sites, indent=2))
        else:
            click.echo(to_json(all_diags))
    else:
        if all_diags:
            click.echo(render_text(all_diags, all_sources), err=True, nl=False)
        elif checkpoints:
            for s in sites:
                mark = "checkpoint" if s["eligible"] else "no checkpoint"
                click.echo(f"{s['file']}:{s['line']}:{s['column']}: {mark}: {s['call']}: {s['reason']}")
    sys.exit(EXIT_REFUSED if failed else EXIT_OK)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--unsafe", is_flag=True, help="Also apply fixes that need a choice (review them).")
@click.option("--dry-run", is_flag=True, help="Print the changes as a unified diff; write nothing.")
@_guard
def fix(paths, unsafe, dry_run):
    """Apply the fixes diagnostics carry; check again and repeat until nothing changes.

    Only safe fixes (those that need no choice) unless --unsafe. Each fix applied and every
    diagnostic left are reported on stderr, as `check` reports them; --dry-run prints a
    unified diff on stdout instead of writing. Exit 0 when nothing is left, 1 otherwise
    (docs/spec/diagnostics.md, "Fixes and flow2py fix")."""
    from flowrt.data.exit_codes import EXIT_OK, EXIT_REFUSED
    from flow2py import fix as fixing

    for path in paths:
        if not os.path.isfile(path):
            _fail(f"{path}: " + ("not a file" if os.path.exists(path) else "no such file"))
    report = fixing.fix_program([os.path.normpath(p) for p in paths], unsafe=unsafe)
    if dry_run:
        click.echo(fixing.unified_diff(report), nl=False)
    else:
        try:
            fixing.write_files(report)
        except fixing.Changed as e:
            _fail(str(e))
        except OSError as e:
            _fail(f"cannot write the fixed files: {e}")
    verb = "would fix" if dry_run else "fixed"
    for a in report.applied:
        sp = a.diagnostic.span
        click.echo(f"{verb} {sp.file}:{sp.line}:{sp.column}: [{a.diagnostic.code}] {a.fix.message}", err=True)
    n = len(report.applied)
    left = report.diagnostics
    click.echo(
        f"{verb} {n} mistake{'s' if n != 1 else ''} in {len(report.texts)} file{'s' if len(report.texts) != 1 else ''}"
        + (f"; {len(left)} left:" if left else "; nothing left"),
        err=True,
    )
    if left:
        click.echo(render_text(left, report.sources), err=True, nl=False)
    sys.exit(EXIT_REFUSED if left else EXIT_OK)


@main.command()
@click.argument("path", type=click.Path())
@click.option("-o", "--out", "out_dir", required=True, type=click.Path(), help="Output folder.")
@click.option(
    "--name", "package_name", default=None, help="Python package name (default: the entry file's stem)."
)
@_guard
def build(path, out_dir, package_name):
    """Emit an importable, black-formatted Python package."""
    from flowrt.data.exit_codes import EXIT_REFUSED
    from flow2py import host

    result = host.check(path)
    if result.diagnostics:
        _print_diagnostics(result, "text")
        sys.exit(EXIT_REFUSED)
    pkg = host.build(result.program, out_dir, package_name)
    click.echo(f"built {pkg}")


@main.command()
@click.argument("path", type=click.Path())
@click.option(
    "--tools", "tools", multiple=True, help="Also show where each Tool would run with these bindings."
)
@_guard
def tools(path, tools):
    """List every Tool the program can reach, with its signature (and, with --tools or when a
    module repository ships default bindings, where it runs)."""
    from flowrt.data.exit_codes import EXIT_REFUSED
    from flow2py import host, inspect

    result = host.check(path)
    if result.diagnostics:
        _print_diagnostics(result, "text")
        sys.exit(EXIT_REFUSED)
    # a program that uses repository modules may be bound by their default binding files
    sites = tools or result.program.commits
    for line in host.tool_sites(path, tools) if sites else inspect.tool_signatures(result.program):
        click.echo(line)


def _report(outcome, tools=(), store_path=None, checkpoint_every=None, name_run=False) -> None:
    """Print a run's outcome and exit with its code: a paused run's open calls with the commands
    that answer them (flow2py/cli_output.py); with `name_run` (run, fork) the id of a run that
    ended, on stderr; a halted run also gets the command that continues it."""
    from flow2py import cli_output
    from flowrt.data.exit_codes import EXIT_FAULTED, EXIT_HALTED, EXIT_OK

    how = cli_output.Invocation(tuple(tools), store_path, checkpoint_every)
    calls = getattr(outcome, "calls", ())
    click.echo(cli_output.paused_text(outcome.run_id, calls, how) if calls else outcome.text)
    if name_run and outcome.run_id and outcome.exit_code in (EXIT_OK, EXIT_FAULTED):
        state = "completed" if outcome.exit_code == EXIT_OK else "faulted"
        click.echo(cli_output.finished_line(state, outcome.run_id), err=True)
    if outcome.exit_code == EXIT_HALTED and outcome.run_id:
        words = ["flow2py", "resume", outcome.run_id]
        for t in tools:
            words += ["--tools", t]
        if store_path:
            words += ["--store", store_path]
        click.echo("to continue it: " + " ".join(shlex.quote(w) for w in words))
    sys.exit(outcome.exit_code)


def _check_break(spec: str) -> None:
    """Refuse a `--break FILE:LINE` that names no line of an existing file (before anything runs)."""
    file, colon, line = spec.rpartition(":")
    if not colon or not line.isdigit() or int(line) < 1:
        _fail(f"--break {spec}: expected FILE:LINE, a Flow file (or a generated .py file) and a line number")
    try:
        with open(file, encoding="utf-8") as f:
            count = sum(1 for _ in f)
    except (OSError, UnicodeDecodeError) as e:
        _fail(f"--break {spec}: cannot read {file}: {getattr(e, 'strerror', None) or e}")
    if int(line) > count:
        _fail(f"--break {spec}: {file} has {count} lines")


@main.command()
@click.argument("path", type=click.Path())
@click.option("--entry", default="main", show_default=True)
@click.option("--input", "input_json", default=None, help="JSON object keyed by the entry's parameter names.")
@TOOLS
@STORE
@click.option("--run-id", default=None)
@CHECKPOINT_EVERY
@click.option("--pdb", "post_mortem", is_flag=True, help="On a fault, open pdb at the faulting Flow frame.")
@click.option("--trace", is_flag=True, help="Open pdb at the run's first Flow line.")
@click.option(
    "--break",
    "breaks",
    multiple=True,
    metavar="FILE:LINE",
    help="Stop in pdb at a line of a Flow file (or of a generated package's .py file).",
)
@_guard
def run(path, entry, input_json, tools, store_path, run_id, checkpoint_every, post_mortem, trace, breaks):
    """Start a run live."""
    from flow2py import host
    from flow2py.cli_progress import shown as progress_shown
    from flowrt.engine.flowpdb import debugging

    for b in breaks:
        _check_break(b)
    with progress_shown(store_path), debugging(breaks, trace, post_mortem):
        outcome = host.start(
            path,
            entry=entry,
            input_json=input_json,
            tools=tools,
            store_path=store_path,
            run_id=run_id,
            checkpoint_every=checkpoint_every,
        )
    _report(outcome, tools, store_path, checkpoint_every, name_run=True)


@main.command()
@click.argument("run_id")
@click.option("--reply", "replies", multiple=True, help="CALL_ID=JSON: deliver a reply to an open call.")
@click.option("--resend", "resend", multiple=True, help="CALL_ID: send an open call again under the same id.")
@TOOLS
@STORE
@CHECKPOINT_EVERY
@_guard
def resume(run_id, replies, resend, tools, store_path, checkpoint_every):
    """Deliver replies and continue live from the latest checkpoint."""
    from flow2py import host
    from flow2py.cli_progress import shown as progress_shown
    from flowrt.engine.flowpdb import debugging

    with progress_shown(store_path), debugging():
        outcome = host.resume(
            run_id,
            replies=replies,
            resend=resend,
            tools=tools,
            store_path=store_path,
            checkpoint_every=checkpoint_every,
        )
    _report(outcome, tools, store_path, checkpoint_every)


@main.command()
@click.argument("run_id")
@STORE
@_guard
def replay(run_id, store_path):
    """Re-run over the stored history with nothing bound; print the verdict."""
    from flow2py import host

    _report(host.replay(run_id, store_path=store_path))


@main.command()
@click.argument("run_id")
@STORE
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text")
@click.option(
    "--details", is_flag=True, help="Show under each failed call the exception and traceback the host kept."
)
@_guard
def history(run_id, store_path, fmt, details):
    """Show the facts of a run."""
    from flow2py import host

    if details:  # the host's evidence of failed calls under their facts (text only)
        click.echo(host.history(run_id, store_path=store_path, fmt=fmt, details=True), nl=False)
        return
    try:
        for chunk in host.history_chunks(run_id, store_path=store_path, fmt=fmt):
            click.echo(chunk, nl=False)  # as it is read: a history of any length in constant memory
    except BrokenPipeError:  # `flow2py history RUN | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@main.command()
@click.argument("run_id")
@click.option("--checkpoint", "checkpoint", required=True, type=int)
@click.option("--program", "program_path", default=None, type=click.Path())
@click.option("--input", "input_json", default=None)
@TOOLS
@STORE
@click.option("--run-id", "new_run_id", default=None)
@CHECKPOINT_EVERY
@_guard
def fork(run_id, checkpoint, program_path, input_json, tools, store_path, new_run_id, checkpoint_every):
    """Start a new run from a checkpoint of another."""
    from flow2py import host
    from flow2py.cli_progress import shown as progress_shown
    from flowrt.engine.flowpdb import debugging

    with progress_shown(store_path), debugging():
        outcome = host.fork(
            run_id,
            checkpoint,
            program_path=program_path,
            input_json=input_json,
            tools=tools,
            store_path=store_path,
            new_run_id=new_run_id,
            checkpoint_every=checkpoint_every,
        )
    _report(outcome, tools, store_path, checkpoint_every, name_run=True)


@main.command()
@click.argument("run_id")
@click.option("--head", default=None, help="A head hash held elsewhere.")
@STORE
@_guard
def verify(run_id, head, store_path):
    """Check the chain, blobs and sources; say what was checked and what taken on trust."""
    from flowrt.data.exit_codes import EXIT_BROKEN, EXIT_OK
    from flow2py import host

    ok, message = host.verify(run_id, head=head, store_path=store_path)
    click.echo(message)
    sys.exit(EXIT_OK if ok else EXIT_BROKEN)


@main.command()
@click.argument("run_id")
@click.option("--value", "value_hash", required=True, help="blake3 hash of the stored value.")
@STORE
@_guard
def redact(run_id, value_hash, store_path):
    """Replace a stored value with a hole."""
    from flow2py import host

    click.echo(host.redact(run_id, value_hash, store_path=store_path))


@main.command()
@click.argument("run_id")
@click.option(
    "--delete", is_flag=True, help="Drop the archived facts instead of keeping them in the archive table."
)
@STORE
@_guard
def archive(run_id, delete, store_path):
    """Archive the facts before the latest checkpoint (verified first; those a resume still reads stay)."""
    from flow2py import host

    click.echo(host.archive(run_id, delete=delete, store_path=store_path))


@main.command()
@STORE
@click.option("--state", type=click.Choice(RUN_STATES), default=None, help="Only the runs in this state.")
@click.option("--program", default=None, help="Only the runs of this program (its name or identity prefix).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@_guard
def runs(store_path, state, program, fmt):
    """List runs: state, program, entry, when started, since when paused and on which Tools."""
    from flow2py import cli_output, host

    views = host.runs(store_path=store_path, state=state, program=program)
    if fmt == "json":
        click.echo(cli_output.runs_json(views))
    else:
        for line in cli_output.runs_text(views):
            click.echo(line)


@main.command(name="test")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@_guard
def test_cmd(paths):
    """Run @test functions (of each file, and of every test_*.flow below each directory) with their
    @fake bindings, on virtual time."""
    from flowrt.data.exit_codes import EXIT_OK, EXIT_REFUSED
    from flow2py import testing

    ok = testing.run_tests(paths, echo=click.echo)
    sys.exit(EXIT_OK if ok else EXIT_REFUSED)


@main.command(name="fmt")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--check", is_flag=True, help="Write nothing; list the files that would change (exit 1 if any)."
)
@_guard
def fmt_cmd(paths, check):
    """Format Flow files in the canonical layout, keeping every comment (a directory: every
    .flow file below it; `-`: standard input to standard output)."""
    from flowrt.data.exit_codes import EXIT_OK, EXIT_REFUSED
    from flow2py.format.files import format_paths

    outcome = format_paths(paths, check, click.echo)
    sys.exit(EXIT_OK if outcome.ok and not (check and outcome.changed) else EXIT_REFUSED)


@main.command()
def lsp():
    """Serve the Language Server Protocol over stdio (docs/spec/editor.md)."""
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        _fail("the language server needs pygls: pip install 'flow2py[lsp]'")
    from flow2py.lsp.server import main as serve

    serve()


# worker, submit, reply, cancel (flow2py/worker_cli.py imports the runtime only when one runs)
from flow2py import worker_cli  # noqa: E402

worker_cli.register(main, _guard)

# store copy (flow2py/store_cli.py)
from flow2py import store_cli  # noqa: E402

store_cli.register(main, _guard)


if __name__ == "__main__":
    main()
