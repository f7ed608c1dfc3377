"""The configuration file: Kueue's shape, sensible defaults, every problem listed, protected namespaces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from webhook.api import constants as c
from webhook.config import Config, ConfigError, load_config, parse_config, parse_duration


def test_defaults() -> None:
    config = load_config(None)
    assert config == Config()
    assert config.namespace == "turnstile-system"
    assert config.webhook.port == 9443
    policy = config.namespace_policy()
    assert policy.is_managed("team-a", None)
    assert not policy.is_managed("kube-system", None)
    assert config.trusted_users() == ("system:serviceaccount:turnstile-system:turnstile",)


def test_a_kueue_configuration_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
namespace: queues
health:
  healthProbeBindAddress: :8081
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector:
  matchLabels:
    team: ml
waitForPodsReady:
  enable: true
  timeout: 10m
  requeuingStrategy:
    backoffBaseSeconds: 30
    backoffMaxSeconds: 600
    backoffLimitCount: 5
integrations:
  frameworks: [batch/job, pod]
leaderElection:
  leaderElect: true
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 5s
  resourceName: turnstile.example.com
webhook:
  port: 10443
  certDir: /certs
metrics:
  bindAddress: :9090
"""
    )
    config = load_config(path)
    assert config.namespace == "queues"
    assert config.manage_jobs_without_queue_name is True
    assert config.wait_for_pods_ready.timeout_seconds == 600
    assert config.wait_for_pods_ready.requeuing.backoff_limit_count == 5
    assert config.frameworks == ("batch/job", "pod")
    assert config.leader_election.lease_duration_seconds == 30
    assert config.webhook.port == 10443
    assert config.webhook.cert_dir == "/certs"
    assert config.metrics.bind_address == ":9090"
    options = config.admission_options()
    assert options.namespaces.is_managed("a", {"team": "ml"})
    assert not options.namespaces.is_managed("b", {"team": "web"})
    assert not options.namespaces.is_managed("queues", {"team": "ml"})


def test_every_problem_is_listed_at_once() -> None:
    data: dict[str, Any] = {
        "kind": "Config",
        "nameSpace": "typo",
        "webhook": {"port": 70000, "extra": 1},
        "leaderElection": {"leaseDuration": "10s", "renewDeadline": "15s"},
        "waitForPodsReady": {"timeout": "soon", "requeuingStrategy": {"backoffBaseSeconds": "x"}},
        "integrations": {"frameworks": ["batch/job", "kubeflow.org/mpijob"]},  # one Turnstile does not have
        "metrics": {"bindAddress": "everywhere"},
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    problems = caught.value.problems
    for fragment in [
        "kind: must be Configuration",
        "nameSpace: unknown field",
        "webhook.port: must be between 1 and 65535",
        "webhook.extra: unknown field",
        "leaderElection.renewDeadline: must be shorter than leaseDuration",
        "waitForPodsReady.timeout: must be a positive duration",
        "waitForPodsReady.requeuingStrategy.backoffBaseSeconds: must be an integer",
        "'kubeflow.org/mpijob' is not supported",
        "metrics.bindAddress",
    ]:
        assert any(fragment in p for p in problems), fragment
    assert str(caught.value).count("\n  - ") == len(problems)


@pytest.mark.parametrize(
    ("selector", "namespace"),
    [
        pytest.param({}, "kube-system", id="empty-selector-matches-kube-system"),
        pytest.param(
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
                ]
            },
            "turnstile-system",
            id="own-namespace-not-excluded",
        ),
        pytest.param(
            {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}, "kube-system", id="kube-system-by-name"
        ),
    ],
)
def test_a_selector_that_could_manage_a_protected_namespace_is_refused(selector: object, namespace: str) -> None:
    with pytest.raises(ConfigError, match=f"matches namespace '{namespace}'"):
        parse_config({"managedJobsNamespaceSelector": selector})


def test_opt_in_label_mode() -> None:
    config = parse_config(
        {
            "managedJobsNamespaceSelector": {"matchLabels": {c.OPENSHIFT_MANAGED_NAMESPACE_LABEL: "true"}},
            "namespaceOptInLabel": c.OPENSHIFT_MANAGED_NAMESPACE_LABEL,
        }
    )
    policy = config.namespace_policy()
    assert policy.is_managed("a", {c.OPENSHIFT_MANAGED_NAMESPACE_LABEL: "true"})
    assert not policy.is_managed("b", {})


def test_unreadable_and_invalid_yaml_are_reported_without_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("webhook: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("1h30m", 5400.0, id="compound"),
        pytest.param("250ms", 0.25, id="millis"),
        pytest.param("15", None, id="no-unit"),
        pytest.param("5 m", None, id="space"),
    ],
)
def test_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds
