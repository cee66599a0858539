"""The Python Tools of the agent example (README.md).

`model.plan` and `model.repair` fake a model, deterministically: the plan depends only on the
goal and the notes so far, and a repair applies the fixes the diagnostics carry (a real host
would call a model here). `approvals.request` is a person: it leaves its call open (`pending`)
until a reply is delivered (`flow2py resume --reply`, `flow2py reply`, or the worker's HTTP API).
"""

import json

from flowrt import bind, pending

# The program the model writes first: a typo (`wrds`) the checker names, with a fix.
FIRST_PROGRAM = """use "std@v1/list"

// The number of words longer than three letters.
pub flow main(text: Text) -> Int = {
    let words = text.split(" ")
    list.length(list.filter(wrds, flow(w: Text) = w.length() > 3))
}
"""


@bind("model.plan")
def plan(goal, notes):
    """Look the goal's topic up, count its long words with a program, ask before posting, post."""
    step = len(notes)
    if step == 0:
        return {"Ok": {"UseTool": {"tool": "lookup", "args": {"topic": goal}}}}
    if step == 1:
        note = json.loads(notes[0])
        if "text" not in note:
            return {"Ok": {"Finish": f"nothing to say about {goal}: {notes[0]}"}}
        return {"Ok": {"RunProgram": {"text": FIRST_PROGRAM, "input": note["text"]}}}
    if step == 2:
        return {"Ok": {"AskApproval": f"post to #team: {goal}: {notes[1]}"}}
    if step == 3:
        message = f"{goal}: {notes[1]} ({notes[2]})"
        return {"Ok": {"UseTool": {"tool": "post", "args": {"channel": "team", "text": message}}}}
    return {"Ok": {"Finish": f"posted: {notes[3]}"}}


@bind("model.repair")
def repair(text, problems):
    """Apply the fix of each unknown name (E101); the other diagnostics follow from it."""
    edits = [edit for d in problems if d["code"] == "E101" and d["fixes"] for edit in d["fixes"][0]["edits"]]
    if not edits:
        return {"Err": "no fix I can apply: " + "; ".join(d["code"] + " " + d["message"] for d in problems)}
    for edit in sorted(edits, key=lambda e: e["start"], reverse=True):
        text = text[: edit["start"]] + edit["text"] + text[edit["end"] :]
    return {"Ok": text}


@bind("approvals.request")
def request(what):
    return pending
