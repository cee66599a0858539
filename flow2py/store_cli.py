"""`flow2py store copy SRC DST [--run ID ...]` (docs/spec/trace.md "Copying runs between stores").
`register(main, guard)` adds the `store` group to the CLI. Only click is imported at module level."""

from __future__ import annotations

import sys
import time

import click


def register(main, guard) -> None:
    """Add `store copy` to the CLI group `main`; `guard` turns refusals into exit codes."""

    @main.group(name="store")
    def store() -> None:
        """Work on whole stores (SQLite files or postgresql:// URLs)."""

    @store.command(name="copy")
    @click.argument("src")
    @click.argument("dst")
    @click.option("--run", "runs", multiple=True, help="Copy only this run (repeatable; default: every run).")
    @guard
    def copy(src, dst, runs):
        """Copy runs from store SRC to store DST, byte for byte with their chain hashes (either may be
        a SQLite path or a postgresql:// URL; DST is created if it is a new SQLite file). A run DST
        already holds is refused, never overwritten; each copy is verified against SRC's head.
        Exit 0 all copied, 1 any refused, 6 a run broken in SRC or its copy failing verify."""
        from flowrt.data.exit_codes import EXIT_BROKEN, EXIT_OK, EXIT_REFUSED
        from flowrt.history.store_copy import copy_runs, run_ids
        from flowrt.host.operations import Refused, open_store

        s = open_store(src, create=False, readonly=True)
        d = open_store(dst, create=True)
        try:
            names = list(dict.fromkeys(runs))
            if names:
                held = set(run_ids(s))
                missing = [r for r in names if r not in held]
                if missing:
                    raise Refused(f"SRC holds no run {', '.join(missing)}; nothing was copied")
            t0 = time.perf_counter()

            def report(c):
                click.echo(c.line if c.ok else f"flow2py: {c.line}", err=not c.ok)

            done = copy_runs(s, d, names or None, report=report)
            secs = time.perf_counter() - t0
            ok = [c for c in done if c.ok]
            facts = sum(c.facts for c in ok)
            click.echo(f"copied {len(ok)} of {len(done)} runs ({facts} facts) in {secs:.1f} s")
        finally:
            s.close()
            d.close()
        if any(c.broken for c in done):
            sys.exit(EXIT_BROKEN)
        sys.exit(EXIT_OK if len(ok) == len(done) else EXIT_REFUSED)
