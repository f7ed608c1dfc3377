"""The server's own timestamps of each request: one line per POST, on the client's port, inside the client's window."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import orjson
import pytest

from tests.unit.admission.builders import make_job, review_body
from tests.unit.test_server import client_ssl, loopback_server
from webhook import requesttimes, tls
from webhook.requesttimes import RequestTimes

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def certs(tmp_path: Path) -> tls.WebhookCertificates:
    return tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"])


async def _post(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, body: bytes
) -> tuple[int, float, float]:
    """One request on an open connection: (the client's port, when it was sent, when its answer had arrived)."""
    sent = time.monotonic()
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(
        next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")).split(b":")[1]
    )
    await reader.readexactly(length)
    return writer.get_extra_info("sockname")[1], sent, time.monotonic()


async def test_each_post_is_timed_on_its_connection_within_the_clients_window(
    certs: tls.WebhookCertificates, tmp_path: Path
) -> None:
    times = RequestTimes(tmp_path / "times")
    server = loopback_server(certs, request_times=times)
    await server.start()
    review = orjson.dumps(review_body(make_job()))
    try:
        first = await asyncio.open_connection("127.0.0.1", server.port, ssl=client_ssl(certs))
        second = await asyncio.open_connection("127.0.0.1", server.port, ssl=client_ssl(certs))
        windows = [
            await _post(*first, "/mutate/batch/v1/jobs", review),
            await _post(*second, "/mutate/batch/v1/jobs", review),
            await _post(*first, "/validate/batch/v1/jobs", review),
            await _post(*first, "/no-such-route", b"{}"),
        ]
        for _, writer in (first, second):
            writer.close()
    finally:
        await server.close()

    timed = requesttimes.read(tmp_path / "times")
    assert [(t.route, t.status) for t in timed] == [
        ("/mutate/batch/v1/jobs", 200),
        ("/mutate/batch/v1/jobs", 200),
        ("/validate/batch/v1/jobs", 200),
        ("unknown", 404),
    ]
    assert windows[0][0] != windows[1][0]
    for line, (port, sent, received) in zip(timed, windows, strict=True):
        assert line.port == port
        assert sent <= line.started <= line.written <= received


async def test_no_more_than_the_cap_is_kept(certs: tls.WebhookCertificates, tmp_path: Path) -> None:
    times = RequestTimes(tmp_path / "times", max_requests=2)
    server = loopback_server(certs, request_times=times)
    await server.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ssl(certs))) as session:
            for _ in range(4):
                body = orjson.dumps(review_body(make_job()))
                async with session.post(f"https://127.0.0.1:{server.port}/mutate/batch/v1/jobs", data=body) as resp:
                    assert resp.status == 200
    finally:
        await server.close()
    assert len(requesttimes.read(tmp_path / "times")) == 2
