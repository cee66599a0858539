"""The no-op Tool of bench/peers/flow/noop.flow, as `flow2py worker --tools` imports it."""

import flowrt as rt


@rt.bind("noop.step")
def step(i):
    return {"Ok": i}


@rt.bind("noop.last")
def last(i):
    return {"Ok": i}
