import pytest

from webhook.kube import errors


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        pytest.param(409, "Conflict", errors.Conflict, id="stale-version"),
        pytest.param(409, "AlreadyExists", errors.AlreadyExists, id="name-taken"),
        pytest.param(404, "NotFound", errors.NotFound, id="not-found"),
        pytest.param(410, "Expired", errors.Gone, id="compacted"),
        pytest.param(403, "Forbidden", errors.Forbidden, id="rbac"),
        pytest.param(401, "Unauthorized", errors.Forbidden, id="unauthenticated"),
        pytest.param(422, "Invalid", errors.Invalid, id="validation"),
        pytest.param(400, "BadRequest", errors.Invalid, id="bad-request"),
        pytest.param(429, "TooManyRequests", errors.Retryable, id="throttled"),
        pytest.param(500, "InternalError", errors.Retryable, id="server-error"),
        pytest.param(503, "ServiceUnavailable", errors.Retryable, id="unavailable"),
        pytest.param(504, "Timeout", errors.Retryable, id="gateway-timeout"),
        pytest.param(405, "MethodNotAllowed", errors.KubeError, id="other-4xx-is-base"),
    ],
)
def test_status_maps_to_one_error_type(status: int, reason: str, expected: type[errors.KubeError]) -> None:
    body = {"kind": "Status", "code": status, "reason": reason, "message": "details here"}
    error = errors.error_from_status(status, body)
    assert type(error) is expected
    assert error.status == status
    assert error.reason == reason
    assert "details here" in str(error)


def test_permanent_and_retryable_are_distinct_types() -> None:
    assert not issubclass(errors.Conflict, errors.Retryable)
    assert not issubclass(errors.Invalid, errors.Retryable)
    assert all(
        issubclass(t, errors.KubeError)
        for t in (errors.Retryable, errors.Conflict, errors.Gone, errors.NotFound, errors.Forbidden)
    )


def test_missing_body_still_maps() -> None:
    error = errors.error_from_status(503)
    assert isinstance(error, errors.Retryable)
    assert error.reason is None
