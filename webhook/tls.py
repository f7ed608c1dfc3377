"""The webhook's TLS: a server ``SSLContext`` from a cert/key pair on disk, reloaded when the files change.

``CertificateReloader.context`` is the context handed to the listener once. Every handshake passes through its
``sni_callback`` (OpenSSL calls it for every ClientHello, with or without SNI — the API server sends none for
an IP address), which switches the connection to the newest successfully loaded context. A reload builds a
fresh context and only swaps it in when the pair loads cleanly, so a half-written rotation (new cert, old key)
keeps the previous pair serving and is retried on the next poll. Connections already open keep their
context: nothing in flight is dropped. Kubernetes Secret volumes swap a ``..data`` symlink; ``os.stat``
follows it, so the change is seen.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_POLL_SECONDS = 1.0


@dataclass(frozen=True)
class _Stamp:
    """What identifies one version of a file on disk."""

    mtime_ns: int
    size: int
    inode: int


def _stamp(path: Path) -> _Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _Stamp(st.st_mtime_ns, st.st_size, st.st_ino)


def server_context(cert_file: Path, key_file: Path, *, client_ca_pem: str | None = None) -> ssl.SSLContext:
    """A TLS 1.2+ server context serving that pair; raises ``ssl.SSLError``/``OSError`` if it does not load.

    With ``client_ca_pem``, a client certificate is asked for and, when one is sent, verified against that CA (the
    handshake fails for one it did not sign); a client may still send none, which the handler then sees."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    if client_ca_pem is not None:
        context.load_verify_locations(cadata=client_ca_pem)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class CertificateReloader:
    def __init__(self, cert_file: Path, key_file: Path, *, client_ca_pem: str | None = None) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._client_ca = client_ca_pem
        self._stamps = (_stamp(cert_file), _stamp(key_file))
        self._current = server_context(cert_file, key_file, client_ca_pem=client_ca_pem)
        self._failed_stamps: tuple[_Stamp | None, _Stamp | None] | None = None
        self.reloads = 0
        # The listener's context: serves the first pair itself and hands newer ones out per handshake.
        self.context = server_context(cert_file, key_file, client_ca_pem=client_ca_pem)
        self.context.sni_callback = self._pick_context

    def _pick_context(self, conn: ssl.SSLObject, server_name: str | None, original: ssl.SSLContext) -> None:
        if self._current is not original:
            conn.context = self._current

    def check(self) -> bool:
        """Reloads when either file changed since the last load; True when a new pair was swapped in."""
        stamps = (_stamp(self.cert_file), _stamp(self.key_file))
        if stamps == self._stamps or stamps == self._failed_stamps:
            return False
        try:
            fresh = server_context(self.cert_file, self.key_file, client_ca_pem=self._client_ca)
        except (OSError, ssl.SSLError) as exc:
            # Mid-rotation (one file written, not the other) or a broken pair: keep serving the old one.
            log.warning("TLS pair %s / %s not loaded, keeping the previous one: %s", self.cert_file, self.key_file, exc)
            self._failed_stamps = stamps
            return False
        self._current = fresh
        self._stamps = stamps
        self._failed_stamps = None
        self.reloads += 1
        log.info("TLS certificate reloaded from %s", self.cert_file)
        return True

    async def watch(self, interval: float = DEFAULT_POLL_SECONDS) -> None:
        """Polls the files until cancelled."""
        while True:
            await asyncio.sleep(interval)
            self.check()


@dataclass(frozen=True)
class WebhookCertificates:
    """Where ``issue_webhook_certificates`` wrote the pair and its CA."""

    ca_cert: Path
    cert_file: Path
    key_file: Path
    ca_pem: bytes


def default_hosts(service: str = "turnstile-webhook-service", namespace: str = "turnstile-system") -> list[str]:
    """Loopback (a ``turnstile serve`` on the host) and the in-cluster names of the webhook Service and of the
    conversion Service (same pods, published before they are Ready; see manifests/webhook/service)."""
    names = [
        f"{s}.{namespace}.svc{d}" for s in (service, "turnstile-conversion-service") for d in ("", ".cluster.local")
    ]
    return ["127.0.0.1", "localhost", *names]


def issue_webhook_certificates(directory: Path, hosts: list[str], *, renew_ca: bool = False) -> WebhookCertificates:
    """Writes ``ca.crt``/``ca.key`` (kept when present, so the caBundle stays stable) and a fresh serving pair
    ``tls.crt``/``tls.key`` signed by it. The pair is written to temporary names and renamed into place, key
    first, so a running server never reads a new certificate with an old key for longer than one poll."""
    from webhook import pki

    ca_cert, ca_key = directory / "ca.crt", directory / "ca.key"
    if renew_ca or not (ca_cert.exists() and ca_key.exists()):
        pki.new_ca("turnstile-webhook-ca").write(ca_cert, ca_key)
    ca = pki.KeyPair.read(ca_cert, ca_key)
    serving = pki.new_serving_cert(ca, hosts)
    cert_file, key_file = directory / "tls.crt", directory / "tls.key"
    tmp_cert, tmp_key = directory / ".tls.crt.new", directory / ".tls.key.new"
    serving.write(tmp_cert, tmp_key)
    os.replace(tmp_key, key_file)
    os.replace(tmp_cert, cert_file)
    return WebhookCertificates(ca_cert, cert_file, key_file, ca.cert_pem)
