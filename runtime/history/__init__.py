"""flowrt.history, floor 2 of the runtime: what is recorded, and reading it back strictly.

The encoding of facts and values (trace, strict, stored), host tokens (tokens), the SQLite store
(store, made of: schema, history_store and call_facts, recorder, host_records, store_errors),
its integrity checks (integrity), and the history's text/JSONL/HTML views
(history_view).

Floors, lowest first: data < history < engine < host. This floor imports flowrt.data only
(tests/test_layering.py).
"""
