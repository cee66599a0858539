from flowrt import bind, pending

ANSWERS = {
    "int": 42,
    "text": "hello",
    "text!": "bye",
    "a": 1,
    "b": 2,
    "c": 3,
    "yes": True,
    "tick": 0,
    "bad": "not an int",
}


@bind("kv.get")
def get(key):
    if key == "box":
        return pending  # answered later: resume --reply
    if key in ("a", "b", "c") and BOXES:
        return {"Ok": {"n": ANSWERS[key]}}
    return {"Ok": ANSWERS[key]}


@bind("kv.open")
def open_(name):
    return {"Ok": {"$token": "handle-" + name}}


BOXES = False  # the `boxes` entry's tools file sets it
