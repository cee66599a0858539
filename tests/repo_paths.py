"""Where the tests find the programs they read: inside this repository, so the suite runs from any checkout.

The seed's support-ticket program is examples/support/ (the same files as the shared conformance suite's
support/). ../shared is read only by the tests that compare against the shared suite's own files, and
they skip, saying so, where a checkout does not have it beside the project.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUPPORT_DIR = ROOT / "examples" / "support"
SUPPORT_MAIN = SUPPORT_DIR / "main.flow"
#: the shared inputs, when they sit beside the project: the conformance suite (compare.py,
#: support/expected.jsonl) and the seeds (the texts tests/check_programs/seeds/ quotes)
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance"
SEED_TEXTS = SHARED / "seeds"
