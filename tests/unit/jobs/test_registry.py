"""The registry drives the webhooks, the watches, the reconciler and RBAC: one line per kind, nothing per kind
anywhere else. These tests hold every registered kind to that."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
import yaml

from tests.doubles.fakekube import FakeKube
from webhook.admission import endpoints, registration
from webhook.admission.options import AdmissionOptions
from webhook.config import ConfigError, parse_config
from webhook.controller.reconciler import Reconciler
from webhook.controller.watches import build_cache, resource_of, watch_specs
from webhook.jobs import registry
from webhook.jobs.adapter import PodOwnerAdapter

RBAC = Path(__file__).resolve().parents[3] / "manifests" / "deploy" / "base" / "rbac.yaml"
# Kueue's integration names (pkg/controller/jobs/*): a kind Turnstile adds must use Kueue's name for it.
KUEUE_FRAMEWORKS = {
    "batch/job",
    "pod",
    "jobset.x-k8s.io/jobset",
    "deployment",
    "statefulset",
    "ray.io/rayjob",
    "ray.io/raycluster",
}
ALL = frozenset(registry.names())


def _granted() -> dict[tuple[str, str], set[str]]:
    role = next(d for d in yaml.safe_load_all(RBAC.read_text()) if d["kind"] == "ClusterRole")
    verbs: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                verbs.setdefault((group, resource), set()).update(rule["verbs"])
    return verbs


def test_every_framework_has_kueues_name_and_one_adapter() -> None:
    assert set(registry.names()) <= KUEUE_FRAMEWORKS
    assert len(registry.names()) == len(ALL)


@pytest.mark.parametrize("adapter", registry.ADAPTERS, ids=lambda a: a.framework)
def test_rbac_grants_what_the_reconciler_does_to_each_kind(adapter: registry.JobAdapter) -> None:
    granted = _granted()
    group, plural = adapter.kind.group, adapter.kind.plural
    if adapter.pod_owner:
        # Its webhook sees it (the API server sends the object); its pods are the pod integration's; a kind that
        # sizes its pods' group is watched, read only.
        assert {"get", "list", "watch", "update", "patch"} <= granted.get(("", "pods"), set())
        if cast(PodOwnerAdapter, adapter).sizes_group:
            assert {"get", "list", "watch"} <= granted.get((group, plural), set())
        return
    assert {"get", "list", "watch", "update", "patch"} <= granted.get((group, plural), set())
    if not adapter.managed_through_pods:
        assert {"update", "patch"} <= granted.get((group, f"{plural}/status"), set())
        # A Workload's blocking owner reference needs update on the owner's finalizers.
        assert "update" in granted.get((group, f"{plural}/finalizers"), set())


@pytest.mark.parametrize("adapter", registry.ADAPTERS, ids=lambda a: a.framework)
def test_an_enabled_kind_gets_two_webhooks_a_watch_and_a_reconciler(adapter: registry.JobAdapter) -> None:
    on = frozenset({adapter.framework})
    mutating, validating = registration.render_webhook_configurations(
        ca_bundle=None, url="https://127.0.0.1:9443", frameworks=on
    )
    target = {"apiGroups": [adapter.kind.group], "resources": [adapter.kind.plural]}
    for config in (mutating, validating):
        assert any({k: rule[k] for k in target} == target for hook in config["webhooks"] for rule in hook["rules"]), (
            f"no {config['kind']} webhook for {adapter.framework}"
        )
    served = [e for e in endpoints.enabled(AdmissionOptions(frameworks=on)) if e.framework == adapter.framework]
    assert sorted((e.mutating, e.resources) for e in served) == [
        (False, (adapter.kind.plural,)),
        (True, (adapter.kind.plural,)),
    ]
    reconciler = Reconciler(FakeKube(), build_cache(watch_specs(on)), frameworks=on)
    driven = {k.resource for k in reconciler.job_kinds}
    if adapter.pod_owner:
        # Labelled by its webhook, never reconciled itself; watched (read only) only when it sizes its pods' group.
        watched = resource_of(adapter) in {s.resource for s in watch_specs(on)}
        assert watched == cast(PodOwnerAdapter, adapter).sizes_group
        assert driven == set()
        return
    assert resource_of(adapter) in {s.resource for s in watch_specs(on)}
    if adapter.managed_through_pods:
        assert reconciler.pods is not None
        assert driven == set()
    else:
        assert driven == {resource_of(adapter)}
        assert reconciler.pods is None


@pytest.mark.parametrize("adapter", registry.ADAPTERS, ids=lambda a: a.framework)
def test_a_disabled_kind_has_no_webhook_and_no_watch(adapter: registry.JobAdapter) -> None:
    others = ALL - {adapter.framework}
    mutating, validating = registration.render_webhook_configurations(
        ca_bundle=None, url="https://127.0.0.1:9443", frameworks=others
    )
    rules = {
        (rule["apiGroups"][0], rule["resources"][0])
        for hook in mutating["webhooks"] + validating["webhooks"]
        for rule in hook["rules"]
    }
    assert (adapter.kind.group, adapter.kind.plural) not in rules
    assert resource_of(adapter) not in {s.resource for s in watch_specs(others)}
    assert all(e.framework != adapter.framework for e in endpoints.enabled(AdmissionOptions(frameworks=others)))


def test_the_config_accepts_exactly_the_registered_frameworks() -> None:
    config = parse_config({"integrations": {"frameworks": sorted(ALL)}})
    assert set(config.frameworks) == ALL
    with pytest.raises(ConfigError, match=r"'kubeflow\.org/mpijob' is not supported"):
        parse_config({"integrations": {"frameworks": ["batch/job", "kubeflow.org/mpijob"]}})


def test_a_kind_managed_through_its_pods_needs_the_pod_integration() -> None:
    with pytest.raises(ConfigError, match="deployment needs the 'pod' integration"):
        parse_config({"integrations": {"frameworks": ["batch/job", "deployment"]}})
    assert parse_config({"integrations": {"frameworks": ["deployment", "pod"]}}).frameworks == ("deployment", "pod")
