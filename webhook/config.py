"""Turnstile's configuration file: YAML in the shape of Kueue's ``Configuration`` where the concepts overlap.

``load_config(path)`` reads, checks and defaults the file; any problem — every one of them, not just the
first — raises ``ConfigError`` whose message lists them with the field they concern. Fields Kueue has and
Turnstile does not use yet are accepted and ignored so an existing Kueue configuration loads; unknown fields are
errors (typos must not pass silently). ``kube-system`` and Turnstile's own namespace can never be managed.

Turnstile's own fields: ``namespaceOptInLabel`` (only namespaces labelled ``<key>=true`` are managed, e.g.
``kueue.openshift.io/managed``) and ``reconcilerUsers`` (who may unsuspend jobs and ungate pods; default
Turnstile's service account).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from webhook.admission import selector
from webhook.admission.names import dns1123_label
from webhook.admission.options import FRAMEWORK_KINDS, AdmissionOptions
from webhook.api.configuration import RequeuingStrategy, WaitForPodsReady
from webhook.api.constants import OPENSHIFT_MANAGED_NAMESPACE_LABEL
from webhook.core.admissionfairsharing import AdmissionFairSharing
from webhook.core.fairsharing import VALID_STRATEGY_LISTS, FairSharing
from webhook.core.namespace_policy import KUBE_SYSTEM, NAME_LABEL, NamespacePolicy
from webhook.jobs import registry

API_VERSIONS = ("config.kueue.x-k8s.io/v1beta1", "config.kueue.x-k8s.io/v1beta2", "config.turnstile.x-k8s.io/v1alpha1")
DEFAULT_NAMESPACE = "turnstile-system"
DEFAULT_SERVICE_ACCOUNT = "turnstile"
# Kueue fields that load but do nothing in Turnstile (yet).
_KUEUE_ONLY = frozenset(
    {
        "health",
        "controller",
        "clientConnection",
        "internalCertManagement",
        "resources",
        "multiKueue",
        "objectRetentionPolicies",
        "featureGates",
        "visibilityServer",
        "tls",
        "pprofBindAddress",
    }
)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ConfigError(ValueError):
    """The configuration cannot be used; ``problems`` has one line per problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid configuration {source}: {len(problems)} problem(s)\n{lines}")


@dataclass(frozen=True)
class LeaderElection:
    leader_elect: bool = True
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    resource_name: str = "turnstile.x-k8s.io"


@dataclass(frozen=True)
class WebhookServer:
    port: int = 9443
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"
    host: str = ""


@dataclass(frozen=True)
class Metrics:
    bind_address: str = ":8080"


@dataclass(frozen=True)
class Config:
    namespace: str = DEFAULT_NAMESPACE
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: selector.Selector | None = None  # None → Kueue's default
    namespace_opt_in_label: str | None = None
    reconciler_users: tuple[str, ...] = ()
    wait_for_pods_ready: WaitForPodsReady = field(default_factory=WaitForPodsReady)
    frameworks: tuple[str, ...] = ("batch/job",)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    webhook: WebhookServer = field(default_factory=WebhookServer)
    metrics: Metrics = field(default_factory=Metrics)
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    admission_fair_sharing: AdmissionFairSharing = field(default_factory=AdmissionFairSharing)

    def namespace_policy(self) -> NamespacePolicy:
        if self.managed_jobs_namespace_selector is None:
            policy = NamespacePolicy.default(self.namespace)
            return NamespacePolicy(policy.selector, self.namespace, self.namespace_opt_in_label)
        return NamespacePolicy(self.managed_jobs_namespace_selector, self.namespace, self.namespace_opt_in_label)

    def trusted_users(self) -> tuple[str, ...]:
        if self.reconciler_users:
            return self.reconciler_users
        return (f"system:serviceaccount:{self.namespace}:{DEFAULT_SERVICE_ACCOUNT}",)

    def admission_options(self) -> AdmissionOptions:
        return AdmissionOptions(
            namespaces=self.namespace_policy(),
            manage_jobs_without_queue_name=self.manage_jobs_without_queue_name,
            frameworks=frozenset(self.frameworks),
            trusted_users=frozenset(self.trusted_users()),
        )


def load_config(path: Path | None) -> Config:
    """The configuration in ``path`` (defaults when None); raises ``ConfigError`` listing every problem."""
    if path is None:
        return Config()
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(str(path), [f"cannot read the file: {exc.strerror}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), [f"not valid YAML: {exc}"]) from None
    return parse_config(data if data is not None else {}, source=str(path))


class _Reader:
    """Collects problems while reading typed values out of nested maps."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def section(self, data: Mapping[str, Any], name: str, known: set[str]) -> Mapping[str, Any]:
        value = data.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problems.append(f"{name}: must be a mapping")
            return {}
        for extra in sorted(set(value) - known):
            self.problems.append(f"{name}.{extra}: unknown field")
        return value

    def typed(self, data: Mapping[str, Any], name: str, kind: type, default: Any, where: str) -> Any:
        value = data.get(name, default)
        if value is None:
            return default
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            self.problems.append(f"{where}{name}: must be an integer, got {value!r}")
            return default
        if kind is not int and not isinstance(value, kind):
            self.problems.append(f"{where}{name}: must be a {kind.__name__}, got {value!r}")
            return default
        return value

    def duration(self, data: Mapping[str, Any], name: str, default: float, where: str) -> float:
        value = data.get(name)
        if value is None:
            return default
        seconds = parse_duration(value)
        if seconds is None or seconds <= 0:
            self.problems.append(f"{where}{name}: must be a positive duration such as '15s' or '5m', got {value!r}")
            return default
        return seconds


def parse_duration(value: object) -> float | None:
    """Go-style durations (``1h30m``, ``10s``, ``250ms``) to seconds; None when unparsable."""
    if not isinstance(value, str) or not value:
        return None
    pos, total = 0, 0.0
    for match in _DURATION.finditer(value):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return total if pos == len(value) else None


_TOP = {
    "apiVersion",
    "kind",
    "namespace",
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "namespaceOptInLabel",
    "reconcilerUsers",
    "waitForPodsReady",
    "integrations",
    "leaderElection",
    "webhook",
    "metrics",
    "fairSharing",
    "admissionFairSharing",
}


def parse_config(data: object, *, source: str = "<config>") -> Config:
    if not isinstance(data, dict):
        raise ConfigError(source, ["the file must hold a mapping (a Configuration object)"])
    r = _Reader()
    api_version = data.get("apiVersion")
    if api_version is not None and api_version not in API_VERSIONS:
        r.problems.append(f"apiVersion: must be one of {', '.join(API_VERSIONS)}, got {api_version!r}")
    if data.get("kind") not in (None, "Configuration"):
        r.problems.append(f"kind: must be Configuration, got {data.get('kind')!r}")
    for extra in sorted(set(data) - _TOP - _KUEUE_ONLY):
        r.problems.append(f"{extra}: unknown field")

    namespace = r.typed(data, "namespace", str, DEFAULT_NAMESPACE, "")
    if problem := dns1123_label(namespace):
        r.problems.append(f"namespace: {namespace!r} {problem}")
    manage = r.typed(data, "manageJobsWithoutQueueName", bool, False, "")
    opt_in = data.get("namespaceOptInLabel")
    if opt_in is not None and (not isinstance(opt_in, str) or not opt_in):
        r.problems.append(
            f"namespaceOptInLabel: must be a label key such as {OPENSHIFT_MANAGED_NAMESPACE_LABEL!r}, got {opt_in!r}"
        )
        opt_in = None
    users = data.get("reconcilerUsers", [])
    if not isinstance(users, list) or not all(isinstance(u, str) and u for u in users):
        r.problems.append("reconcilerUsers: must be a list of user names")
        users = []

    compiled = _namespace_selector(data, r, namespace=namespace)
    wait = _wait_for_pods_ready(data, r)
    frameworks = _frameworks(data, r)
    leader = _leader_election(data, r)
    server = _webhook(data, r)
    fair = _fair_sharing(data, r)
    afs = _admission_fair_sharing(data, r)
    metrics_section = r.section(data, "metrics", {"bindAddress", "enableClusterQueueResources", "customLabels"})
    bind = r.typed(metrics_section, "bindAddress", str, Metrics().bind_address, "metrics.")
    if not re.fullmatch(r"[^\s:]*:\d{1,5}|0", bind):
        r.problems.append(f"metrics.bindAddress: must be 'host:port', ':port' or '0' (disabled), got {bind!r}")

    if r.problems:
        raise ConfigError(source, r.problems)
    return Config(
        namespace=namespace,
        manage_jobs_without_queue_name=manage,
        managed_jobs_namespace_selector=compiled,
        namespace_opt_in_label=opt_in,
        reconciler_users=tuple(users),
        wait_for_pods_ready=wait,
        frameworks=frameworks,
        leader_election=leader,
        webhook=server,
        metrics=Metrics(bind),
        fair_sharing=fair,
        admission_fair_sharing=afs,
    )


def _admission_fair_sharing(data: Mapping[str, Any], r: _Reader) -> AdmissionFairSharing:
    """Kueue's ``admissionFairSharing``: on when present; applies to ClusterQueues whose admissionScope asks."""
    if "admissionFairSharing" not in data:
        return AdmissionFairSharing()
    known = {"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}
    section = r.section(data, "admissionFairSharing", known)
    where = "admissionFairSharing."
    half_life = r.duration(section, "usageHalfLifeTime", 0.0, where)
    interval = r.duration(section, "usageSamplingInterval", 300.0, where)
    if interval <= 0:
        r.problems.append(f"{where}usageSamplingInterval: must be greater than 0")
    weights = section.get("resourceWeights") or {}
    if not isinstance(weights, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in weights.values()
    ):
        r.problems.append(f"{where}resourceWeights: must map resource names to non-negative numbers")
        weights = {}
    return AdmissionFairSharing(
        enabled=True,
        usage_half_life_seconds=half_life,
        usage_sampling_interval_seconds=interval,
        resource_weights={str(k): float(v) for k, v in weights.items()},
    )


def _fair_sharing(data: Mapping[str, Any], r: _Reader) -> FairSharing:
    """Kueue's ``fairSharing``: on when the section is present (config v1beta2), or with ``enable: true``
    (config v1beta1, where the section alone does nothing)."""
    if "fairSharing" not in data:
        return FairSharing()
    section = r.section(data, "fairSharing", {"enable", "preemptionStrategies"})
    v1beta1 = data.get("apiVersion") == "config.kueue.x-k8s.io/v1beta1"
    enabled = r.typed(section, "enable", bool, not v1beta1, "fairSharing.")
    raw = section.get("preemptionStrategies")
    if raw is None:
        return FairSharing(enabled=enabled)
    strategies = tuple(raw) if isinstance(raw, list) else ()
    if strategies not in VALID_STRATEGY_LISTS:
        valid = "; ".join(f"[{', '.join(v)}]" for v in VALID_STRATEGY_LISTS)
        r.problems.append(f"fairSharing.preemptionStrategies: must be one of {valid}, got {raw!r}")
        return FairSharing(enabled=enabled)
    return FairSharing(enabled=enabled, preemption_strategies=strategies)


def _namespace_selector(data: Mapping[str, Any], r: _Reader, *, namespace: str) -> selector.Selector | None:
    raw = data.get("managedJobsNamespaceSelector")
    if raw is None:
        return None
    errors = selector.problems(raw, "managedJobsNamespaceSelector")
    if errors:
        r.problems.extend(str(e) for e in errors)
        return None
    compiled = selector.compile_selector(raw)
    for protected in (KUBE_SYSTEM, namespace):
        if compiled.matches({NAME_LABEL: protected}):
            r.problems.append(
                f"managedJobsNamespaceSelector: matches namespace {protected!r}, which Turnstile must never manage; "
                f"exclude it, e.g. matchExpressions: [{{key: {NAME_LABEL}, operator: NotIn, "
                f"values: [{KUBE_SYSTEM}, {namespace}]}}]"
            )
    return compiled


def _wait_for_pods_ready(data: Mapping[str, Any], r: _Reader) -> WaitForPodsReady:
    known = {"enable", "timeout", "recoveryTimeout", "blockAdmission", "requeuingStrategy"}
    section = r.section(data, "waitForPodsReady", known)
    where = "waitForPodsReady."
    strategy = section.get("requeuingStrategy") or {}
    if not isinstance(strategy, dict):
        r.problems.append(f"{where}requeuingStrategy: must be a mapping")
        strategy = {}
    s_where = f"{where}requeuingStrategy."
    for extra in sorted(set(strategy) - {"timestamp", "backoffBaseSeconds", "backoffMaxSeconds", "backoffLimitCount"}):
        r.problems.append(f"{s_where}{extra}: unknown field")
    base = r.typed(strategy, "backoffBaseSeconds", int, 60, s_where)
    most = r.typed(strategy, "backoffMaxSeconds", int, 3600, s_where)
    limit = r.typed(strategy, "backoffLimitCount", int, None, s_where)
    if base <= 0:
        r.problems.append(f"{s_where}backoffBaseSeconds: must be greater than 0")
    if most < base:
        r.problems.append(f"{s_where}backoffMaxSeconds: must be at least backoffBaseSeconds ({base})")
    if limit is not None and limit < 0:
        r.problems.append(f"{s_where}backoffLimitCount: must be 0 or more")
    return WaitForPodsReady(
        enable=r.typed(section, "enable", bool, False, where),
        timeout_seconds=r.duration(section, "timeout", 300.0, where),
        requeuing=RequeuingStrategy(base, most, limit),
    )


def _frameworks(data: Mapping[str, Any], r: _Reader) -> tuple[str, ...]:
    section = r.section(data, "integrations", {"frameworks", "externalFrameworks", "labelKeysToCopy", "podOptions"})
    frameworks = section.get("frameworks") or ["batch/job"]
    if not isinstance(frameworks, list):
        r.problems.append("integrations.frameworks: must be a list")
        return ("batch/job",)
    for name in frameworks:
        if name not in FRAMEWORK_KINDS:
            r.problems.append(
                f"integrations.frameworks: {name!r} is not supported by Turnstile (supported: "
                f"{', '.join(sorted(FRAMEWORK_KINDS))})"
            )
    r.problems += [f"integrations.frameworks: {why}" for why in registry.missing_requirements(map(str, frameworks))]
    return tuple(dict.fromkeys(str(f) for f in frameworks))


def _leader_election(data: Mapping[str, Any], r: _Reader) -> LeaderElection:
    known = {
        "leaderElect",
        "leaseDuration",
        "renewDeadline",
        "retryPeriod",
        "resourceName",
        "resourceNamespace",
        "resourceLock",
    }
    section = r.section(data, "leaderElection", known)
    where = "leaderElection."
    d = LeaderElection()
    lease = r.duration(section, "leaseDuration", d.lease_duration_seconds, where)
    renew = r.duration(section, "renewDeadline", d.renew_deadline_seconds, where)
    retry = r.duration(section, "retryPeriod", d.retry_period_seconds, where)
    if renew >= lease:
        r.problems.append(f"{where}renewDeadline: must be shorter than leaseDuration")
    if retry >= renew:
        r.problems.append(f"{where}retryPeriod: must be shorter than renewDeadline")
    name = r.typed(section, "resourceName", str, d.resource_name, where)
    return LeaderElection(r.typed(section, "leaderElect", bool, True, where), lease, renew, retry, name)


def _webhook(data: Mapping[str, Any], r: _Reader) -> WebhookServer:
    section = r.section(data, "webhook", {"port", "certDir", "host"})
    d = WebhookServer()
    port = r.typed(section, "port", int, d.port, "webhook.")
    if not 0 < port < 65536:
        r.problems.append(f"webhook.port: must be between 1 and 65535, got {port}")
    return WebhookServer(
        port,
        r.typed(section, "certDir", str, d.cert_dir, "webhook."),
        r.typed(section, "host", str, d.host, "webhook."),
    )
