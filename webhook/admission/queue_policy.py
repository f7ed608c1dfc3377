"""ResourceFlavor, ClusterQueue, LocalQueue and WorkloadPriorityClass: defaulting and the rules a CRD schema
cannot express (cross-field consistency, duplicates across lists, quantities compared with each other).

Every message names the field path. Objects are read in either API version (``cohort`` or ``cohortName``), through
the checked view of the review (``review.Reviewed``).
Must not: read the cluster (no rule here depends on other objects).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from webhook.admission import names, quantity, selector
from webhook.admission.fielderror import (
    FieldError,
    child,
    immutable,
    index,
    invalid,
    key,
    not_supported,
    required,
)
from webhook.admission.options import AdmissionOptions
from webhook.admission.patch import Patch
from webhook.admission.review import Request, Reviewed
from webhook.admission.verdict import ALLOW, Verdict, allow, judge
from webhook.admission.view import ClusterView
from webhook.api import constants as c

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_FLAVORS = 256
ONE_NANO = Fraction(1, 10**9)
MAX_COVERED_RESOURCES = 256
MAX_FLAVOR_RESOURCES_PER_GROUP = 512


def add_in_use_finalizer(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    """ResourceFlavor and ClusterQueue CREATE: the finalizer that keeps an in-use object from vanishing."""
    if request.operation != "CREATE" or not request.has_object:
        return ALLOW
    patch = Patch(request.raw_object)
    patch.append_unique(("metadata", "finalizers"), c.RESOURCE_IN_USE_FINALIZER)
    return allow(patch=patch.ops)


# ResourceFlavor -------------------------------------------------------------------------------------------


def validate_resource_flavor(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    if not request.has_object or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    spec = request.view.mapping("spec")
    errors = label_map_errors(spec.get("nodeLabels"), "spec.nodeLabels")
    errors += _taint_errors(spec.get("nodeTaints"), "spec.nodeTaints")
    errors += _toleration_errors(spec.get("tolerations"), "spec.tolerations")
    if request.has_old_object and request.operation == "UPDATE":
        before = request.old_view.mapping("spec").get("topologyName")
        if before and spec.get("topologyName") != before:
            errors.append(immutable("spec.topologyName", "cannot change once set"))
    return judge(errors)


def label_map_errors(raw: object, path: str) -> list[FieldError]:
    if raw is None:
        return []
    if not isinstance(raw, dict):
        return [invalid(path, raw, "must map label keys to values")]
    errors: list[FieldError] = []
    for k, v in raw.items():
        if problem := names.qualified_name(k):
            errors.append(invalid(key(path, k), k, problem))
        if not isinstance(v, str):
            errors.append(invalid(key(path, k), v, "must be a string"))
        elif problem := names.label_value(v):
            errors.append(invalid(key(path, k), v, problem))
    return errors


def _taint_errors(raw: object, path: str) -> list[FieldError]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [invalid(path, raw, "must be a list of taints")]
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(raw):
        where = index(path, i)
        if not isinstance(taint, dict):
            errors.append(invalid(where, taint, "must be a taint object"))
            continue
        taint_key, value, effect = taint.get("key", ""), taint.get("value", ""), taint.get("effect", "")
        if not isinstance(taint_key, str) or (problem := names.qualified_name(taint_key)):
            errors.append(invalid(child(where, "key"), taint_key, problem or "must be a string"))
        if not isinstance(value, str) or (problem := names.label_value(value)):
            errors.append(invalid(child(where, "value"), value, problem or "must be a string"))
        if effect not in TAINT_EFFECTS:
            errors.append(not_supported(child(where, "effect"), effect, TAINT_EFFECTS))
        pair = (str(taint_key), str(effect))
        if pair in seen:
            errors.append(
                invalid(where, taint_key, "taints must be unique by key and effect; this pair is listed twice")
            )
        seen.add(pair)
    return errors


def _toleration_errors(raw: object, path: str) -> list[FieldError]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [invalid(path, raw, "must be a list of tolerations")]
    errors: list[FieldError] = []
    for i, toleration in enumerate(raw):
        where = index(path, i)
        if not isinstance(toleration, dict):
            errors.append(invalid(where, toleration, "must be a toleration object"))
            continue
        tol_key = toleration.get("key", "")
        operator = toleration.get("operator", "Equal")
        if tol_key and (not isinstance(tol_key, str) or (problem := names.qualified_name(tol_key))):
            errors.append(invalid(child(where, "key"), tol_key, problem or "must be a string"))
        if operator not in ("Equal", "Exists"):
            errors.append(not_supported(child(where, "operator"), operator, ("Equal", "Exists")))
        if not tol_key and operator != "Exists":
            errors.append(invalid(child(where, "operator"), operator, "must be Exists when key is empty"))
        if operator == "Exists" and toleration.get("value"):
            errors.append(
                invalid(child(where, "value"), toleration.get("value"), "must be empty when operator is Exists")
            )
        effect = toleration.get("effect", "")
        if effect and effect not in TAINT_EFFECTS:
            errors.append(not_supported(child(where, "effect"), effect, TAINT_EFFECTS))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errors.append(invalid(child(where, "effect"), effect, "must be NoExecute when tolerationSeconds is set"))
    return errors


# ClusterQueue ---------------------------------------------------------------------------------------------


def validate_cluster_queue(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    if not request.has_object or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    queue = request.view
    spec = queue.mapping("spec")
    has_cohort = bool(spec.get("cohort") or spec.get("cohortName"))
    groups = queue.sequence("spec", "resourceGroups")
    errors = resource_group_errors(groups, "spec.resourceGroups", has_parent=has_cohort, parent_word="cohort")
    if "namespaceSelector" in spec and spec["namespaceSelector"] is not None:
        errors += selector.problems(spec["namespaceSelector"], "spec.namespaceSelector")
    preemption = queue.mapping("spec", "preemption")
    borrow_policy = queue.mapping("spec", "preemption", "borrowWithinCohort").get("policy", "Never")
    if preemption.get("reclaimWithinCohort", "Never") == "Never" and borrow_policy != "Never":
        errors.append(
            invalid(
                "spec.preemption.borrowWithinCohort.policy",
                borrow_policy,
                "must be Never while spec.preemption.reclaimWithinCohort is Never",
            )
        )
    fungibility = queue.mapping("spec", "flavorFungibility")
    if fungibility.get("preference") is not None and (
        fungibility.get("whenCanBorrow", "MayStopSearch") != "TryNextFlavor"
        or fungibility.get("whenCanPreempt", "TryNextFlavor") != "TryNextFlavor"
    ):
        errors.append(
            invalid(
                "spec.flavorFungibility.preference",
                fungibility.get("preference"),
                "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor",
            )
        )
    errors += _weight_errors(queue)
    errors += _admission_check_flavor_errors(spec.get("admissionChecksStrategy"), groups)
    return judge(errors)


def _weight_errors(obj: Reviewed) -> list[FieldError]:
    weight = obj.mapping("spec", "fairSharing").get("weight")
    if weight is not None:
        value = quantity.parse(weight)
        if value is None or value < 0 or 0 < value < ONE_NANO:
            return [invalid("spec.fairSharing.weight", weight, "must be 0 or a quantity of at least 1n")]
    return []


# Cohort ---------------------------------------------------------------------------------------------------


def validate_cohort(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    """Resource groups as for ClusterQueues (limits only below a parent), and no cycle through ``parentName``.

    A cycle is refused when the cache already shows the Cohorts that close it; two Cohorts created at the same
    moment can still form one, and the scheduler then reports it on the ClusterQueues below.
    """
    if not request.has_object or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    cohort = request.view
    name = str(cohort.mapping("metadata").get("name") or "")
    parent = cohort.mapping("spec").get("parentName")
    errors: list[FieldError] = []
    if parent is not None and (not isinstance(parent, str) or (problem := names.dns1123_subdomain(parent))):
        errors.append(invalid("spec.parentName", parent, problem if isinstance(parent, str) else "must be a string"))
        parent = None
    groups = cohort.sequence("spec", "resourceGroups")
    errors += resource_group_errors(groups, "spec.resourceGroups", has_parent=bool(parent), parent_word="parentName")
    errors += _weight_errors(cohort)
    if parent:
        cycle = _cycle_through(name, parent, view.cohort_parents())
        if cycle is not None:
            errors.append(
                invalid(
                    "spec.parentName",
                    parent,
                    f"would make a cycle of Cohorts ({' -> '.join(cycle)}); a Cohort "
                    "tree must end in a root Cohort without parentName",
                )
            )
    return judge(errors)


def _cycle_through(name: str, parent: str, parents: Mapping[str, str | None]) -> list[str] | None:
    """The path ``name -> parent -> ... -> name`` when setting ``parent`` closes a cycle, else None."""
    path = [name]
    at: str | None = parent
    while at is not None and at not in path:
        path.append(at)
        at = parents.get(at)
    if at == name:
        return [*path, name]
    return None  # ends at a root, or joins a cycle that does not pass through this Cohort (reported elsewhere)


def _admission_check_flavor_errors(strategy: object, groups: list[Any]) -> list[FieldError]:
    """``spec.admissionChecksStrategy``: the flavors its checks name are the queue's."""
    if not isinstance(strategy, dict):
        return []
    flavors = sorted(_flavor_names(groups))
    errors: list[FieldError] = []
    checks = strategy.get("admissionChecks") or []
    for i, check in enumerate(checks if isinstance(checks, list) else []):
        on_flavors = check.get("onFlavors") if isinstance(check, dict) else None
        for j, flavor in enumerate(on_flavors if isinstance(on_flavors, list) else []):
            if flavor not in flavors:
                path = index(child(index("spec.admissionChecksStrategy.admissionChecks", i), "onFlavors"), j)
                errors.append(not_supported(path, flavor, flavors))
    return errors


def _flavor_names(groups: list[Any]) -> set[str]:
    return {
        str(f.get("name"))
        for g in groups
        if isinstance(g, dict)
        for f in (g.get("flavors") or [])
        if isinstance(f, dict)
    }


def resource_group_errors(groups: list[Any], path: str, *, has_parent: bool, parent_word: str) -> list[FieldError]:
    """Rules shared by ClusterQueues and Cohorts: resources and flavors unique, quotas aligned and sane."""
    errors: list[FieldError] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_resources = 0
    for i, group in enumerate(groups):
        where = index(path, i)
        if not isinstance(group, dict):
            errors.append(invalid(where, group, "must be a resource group object"))
            continue
        covered = group.get("coveredResources") or []
        flavors = group.get("flavors") or []
        if not isinstance(covered, list) or not isinstance(flavors, list):
            errors.append(invalid(where, group, "coveredResources and flavors must be lists"))
            continue
        total_resources += len(covered)
        total_flavors += len(flavors)
        for j, resource in enumerate(covered):
            rpath = index(child(where, "coveredResources"), j)
            if not isinstance(resource, str) or (problem := names.qualified_name(resource)):
                errors.append(invalid(rpath, resource, problem or "must be a resource name"))
            elif resource in seen_resources:
                errors.append(
                    FieldError(
                        rpath,
                        "Duplicate value",
                        "a resource can be covered by only one resource group",
                        resource,
                        show_value=True,
                    )
                )
            seen_resources.add(str(resource))
        combinations = 0
        for j, flavor in enumerate(flavors):
            fpath = index(child(where, "flavors"), j)
            if not isinstance(flavor, dict):
                errors.append(invalid(fpath, flavor, "must be a flavor quotas object"))
                continue
            flavor_name = flavor.get("name")
            if flavor_name in seen_flavors:
                errors.append(
                    FieldError(
                        child(fpath, "name"),
                        "Duplicate value",
                        "a flavor can appear in only one resource group of a queue",
                        flavor_name,
                        show_value=True,
                    )
                )
            seen_flavors.add(str(flavor_name))
            resources = flavor.get("resources") or []
            combinations += len(resources) if isinstance(resources, list) else 0
            errors += _flavor_quota_errors(
                flavor.get("resources"), covered, fpath, has_parent=has_parent, parent_word=parent_word
            )
        if combinations > MAX_FLAVOR_RESOURCES_PER_GROUP:
            errors.append(
                invalid(
                    where,
                    combinations,
                    f"a resource group may have at most {MAX_FLAVOR_RESOURCES_PER_GROUP} flavor-resource pairs",
                )
            )
    if total_flavors > MAX_FLAVORS:
        errors.append(invalid(path, total_flavors, f"at most {MAX_FLAVORS} flavors across all resource groups"))
    if total_resources > MAX_COVERED_RESOURCES:
        errors.append(
            invalid(path, total_resources, f"at most {MAX_COVERED_RESOURCES} covered resources across all groups")
        )
    return errors


def _flavor_quota_errors(
    resources: object, covered: list[Any], path: str, *, has_parent: bool, parent_word: str
) -> list[FieldError]:
    """A flavor's ``resources``: one quota per covered resource, in order, each a sane quantity."""
    errors: list[FieldError] = []
    resources = resources or []
    if not isinstance(resources, list):
        return [invalid(child(path, "resources"), resources, "must be a list")]
    if len(resources) != len(covered):
        errors.append(
            invalid(
                child(path, "resources"),
                len(resources),
                f"must list exactly the {len(covered)} coveredResources of its group, in the same order",
            )
        )
    for k, quota in enumerate(resources):
        qpath = index(child(path, "resources"), k)
        if not isinstance(quota, dict):
            errors.append(invalid(qpath, quota, "must be a resource quota object"))
            continue
        if k < len(covered) and quota.get("name") != covered[k]:
            errors.append(
                invalid(
                    child(qpath, "name"),
                    quota.get("name"),
                    f"must match coveredResources[{k}] ({covered[k]!r}): same resources, same order",
                )
            )
        nominal = _non_negative(quota.get("nominalQuota"), child(qpath, "nominalQuota"), errors, needed=True)
        for limit in ("borrowingLimit", "lendingLimit"):
            if quota.get(limit) is None:
                continue
            value = _non_negative(quota[limit], child(qpath, limit), errors, needed=False)
            if not has_parent:
                errors.append(invalid(child(qpath, limit), quota[limit], f"must be unset when {parent_word} is empty"))
            lending_over_nominal = value is not None and nominal is not None and value > nominal
            if limit == "lendingLimit" and parent_word == "cohort" and lending_over_nominal:
                errors.append(
                    invalid(child(qpath, limit), quota[limit], "must be less than or equal to the nominalQuota")
                )
    return errors


def _non_negative(raw: object, path: str, errors: list[FieldError], *, needed: bool) -> Fraction | None:
    """The quantity ``raw`` at ``path`` when it is one and not negative; else None, with the error appended."""
    if raw is None:
        if needed:
            errors.append(required(path, "a quantity is required"))
        return None
    value = quantity.parse(raw)
    if value is None:
        errors.append(invalid(path, raw, 'must be a resource quantity such as "10", "500m" or "4Gi"'))
    elif value < 0:
        errors.append(invalid(path, raw, "must be greater than or equal to 0"))
        return None
    return value


# LocalQueue and WorkloadPriorityClass ----------------------------------------------------------------------


def validate_local_queue(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    if not request.has_object or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    errors: list[FieldError] = []
    target = request.view.mapping("spec").get("clusterQueue")
    if not isinstance(target, str) or not target:
        errors.append(required("spec.clusterQueue", "the name of the ClusterQueue this queue submits to"))
    elif problem := names.dns1123_subdomain(target):
        errors.append(invalid("spec.clusterQueue", target, problem))
    if request.operation == "UPDATE" and request.has_old_object:
        before = request.old_view.mapping("spec").get("clusterQueue")
        if before != target:
            errors.append(immutable("spec.clusterQueue", f"cannot change (was {before!r}); create a new LocalQueue"))
    return judge(errors)


def validate_priority_class(request: Request, view: ClusterView, options: AdmissionOptions) -> Verdict:
    if not request.has_object or request.operation not in ("CREATE", "UPDATE"):
        return ALLOW
    wpc = request.view.raw  # value and description are top-level fields: no section to check
    errors: list[FieldError] = []
    value = wpc.get("value")
    if value is None:
        errors.append(required("value", "the priority, an integer (higher runs first)"))
    elif isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        errors.append(invalid("value", value, "must be a 32-bit integer"))
    description = wpc.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > 2048):
        errors.append(invalid("description", "<long text>", "must be a string of at most 2048 characters"))
    return judge(errors)
