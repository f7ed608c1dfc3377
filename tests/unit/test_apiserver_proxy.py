"""The API client looks up the environment's proxy for the API server once, not in a thread on every request."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from webhook.kube.apiserver import ApiServerKube


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    cluster = {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def _clear_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)


async def test_without_a_proxy_requests_do_not_look_one_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_proxies(monkeypatch)
    async with ApiServerKube(kubeconfig=_kubeconfig(tmp_path)) as kube:
        session = kube._require_api().rest_client.pool_manager
        assert session.trust_env is False
        assert not session.closed
        assert session.connector is not None


async def test_a_proxy_in_the_environment_is_still_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    async with ApiServerKube(kubeconfig=_kubeconfig(tmp_path)) as kube:
        assert kube._require_api().rest_client.pool_manager.trust_env is True


async def test_no_proxy_for_the_server_means_no_lookups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_proxies(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    async with ApiServerKube(kubeconfig=_kubeconfig(tmp_path)) as kube:
        assert kube._require_api().rest_client.pool_manager.trust_env is False
