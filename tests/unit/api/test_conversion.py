"""v1beta1 <-> v1beta2 conversion: Kueue's mapping, field by field, and round trips as Hypothesis properties.

The examples follow Kueue's own conversion tests (apis/kueue/v1beta1/*_conversion_test.go); the properties say that
every object expressible in both versions survives a trip through the other version unchanged, in both directions,
and that fields one version lacks are dropped and nothing else is.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhook.api.conversion import V1BETA1, V1BETA2, ConversionError, convert
from webhook.api.topology import TopologyEncodingError, domains_to_slices, slices_to_domains

Obj = dict[str, Any]
WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_SOURCE = "scheduling.k8s.io/priorityclass"


def obj(kind: str, version: str, *, namespaced: bool = False, **body: Any) -> Obj:
    meta: Obj = {"name": "x", "uid": "1234"}
    if namespaced:
        meta["namespace"] = "ns"
    return {"apiVersion": version, "kind": kind, "metadata": meta, **body}


def cq(version: str, **spec: Any) -> Obj:
    return obj("ClusterQueue", version, spec=spec)


def wl(version: str, *, status: Obj | None = None, **spec: Any) -> Obj:
    body: Obj = {"spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}], **spec}}
    if status is not None:
        body["status"] = status
    return obj("Workload", version, namespaced=True, **body)


def admitted_with(topology: Obj) -> Obj:
    return {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "topologyAssignment": topology}]}
    }


# ------------------------------------------------------------------------------------------------ ClusterQueue


@pytest.mark.parametrize(
    ("v1beta1_spec", "v1beta2_spec"),
    [
        pytest.param({"cohort": "research"}, {"cohortName": "research"}, id="cohort-renamed"),
        pytest.param({"cohort": ""}, {}, id="empty-cohort-is-no-cohort"),
        pytest.param(
            {"admissionChecks": ["a", "b"]},
            {"admissionChecksStrategy": {"admissionChecks": [{"name": "a"}, {"name": "b"}]}},
            id="checks-list-becomes-strategy",
        ),
        pytest.param(
            {
                "admissionChecks": ["a"],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "z", "onFlavors": ["f"]}]},
            },
            {"admissionChecksStrategy": {"admissionChecks": [{"name": "a"}]}},
            id="checks-list-replaces-strategy",
        ),
        pytest.param(
            {
                "admissionChecks": [],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "z", "onFlavors": ["f"]}]},
            },
            {"admissionChecksStrategy": {"admissionChecks": [{"name": "z", "onFlavors": ["f"]}]}},
            id="empty-checks-list-ignored",
        ),
        pytest.param(
            {"flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}},
            {"flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}},
            id="fungibility-aliases-to-may-stop-search",
        ),
        pytest.param(
            {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}},
            {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}},
            id="fungibility-others-kept",
        ),
    ],
)
def test_cluster_queue_spec_to_v1beta2(v1beta1_spec: Obj, v1beta2_spec: Obj) -> None:
    assert convert(cq(V1BETA1, **v1beta1_spec), V1BETA2) == cq(V1BETA2, **v1beta2_spec)


def test_cluster_queue_to_v1beta1_renames_cohort_passes_fungibility_and_drops_concurrent_admission() -> None:
    v2 = cq(
        V1BETA2,
        cohortName="research",
        flavorFungibility={"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        concurrentAdmissionPolicy={"migration": {"mode": "RetainFirstAdmission"}},
        admissionChecksStrategy={"admissionChecks": [{"name": "a"}]},
    )

    assert convert(v2, V1BETA1) == cq(
        V1BETA1,
        cohort="research",
        flavorFungibility={"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        admissionChecksStrategy={"admissionChecks": [{"name": "a"}]},
    )


def test_cluster_queue_status_drops_v1beta1_only_fields() -> None:
    status = {
        "pendingWorkloads": 3,
        "pendingWorkloadsStatus": {"clusterQueuePendingWorkload": [], "lastChangeTime": "2026-01-01T00:00:00Z"},
        "fairSharing": {"weightedShare": 7, "admissionFairSharingStatus": {"consumedResources": {}, "lastUpdate": "x"}},
    }
    converted = convert(obj("ClusterQueue", V1BETA1, status=status), V1BETA2)

    assert converted["status"] == {"pendingWorkloads": 3, "fairSharing": {"weightedShare": 7}}


# ------------------------------------------------------------------------------------------------ LocalQueue


def test_local_queue_flavor_usage_renamed_both_ways_and_flavors_dropped() -> None:
    usage = [{"name": "default", "resources": [{"name": "cpu", "total": "3"}]}]
    v1 = obj("LocalQueue", V1BETA1, namespaced=True, status={"flavorUsage": usage, "flavors": [{"name": "default"}]})

    v2 = convert(v1, V1BETA2)

    assert v2["status"] == {"flavorsUsage": usage}
    assert convert(v2, V1BETA1)["status"] == {"flavorUsage": usage}


# ------------------------------------------------------------------------------------------------ Workload


@pytest.mark.parametrize(
    ("source", "ref"),
    [
        pytest.param(WPC_SOURCE, {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass"}, id="workload-class"),
        pytest.param(POD_SOURCE, {"group": "scheduling.k8s.io", "kind": "PriorityClass"}, id="pod-class"),
    ],
)
def test_workload_priority_class_source_and_name_become_a_ref_and_back(source: str, ref: Obj) -> None:
    v1 = wl(V1BETA1, priorityClassSource=source, priorityClassName="high", priority=100)

    v2 = convert(v1, V1BETA2)

    assert v2 == wl(V1BETA2, priorityClassRef={**ref, "name": "high"}, priority=100)
    assert convert(v2, V1BETA1) == v1


def test_workload_name_without_a_known_source_is_lost_as_in_kueue() -> None:
    v1 = wl(V1BETA1, priorityClassSource="", priorityClassName="high", priority=100)

    assert convert(v1, V1BETA2) == wl(V1BETA2, priority=100)


def test_workload_v1beta2_only_fields_are_dropped() -> None:
    v2 = wl(V1BETA2, preemptionGates=[{"name": "g"}], status={"preemptionGates": [{"name": "g", "position": "Open"}]})
    v2["spec"]["podSets"][0]["topologyRequest"] = {
        "required": "rack",
        "podsetSliceRequiredTopologyConstraints": [{"topology": "block", "size": 2}],
    }

    v1 = convert(v2, V1BETA1)

    assert "preemptionGates" not in v1["spec"]
    assert v1["status"] == {}
    assert v1["spec"]["podSets"][0]["topologyRequest"] == {"required": "rack"}


@pytest.mark.parametrize("seconds", [0, 42])
def test_workload_accumulated_execution_time_typo_renamed(seconds: int) -> None:
    v1 = wl(V1BETA1, status={"accumulatedPastExexcutionTimeSeconds": seconds})

    v2 = convert(v1, V1BETA2)

    assert v2["status"] == {"accumulatedPastExecutionTimeSeconds": seconds}
    assert convert(v2, V1BETA1) == v1


def test_topology_domains_become_one_compact_slice() -> None:
    domains = [{"values": ["a1", "b1"], "count": 10}, {"values": ["a1", "b2"], "count": 20}]

    v2 = convert(wl(V1BETA1, status=admitted_with({"levels": ["a", "b"], "domains": domains})), V1BETA2)

    assert v2["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] == {
        "levels": ["a", "b"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [{"universal": "a1"}, {"individual": {"prefix": "b", "roots": ["1", "2"]}}],
                "podCounts": {"individual": [10, 20]},
            }
        ],
    }


def test_topology_multiple_slices_with_prefix_suffix_and_universal_values_expand_in_order() -> None:
    slices = [
        {
            "domainCount": 2,
            "valuesPerLevel": [{"universal": "a1"}, {"individual": {"prefix": "b", "roots": ["1", "2"]}}],
            "podCounts": {"individual": [10, 20]},
        },
        {
            "domainCount": 2,
            "valuesPerLevel": [{"universal": "a2"}, {"individual": {"roots": ["first", "second"], "suffix": "-in-a2"}}],
            "podCounts": {"universal": 50},
        },
    ]

    v1 = convert(wl(V1BETA2, status=admitted_with({"levels": ["a", "b"], "slices": slices})), V1BETA1)

    assert v1["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] == {
        "levels": ["a", "b"],
        "domains": [
            {"values": ["a1", "b1"], "count": 10},
            {"values": ["a1", "b2"], "count": 20},
            {"values": ["a2", "first-in-a2"], "count": 50},
            {"values": ["a2", "second-in-a2"], "count": 50},
        ],
    }


def test_topology_prefix_and_suffix_never_overlap() -> None:
    slices = domains_to_slices(
        {"levels": ["h"], "domains": [{"values": ["ababa"], "count": 1}, {"values": ["aba"], "count": 1}]}
    )

    [piece] = slices["slices"]
    individual = piece["valuesPerLevel"][0]["individual"]
    assert len(individual.get("prefix", "")) + len(individual.get("suffix", "")) <= 3
    assert slices_to_domains(slices)["domains"] == [{"values": ["ababa"], "count": 1}, {"values": ["aba"], "count": 1}]


def test_empty_domains_give_no_slices() -> None:
    assert domains_to_slices({"levels": ["h"], "domains": []}) == {"levels": ["h"], "slices": []}


@pytest.mark.parametrize(
    "bad_slice",
    [
        pytest.param(
            {"domainCount": 2, "valuesPerLevel": [{"universal": "a"}], "podCounts": {"individual": [1]}},
            id="counts-short",
        ),
        pytest.param({"domainCount": 1, "valuesPerLevel": [], "podCounts": {"universal": 1}}, id="levels-missing"),
        pytest.param(
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "a", "individual": {"roots": ["a"]}}],
                "podCounts": {"universal": 1},
            },
            id="both-universal-and-individual",
        ),
        pytest.param(
            {"domainCount": 2, "valuesPerLevel": [{"individual": {"roots": ["a"]}}], "podCounts": {"universal": 1}},
            id="roots-short",
        ),
    ],
)
def test_malformed_slices_are_a_conversion_error_that_names_the_object(bad_slice: Obj) -> None:
    with pytest.raises(ConversionError, match="Workload ns/x: topologyAssignment: slices\\[0\\]"):
        convert(wl(V1BETA2, status=admitted_with({"levels": ["l"], "slices": [bad_slice]})), V1BETA1)


def test_domain_values_not_matching_levels_are_an_error() -> None:
    with pytest.raises(TopologyEncodingError, match=r"domains\[0\]\.values"):
        domains_to_slices({"levels": ["a", "b"], "domains": [{"values": ["only-one"], "count": 1}]})


# ------------------------------------------------------------------------------------------------ envelope


@pytest.mark.parametrize(
    ("bad", "desired", "message"),
    [
        pytest.param(cq(V1BETA1), "kueue.x-k8s.io/v1", "cannot convert to", id="unknown-target"),
        pytest.param(cq("kueue.x-k8s.io/v1alpha1"), V1BETA2, "cannot convert from", id="unknown-source"),
        pytest.param(obj("Topology", V1BETA1), V1BETA2, "cannot convert kind 'Topology'", id="unknown-kind"),
        pytest.param(
            {**cq(V1BETA1), "spec": ["not", "an", "object"]}, V1BETA2, "spec must be an object", id="bad-spec"
        ),
    ],
)
def test_what_cannot_be_converted_says_why(bad: Obj, desired: str, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(bad, desired)


@pytest.mark.parametrize("kind", ["ResourceFlavor", "WorkloadPriorityClass"])
def test_kinds_with_one_schema_only_change_api_version(kind: str) -> None:
    v1 = obj(kind, V1BETA1, spec={"nodeLabels": {"a": "b"}}, value=3)

    assert convert(v1, V1BETA2) == {**v1, "apiVersion": V1BETA2}


def test_same_version_is_returned_as_is() -> None:
    v2 = wl(V1BETA2, priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "p"})

    assert convert(v2, V1BETA2) == v2


# ------------------------------------------------------------------------------------------------ properties

names = st.from_regex(r"[a-z][a-z0-9-]{0,8}[a-z0-9]", fullmatch=True)
quantities = st.one_of(st.integers(0, 10**6), st.from_regex(r"[1-9][0-9]{0,3}(m|Mi|Gi)?", fullmatch=True))
times = st.just("2026-01-01T00:00:00Z")
conditions = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["Active", "QuotaReserved", "Admitted", "Finished"]),
            "status": st.sampled_from(["True", "False"]),
            "reason": names,
            "message": st.text(max_size=10),
            "lastTransitionTime": times,
        }
    ),
    max_size=3,
    unique_by=lambda c: c["type"],
)
resource_usage = st.lists(
    st.fixed_dictionaries(
        {"name": names, "resources": st.lists(st.fixed_dictionaries({"name": names, "total": quantities}), max_size=2)}
    ),
    max_size=2,
)


def optional(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Obj]:
    """Dicts with any subset of the given fields (absent keys are absent, never null)."""
    return st.fixed_dictionaries({}, optional=fields)


resource_groups = st.lists(
    st.fixed_dictionaries(
        {
            "coveredResources": st.just(["cpu"]),
            "flavors": st.lists(
                st.fixed_dictionaries(
                    {"name": names, "resources": st.just([{"name": "cpu", "nominalQuota": 4, "borrowingLimit": 2}])}
                ),
                min_size=1,
                max_size=2,
            ),
        }
    ),
    max_size=2,
)
shared_cq_spec = dict(
    resourceGroups=resource_groups,
    queueingStrategy=st.sampled_from(["StrictFIFO", "BestEffortFIFO"]),
    namespaceSelector=st.just({}),
    preemption=optional(reclaimWithinCohort=st.sampled_from(["Never", "Any"])),
    admissionChecksStrategy=st.fixed_dictionaries(
        {
            "admissionChecks": st.lists(
                optional(onFlavors=st.lists(names, max_size=2)).map(lambda d: {"name": "c", **d}), max_size=1
            )
        }
    ),
    stopPolicy=st.sampled_from(["None", "Hold", "HoldAndDrain"]),
    fairSharing=st.just({"weight": 1}),
)
fungibility = optional(
    whenCanBorrow=st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
    whenCanPreempt=st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
)
cq_status = optional(
    conditions=conditions,
    flavorsReservation=resource_usage,
    flavorsUsage=resource_usage,
    pendingWorkloads=st.integers(0, 9),
    admittedWorkloads=st.integers(0, 9),
    fairSharing=st.fixed_dictionaries({"weightedShare": st.integers(0, 9)}),
)


@st.composite
def cluster_queues(draw: st.DrawFn, version: str) -> Obj:
    spec = draw(optional(**shared_cq_spec, flavorFungibility=fungibility))
    cohort = draw(st.one_of(st.none(), names))
    if cohort is not None:
        spec["cohort" if version == V1BETA1 else "cohortName"] = cohort
    return {**obj("ClusterQueue", version), "spec": spec, "status": draw(cq_status)}


@st.composite
def local_queues(draw: st.DrawFn, version: str) -> Obj:
    status = draw(
        optional(conditions=conditions, pendingWorkloads=st.integers(0, 9), flavorsReservation=resource_usage)
    )
    usage = draw(st.one_of(st.none(), resource_usage))
    if usage is not None:
        status["flavorUsage" if version == V1BETA1 else "flavorsUsage"] = usage
    spec = draw(optional(clusterQueue=names, stopPolicy=st.sampled_from(["None", "Hold"])))
    return {**obj("LocalQueue", version, namespaced=True), "spec": spec, "status": status}


level_values = st.from_regex(r"[a-z0-9-]{0,12}", fullmatch=True)


@st.composite
def v1beta1_topologies(draw: st.DrawFn) -> Obj:
    levels = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    domains = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "values": st.lists(level_values, min_size=len(levels), max_size=len(levels)),
                    "count": st.integers(1, 5),
                }
            ),
            max_size=6,
        )
    )
    return {"levels": levels, "domains": domains}


@st.composite
def v1beta2_topologies(draw: st.DrawFn) -> Obj:
    """Any valid slices encoding, not only ours: several slices, universal or individual, prefixes and suffixes."""
    levels = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    slices = []
    for _ in range(draw(st.integers(0, 3))):
        count = draw(st.integers(1, 4))
        per_level = []
        for _ in levels:
            if draw(st.booleans()):
                per_level.append({"universal": draw(level_values)})
            else:
                individual = draw(optional(prefix=names, suffix=names))
                individual["roots"] = draw(st.lists(level_values, min_size=count, max_size=count))
                per_level.append({"individual": individual})
        pods = draw(
            st.one_of(
                st.integers(1, 5).map(lambda n: {"universal": n}),
                st.lists(st.integers(1, 5), min_size=count, max_size=count).map(lambda xs: {"individual": xs}),
            )
        )
        slices.append({"domainCount": count, "valuesPerLevel": per_level, "podCounts": pods})
    return {"levels": levels, "slices": slices}


default_topologies = {V1BETA1: v1beta1_topologies(), V1BETA2: v1beta2_topologies()}


@st.composite
def workloads(draw: st.DrawFn, version: str, *, topologies: st.SearchStrategy[Obj] | None = None) -> Obj:
    pod_set = {"name": "main", "count": draw(st.integers(1, 4)), "template": {"spec": {"containers": [{"name": "c"}]}}}
    if draw(st.booleans()):
        pod_set["topologyRequest"] = {"required": draw(names)}
    spec: Obj = {
        "podSets": [pod_set],
        **draw(optional(queueName=names, active=st.booleans(), maximumExecutionTimeSeconds=st.integers(1, 99))),
    }
    priority = draw(st.one_of(st.none(), st.tuples(st.sampled_from([WPC_SOURCE, POD_SOURCE]), names)))
    if priority is not None:
        source, name = priority
        spec["priority"] = draw(st.integers(-5, 5))
        if version == V1BETA1:
            spec |= {"priorityClassSource": source, "priorityClassName": name}
        else:
            group, kind = (
                ("kueue.x-k8s.io", "WorkloadPriorityClass")
                if source == WPC_SOURCE
                else ("scheduling.k8s.io", "PriorityClass")
            )
            spec["priorityClassRef"] = {"group": group, "kind": kind, "name": name}
    status = draw(optional(conditions=conditions, clusterName=names))
    past = draw(st.one_of(st.none(), st.integers(0, 99)))
    if past is not None:
        status[
            "accumulatedPastExexcutionTimeSeconds" if version == V1BETA1 else "accumulatedPastExecutionTimeSeconds"
        ] = past
    topology_strategy = topologies if topologies is not None else default_topologies[version]
    if draw(st.booleans()):
        assignment = {"name": "main", "flavors": {"cpu": "default"}, "count": pod_set["count"]}
        if draw(st.booleans()):
            assignment["topologyAssignment"] = draw(topology_strategy)
        status["admission"] = {"clusterQueue": draw(names), "podSetAssignments": [assignment]}
    return {**obj("Workload", version, namespaced=True), "spec": spec, "status": status}


def simple_kind(version: str) -> st.SearchStrategy[Obj]:
    return st.one_of(
        optional(nodeLabels=st.dictionaries(names, names, max_size=2)).map(
            lambda s: {**obj("ResourceFlavor", version), "spec": s}
        ),
        st.integers(-9, 9).map(lambda v: {**obj("WorkloadPriorityClass", version), "value": v}),
    )


def any_kind(version: str) -> st.SearchStrategy[Obj]:
    return st.one_of(cluster_queues(version), local_queues(version), workloads(version), simple_kind(version))


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(any_kind(V1BETA1))
def test_every_v1beta1_object_expressible_in_both_survives_a_trip_through_v1beta2(original: Obj) -> None:
    kept = copy.deepcopy(original)

    there = convert(original, V1BETA2)
    back = convert(there, V1BETA1)

    assert there["apiVersion"] == V1BETA2
    assert back == kept
    assert original == kept  # the input is never modified


@PROPERTY
@given(
    st.one_of(
        cluster_queues(V1BETA2),
        local_queues(V1BETA2),
        simple_kind(V1BETA2),
        workloads(V1BETA2, topologies=v1beta1_topologies().map(domains_to_slices)),
    )
)
def test_every_v1beta2_object_expressible_in_both_survives_a_trip_through_v1beta1(original: Obj) -> None:
    kept = copy.deepcopy(original)

    back = convert(convert(original, V1BETA1), V1BETA2)

    assert back == kept
    assert original == kept


def _assignments(workload: Obj) -> list[Obj]:
    return [
        a["topologyAssignment"]
        for a in workload["status"].get("admission", {}).get("podSetAssignments", [])
        if "topologyAssignment" in a
    ]


@PROPERTY
@given(workloads(V1BETA2))
def test_any_v1beta2_slices_encoding_comes_back_as_the_same_domains(original: Obj) -> None:
    back = convert(convert(original, V1BETA1), V1BETA2)

    assert [slices_to_domains(t) for t in _assignments(back)] == [slices_to_domains(t) for t in _assignments(original)]
    assert {**back, "status": {k: v for k, v in back["status"].items() if k != "admission"}} == {
        **original,
        "status": {k: v for k, v in original["status"].items() if k != "admission"},
    }


@PROPERTY
@given(v1beta1_topologies())
def test_our_slices_always_pass_kueues_v1beta2_rules(topology: Obj) -> None:
    encoded = domains_to_slices(topology)

    for piece in encoded["slices"]:
        assert piece["domainCount"] >= 1
        assert len(piece["valuesPerLevel"]) == len(encoded["levels"])
        for level in piece["valuesPerLevel"]:
            assert ("universal" in level) != ("individual" in level)
            if "individual" in level:
                assert len(level["individual"]["roots"]) == piece["domainCount"]
                assert level["individual"].get("prefix", "x") != ""
                assert level["individual"].get("suffix", "x") != ""
        counts = piece["podCounts"]
        assert ("universal" in counts) != ("individual" in counts)
        assert "universal" in counts or len(counts["individual"]) == piece["domainCount"]
    assert slices_to_domains(encoded) == topology


@PROPERTY
@given(cluster_queues(V1BETA2), st.sampled_from([{"mode": "RetainFirstAdmission"}, {"mode": "TryPreferredFlavors"}]))
def test_v1beta2_only_cluster_queue_fields_are_dropped_and_nothing_else(original: Obj, migration: Obj) -> None:
    with_extra = {**original, "spec": {**original["spec"], "concurrentAdmissionPolicy": {"migration": migration}}}

    assert convert(convert(with_extra, V1BETA1), V1BETA2) == original


@PROPERTY
@given(
    cluster_queues(V1BETA1),
    st.lists(names, min_size=1, max_size=3, unique=True),
    st.sampled_from(["Borrow", "Preempt"]),
)
def test_v1beta1_only_cluster_queue_spellings_come_back_normalised(
    original: Obj, checks: list[str], alias: str
) -> None:
    field = "whenCanBorrow" if alias == "Borrow" else "whenCanPreempt"
    spec = {**original["spec"], "admissionChecks": checks, "flavorFungibility": {field: alias}}

    back = convert(convert({**original, "spec": spec}, V1BETA2), V1BETA1)

    assert back["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": n} for n in checks]}
    assert "admissionChecks" not in back["spec"]
    assert back["spec"]["flavorFungibility"] == {field: "MayStopSearch"}
