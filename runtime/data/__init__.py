"""flowrt.data, floor 1 of the runtime: Flow data and the vocabulary every floor above speaks.

Values and their classes (values, numtext, ops), type descriptors and admission (typedesc,
bounds, decoding), the facts a history is made of (facts), the requests generated code yields
(requests), task handles as data (tasks), std's `@lang` bodies (lang, lang_task), loading a
generated package (generated), and the exit codes (exit_codes).

Floors, lowest first: data < history < engine < host (then flowrt.abi and the package's own
names on top). A module imports only from its own floor or lower ones; tests/test_layering.py
holds that. This floor imports nothing from history, engine or host.
"""
