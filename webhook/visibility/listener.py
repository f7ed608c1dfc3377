"""Starting the visibility API inside ``turnstile run``: read the front proxy's trust, listen, reload certificates.

Owns: the one call ``runner`` makes. Without an aggregation layer on the API server (no front-proxy CA
published) there is nothing to serve behind, so it says so in the log and serves nothing; the webhooks go on.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from webhook.controller.cache import ClusterCache
from webhook.controller.supervisor import Supervisor
from webhook.kube.client import Kube
from webhook.kube.errors import KubeError
from webhook.visibility.auth import NotConfigured, load_front_proxy
from webhook.visibility.pending import PendingIndex
from webhook.visibility.server import VisibilityServer

log = logging.getLogger(__name__)


async def start_visibility(
    stack: contextlib.AsyncExitStack,
    supervisor: Supervisor,
    *,
    kube: Kube,
    cache: ClusterCache,
    cert_file: Path,
    key_file: Path,
    host: str,
    port: int,
) -> VisibilityServer | None:
    try:
        trust = await load_front_proxy(kube)
    except (NotConfigured, KubeError) as exc:
        log.warning("the visibility API is not served: %s", exc)
        return None
    server = VisibilityServer(
        kube=kube, index=PendingIndex(cache), trust=trust, cert_file=cert_file, key_file=key_file, host=host, port=port
    )
    await server.start()
    stack.push_async_callback(server.close)
    supervisor.spawn(server.watch_certificates(), name="visibility-tls-reload")
    log.info("visibility API on port %d", server.port)
    return server
