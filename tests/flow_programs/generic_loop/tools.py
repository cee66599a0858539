from flowrt import bind


@bind("svc.ping")
def ping(r):
    return {"Ok": r}
