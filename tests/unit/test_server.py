"""The HTTPS server on loopback: real TLS, health and readiness, limits, and certificate rotation under load."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from tests.unit.admission.builders import make_job, review_body
from webhook import tls
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView
from webhook.memtrim import MemoryTrimmer, TrimPolicy
from webhook.server import AdmissionServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def certs(tmp_path: Path) -> tls.WebhookCertificates:
    return tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"])


def loopback_server(certs: tls.WebhookCertificates, **overrides: Any) -> AdmissionServer:
    return AdmissionServer(
        view=StaticView(),
        options=AdmissionOptions(),
        cert_file=certs.cert_file,
        key_file=certs.key_file,
        host="127.0.0.1",
        port=0,
        **overrides,
    )


@pytest.fixture
async def server(certs: tls.WebhookCertificates) -> AsyncIterator[AdmissionServer]:
    srv = loopback_server(certs, poll_seconds=0.1)
    await srv.start()
    yield srv
    await srv.close()


def client_ssl(certs: tls.WebhookCertificates) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=certs.ca_pem.decode())


async def served_cert(port: int, context: ssl.SSLContext) -> bytes:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    der = bytes(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
    writer.close()
    return der


async def test_serves_reviews_and_health_over_tls(server: AdmissionServer, certs: tls.WebhookCertificates) -> None:
    base = f"https://127.0.0.1:{server.port}"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ssl(certs))) as session:
        async with session.get(base + "/healthz") as resp:
            assert resp.status == 200
        async with session.get(base + "/readyz") as resp:
            assert resp.status == 200
        body = orjson.dumps(review_body(make_job()))
        async with session.post(base + "/mutate/batch/v1/jobs", data=body) as resp:
            answer = (await resp.json())["response"]
            assert answer["allowed"] is True
            assert answer["patchType"] == "JSONPatch"
        async with session.post(base + "/mutate/batch/v1/jobs", data=b"{") as resp:
            assert resp.status == 400


async def test_readyz_is_false_once_closed(certs: tls.WebhookCertificates) -> None:
    srv = AdmissionServer(
        view=StaticView(is_synced=False),
        options=AdmissionOptions(),
        cert_file=certs.cert_file,
        key_file=certs.key_file,
        host="127.0.0.1",
        port=0,
    )
    assert srv.readiness.tls_serving is False
    await srv.start()
    try:
        assert srv.readiness.tls_serving is True
    finally:
        await srv.close()
    assert srv.readiness.tls_serving is False


async def test_rotation_is_served_within_seconds_without_a_failed_request(
    server: AdmissionServer, certs: tls.WebhookCertificates, tmp_path: Path
) -> None:
    context = client_ssl(certs)
    url = f"https://127.0.0.1:{server.port}/mutate/batch/v1/jobs"
    body = orjson.dumps(review_body(make_job()))
    before = await served_cert(server.port, context)
    failures: list[str] = []
    done = 0
    stop = asyncio.Event()

    async def load() -> None:
        nonlocal done
        # A new connection per request: every request performs a handshake during the switch.
        connector = aiohttp.TCPConnector(ssl=context, force_close=True)
        async with aiohttp.ClientSession(connector=connector) as session:
            while not stop.is_set():
                try:
                    async with session.post(url, data=body) as resp:
                        if resp.status != 200:
                            failures.append(f"HTTP {resp.status}")
                        await resp.read()
                except aiohttp.ClientError as exc:
                    failures.append(repr(exc))
                done += 1

    workers = [asyncio.create_task(load(), name=f"load-{i}") for i in range(4)]
    await asyncio.sleep(0.3)
    tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"])  # same CA, new serving pair
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    after = before
    while after == before and loop.time() < deadline:
        await asyncio.sleep(0.05)
        after = await served_cert(server.port, context)
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*workers)
    assert after != before, "the new certificate was not served within 5 s"
    assert failures == []
    assert done > 10


async def test_a_crashed_reload_task_stops_the_server_loudly(server: AdmissionServer) -> None:
    def explode() -> bool:
        raise ZeroDivisionError("boom")

    server.reloader.check = explode  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="background task") as caught:
        await asyncio.wait_for(server.run_until(asyncio.Event()), timeout=5)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


async def _refused_then_closed(
    port: int, certs: tls.WebhookCertificates, path: str, announced: int
) -> tuple[bytes, bool]:
    """Announces a body of ``announced`` bytes on ``path`` and sends only its first 64 KiB; the status line of the
    answer, and whether the server closed the connection within 2 s of it (instead of reading on)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ssl(certs))
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {announced}\r\n\r\n".encode()
            + b"x" * 65536
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 5)
        try:
            async with asyncio.timeout(2):
                while await reader.read(65536):
                    pass
        except TimeoutError:
            return status, False
        except (ConnectionError, ssl.SSLError):
            pass
        return status, True
    finally:
        writer.transport.abort()


@pytest.mark.parametrize(
    ("path", "announced", "status"),
    [("/no-such-route", 3 * 1024 * 1024, b"404"), ("/validate/kueue/workloads", 4 * 1024 * 1024, b"413")],
)
async def test_a_refused_request_body_is_not_read_the_connection_is_closed(
    server: AdmissionServer, certs: tls.WebhookCertificates, path: str, announced: int, status: bytes
) -> None:
    """An unknown path, or a body announced over the limit, is answered without reading the body, and the connection
    is closed rather than drained (aiohttp would otherwise read and decrypt up to 10 s of a body nobody wants)."""
    line, closed = await _refused_then_closed(server.port, certs, path, announced)
    assert status in line, line
    assert closed, "the server kept the connection open to read the refused body"


async def test_the_body_of_an_aborted_upload_counts_towards_giving_memory_back(
    certs: tls.WebhookCertificates,
) -> None:
    trimmed = threading.Event()
    trimmer = MemoryTrimmer(policy=TrimPolicy(min_bytes=128 * 1024), trim=trimmed.set)
    srv = loopback_server(certs, trimmer=trimmer)
    await srv.start()
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", srv.port, ssl=client_ssl(certs))
        writer.write(
            b"POST /validate/kueue/workloads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {3 * 1024 * 1024}\r\n\r\n".encode()
            + b"x" * (160 * 1024)
        )
        await writer.drain()
        writer.close()
        assert await asyncio.to_thread(trimmed.wait, 5.0)
    finally:
        await srv.close()
