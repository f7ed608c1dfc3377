"""Turnstile's webhook server (admission routes and /convert) in a background thread, wired into the CRDs.

For tests that run the real API server without a whole Turnstile: the CRDs' conversion webhook is pointed at
this server (url + caBundle, as ``turnstile cluster up --with-turnstile`` does) and put back as committed (the
in-cluster Service, which does not exist here) when it stops.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from types import TracebackType

from webhook.admission.conversionconfig import CONVERSION_SERVICE, CONVERTED_CRDS, conversion_patch
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView
from webhook.local.cluster import LocalCluster, free_port
from webhook.server import AdmissionServer
from webhook.tls import issue_webhook_certificates

# The clientConfig the committed CRDs carry (manifests/crds), restored when the server stops.
COMMITTED_CLIENT_CONFIG = {
    "url": None,
    "caBundle": None,
    "service": {
        "namespace": CONVERSION_SERVICE.namespace,
        "name": CONVERSION_SERVICE.name,
        "path": "/convert",
        "port": 443,
    },
}


def restore_committed_conversion(cluster: LocalCluster) -> None:
    patch = json.dumps({"spec": {"conversion": {"webhook": {"clientConfig": COMMITTED_CLIENT_CONFIG}}}})
    for crd in CONVERTED_CRDS:
        cluster.kubectl("patch", "crd", crd, "--type=merge", "-p", patch)


class ConversionServer:
    def __init__(self, cluster: LocalCluster, workdir: Path) -> None:
        self.cluster = cluster
        self.workdir = workdir
        self.port = free_port()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="conversion-server", daemon=True)
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> ConversionServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.certs = issue_webhook_certificates(self.workdir, ["127.0.0.1"])
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"the conversion server did not start: {self._error!r}")
        patch = json.dumps(conversion_patch(ca_bundle=self.certs.ca_pem, url=self.url))
        for crd in CONVERTED_CRDS:
            self.cluster.kubectl("patch", "crd", crd, "--type=merge", "-p", patch)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        restore_committed_conversion(self.cluster)
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=15)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = AdmissionServer(
            view=StaticView(),
            options=AdmissionOptions(),
            cert_file=self.certs.cert_file,
            key_file=self.certs.key_file,
            host="127.0.0.1",
            port=self.port,
        )
        await server.start()
        self._ready.set()
        try:
            await server.run_until(self._stop)
        finally:
            await server.close()
            # Closing a transport closes its socket on a later loop turn: give the API server's keep-alive
            # connections those turns before the loop goes away (else an unclosed-socket ResourceWarning).
            await asyncio.sleep(0.2)
