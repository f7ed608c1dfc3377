"""The client loaded without kubernetes_asyncio's generated classes, in a fresh interpreter each time (the module
cache of this one is shared by every test)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


PREFIXES = "('kubernetes_asyncio.client.api.', 'kubernetes_asyncio.client.models.')"
GENERATED = f"sorted(m for m in sys.modules if m.startswith({PREFIXES}))"


@pytest.mark.parametrize("module", ["webhook.runner", "webhook.reconcilerprocess", "webhook.kube.apiserver"])
def test_the_processes_load_no_generated_api_or_model_class(module: str) -> None:
    assert run(f"import sys, {module}; print({GENERATED})") == "[]"


def test_the_slim_client_loads_a_kubeconfig_and_builds_the_json_client() -> None:
    code = """
import asyncio, base64, pathlib, sys, tempfile
from webhook.kube.apiserver import ApiServerKube
config = pathlib.Path(tempfile.mkdtemp()) / "kubeconfig"
config.write_text('''
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: secret}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
''')
async def main():
    async with ApiServerKube(kubeconfig=config) as kube:
        print(kube.server, kube._require_api().configuration.api_key["BearerToken"].endswith("secret"))
asyncio.run(main())
"""
    assert run(code) == "https://127.0.0.1:6443 True"


def test_a_process_that_loaded_the_whole_client_first_keeps_it() -> None:
    code = (
        "import sys, kubernetes_asyncio.client; import webhook.kube.apiserver as a; "
        f"print(a.k8s_client.V1Pod.__name__, len({GENERATED}) > 0)"
    )
    assert run(code) == "V1Pod True"
