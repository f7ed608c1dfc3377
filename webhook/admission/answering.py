"""One AdmissionReview body in, one HTTP status and response body out: decode, ask the endpoint's policy, encode.

Owns the rule that nothing a client sends becomes a traceback: a malformed review is 400 with the reason; a bug
in a policy is refused (fail closed, logged once with its traceback) with a message pointing at the logs. The same
function answers on the serving loop (small bodies) and in a review worker process (large ones), so both paths
give the same answer. Must not: know HTTP frameworks, or reach the API server (the view is the cache).
"""

from __future__ import annotations

import logging

import orjson

from webhook.admission import review
from webhook.admission.endpoints import Endpoint
from webhook.admission.options import AdmissionOptions
from webhook.admission.verdict import ALLOW, deny
from webhook.admission.view import ClusterView

log = logging.getLogger(__name__)

OK = 200
BAD_REQUEST = 400


def bad_request(reason: str) -> tuple[int, bytes]:
    return BAD_REQUEST, orjson.dumps({"reason": reason})


def answer(endpoint: Endpoint, body: bytes, view: ClusterView, options: AdmissionOptions) -> tuple[int, bytes]:
    """The status and body answering ``body`` on ``endpoint``."""
    try:
        decoded = review.decode(body)
        if (decoded.group, decoded.kind) != (endpoint.group, endpoint.kind):
            raise review.MalformedReview(
                f"{endpoint.path} reviews {endpoint.kind} objects, not {decoded.group}/{decoded.kind}"
            )
        verdict = endpoint.policy(decoded, view, options)
    except review.MalformedReview as exc:
        return bad_request(exc.reason)
    except Exception:
        uid = review.uid_of(body)
        log.exception("policy %s failed on request %s", endpoint.name, uid)
        if uid is None:
            return bad_request("the review could not be evaluated")
        message = f"Turnstile could not evaluate this request (internal error in {endpoint.name}; see its logs)"
        return OK, review.encode(uid, deny(message), mutating=endpoint.mutating)
    return OK, review.encode(decoded.uid, verdict, mutating=endpoint.mutating)


def allow_disabled(endpoint: Endpoint, body: bytes) -> tuple[int, bytes]:
    """The answer of an endpoint whose integration is off: allowed, unchanged (see ``routes``)."""
    try:
        decoded = review.decode(body)
    except review.MalformedReview as exc:
        return bad_request(exc.reason)
    log.warning("%s called, but its integration %s is off: allowed unchanged", endpoint.path, endpoint.framework)
    return OK, review.encode(decoded.uid, ALLOW, mutating=endpoint.mutating)
