"""Which generic functions take their type arguments at run time (docs/spec/codegen.md, "Type
arguments at run time").

A generic Tool needs its concrete type arguments when it is called: the Call fact records them
and the reply is admitted against them. Called from a generic Flow function `fetch<T>`, they are
`fetch`'s own `T`, which only `fetch`'s caller knows. So a generic function whose body needs a
descriptor of one of its own type parameters takes its type arguments as descriptors, in its
first parameter (`_targs`, a tuple), and its callers pass them: concrete ones, or built from
their own `_targs`. Lambdas inside such a function close over `_targs`; a reference to it as a
function value binds them (`rt.with_type_args(f, (...))`).

A body needs them when it has, anywhere (its lambdas included), a site whose instantiation
mentions one of the function's type parameters and that is
  * a call of a generic Tool, or a reference to one as a value (the Tool's function value takes
    them too);
  * an effectful tail call of a generic function (a checkpoint there records the callee's type
    arguments);
  * a call of, or a reference to, a function that takes them.
The last rule makes this a least fixpoint over the call graph. Functions that need nothing keep
their plain signature, so code without generic Tools is emitted exactly as before.
"""

from __future__ import annotations

from flow2py.check import typed as P
from flow2py.check.annotations import lang_args
from flow2py.codegen.tails import ast_nodes
from flow2py.syntax import ast as A

#: the parameter that carries a typed function's type arguments (codegen/names.py reserves it)
TARGS = "_targs"


def mentions(t, owner: str) -> bool:
    """Whether the type `t` mentions a type parameter declared by `owner`."""
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, P.TParam):
            if x.owner == owner:
                return True
        elif isinstance(x, P.TCon):
            stack.extend(x.args)
        elif isinstance(x, P.TTuple):
            stack.extend(x.items)
        elif isinstance(x, P.TFun):
            stack.extend(x.params)
            stack.append(x.result)
    return False


def _sites(prog: P.CheckedProgram, info: P.FnInfo) -> list[tuple[str, bool]]:
    """(callee decl, is an effectful tail call) for every site of `info`'s body whose type
    arguments mention `info`'s own type parameters."""
    out = []
    for n in ast_nodes(info.node.body):
        targs = prog.type_args.get(n.id)
        if not targs or not any(mentions(t, info.decl) for t in targs):
            continue
        ref = prog.refs.get(n.callee.id if isinstance(n, A.Call) else n.id)
        if not isinstance(ref, (P.FnRef, P.MethodRef)):
            continue
        tail = isinstance(n, A.Call) and n.id in prog.tail_calls and prog.effects.get(n.id, "pure") != "pure"
        out.append((ref.decl, tail))
    return out


def _takes_types(info: P.FnInfo) -> bool:
    """A bodyless std function marked `@lang("m.f", "types")`: its body in the runtime takes the
    descriptors of its type arguments first (`json.decode<T>`, stdlib.md)."""
    if info.node is None or info.node.body is not None:
        return False
    la = lang_args(info.node.annotations)
    return la is not None and "types" in la[1:]


def typed_functions(prog: P.CheckedProgram) -> frozenset[str]:
    """Declaration ids of the functions that take `_targs`: every generic Tool, every std function
    marked "types", and every generic function with a body that needs a descriptor of its own type parameters (see above)."""
    typed = {d for d, i in prog.fn_decls.items() if i.is_tool and i.type_params}
    typed |= {d for d, i in prog.fn_decls.items() if i.type_params and _takes_types(i)}
    candidates = {
        d: _sites(prog, i)
        for d, i in prog.fn_decls.items()
        if i.type_params and not i.is_tool and i.node is not None and i.node.body is not None
    }
    changed = True
    while changed:
        changed = False
        for d, sites in candidates.items():
            if d in typed:
                continue
            for callee, tail in sites:
                c = prog.fn_decls.get(callee)
                if callee in typed or (
                    tail
                    and c is not None
                    and c.type_params
                    and not c.is_tool
                    and c.node is not None
                    and c.node.body is not None
                ):
                    typed.add(d)
                    changed = True
                    break
    return frozenset(typed)
