"""`flow2py lsp`, the language server (docs/spec/editor.md): server.py speaks the protocol
(pygls), analysis.py answers from a check, incremental.py re-checks an edited document quickly,
client.py is a small client for the tests and the benchmark."""
