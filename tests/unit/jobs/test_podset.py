"""Injecting admitted flavors into pod templates and taking them back."""

from __future__ import annotations

import copy

import pytest

from tests.unit.jobs.builders import admitted_with, flavor_views, make_admission, make_flavor, make_job
from webhook.api.views import PodTemplateView
from webhook.jobs.podset import PodSetInfo, PodSetMergeError, inject, podset_infos, restore

SPOT_TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
FLAVORS = flavor_views(
    make_flavor("on-demand", node_labels={"instance": "on-demand"}),
    make_flavor("spot", node_labels={"instance": "spot"}, tolerations=[SPOT_TOLERATION]),
    make_flavor("gpu", node_labels={"accelerator": "a100"}),
)


def test_infos_union_node_labels_of_all_assigned_flavors() -> None:
    infos = podset_infos(admitted_with(make_admission(main={"cpu": "spot", "nvidia.com/gpu": "gpu"})), FLAVORS)
    assert dict(infos["main"].node_selector) == {"instance": "spot", "accelerator": "a100"}
    assert list(infos["main"].tolerations) == [SPOT_TOLERATION]
    assert dict(infos["main"].labels) == {"kueue.x-k8s.io/podset": "main"}


@pytest.mark.parametrize(
    ("admission", "message"),
    [
        pytest.param(make_admission(main={"cpu": "missing"}), "'missing'", id="flavor-missing"),
        pytest.param(
            make_admission(main={"cpu": "on-demand", "memory": "spot"}), "disagree on node label", id="flavors-conflict"
        ),
    ],
)
def test_infos_refuse_what_cannot_be_placed(admission: dict[str, object], message: str) -> None:
    with pytest.raises(PodSetMergeError, match=message):
        podset_infos(admitted_with(admission), FLAVORS)


def spot() -> PodSetInfo:
    """What admission to the ``spot`` flavor injects into the pod set ``main``."""
    return podset_infos(admitted_with(make_admission(main={"cpu": "spot"})), FLAVORS)["main"]


def test_inject_then_restore_round_trips_the_template() -> None:
    template = make_job(node_selector={"zone": "a"}, tolerations=[{"key": "x", "operator": "Exists"}])["spec"][
        "template"
    ]
    before = copy.deepcopy(template)
    injected = inject(PodTemplateView.of(template), spot())
    assert template == before, "inject must not modify its argument"
    assert injected["spec"]["nodeSelector"] == {"zone": "a", "instance": "spot"}
    assert injected["spec"]["tolerations"] == [{"key": "x", "operator": "Exists"}, SPOT_TOLERATION]
    assert injected["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert restore(PodTemplateView.of(injected), PodTemplateView.of(before)) == before


def test_inject_is_idempotent() -> None:
    once = inject(PodTemplateView.of(make_job()["spec"]["template"]), spot())
    assert inject(PodTemplateView.of(once), spot()) == once


def test_inject_refuses_to_override_a_users_node_selector() -> None:
    template = make_job(node_selector={"instance": "on-demand"})["spec"]["template"]
    with pytest.raises(PodSetMergeError, match="instance"):
        inject(PodTemplateView.of(template), spot())


def test_restore_keeps_labels_the_job_controller_added() -> None:
    original = make_job()["spec"]["template"]
    running = inject(PodTemplateView.of(original), spot())
    running["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = "abc"
    restored = restore(PodTemplateView.of(running), PodTemplateView.of(original))
    assert restored["metadata"]["labels"] == {"batch.kubernetes.io/controller-uid": "abc"}


def test_restore_gives_back_a_template_without_metadata_as_it_was() -> None:
    template = make_job()["spec"]["template"]
    del template["metadata"]
    recorded = PodTemplateView.of(template)
    assert restore(PodTemplateView.of(inject(recorded, spot())), recorded) == template
    kept = {"metadata": {}, "spec": template["spec"]}  # an empty one recorded is kept
    recorded = PodTemplateView.of(kept)
    assert restore(PodTemplateView.of(inject(recorded, spot())), recorded) == kept
