import os, time
import flowrt

LOG = os.environ.get("SIDE_LOG")
PENDING = os.environ.get("FIRST_PENDING") == "1"


@flowrt.bind("steps.first")
def first(n):
    return flowrt.pending if PENDING else {"Ok": n + 1}


@flowrt.bind("steps.second")
def second(n):
    if LOG:
        run = flowrt.current_call().run_id
        fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{run} {os.getpid()} {time.time()!r}\n".encode())
        os.close(fd)
    return {"Ok": n + 1}


@flowrt.bind("steps.third")
def third(n):
    return {"Ok": n + 1}
