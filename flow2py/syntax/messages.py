"""Words for syntax errors: what the parser expected and what it found, never a token dump; and
the one place where the syntax diagnostics (flow2py/syntax/codes.py) get their messages."""

from __future__ import annotations

from flow2py.syntax import codes
from flow2py.syntax.engine.lark_tables import terminals
from flow2py.syntax.engine.scanner import Tok

_EXPR = {"INT", "TEXT", "LPAR", "LSQB", "IF", "MATCH"}
_PATTERN = {"UNDERSCORE", "LOWER", "UPPER", "LPAR", "LSQB"}
_TYPE = {"UPPER", "LPAR", "LOWER"}
_DECL = {"USE", "TYPE", "FLOW", "AT"}
_OPERATORS = {
    "PLUS",
    "MINUS",
    "STAR",
    "SLASH",
    "PERCENT",
    "PLUSPLUS",
    "OROR",
    "ANDAND",
    "EQEQ",
    "NOTEQ",
    "LESSTHAN",
    "LESSEQ",
    "MORETHAN",
    "MOREEQ",
    "QMARK",
    "DOT",
}

_WORDS = {
    "LOWER": "a name",
    "UPPER": "a capitalised name",
    "INT": "a number",
    "DECIMAL": "a number",
    "DURATION": "a duration",
    "TEXT": "a text literal",
    "BYTES": "a bytes literal",
    "_SEP": "a line break or `;`",
    "$END": "the end of the declaration",
    "LPAR": "`(`",
    "ARROW": "`->`",
    "FATARROW": "`=>`",
}

# Order in which expected items are listed (most helpful first).
_ORDER = [
    "RPAR",
    "RSQB",
    "RBRACE",
    "COMMA",
    "EQUAL",
    "COLON",
    "ARROW",
    "FATARROW",
    "LBRACE",
    "LPAR",
    "ELSE",
    "LOWER",
    "UPPER",
    "_SEP",
]


def _token_words(name: str) -> str:
    if name in _WORDS:
        return _WORDS[name]
    for t in terminals()[0]:
        if t.name == name and t.is_string:
            return f"`{t.value}`"
    return name.lower()


def describe_expected(expected) -> str:
    exp = set(expected)
    items: list[str] = []
    if _EXPR <= exp:
        items.append("an expression")
        exp -= _EXPR | {
            "LOWER",
            "UPPER",
            "DECIMAL",
            "DURATION",
            "BYTES",
            "TRUE",
            "FALSE",
            "MINUS",
            "BANG",
            "LBRACE",
            "FLOW",
            "RETURN",
        }
    elif _PATTERN <= exp:
        items.append("a pattern")
        exp -= _PATTERN | {"INT", "DECIMAL", "DURATION", "TEXT", "BYTES", "TRUE", "FALSE", "MINUS"}
    elif _TYPE <= exp and "INT" not in exp:
        items.append("a type")
        exp -= _TYPE
    if exp & _OPERATORS:
        if exp & {"_SEP", "$END"}:
            # An expression could end here: the rest of the set is noise from merged states.
            return "an operator or " + (
                "the end of the line" if "_SEP" in exp else "the end of the declaration"
            )
        items.append("an operator")
        exp -= _OPERATORS
    if _DECL <= exp:
        items.append("a declaration (`flow`, `type`, `use` or an annotation)")
        exp -= _DECL | {"PUB", "OPAQUE"}
    rest = sorted(exp, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), n))
    words: list[str] = []
    for n in rest:
        w = _token_words(n)
        if w not in words and w not in items:
            words.append(w)
    items += words
    if len(items) > 5:
        items = items[:5]
        items.append("…")
    if not items:
        return "something else"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]


def describe_token(tok: Tok | codes.Lexeme | None) -> str:
    if tok is None:
        return "nothing"
    if tok.type == "$END":
        return "the end of the declaration"
    if tok.type == "_SEP":
        return "`;`" if tok.value == ";" else "the end of the line"
    value = str(tok.value)
    if len(value) > 30:
        value = value[:27] + "..."
    if tok.type in ("LOWER", "UPPER"):
        return f"the name `{value}`"
    if tok.type in ("INT", "DECIMAL", "DURATION", "TEXT", "BYTES"):
        return f"`{value}`"
    return f"`{value}`"


# ---------------------------------------------------------------------------------------------
# The messages of the syntax diagnostics (flow2py/syntax/codes.py), each from its fields.


def message(d: codes.SyntaxData) -> str:
    """The text of one syntax diagnostic, from its typed object."""
    match d:
        case codes.BadCharacter(char=ch):
            shown = ch if ch.isprintable() else repr(ch)[1:-1]
            return f"unexpected character `{shown}`: no Flow token starts with it"
        case codes.UnterminatedText():
            return 'this text literal is not closed: add `"` before the end of the line'
        case codes.BadEscape(escape="u", in_bytes=False):
            return "a `\\u` escape is written `\\u{1F600}`: 1 to 6 hex digits naming a Unicode scalar value"
        case codes.BadEscape(escape=e, in_bytes=False):
            return f'unknown escape `\\{e}`: use one of \\n \\t \\r \\\\ \\" \\0 \\u{{...}}'
        case codes.BadEscape(escape=e, in_bytes=True):
            return f'unknown escape `\\{e}` in bytes: use \\xNN or one of \\n \\t \\r \\\\ \\" \\0'
        case codes.UnexpectedToken(found=tok, opener=opener) if opener:
            return f"this `{tok.value}` has no matching opening `{opener}`"
        case codes.UnexpectedToken(found=tok, expected=expected, after=prev):
            after = f" after {describe_token(prev)}" if prev is not None else ""
            return f"expected {describe_expected(expected)}{after}, found {describe_token(tok)}"
        case codes.UnclosedBracket(opener=opener, closer=closer):
            return f"this `{opener}` is never closed (expected `{closer}` before the end of the declaration)"
        case codes.MixedTypeBody(type_name=name, field=fld, ctor=ctor):
            return (
                f"type `{name}` mixes record fields (`{fld}`) and enum constructors "
                f"(`{ctor}`): a record has only `name: Type` fields, an enum only constructors"
            )
        case codes.UnknownEffect(name=name):
            return f"unknown effect `!{name}`: write `!tool`, `!pure`, or nothing (pure)"
        case codes.MisplacedRest(place="record", kept=True):
            return "Flow writes a record literal's base `..` first, before the fields that replace its values"
        case codes.MisplacedRest(place="record"):
            return "`..base` is written once, as the first entry of a record literal"
        case codes.MisplacedRest(place=place):
            return f"`..` comes once, last, in a {place} pattern"
        case codes.TooDeep(limit=None):
            return "this declaration nests too deeply to be parsed; split it into smaller functions"
        case codes.TooDeep(limit=limit):
            return f"this declaration nests brackets more than {limit} deep; split it into smaller functions"
        case codes.BadNumber(text=text):
            return f"`{text}` is not a well-formed number"
        case codes.LoneSurrogate(point=point):
            return (
                f"the source holds U+{point:04X}, a lone surrogate: not a Unicode scalar value, "
                f"so it cannot be Flow text (it has no UTF-8 form)"
            )
        case codes.ForeignSyntax():
            return _foreign(d)
    raise TypeError(f"no message for {type(d).__name__}")


# -- E012: what Flow writes instead of another language's habit (habits.py, habits_scanned.py) --

_LOOP_ANSWER = {
    "for": "Flow has no `for` loop: map or fold over the collection (`xs.map(flow(x) = ...)`, "
    "`xs.fold(init, flow(acc, x) = ...)`, `xs.each(flow(x) = ...)` for a Unit result), or write a "
    "tail-recursive function",
    "while": "Flow has no `while` loop: write a tail-recursive function (a call in tail position is a "
    "loop and never grows the stack), or fold over a list",
    "loop": "Flow has no `loop`: write a tail-recursive function (a call in tail position is a loop "
    "and never grows the stack)",
}

_FOREIGN_TYPE = {"struct": "a record", "enum": "an enum"}

_WHAT = {
    "Text": "text type",
    "Int": "integer type, of any size",
    "Bool": "truth-value type",
    "Decimal": "fractional number type (exact)",
    "Unit": "type of no value (`()`)",
}

_JOIN = '`++` (`"Hello, " ++ name ++ "!"`; a value that is not Text becomes text with `.to_text()`)'


def _typed_head(kind: str, habit: str, flow: str) -> str | None:
    if kind != "typed-head":
        return None
    return (
        f"Flow declares a function with `flow` and its result type after `->`: write "
        f"`flow f(...) -> {flow}`, not `{habit} f(...): ...`"
    )


def _foreign(d: codes.ForeignSyntax) -> str:
    habit, flow, name = d.habit, d.flow, d.name
    said = _where_a_value_goes(d.kind, habit, flow, name) or _typed_head(d.kind, habit, flow)
    if said is not None:
        return said
    match d.kind:
        case "writes":
            return f"Flow writes `{flow}`, not `{habit}`"
        case "not-compound":
            return f"Flow writes `{flow}`, not `{habit}` (`!` binds tighter than `not`, so the operand is parenthesised)"
        case "equality":
            return f"Flow writes `{flow}`, not `{habit}`: `{flow}` compares values exactly"
        case "const":
            return f"Flow writes `{flow}`, not `{habit}`: every binding is constant"
        case "mut":
            return "Flow has no `mut`: a binding never changes (write `let`; a later `let` of the same name shadows it)"
        case "assign":
            return (
                f"Flow values never change: `{name} = ...` cannot assign; bind a new value with "
                f"`let {name} = ...` (it shadows `{name}` until the end of the block) or use a new name"
            )
        case "update":
            return (
                f"Flow values never change: `{name} {d.op}= ...` cannot update `{name}`; bind a new value "
                f"with `let {name} = {name} {d.op} ...` or use a new name"
            )
        case "loop":
            return _LOOP_ANSWER[habit]
        case "lambda":
            return f"Flow writes a function value as `{flow} ...`, not `{habit} ...`"
        case "f-string-plain" if habit == "$":
            return 'Flow has no interpolated strings (`$"..."`): this one interpolates nothing, so it is plain text'
        case "f-string-plain":
            return "Flow has no f-strings: this one interpolates nothing, so it is plain text"
        case "f-string" if habit == "$":
            return 'Flow has no interpolated strings (`$"..."`): join text with ' + _JOIN
        case "f-string":
            return "Flow has no f-strings: join text with " + _JOIN
        case "fn-head":
            return f"Flow declares a function with `flow`, not `{habit}`"
        case "def-colon":
            written = f"`{habit} f(...): {name + ' ' if name else ''}e`"
            return f"Flow declares a function with `flow` and gives its body after `=`: write `flow f(...) = e`, not {written}"
        case "type-head":
            return f"Flow declares {_FOREIGN_TYPE[habit]} with `type`, not `{habit}`"
        case "import":
            return (
                'Flow imports a module with `use "path"` (`use "std@v1/list"`, `use "./planner"`), '
                f"and names what it exports qualified (`{name}.name`)"
            )
        case "top-level-value":
            return (
                f"Flow has no top-level values: write a function with no parameters "
                f"(`flow {name}() -> Type = ...`) and call it (`{name}()`)"
            )
        case "number":
            return "Flow has no `number` type: a whole number is `Int`, an exact fraction is `Decimal`"
        case "type-name":
            return f"Flow writes `{flow}`, not `{habit}`: `{flow}` is Flow's {_WHAT[flow]}"
        case "arm-arrow":
            return f"Flow writes `{flow}` in a match arm, not `{habit}`"
        case "template-plain":
            return (
                'Flow has no template literals: this one interpolates nothing, so it is plain text in `"..."`'
            )
        case "template":
            return "Flow has no template literals: join text with " + _JOIN
        case "single-quote":
            return f"Flow writes text in double quotes: {flow}"
        case "comment" if flow:
            return f"Flow comments start with `//`, not `#`: `{flow}`"
        case "comment":
            return "Flow comments start with `//`, not `#`"
        case "text-reference" if habit.startswith("&mut"):
            return "Flow has no references, and its text type is `Text`: write `Text`"
        case "text-reference":
            return f"Flow has no references, and its text type is `Text`: write `Text`, not `{habit}`"
        case "reference":
            return f"Flow has no references: a value is shared, never borrowed or changed, so write it without `{habit}`"
    return _foreign_more(d)


def _foreign_more(d: codes.ForeignSyntax) -> str:
    """E012 answers, continued (one `match` for them all would be too long to read)."""
    habit, flow, name = d.habit, d.flow, d.name
    match d.kind:
        case "else-arm":
            return f"Flow writes the catch-all arm as `{flow} ...`, not `{habit} ...`"
        case "case-arm":
            return f"Flow writes a match arm as `{flow} ...`, not `{habit} ...`"
        case "path-type":
            return (
                f"Flow names a constructor alone, not through its type: write `{flow}`, not `{habit}{flow}`"
            )
        case "new":
            return "Flow has no `new`: a record or constructor is built by its name alone (`Order { ... }`)"
        case "result-arrow":
            return f"Flow writes a function's result type after `->`: `) -> {habit}`"
        case "dict-literal":
            return f"Flow writes a Dict as `[key: value, ...]`, not `{habit}`"
        case "await":
            return (
                f"Flow has no `{habit}`: a call of a Tool returns its result, and the runtime waits for "
                "it (run calls side by side with std@v1/task)"
            )
        case "let-else":
            return "Flow writes Rust's `let PATTERN = e else { ... }` as `guard let PATTERN = e else { ... }`"
        case "keyword-args":
            return (
                f"Flow passes arguments by position, not by name: drop {habit} and give the values "
                "in the order of the parameters"
            )
        case "import-path":
            return f'Flow imports a module with `use "path"`, not `{habit} "path"`'
        case "import-from":
            return (
                f'Flow imports a module with `use "path"`, and names it by the path\'s last part '
                f'(`{name}.name`), not `{habit} x from "path"`'
            )
        case "duration-unit":
            return f"Flow writes a duration with its unit's letter (ns, us, ms, s, m, h, d): `{flow}`, not `{habit}`"
        case "increment":
            return f"Flow values never change, so there is no `++` on a number: write `{flow}`"
        case "spread":
            return "Flow writes the rest of a list or record with `..`, not `...`"
        case "unpack":
            return f"Flow takes a tuple apart with a `let` pattern: write `{flow}`, not `{habit}`"
        case "assign-new":
            return (
                f"Flow binds a name with `let`: write `let {name} = ...` (a binding never changes afterwards)"
            )
        case "ternary":
            return f"Flow has no `{habit}` conditional: `if` is an expression, so write `{flow}`"
        case "chained-comparison":
            return f"Flow compares two values at a time: write `{flow}`"
        case "index":
            return (
                f"Flow has no indexing `{habit}`: write `{flow}` (dict.get, list.get), which gives an "
                "Option, since the key or index may be missing"
            )
        case "slice":
            return (
                f"Flow has no slice `{habit}`: write `{flow}` (list.slice, text.slice: from the start "
                "up to the end, not including it)"
            )
        case "membership":
            return f"Flow has no `in` operator: ask the collection, `{flow}` (list, set, dict and text alike)"
        case "format":
            return "Flow has no `format!`: join text with " + _JOIN
        case "format-plain":
            return f"Flow has no `format!`: this one formats nothing, so it is the text {flow}"
    return _foreign_last(d)


def _foreign_last(d: codes.ForeignSyntax) -> str:
    """E012 answers, the last of them."""
    habit, flow = d.habit, d.flow
    match d.kind:
        case "record-index":
            return f"`{habit}` reads a record's field: Flow writes `{flow}`"
        case "power":
            return "Flow has no `**` (and std no power function): write the product (`x * x`) or a function"
        case "go-field":
            return f"Flow writes a name's type after a colon: `{flow}`, not `{habit}`"
        case "empty-value":
            return f"Flow writes the empty value itself: `{flow}`, not `{habit}`"
        case "record-keywords":
            return f"Flow builds a record with its fields named in braces: write `{flow}`"
        case "optional-type":
            return f"Flow writes a type whose value may be absent as `{flow}`, not `{habit}`"
        case "type-args":
            return f"Flow writes type arguments in `<...>`: `{flow}`, not `{habit}`"
        case "vec-macro":
            return "Flow writes a list as `[...]`, not `vec![...]`"
    raise TypeError(f"no answer for the habit kind {d.kind!r}")


def _where_a_value_goes(kind: str, habit: str, flow: str, name: str) -> str | None:
    """The answers of habits_values.py (None for another habit)."""
    match kind:
        case "floor-division":
            return (
                "`//` starts a comment in Flow, so the rest of this line was not read: Flow divides "
                "with `/` (an Int's `/` is floor division, Python's `//`)"
            )
        case "or-pattern":
            return f"a pattern's alternatives are separated by `|`, not `{habit}` (`0 | 1 => ...`)"
        case "async":
            return (
                f"Flow has no `async`: any function can run concurrently, `{name}` too, started with "
                f"`task.spawn(flow() = {name}(...))` and awaited with `task.await(t)`; remove `async`"
            )
        case "qualified-constructor":
            return f"Flow names a constructor alone, `{flow}`, not `{habit}`: its type is known from the value matched"
        case "rest-binding":
            return f"a list pattern binds the rest of the list with `{flow}`, not `{habit}`"
        case "record-field-equals":
            return f"a record literal gives each field its value with `:` (`{flow}`), not with `=` or `let`"
        case "let-as-value":
            return (
                f"`let` is a statement, not a value: bind `{name}` on a line of its own before this "
                f"one, or write a block whose last line is the value (`{{ let {name} = ...; {name} }}`)"
            )
        case "comprehension":
            return f"Flow has no list comprehensions: map the list with a function value, `{flow}`"
        case "comprehension-filter":
            return (
                f"Flow has no list comprehensions: filter (and map) the list with function values, `{flow}`"
            )
        case "trailing-lambda":
            return f"Flow passes a function in parentheses: write `{flow}`"
        case "elvis":
            return f"Flow has no `?:`: write `{flow}` (on an Option or a Result)"
        case "throw":
            return (
                f"Flow has no exceptions: a failure is a value — return `{flow}` (the function's "
                "result type must be a Result)"
            )
        case "go-results":
            return (
                f"a Flow call gives one value, not a result and an error: a Tool's is a `Result`, taken "
                f"apart with `?` (`{flow}`, its error returned) or with `match` (`Ok(v) => ..., "
                f"Err({name}) => ...`)"
            )
    return None
