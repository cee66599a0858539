"""The OpenAPI 3.1 description of the worker's HTTP API (docs/spec/http.md), written as data.

`GET /openapi.json` serves `openapi_document()`; tests/test_http_api.py holds it to the routes
the application has (`flowrt.host.http_api.ROUTES`), so a route cannot go undescribed.
"""

from __future__ import annotations

import copy

__all__ = ["openapi_document"]


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict:
    return _json(_ref("Error"), description)


_RUN_ID = {
    "name": "run_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "the run's id",
}
_SECURED = [{"bearer": []}]
_STATES = ["submitted", "running", "paused", "completed", "faulted", "halted"]

_SCHEMAS = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "string", "description": "one line saying what is wrong"}},
    },
    "StartRun": {
        "type": "object",
        "oneOf": [{"required": ["program"]}, {"required": ["bundle"]}],
        "additionalProperties": False,
        "properties": {
            "program": {"type": "string", "description": "the name of a program the worker serves"},
            "bundle": _ref("Bundle"),
            "entry": {"type": "string", "default": "main", "description": "the entry function"},
            "input": {
                "type": ["object", "null"],
                "description": "the entry's arguments keyed by parameter name, in the JSON mapping of Flow data",
            },
            "run_id": {"type": ["string", "null"], "description": "the new run's id (else one is made)"},
        },
    },
    "Bundle": {
        "type": "object",
        "description": "a program as module texts (docs/spec/modules.md, Submitted bundles)",
        "required": ["entry", "modules"],
        "additionalProperties": False,
        "properties": {
            "entry": {"type": "string", "description": "the entry module's path among `modules`"},
            "modules": {"type": "object", "additionalProperties": {"type": "string"}},
            "pins": {"type": "object", "description": "flow.lock's `repos`: repository -> {tag, commit}"},
            "name": {"type": "string", "description": "the program name its runs are listed under"},
        },
    },
    "BundleDiagnostics": {
        "type": "object",
        "required": ["error", "diagnostics"],
        "properties": {
            "error": {"type": "string"},
            "diagnostics": {
                "type": "array",
                "items": {"type": "object"},
                "description": "as check --format json",
            },
        },
    },
    "Started": {"type": "object", "required": ["run_id"], "properties": {"run_id": {"type": "string"}}},
    "RunSummary": {
        "type": "object",
        "required": ["run_id", "state", "program", "entry", "started", "facts"],
        "properties": {
            "run_id": {"type": "string"},
            "state": {"type": "string", "enum": _STATES},
            "program": {"type": ["string", "null"], "description": "the name the program is served by"},
            "entry": {"type": "string"},
            "started": {"type": ["number", "null"], "description": "when the run was submitted (Unix time)"},
            "facts": {"type": "integer", "description": "how many facts its history holds"},
        },
    },
    "OpenCall": {
        "type": "object",
        "required": ["id", "tool", "args", "since"],
        "properties": {
            "id": {"type": "string", "examples": ["c1:root#2"]},
            "tool": {"type": "string", "examples": ["human.ask"]},
            "args": {
                "type": "array",
                "items": {"type": "string"},
                "description": "each argument as Flow text",
            },
            "since": {
                "type": ["number", "null"],
                "description": "since when the call has been left open (Unix time); null while it is out",
            },
        },
    },
    "RunStatus": {
        "allOf": [
            _ref("RunSummary"),
            {
                "type": "object",
                "required": ["open_calls", "result", "fault"],
                "properties": {
                    "open_calls": {"type": "array", "items": _ref("OpenCall")},
                    "result": {
                        "type": ["string", "null"],
                        "description": "a completed run's value as Flow text",
                    },
                    "fault": {
                        "type": ["string", "null"],
                        "description": "a faulted run's End, with its location",
                    },
                },
            },
        ]
    },
    "Reply": {
        "type": "object",
        "required": ["call", "reply"],
        "additionalProperties": False,
        "properties": {
            "call": {"type": "string", "description": "the open call's id", "examples": ["c1:root#2"]},
            "reply": {"description": "the reply in the JSON mapping of the Tool's result type"},
        },
    },
    "Fork": {
        "type": "object",
        "required": ["checkpoint"],
        "additionalProperties": False,
        "properties": {
            "checkpoint": {
                "type": "integer",
                "minimum": 1,
                "description": "the checkpoint's number N (fork --checkpoint N)",
            },
            "run_id": {"type": ["string", "null"], "description": "the new run's id (else one is made)"},
        },
    },
    "ForkForm": {
        "type": "object",
        "required": ["checkpoint"],
        "description": "the run page's fork form",
        "properties": {
            "checkpoint": {"type": "string", "description": "the checkpoint's number N"},
            "token": {
                "type": "string",
                "description": "the worker's token, when it has one (a form cannot send a header)",
            },
        },
    },
    "Forked": {
        "type": "object",
        "required": ["run_id", "parent", "checkpoint"],
        "properties": {
            "run_id": {"type": "string", "description": "the new run"},
            "parent": {"type": "string"},
            "checkpoint": {"type": "integer"},
        },
    },
    "ReplyForm": {
        "type": "object",
        "description": "a run page's reply form (docs/spec/http.md, Reply forms)",
        "required": ["call", "reply"],
        "additionalProperties": False,
        "properties": {
            "call": {"type": "string", "description": "the open call's id"},
            "reply": {"type": "string", "description": "the reply as JSON text"},
            "token": {"type": "string", "description": "the worker's token, until the browser holds it"},
        },
    },
    "Accepted": {
        "type": "object",
        "required": ["run_id"],
        "properties": {"run_id": {"type": "string"}, "call": {"type": "string"}},
    },
}

_PATHS = {
    "/": {
        "get": {
            "operationId": "index",
            "summary": "Where things are; with Accept: text/html, a page of the runs for a browser",
            "parameters": [
                {"name": "state", "in": "query", "schema": {"type": "string", "enum": _STATES}},
                {"name": "program", "in": "query", "schema": {"type": "string"}},
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50},
                },
                {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 0}},
            ],
            "responses": {
                "200": {
                    "description": "the routes (JSON), or the runs page (HTML): the query is the page's",
                    "content": {"application/json": {"schema": {"type": "object"}}, "text/html": {}},
                },
                "400": _error("a bad query parameter (the runs page)"),
            },
        }
    },
    "/runs": {
        "post": {
            "operationId": "startRun",
            "summary": "Submit a run of a served program, or of a bundle of module texts, for the worker to start",
            "security": _SECURED,
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("StartRun")}}},
            "responses": {
                "201": _json(_ref("Started"), "the run is recorded; the worker starts it"),
                "400": _error(
                    "bad JSON, a bad body, an unknown program, input that does not fit, a bundle's shape or limits"
                ),
                "401": _error("a token is set and the request does not carry it"),
                "409": _error("a run with that id exists"),
                "413": _error("the body is over the size limit"),
                "422": _json(_ref("BundleDiagnostics"), "the bundle does not check; nothing is recorded"),
            },
        },
        "get": {
            "operationId": "listRuns",
            "summary": "The runs of the store, newest first",
            "parameters": [
                {"name": "state", "in": "query", "schema": {"type": "string", "enum": _STATES}},
                {"name": "program", "in": "query", "schema": {"type": "string"}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 0}},
            ],
            "responses": {
                "200": _json({"type": "array", "items": _ref("RunSummary")}, "the runs"),
                "400": _error("a bad query parameter"),
            },
        },
    },
    "/runs/{run_id}": {
        "get": {
            "operationId": "getRun",
            "summary": "One run: its state, open calls, result or fault (Accept: text/html: its history page)",
            "parameters": [
                _RUN_ID,
                {
                    "name": "replay",
                    "in": "query",
                    "schema": {"type": "string", "enum": ["0", "1"]},
                    "description": "the page (text/html) with the replay verdict at the top: Matched, "
                    "Incomplete, or Diverged at fact N with the reason, fact N highlighted",
                },
            ],
            "responses": {
                "200": {
                    "description": "the run (JSON), or its history as the viewer's page (HTML)",
                    "content": {"application/json": {"schema": _ref("RunStatus")}, "text/html": {}},
                },
                "404": _error("no such run"),
            },
        }
    },
    "/runs/{run_id}/history": {
        "get": {
            "operationId": "getHistory",
            "summary": "The run's facts, as JSON Lines exactly as `flow2py history --format json`",
            "parameters": [_RUN_ID],
            "responses": {
                "200": {
                    "description": "one JSON object per fact, in order",
                    "content": {"application/jsonl": {"schema": {"type": "string"}}},
                },
                "400": _error("the history cannot be shown (a broken chain)"),
                "404": _error("no such run"),
            },
        }
    },
    "/runs/{run_id}/replies": {
        "post": {
            "operationId": "deliverReply",
            "summary": "Deliver the reply to one of the run's open calls; the worker continues the run",
            "security": _SECURED,
            "parameters": [_RUN_ID],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": _ref("Reply")},
                    "application/x-www-form-urlencoded": {"schema": _ref("ReplyForm")},
                },
            },
            "responses": {
                "202": _json(_ref("Accepted"), "the reply is recorded"),
                "303": {"description": "a form's reply is recorded: back to the run page (Location)"},
                "400": _error("bad JSON or a bad body"),
                "401": _error(
                    "a token is set and the request does not carry it (a form: the run page, the message inline)"
                ),
                "403": _error("a form posted from another site's page (its Origin is not the worker's)"),
                "404": _error("no such run"),
                "409": _error("the call is not open (a form: the run page, the message on it)"),
                "413": _error("the body is over the size limit"),
                "422": {
                    "description": "the reply does not fit the Tool's result type (the admission message); "
                    "a form: the run page again, the message beside the call's form, the text kept",
                    "content": {"application/json": {"schema": _ref("Error")}, "text/html": {}},
                },
            },
        }
    },
    "/runs/{run_id}/cancel": {
        "post": {
            "operationId": "cancelRun",
            "summary": "Halt the run: no End is recorded, its state becomes halted",
            "security": _SECURED,
            "parameters": [_RUN_ID],
            "responses": {
                "202": _json(_ref("Accepted"), "the run is halted"),
                "401": _error("a token is set and the request does not carry it"),
                "404": _error("no such run"),
                "409": _error("the run has already ended"),
                "413": _error("the body is over the size limit"),
            },
        }
    },
    "/runs/{run_id}/fork": {
        "post": {
            "operationId": "forkRun",
            "summary": "Fork the run at checkpoint N as a new run the worker drives (the run page's fork from here)",
            "security": _SECURED,
            "parameters": [_RUN_ID],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": _ref("Fork")},
                    "application/x-www-form-urlencoded": {"schema": _ref("ForkForm")},
                },
            },
            "responses": {
                "201": _json(
                    _ref("Forked"), "the fork is recorded (its Start names the parent); the worker drives it"
                ),
                "303": {"description": "from the page's form (Accept: text/html): to the new run's page"},
                "400": _error("a bad body, a checkpoint the run does not hold, a fork the program refuses"),
                "401": _error("a token is set and the request does not carry it"),
                "404": _error("no such run"),
                "409": _error(
                    "the checkpoint holds a task parked on a call with no reply, or the new id exists"
                ),
                "413": _error("the body is over the size limit"),
            },
        }
    },
    "/runs/{run_id}/events": {
        "get": {
            "operationId": "runEvents",
            "summary": "The run's server-sent events: change when its facts or state move, end when it has ended",
            "parameters": [
                _RUN_ID,
                {"name": "facts", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                {"name": "state", "in": "query", "schema": {"type": "string"}},
                {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}},
            ],
            "responses": {
                "200": {
                    "description": "a text/event-stream; each event's data is {facts, state}, its id `FACTS STATE`",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                "400": _error("a bad query parameter"),
                "404": _error("no such run"),
            },
        }
    },
    "/openapi.json": {
        "get": {
            "operationId": "openapi",
            "summary": "This document",
            "responses": {"200": {"description": "the OpenAPI 3.1 description of the API"}},
        }
    },
}

_DOCUMENT = {
    "openapi": "3.1.0",
    "info": {
        "title": "flow2py worker",
        "version": "1",
        "description": "Runs of Flow programs served by a flow2py worker (docs/spec/http.md). "
        'Errors are {"error": "one line"}. With a token, every POST needs Authorization: Bearer.',
    },
    "paths": _PATHS,
    "components": {
        "schemas": _SCHEMAS,
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    },
}


def openapi_document() -> dict:
    """A fresh copy of the document (a caller may change it without changing the next answer)."""
    return copy.deepcopy(_DOCUMENT)
