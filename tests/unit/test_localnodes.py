"""Node profiles: the shipped one parses and fits the samples; bad ones are refused with every problem named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.api.quantity import parse_quantity
from webhook.local import commands as localcommands
from webhook.local import nodes as localnodes

SAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "samples"


def group(**overrides: Any) -> dict[str, Any]:
    return {"name": "cpu", "count": 2, "capacity": {"cpu": "8", "memory": "32Gi"}} | overrides


def test_default_profile_renders_nodes_kwok_manages() -> None:
    profile = localnodes.load(localnodes.resolve(localnodes.DEFAULT_PROFILE) or Path())
    nodes = localnodes.node_objects(profile)
    assert [n["metadata"]["name"] for n in nodes] == profile.node_names()
    assert len(nodes) == sum(g.count for g in profile.groups) > 0
    for node in nodes:
        labels = node["metadata"]["labels"]
        assert labels[localnodes.MANAGED_LABEL] == "true"
        assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
        assert node["status"]["capacity"] == node["status"]["allocatable"]
        assert node["status"]["capacity"]["pods"] == "110"
    spot = [n for n in nodes if n["metadata"]["labels"].get("instance-type") == "spot"]
    assert spot
    assert all(
        n["spec"]["taints"] == [{"key": "cloud.example.com/spot", "value": "true", "effect": "NoSchedule"}]
        for n in spot
    )


def _tolerated(taints: list[dict[str, str]], tolerations: list[dict[str, str]]) -> bool:
    def tolerates(t: dict[str, str], taint: dict[str, str]) -> bool:
        if t.get("effect") and t["effect"] != taint["effect"]:
            return False
        if t.get("operator") == "Exists":
            return t.get("key") in (None, taint["key"])
        return t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", "")

    return all(any(tolerates(t, taint) for t in tolerations) for taint in taints)


def test_default_profile_offers_every_sample_quota_on_the_flavors_nodes() -> None:
    """A pod admitted on a sample flavor can land: the nodes that flavor selects (labels, tolerated taints) have at
    least the ClusterQueue's nominal quota of each resource."""
    flavors = {
        f["metadata"]["name"]: f.get("spec") or {}
        for f in yaml.safe_load_all((SAMPLES / "resource-flavors.yaml").read_text())
    }
    cq = yaml.safe_load((SAMPLES / "cluster-queue.yaml").read_text())
    nodes = localnodes.node_objects(localnodes.load(localnodes.PROFILE_DIR / "default.yaml"))
    checked = 0
    for rg in cq["spec"]["resourceGroups"]:
        for fq in rg["flavors"]:
            spec = flavors[fq["name"]]
            wanted = spec.get("nodeLabels") or {}
            fitting = [
                n
                for n in nodes
                if wanted.items() <= n["metadata"]["labels"].items()
                and _tolerated(n["spec"].get("taints") or [], spec.get("tolerations") or [])
            ]
            for quota in fq["resources"]:
                offered = sum(
                    (parse_quantity(n["status"]["capacity"].get(quota["name"], "0")) for n in fitting),
                    start=parse_quantity("0"),
                )
                assert offered >= parse_quantity(quota["nominalQuota"]), (fq["name"], quota["name"])
                checked += 1
    assert checked == 5


def test_stages_file_uses_the_names_of_this_module() -> None:
    stages = list(yaml.safe_load_all(localnodes.STAGES_FILE.read_text()))
    assert {s["kind"] for s in stages} == {"Stage"}
    assert {s["spec"]["resourceRef"]["kind"] for s in stages} == {"Node", "Pod"}
    assert localnodes.RUN_TIME_ANNOTATION in localnodes.STAGES_FILE.read_text()


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param([], "must be a mapping", id="not-a-mapping"),
        pytest.param({"nodes": []}, "nodes: must be a non-empty list", id="no-groups"),
        pytest.param({"nodes": [group()], "extra": 1}, "extra: unknown field", id="unknown-top-field"),
        pytest.param({"nodes": [group(name="Big_Nodes")]}, "nodes[0].name: must be lowercase", id="bad-name"),
        pytest.param({"nodes": [group(count=0)]}, "nodes[0].count: must be an integer of at least 1", id="zero-count"),
        pytest.param({"nodes": [group(count="3")]}, "nodes[0].count: must be an integer", id="string-count"),
        pytest.param({"nodes": [group(capacity={"cpu": "8"})]}, "nodes[0].capacity.memory: required", id="no-memory"),
        pytest.param(
            {"nodes": [group(capacity={"cpu": "lots", "memory": "1Gi"})]},
            "nodes[0].capacity.cpu: 'lots' is not a quantity",
            id="bad-quantity",
        ),
        pytest.param(
            {"nodes": [group(taints=[{"key": "spot", "effect": "Sometimes"}])]},
            "nodes[0].taints[0].effect: must be one of NoSchedule, PreferNoSchedule, NoExecute",
            id="bad-effect",
        ),
        pytest.param(
            {"nodes": [group(labels={localnodes.MANAGED_LABEL: "false"})]},
            f"nodes[0].labels.{localnodes.MANAGED_LABEL}: set by Turnstile",
            id="reserved-label",
        ),
        pytest.param({"nodes": [group(), group()]}, "the group name 'cpu' is used twice", id="duplicate-group"),
        pytest.param({"nodes": [group(count=5000)]}, "5000 nodes in total, at most 1000", id="too-many"),
        pytest.param({"nodes": [group(size="xl")]}, "nodes[0].size: unknown field", id="unknown-group-field"),
    ],
)
def test_bad_profiles_are_refused_with_the_field(data: object, problem: str) -> None:
    with pytest.raises(localnodes.NodeProfileError) as caught:
        localnodes.parse(data, source="p.yaml")
    assert any(problem in p for p in caught.value.problems), caught.value.problems
    assert "invalid node profile p.yaml" in str(caught.value)


def test_all_problems_are_reported_at_once() -> None:
    with pytest.raises(localnodes.NodeProfileError) as caught:
        localnodes.parse({"nodes": [group(count=0), group(name="b", capacity={})]}, source="p.yaml")
    assert len(caught.value.problems) == 3  # count, and cpu and memory missing


def test_numbers_are_accepted_as_quantities_and_pods_defaults_to_110() -> None:
    profile = localnodes.parse({"nodes": [group(capacity={"cpu": 16, "memory": "64Gi", "pods": 20})]}, source="p")
    assert profile.groups[0].capacity == {"cpu": "16", "memory": "64Gi", "pods": "20"}
    assert localnodes.parse({"nodes": [group()]}, source="p").groups[0].capacity["pods"] == "110"


def test_resolve_names_paths_and_none(tmp_path: Path) -> None:
    assert localnodes.resolve("none") is None
    assert localnodes.resolve("default") == localnodes.PROFILE_DIR / "default.yaml"
    own = tmp_path / "mine.yaml"
    own.write_text("nodes: []\n")
    assert localnodes.resolve(str(own)) == own
    with pytest.raises(localnodes.NodeProfileError, match=r"there are: .*default.*none"):
        localnodes.resolve("no-such-profile")


def test_cluster_up_refuses_an_unknown_profile_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert localcommands.cli_up(tmp_path / "state", nodes="no-such-profile") == 2
    assert "no profile of that name" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()
