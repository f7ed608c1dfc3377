"""A small synchronous HTTPS client for a ``LocalCluster``'s API server, as its admin.

For end-to-end tests and benchmarks that make many quick calls (sampling state every 100 ms, marking hundreds of
pods finished, creating a thousand Jobs) where spawning ``kubectl`` per call would dominate. One keep-alive
connection per thread, so it can be shared by a thread pool. Not used by Turnstile itself: that is
``webhook.kube``'s job.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse
from pathlib import Path
from typing import Any

import orjson

from webhook.local.cluster import LocalCluster

JSON = dict[str, Any]


class ApiError(RuntimeError):
    def __init__(self, status: int, method: str, path: str, body: bytes) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500].decode(errors='replace')}")
        self.status = status
        self.body = body


class LocalClient:
    def __init__(
        self, cluster: LocalCluster, *, timeout: float = 30.0, identity: tuple[Path, Path] | None = None
    ) -> None:
        """``identity``: (certificate, key) files of another user than the admin (e.g. a test's batch user)."""
        url = urllib.parse.urlsplit(cluster.server)
        self._host = url.hostname or "127.0.0.1"
        self._port = url.port or 443
        self._timeout = timeout
        self._context = ssl.create_default_context(cafile=str(cluster.pki_dir / "ca.crt"))
        cert, key = identity or (cluster.pki_dir / "admin.crt", cluster.pki_dir / "admin.key")
        self._context.load_cert_chain(cert, key)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPSConnection] = set()

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self._host, self._port, context=self._context, timeout=self._timeout)
            self._local.conn = conn
            with self._lock:
                self._open.add(conn)
        return conn

    def _drop(self) -> None:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            with self._lock:
                self._open.discard(conn)

    def close(self) -> None:
        """Closes every thread's connection; the client can still be used afterwards (it reconnects)."""
        with self._lock:
            conns, self._open = self._open, set()
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> JSON:
        """One call; a dropped keep-alive connection is retried once on a fresh one. Non-2xx raises ApiError."""
        payload = None if body is None else orjson.dumps(body)
        headers = {"Accept": accept} | ({"Content-Type": content_type} if payload is not None else {})
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (http.client.HTTPException, ConnectionError, ssl.SSLError):
                self._drop()
                if attempt == 2:
                    raise
                continue
            if not 200 <= response.status < 300:
                raise ApiError(response.status, method, path, data)
            result: JSON = orjson.loads(data) if data else {}
            return result
        raise AssertionError("unreachable")

    def get(self, path: str) -> JSON:
        return self.request("GET", path)

    def create(self, path: str, obj: JSON) -> JSON:
        return self.request("POST", path, obj)

    def merge_patch(self, path: str, patch: JSON) -> JSON:
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json")

    def delete(self, path: str) -> JSON:
        return self.request("DELETE", path)
