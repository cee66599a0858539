"""`clock.sleep` for `flow2py run`, which keeps no timers (a worker does: docs/spec/execution.md,
"Timers"). The sleep is left open (`pending`) like the approval: deliver `{"Ok": null}` to it
(`flow2py resume RUN --reply CALL={"Ok": null}`) to make the deadline pass. Do not give this
file to `flow2py worker`: it would replace the worker's durable timers."""

from flowrt import bind, pending


@bind("clock.sleep")
def sleep(nanos):
    return pending
