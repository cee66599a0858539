"""Both of the desk's Tools wait for a person: each call is left open (`pending`)."""

from flowrt import bind, pending


@bind("desk.approve")
def approve(order):
    return pending


@bind("desk.schedule")
def schedule(order, weeks):
    return pending
