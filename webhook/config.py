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


@dataclass(frozen=True)
class _Section:
    """One mapping of the configuration file as read (``data``), at ``where`` ("" at the top, else the path of
    the section with a trailing dot), and the problems list every section of the file appends to. Its reads check
    a field's type, record a problem naming the field, and give the default instead, so one pass finds every
    problem; the file's values are read through these, once, into the typed ``Config``."""

    data: Mapping[str, Any]
    where: str
    problems: list[str]

    def __contains__(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, default: Any = None) -> Any:
        """The value of ``name`` as written (unchecked)."""
        return self.data.get(name, default)

    def problem(self, name: str, text: str) -> None:
        self.problems.append(f"{self.where}{name}: {text}")

    def section(self, name: str, known: set[str]) -> _Section:
        """The mapping ``name`` (empty when absent or not a mapping), its fields outside ``known`` reported."""
        value = self.data.get(name)
        inner = _Section({}, f"{self.where}{name}.", self.problems)
        if value is None:
            return inner
        if not isinstance(value, dict):
            self.problem(name, "must be a mapping")
            return inner
        for extra in sorted(set(value) - known):
            self.problem(f"{name}.{extra}", "unknown field")
        return _Section(value, inner.where, self.problems)

    def typed(self, name: str, kind: type, default: Any) -> Any:
        value = self.data.get(name, default)
        if value is None:
            return default
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            self.problem(name, f"must be an integer, got {value!r}")
            return default
        if kind is not int and not isinstance(value, kind):
            self.problem(name, f"must be a {kind.__name__}, got {value!r}")
            return default
        return value

    def duration(self, name: str, default: float) -> float:
        value = self.data.get(name)
        if value is None:
            return default
        seconds = parse_duration(value)
        if seconds is None or seconds <= 0:
            self.problem(name, f"must be a positive duration such as '15s' or '5m', got {value!r}")
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
    top = _Section(data, "", [])
    api_version = data.get("apiVersion")
    if api_version is not None and api_version not in API_VERSIONS:
        top.problem("apiVersion", f"must be one of {', '.join(API_VERSIONS)}, got {api_version!r}")
    if data.get("kind") not in (None, "Configuration"):
        top.problem("kind", f"must be Configuration, got {data.get('kind')!r}")
    for extra in sorted(set(data) - _TOP - _KUEUE_ONLY):
        top.problem(extra, "unknown field")

    namespace = top.typed("namespace", str, DEFAULT_NAMESPACE)
    if problem := dns1123_label(namespace):
        top.problem("namespace", f"{namespace!r} {problem}")
    manage = top.typed("manageJobsWithoutQueueName", bool, False)
    opt_in = data.get("namespaceOptInLabel")
    if opt_in is not None and (not isinstance(opt_in, str) or not opt_in):
        top.problem(
            "namespaceOptInLabel",
            f"must be a label key such as {OPENSHIFT_MANAGED_NAMESPACE_LABEL!r}, got {opt_in!r}",
        )
        opt_in = None
    users = data.get("reconcilerUsers", [])
    if not isinstance(users, list) or not all(isinstance(u, str) and u for u in users):
        top.problem("reconcilerUsers", "must be a list of user names")
        users = []

    compiled = _namespace_selector(top, namespace=namespace)
    wait = _wait_for_pods_ready(top)
    frameworks = _frameworks(top)
    leader = _leader_election(top)
    server = _webhook(top)
    fair = _fair_sharing(top)
    afs = _admission_fair_sharing(top)
    metrics_section = top.section("metrics", {"bindAddress", "enableClusterQueueResources", "customLabels"})
    bind = metrics_section.typed("bindAddress", str, Metrics().bind_address)
    if not re.fullmatch(r"[^\s:]*:\d{1,5}|0", bind):
        metrics_section.problem("bindAddress", f"must be 'host:port', ':port' or '0' (disabled), got {bind!r}")

    if top.problems:
        raise ConfigError(source, top.problems)
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


def _admission_fair_sharing(top: _Section) -> AdmissionFairSharing:
    """Kueue's ``admissionFairSharing``: on when present; applies to ClusterQueues whose admissionScope asks."""
    if "admissionFairSharing" not in top:
        return AdmissionFairSharing()
    known = {"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}
    section = top.section("admissionFairSharing", known)
    half_life = section.duration("usageHalfLifeTime", 0.0)
    interval = section.duration("usageSamplingInterval", 300.0)
    if interval <= 0:
        section.problem("usageSamplingInterval", "must be greater than 0")
    weights = section.get("resourceWeights") or {}
    if not isinstance(weights, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in weights.values()
    ):
        section.problem("resourceWeights", "must map resource names to non-negative numbers")
        weights = {}
    return AdmissionFairSharing(
        enabled=True,
        usage_half_life_seconds=half_life,
        usage_sampling_interval_seconds=interval,
        resource_weights={str(k): float(v) for k, v in weights.items()},
    )


def _fair_sharing(top: _Section) -> FairSharing:
    """Kueue's ``fairSharing``: on when the section is present (config v1beta2), or with ``enable: true``
    (config v1beta1, where the section alone does nothing)."""
    if "fairSharing" not in top:
        return FairSharing()
    section = top.section("fairSharing", {"enable", "preemptionStrategies"})
    v1beta1 = top.get("apiVersion") == "config.kueue.x-k8s.io/v1beta1"
    enabled = section.typed("enable", bool, not v1beta1)
    raw = section.get("preemptionStrategies")
    if raw is None:
        return FairSharing(enabled=enabled)
    strategies = tuple(raw) if isinstance(raw, list) else ()
    if strategies not in VALID_STRATEGY_LISTS:
        valid = "; ".join(f"[{', '.join(v)}]" for v in VALID_STRATEGY_LISTS)
        section.problem("preemptionStrategies", f"must be one of {valid}, got {raw!r}")
        return FairSharing(enabled=enabled)
    return FairSharing(enabled=enabled, preemption_strategies=strategies)


def _namespace_selector(top: _Section, *, namespace: str) -> selector.Selector | None:
    raw = top.get("managedJobsNamespaceSelector")
    if raw is None:
        return None
    errors = selector.problems(raw, "managedJobsNamespaceSelector")
    if errors:
        top.problems.extend(str(e) for e in errors)
        return None
    compiled = selector.compile_selector(raw)
    for protected in (KUBE_SYSTEM, namespace):
        if compiled.matches({NAME_LABEL: protected}):
            top.problem(
                "managedJobsNamespaceSelector",
                f"matches namespace {protected!r}, which Turnstile must never manage; "
                f"exclude it, e.g. matchExpressions: [{{key: {NAME_LABEL}, operator: NotIn, "
                f"values: [{KUBE_SYSTEM}, {namespace}]}}]",
            )
    return compiled


def _wait_for_pods_ready(top: _Section) -> WaitForPodsReady:
    known = {"enable", "timeout", "recoveryTimeout", "blockAdmission", "requeuingStrategy"}
    section = top.section("waitForPodsReady", known)
    raw = section.get("requeuingStrategy") or {}  # unlike a section, any empty value reads as none
    if not isinstance(raw, dict):
        section.problem("requeuingStrategy", "must be a mapping")
        raw = {}
    strategy = _Section(raw, f"{section.where}requeuingStrategy.", top.problems)
    for extra in sorted(set(raw) - {"timestamp", "backoffBaseSeconds", "backoffMaxSeconds", "backoffLimitCount"}):
        strategy.problem(extra, "unknown field")
    base = strategy.typed("backoffBaseSeconds", int, 60)
    most = strategy.typed("backoffMaxSeconds", int, 3600)
    limit = strategy.typed("backoffLimitCount", int, None)
    if base <= 0:
        strategy.problem("backoffBaseSeconds", "must be greater than 0")
    if most < base:
        strategy.problem("backoffMaxSeconds", f"must be at least backoffBaseSeconds ({base})")
    if limit is not None and limit < 0:
        strategy.problem("backoffLimitCount", "must be 0 or more")
    return WaitForPodsReady(
        enable=section.typed("enable", bool, False),
        timeout_seconds=section.duration("timeout", 300.0),
        requeuing=RequeuingStrategy(base, most, limit),
    )


def _frameworks(top: _Section) -> tuple[str, ...]:
    section = top.section("integrations", {"frameworks", "externalFrameworks", "labelKeysToCopy", "podOptions"})
    frameworks = section.get("frameworks") or ["batch/job"]
    if not isinstance(frameworks, list):
        section.problem("frameworks", "must be a list")
        return ("batch/job",)
    for name in frameworks:
        if name not in FRAMEWORK_KINDS:
            section.problem(
                "frameworks",
                f"{name!r} is not supported by Turnstile (supported: {', '.join(sorted(FRAMEWORK_KINDS))})",
            )
    for why in registry.missing_requirements(map(str, frameworks)):
        section.problem("frameworks", why)
    return tuple(dict.fromkeys(str(f) for f in frameworks))


def _leader_election(top: _Section) -> LeaderElection:
    known = {
        "leaderElect",
        "leaseDuration",
        "renewDeadline",
        "retryPeriod",
        "resourceName",
        "resourceNamespace",
        "resourceLock",
    }
    section = top.section("leaderElection", known)
    d = LeaderElection()
    lease = section.duration("leaseDuration", d.lease_duration_seconds)
    renew = section.duration("renewDeadline", d.renew_deadline_seconds)
    retry = section.duration("retryPeriod", d.retry_period_seconds)
    if renew >= lease:
        section.problem("renewDeadline", "must be shorter than leaseDuration")
    if retry >= renew:
        section.problem("retryPeriod", "must be shorter than renewDeadline")
    name = section.typed("resourceName", str, d.resource_name)
    return LeaderElection(section.typed("leaderElect", bool, True), lease, renew, retry, name)


def _webhook(top: _Section) -> WebhookServer:
    section = top.section("webhook", {"port", "certDir", "host"})
    d = WebhookServer()
    port = section.typed("port", int, d.port)
    if not 0 < port < 65536:
        section.problem("port", f"must be between 1 and 65535, got {port}")
    return WebhookServer(port, section.typed("certDir", str, d.cert_dir), section.typed("host", str, d.host))
