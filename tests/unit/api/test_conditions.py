"""Setting and reading status conditions."""

from __future__ import annotations

import datetime

from webhook.api import conditions

T0 = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
T1 = T0 + datetime.timedelta(minutes=5)


def test_set_keeps_transition_time_while_status_holds() -> None:
    first = conditions.set_condition(None, kind="QuotaReserved", status=False, reason="Pending", message="a", now=T0)
    second = conditions.set_condition(first, kind="QuotaReserved", status=False, reason="Pending", message="b", now=T1)
    assert second == [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "b",
            "lastTransitionTime": "2026-01-01T12:00:00Z",
        }
    ]
    third = conditions.set_condition(
        second, kind="QuotaReserved", status=True, reason="QuotaReserved", message="", now=T1
    )
    assert third[0]["lastTransitionTime"] == "2026-01-01T12:05:00Z"


def test_set_leaves_other_conditions_and_input_alone() -> None:
    start = [{"type": "Admitted", "status": "True", "reason": "Admitted", "message": "", "lastTransitionTime": "x"}]
    result = conditions.set_condition(start, kind="Finished", status=True, reason="Succeeded", message="done", now=T0)
    assert [c["type"] for c in result] == ["Admitted", "Finished"]
    assert len(start) == 1


def test_is_true_and_same() -> None:
    obj = {
        "status": {
            "conditions": conditions.set_condition(None, kind="Admitted", status=True, reason="A", message="m", now=T0)
        }
    }
    assert conditions.is_true(obj, "Admitted")
    assert not conditions.is_true(obj, "Finished")
    assert conditions.same(obj["status"]["conditions"], kind="Admitted", status=True, reason="A", message="m")
    assert not conditions.same(obj["status"]["conditions"], kind="Admitted", status=True, reason="A", message="n")


def test_long_messages_are_truncated_to_what_the_api_server_accepts() -> None:
    result = conditions.set_condition(None, kind="X", status=True, reason="R", message="é" * 40_000, now=T0)
    assert len(result[0]["message"].encode()) <= conditions.MAX_MESSAGE_BYTES
    assert result[0]["message"].endswith("...")


def test_time_round_trip() -> None:
    assert conditions.parse_time(conditions.format_time(T0)) == T0
