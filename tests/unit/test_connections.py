"""The webhook server bounds its connections: slow headers, idle keep-alives and connections beyond the cap
are closed by the server, not left to the client."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from tests.unit.admission.builders import make_job, review_body
from webhook import tls
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView
from webhook.connections import ConnectionLimits
from webhook.server import AdmissionServer

pytestmark = pytest.mark.timeout(60)

LIMITS = ConnectionLimits(
    max_connections=3, handshake_seconds=1.0, header_seconds=0.5, idle_seconds=0.5, sweep_seconds=0.1
)


@pytest.fixture
def certs(tmp_path: Path) -> tls.WebhookCertificates:
    return tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"])


@pytest.fixture
async def server(certs: tls.WebhookCertificates) -> AsyncIterator[AdmissionServer]:
    srv = AdmissionServer(
        view=StaticView(),
        options=AdmissionOptions(),
        cert_file=certs.cert_file,
        key_file=certs.key_file,
        host="127.0.0.1",
        port=0,
        limits=LIMITS,
    )
    await srv.start()
    yield srv
    await srv.close()


async def _connect(
    server: AdmissionServer, certs: tls.WebhookCertificates
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    context = ssl.create_default_context(cadata=certs.ca_pem.decode())
    return await asyncio.open_connection("127.0.0.1", server.port, ssl=context)


async def _closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    try:
        async with asyncio.timeout(within):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except (ConnectionError, ssl.SSLError):
        return True
    return True


async def test_slow_headers_are_cut_off(server: AdmissionServer, certs: tls.WebhookCertificates) -> None:
    reader, writer = await _connect(server, certs)
    writer.write(b"POST /mutate/batch/v1/jobs HTTP/1.1\r\nHost: x\r\n")  # and never the end of the headers
    await writer.drain()
    # Closed by the guard's header deadline or by aiohttp's own keep-alive timer (the same length), whichever
    # sweeps first: the point is that the server, not the client, ends it.
    assert await _closed_by_server(reader, within=5.0)
    writer.close()


async def test_an_idle_keep_alive_connection_is_closed(server: AdmissionServer, certs: tls.WebhookCertificates) -> None:
    reader, writer = await _connect(server, certs)
    body = orjson.dumps(review_body(make_job()))
    writer.write(
        b"POST /mutate/batch/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), 5)
    assert b" 200 " in status
    assert await _closed_by_server(reader, within=5.0)
    writer.close()


async def test_a_busy_connection_is_left_alone(server: AdmissionServer, certs: tls.WebhookCertificates) -> None:
    """A connection that keeps sending reviews is never idle: the deadlines do not cut it."""
    reader, writer = await _connect(server, certs)
    body = orjson.dumps(review_body(make_job()))
    request = (
        b"POST /mutate/batch/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    for _ in range(8):  # 8 x 0.2 s: longer than both deadlines
        writer.write(request)
        await writer.drain()
        assert b" 200 " in await asyncio.wait_for(reader.readline(), 5)
        while (await reader.readline()) != b"\r\n":
            pass
        await asyncio.sleep(0.2)
        data = await asyncio.wait_for(reader.read(65536), 5)  # the answer's body
        assert data
    assert server.guard.closed == 0
    writer.close()


async def test_connections_beyond_the_cap_are_refused(server: AdmissionServer, certs: tls.WebhookCertificates) -> None:
    held = [await _connect(server, certs) for _ in range(LIMITS.max_connections)]
    reader, writer = await _connect(server, certs)
    assert await _closed_by_server(reader, within=0.4)  # well before any deadline
    assert server.guard.refused == 1
    for _, w in held:
        w.close()
    writer.close()
