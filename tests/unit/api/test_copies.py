import ast
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.unit.jobs.builders import make_job
from webhook.api.copies import writable, writable_value
from webhook.api.views import ObjectView
from webhook.controller.interner import Interner
from webhook.jobs import suspendable

PACKAGE = Path(__file__).resolve().parents[3] / "webhook"


def shared_labels() -> dict[str, Any]:
    """An object whose metadata and template hold one labels dict, as the cache's interner stores a Job whose
    labels were defaulted from its template's."""
    labels = {"job-name": "sneaky"}
    return {"metadata": {"name": "sneaky", "labels": labels}, "spec": {"template": {"metadata": {"labels": labels}}}}


def test_a_copy_shares_no_dict_between_two_places_the_original_shared() -> None:
    original = shared_labels()
    copied = writable(original)
    assert copied == original
    copied["metadata"]["labels"]["queue"] = "default"
    assert copied["spec"]["template"]["metadata"]["labels"] == {"job-name": "sneaky"}
    assert original["metadata"]["labels"] == {"job-name": "sneaky"}, "the original is left as it was"


def test_values_json_does_not_have_are_copied_the_slow_way_and_still_unshared() -> None:
    when = datetime(2026, 12, 5, tzinfo=UTC)
    original = {**shared_labels(), "status": {"at": when}, 7: "a key that is not a string"}
    copied = writable(original)
    assert copied == original
    assert copied["status"]["at"] == when
    assert type(copied["status"]["at"]) is datetime
    copied["metadata"]["labels"]["queue"] = "default"
    assert "queue" not in copied["spec"]["template"]["metadata"]["labels"]


def test_any_value_is_copied_as_a_tree() -> None:
    labels = {"a": "1"}
    copied = writable_value([labels, labels])
    assert copied == [labels, labels]
    copied[0]["b"] = "2"
    assert copied[1] == {"a": "1"}
    assert writable_value(None) is None


def test_adopting_a_cached_job_whose_labels_are_its_templates_changes_only_the_job() -> None:
    # The reconciler suspends and labels a Job that slipped past the webhook; the API server refuses any change
    # to a Job's template. A copy that kept the cache's sharing put the queue label in the template too.
    job = make_job("sneaky", queue=None, suspend=False, template_labels={"job-name": "sneaky"})
    job["metadata"]["labels"] = {"job-name": "sneaky"}
    cached = Interner().stored(job)
    assert cached["metadata"]["labels"] is cached["spec"]["template"]["metadata"]["labels"], "the interner shares"
    adopted = suspendable.adopted(ObjectView.of(cached), queue="default", workload_name="job-sneaky")
    assert adopted["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert adopted["spec"]["template"] == job["spec"]["template"]
    assert cached["metadata"]["labels"] == {"job-name": "sneaky"}


def test_the_package_copies_objects_only_through_writable() -> None:
    # copy.deepcopy keeps the sharing of the cache's objects (see webhook.api.copies); only copies.py may call it.
    callers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "copies.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            deepcopy = isinstance(node, ast.Attribute) and node.attr == "deepcopy"
            if deepcopy or (isinstance(node, ast.ImportFrom) and node.module == "copy"):
                callers.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert callers == []
