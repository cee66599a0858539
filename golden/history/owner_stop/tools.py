from flowrt import bind, pending


@bind("svc.slow")
def slow(key):
    return pending


@bind("svc.quick")
def quick(key):
    return {"Ok": "quick " + key}
