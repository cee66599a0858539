"""flowrt.history, floor 2 of the runtime: what is recorded, and reading it back strictly.

The encoding of facts and values (trace, strict, stored), host tokens (tokens), the SQLite store
and its chain (store, integrity), and the history's text/JSONL/HTML views (history_view).

Floors, lowest first: data < history < engine < host. This floor imports flowrt.data only
(tests/test_layering.py).
"""
