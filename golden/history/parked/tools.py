from flowrt import bind, pending


@bind("feed.next")
def next_message():
    return pending


@bind("feed.tick")
def tick(round):
    return {"Ok": f"tick {round}"}
