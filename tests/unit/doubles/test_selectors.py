import pytest

from tests.doubles.selectors import parse_field_selector, parse_label_selector


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param(None, {}, True, id="none-matches-all"),
        pytest.param("", {"a": "1"}, True, id="empty-matches-all"),
        pytest.param("a=1", {"a": "1"}, True, id="equals"),
        pytest.param("a==1", {"a": "2"}, False, id="double-equals-mismatch"),
        pytest.param("a!=1", {}, True, id="not-equals-absent"),
        pytest.param("a", {"a": ""}, True, id="exists"),
        pytest.param("!a", {"a": "x"}, False, id="not-exists"),
        pytest.param("a in (x, y)", {"a": "y"}, True, id="in"),
        pytest.param("a notin (x,y)", {"a": "z"}, True, id="notin"),
        pytest.param("a in (x,y),b=2", {"a": "x", "b": "3"}, False, id="and-of-requirements"),
        pytest.param("kueue.x-k8s.io/queue-name", {"kueue.x-k8s.io/queue-name": "q"}, True, id="prefixed-key"),
    ],
)
def test_label_selector(selector: str | None, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(selector)(labels) is expected


def test_unparsable_selector_is_rejected() -> None:
    with pytest.raises(ValueError, match="unparsable"):
        parse_label_selector("a in x")


def test_field_selector() -> None:
    obj = {"metadata": {"name": "n", "namespace": "ns"}, "status": {"phase": "Running"}}
    assert parse_field_selector("metadata.name=n,status.phase!=Failed")(obj)
    assert not parse_field_selector("metadata.namespace=other")(obj)
