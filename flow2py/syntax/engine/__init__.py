"""The parser engine: a scanner over grammar.lark's terminals with Go-style separator
insertion (scanner.py), an LALR loop over the table lark builds (lalr.py) and the reduce
callbacks that hand each reduced rule to an AST builder (reduce.py).

Nothing here knows Flow's syntax tree: the builder (flow2py/syntax/build.py) has one method per
named rule of grammar.lark, called with the rule's span and kept children. lark is reached only
through lark_tables.py. Error recovery, the cutting into declarations and the words of the
messages are the front's (flow2py/syntax/parser.py, messages.py).
"""
