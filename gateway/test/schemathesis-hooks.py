"""Schemathesis hooks of gateway/test/schemathesis.test.ts (loaded through SCHEMATHESIS_HOOKS).

Two things only, both driven by the test:

- Test data: a request that carries an Idempotency-Key in a schema-valid case
  gets a fresh UUID, so the fuzzer never reuses a key with another body (which
  the server rightly answers 422, as the IETF Idempotency-Key draft says).
- The listed exceptions (SLUICE_SCHEMATHESIS_EXCEPTIONS, a JSON file the test
  writes): a "schema-valid request rejected" failure is dropped only when its
  operation, status and every detail of the answer match one entry. Each drop
  is appended to SLUICE_SCHEMATHESIS_DROPPED so the test can show them.
"""

import json
import os
import re
import uuid

import schemathesis

with open(os.environ["SLUICE_SCHEMATHESIS_EXCEPTIONS"], encoding="utf-8") as f:
    EXCEPTIONS = json.load(f)
for entry in EXCEPTIONS:
    entry["pattern"] = re.compile(entry["detail"])


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers or {}
    meta = case.meta
    positive = meta is not None and meta.generation.mode.is_positive
    for name in list(headers):
        if name.lower() == "idempotency-key" and positive:
            headers[name] = str(uuid.uuid4())


def _locs(response):
    try:
        detail = json.loads(response.content).get("detail")
    except (ValueError, AttributeError):
        return []
    return [item.get("loc") for item in detail if isinstance(item, dict)] if isinstance(detail, list) else []


def _under(prefixes, locs):
    """Whether every issue's loc starts with one of `prefixes` (none given: any)."""
    return not prefixes or all(any((loc or [])[: len(p)] == p for p in prefixes) for loc in locs)


def _details(response):
    """The answer's detail as a list of texts: each 422 issue's msg, or the 400 code and reason."""
    try:
        detail = json.loads(response.content).get("detail")
    except (ValueError, AttributeError):
        return None
    if isinstance(detail, str):
        return [detail]
    if isinstance(detail, dict):
        return [f"{detail.get('code')}: {detail.get('reason')}"]
    if isinstance(detail, list) and detail:
        return [str(item.get("msg")) if isinstance(item, dict) else "" for item in detail]
    return None


def _names(operations, label):
    return any(label.startswith(op[:-1]) if op.endswith("*") else label == op for op in operations)


def _empty_without_connector_id(case):
    # No body at all reads as `{}` too.
    empty = case.body == {} or not isinstance(case.body, (dict, list, str, int, float, bool))
    return empty and not (case.query or {}).get("connector_id")


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if type(failure).__name__ != "RejectedPositiveData":
        return True
    label = case.operation.label
    details = _details(response)
    if details is None:
        return True
    for index, entry in enumerate(EXCEPTIONS):
        if (
            _names(entry["operations"], label)
            and response.status_code == entry["status"]
            and all(entry["pattern"].search(d) for d in details)
            and (not entry.get("emptyBodyWithoutConnectorId") or _empty_without_connector_id(case))
            and _under(entry.get("locPrefixes"), _locs(response))
        ):
            with open(os.environ["SLUICE_SCHEMATHESIS_DROPPED"], "a", encoding="utf-8") as out:
                out.write(json.dumps({"operation": label, "status": response.status_code, "details": details, "entry": index}) + "\n")
            return False
    return True
