"""Python Tool implementations of the approval example (README.md).

`approvals.request` is a person: it leaves its call open (`pending`) until a reply is delivered
over the worker's HTTP API or with `flow2py reply`. `payments.capture` charges the order once:
the provider (here a ledger file) de-duplicates by order id, so the call may be sent again after
a crash (`on_crash="resend"`), and a dropped connection is retried inside the one call.
"""

import json
import os

from flowrt import Retry, bind, pending

LEDGER = os.environ.get("APPROVAL_LEDGER", "payments.jsonl")


@bind("approvals.request")
def request(order, amount):
    return pending


@bind("payments.capture", on_crash="resend", retry=Retry(attempts=3, backoff=0.5, on=(ConnectionError,)))
def capture(order, amount):
    receipts = {}
    if os.path.exists(LEDGER):
        with open(LEDGER, encoding="utf-8") as f:
            receipts = {e["order"]: e["receipt"] for e in map(json.loads, f)}
    if order not in receipts:  # the provider's idempotency: one charge per order
        receipts[order] = f"receipt-{order}-{amount}"
        with open(LEDGER, "a", encoding="utf-8") as f:
            f.write(json.dumps({"order": order, "amount": amount, "receipt": receipts[order]}) + "\n")
    return {"Ok": receipts[order]}
