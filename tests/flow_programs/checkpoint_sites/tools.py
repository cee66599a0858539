from flowrt import bind, pending


@bind("svc.ping")
def ping(n):
    return {"Ok": n}


@bind("svc.next")
def next_():
    return pending  # stays open: the task that makes it stays parked
