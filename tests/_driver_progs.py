"""Hand-written generator programs in the style of generated code (../shared/sketch), for the
driver tests. The seed's support-ticket example is `main`/`work`; the rest are small programs
each exercising one rule."""

import flowrt as rt
from flowrt import T

# ---- types ---------------------------------------------------------------------------------------


class Action(rt.Enum):
    __slots__ = ()


@rt.variant("planner::Action", "Search", tag=0, fields=("_0",))
class Search(Action):
    __slots__ = ("_0",)


@rt.variant("planner::Action", "Ask", tag=1, fields=("_0",))
class Ask(Action):
    __slots__ = ("_0",)


@rt.variant("planner::Action", "Done", tag=2, fields=("_0",))
class Done(Action):
    __slots__ = ("_0",)


for _c in (Search, Ask, Done):
    _c.__flow_field_types__ = (T.TEXT,)


class Report(rt.Enum):
    __slots__ = ()


@rt.variant("main::Report", "Resolved", tag=0, fields=("_0",))
class Resolved(Report):
    __slots__ = ("_0",)


@rt.variant("main::Report", "GaveUp", tag=1, fields=("_0",))
class GaveUp(Report):
    __slots__ = ("_0",)


@rt.variant("main::Report", "Unanswered", tag=2, fields=("_0",))
class Unanswered(Report):
    __slots__ = ("_0",)


class Msg(rt.Enum):
    __slots__ = ()


@rt.variant("main::Msg", "Received", tag=0, fields=("_0",))
class Received(Msg):
    __slots__ = ("_0",)


@rt.record("main::Arrived", fields=("index", "reply"))
class Arrived(rt.Record):
    __slots__ = ("index", "reply")


TEXT_RESULT = T.ResultOf(T.TEXT, T.TEXT)
PLANNER_NEXT = rt.ToolSpec(
    "planner::next", "planner.next", ("ticket", "notes"), T.ResultOf(T.Named(Action), T.TEXT)
)
WEB_SEARCH = rt.ToolSpec("web::search", "web.search", ("query",), TEXT_RESULT)
DOCS_SEARCH = rt.ToolSpec("docs::search", "docs.search", ("query",), TEXT_RESULT)
HUMAN_ASK = rt.ToolSpec("human::ask", "human.ask", ("question",), TEXT_RESULT)
SUPPORT_TOOLS = (PLANNER_NEXT, WEB_SEARCH, DOCS_SEARCH, HUMAN_ASK)

ECHO = rt.ToolSpec("t::echo", "t.echo", ("x",), T.ResultOf(T.INT, T.TEXT))
SLOW = rt.ToolSpec("t::slow", "t.slow", ("x",), T.ResultOf(T.INT, T.TEXT))
FEED_NEXT = rt.ToolSpec("feed::next", "feed.next", (), TEXT_RESULT)
LIST_TOOL = rt.ToolSpec("t::names", "t.names", (), T.ResultOf(T.ListOf(T.TEXT), T.TEXT))


# ---- std's race, as codegen would emit std@v1/task and std@v1/list --------------------------------


def map__tool(xs, f):  # std list.map, effectful instance
    out = rt.EMPTY_LIST
    for x in xs:
        out = out.append((yield f(x)))
    return out


def race__flow1(f):  # flow(f) = spawn(f)
    return (yield rt.Spawn(f))


@rt.fn("std@v1/task::race", params=("fs",))
def race(fs):
    tasks = yield map__tool(fs, race__flow1)
    _, value = yield rt.First(tasks)
    return value


# ---- the seed's example ------------------------------------------------------------------------------


@rt.fn("main::main", params=("ticket",))
def main(ticket):
    return rt.TailCall(work, (ticket, rt.EMPTY_LIST, 1))


@rt.fn("main::work", params=("ticket", "notes", "round"))
def work(ticket, notes, round):
    if not (round <= 10):
        return GaveUp(notes)
    _t1 = yield rt.ToolCall(PLANNER_NEXT, (ticket, notes))
    match _t1:
        case rt.Ok(Search(query)):

            def work__flow5():
                return (yield rt.ToolCall(WEB_SEARCH, (query,)))

            def work__flow6():
                return (yield rt.ToolCall(DOCS_SEARCH, (query,)))

            _t2 = yield race(rt.list_of([work__flow5, work__flow6]))
            match _t2:
                case rt.Ok(hit):
                    return rt.TailCall(work, (ticket, notes.append(hit), round + 1))
                case rt.Err(_):
                    return rt.TailCall(work, (ticket, notes, round + 1))
        case rt.Ok(Ask(question)):
            _t3 = yield rt.ToolCall(HUMAN_ASK, (question,))
            match _t3:
                case rt.Ok(answer):
                    return rt.TailCall(work, (ticket, notes.append(answer), round + 1))
                case rt.Err(_):
                    return Unanswered(question)
        case rt.Ok(Done(summary)):
            return Resolved(summary)
        case rt.Err(_):
            return GaveUp(notes)


def support_bindings(ask=None):
    b = rt.Bindings()

    @b.bind("planner.next")
    def next_step(ticket, notes):
        if len(notes) == 0:
            return {"Ok": {"Search": "safari login cookie"}}
        if len(notes) == 1:
            return {"Ok": {"Ask": "Which Safari version does the customer use?"}}
        return {"Ok": {"Done": "Enable Secure on the session cookie; ..."}}

    b.bind("web.search", lambda query: rt.pending)
    b.bind("docs.search", lambda query: {"Ok": "SameSite=None requires Secure ..."})
    b.bind("human::ask", ask or (lambda question: rt.pending))
    return b


# ---- small programs -----------------------------------------------------------------------------------


@rt.fn("t::echo_loop", params=("n", "acc"))
def echo_loop(n, acc):
    """A long-running effectful tail loop: one Tool call a round."""
    if n == 0:
        return acc
    r = yield rt.ToolCall(ECHO, (n,))
    return rt.TailCall(echo_loop, (n - 1, acc + r._0))


@rt.fn("t::fan", params=("n",))
def fan(n):
    """Fan-out: n tasks, each making one Tool call, awaited by the root; the sum of the replies."""
    tasks = []
    for i in range(n):

        def child(i=i):
            r = yield rt.ToolCall(ECHO, (i,))
            return r._0

        tasks.append((yield rt.Spawn(child)))
    total = 0
    for t in tasks:
        total += yield rt.Await(t)
    return total


def spawn_and_leave():
    """Spawns a task that waits on a slow call, makes its own call, returns without awaiting."""

    def child():
        return (yield rt.ToolCall(SLOW, (1,)))

    yield rt.Spawn(child)
    r = yield rt.ToolCall(ECHO, (2,))
    return r._0


@rt.fn("t::owner_returns", params=())
def owner_returns():
    x = yield spawn_and_leave()
    y = yield rt.ToolCall(ECHO, (x,))
    return y._0


def keeps_then_awaits():
    """Spawns, then tail-calls a function that awaits the task: the tail call keeps it."""

    def child():
        return (yield rt.ToolCall(ECHO, (7,)))

    t = yield rt.Spawn(child)
    return rt.TailCall(await_it, (t,))


def await_it(t):
    r = yield rt.Await(t)
    return r._0


@rt.fn("t::tail_keeps", params=())
def tail_keeps():
    v = yield keeps_then_awaits()
    return v


def make_task():
    """Returns a task inside a tuple: handed over to the caller."""

    def child():
        return (yield rt.ToolCall(ECHO, (5,)))

    t = yield rt.Spawn(child)
    return (t, "label")


@rt.fn("t::handed_over", params=())
def handed_over():
    pair = yield make_task()
    r = yield rt.Await(pair[0])
    return r._0


@rt.fn("t::first_of_finished", params=())
def first_of_finished():
    tasks = []
    for i in range(3):
        tasks.append((yield rt.Spawn(rt.lift(lambda i=i: i * 10))))
    _ = yield rt.ToolCall(ECHO, (0,))  # the children run (and finish) while this call is out
    index, value = yield rt.First(rt.list_of(tasks))
    return (index, value)


@rt.fn("t::pause_then_add", params=("x",))
def pause_then_add(x):
    a = yield rt.ToolCall(ECHO, (x,))
    b = yield rt.ToolCall(SLOW, (a._0,))  # bound to `pending`: the run pauses here
    c = yield rt.ToolCall(ECHO, (b._0 + 1,))
    return c._0


# a loop passing a pending read from round to round (parked task), checkpointable


@rt.fn("main::reader", params=())
def reader():
    def flow1():  # flow() = Received(feed.next())  -- parkable
        return (yield rt.ParkCall(FEED_NEXT, (), Received))

    t = yield rt.Spawn(flow1)
    return rt.TailCall(reader_loop, (t, 0))


@rt.fn("main::reader_loop", params=("t", "n"))
def reader_loop(t, n):
    if n < 4:
        _ = yield rt.ToolCall(ECHO, (n,))
        return rt.TailCall(reader_loop, (t, n + 1))
    msg = yield rt.Await(t)
    return msg


@rt.fn("main::indexed", params=())
def indexed():
    def flow1():  # flow() = Arrived { index: 3, reply: feed.next() }
        return (yield rt.ParkCall(FEED_NEXT, (), Arrived, (3,), at=1))

    t = yield rt.Spawn(flow1)
    return rt.TailCall(indexed_loop, (rt.list_of([t]), 0))


@rt.fn("main::indexed_loop", params=("ts", "n"))
def indexed_loop(ts, n):
    if n < 3:
        _ = yield rt.ToolCall(ECHO, (n,))
        return rt.TailCall(indexed_loop, (ts, n + 1))
    _, v = yield rt.First(ts)
    return v


def echo_bindings(slow=None):
    b = rt.Bindings()
    b.bind("t.echo", lambda x: {"Ok": x})
    b.bind("t.slow", slow or (lambda x: rt.pending))
    b.bind("feed.next", lambda: rt.pending)
    return b
