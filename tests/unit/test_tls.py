"""TLS reload: a changed pair is served to new handshakes; a broken or half-written pair keeps the old one."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path

import pytest

from webhook import pki, tls


@pytest.fixture
def ca() -> pki.KeyPair:
    return pki.new_ca()


def write_pair(ca: pki.KeyPair, directory: Path) -> pki.KeyPair:
    pair = pki.new_serving_cert(ca, ["127.0.0.1"])
    pair.write(directory / "tls.crt", directory / "tls.key")
    return pair


def bump_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


async def served_cert(context: ssl.SSLContext, ca: pki.KeyPair) -> bytes:
    """The DER certificate a new handshake (no SNI, like the API server dialling an IP) receives."""

    async def close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(close, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname="127.0.0.1")
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True)
        writer.close()
        return bytes(der)
    finally:
        server.close()
        await server.wait_closed()


def der(pair: pki.KeyPair) -> bytes:
    return ssl.PEM_cert_to_DER_cert(pair.cert_pem.decode())


async def test_new_pair_is_served_after_check(tmp_path: Path, ca: pki.KeyPair) -> None:
    first = write_pair(ca, tmp_path)
    reloader = tls.CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert await served_cert(reloader.context, ca) == der(first)
    second = write_pair(ca, tmp_path)
    bump_mtime(tmp_path / "tls.crt")
    assert reloader.check() is True
    assert await served_cert(reloader.context, ca) == der(second)


async def test_unchanged_files_are_not_reloaded(tmp_path: Path, ca: pki.KeyPair) -> None:
    write_pair(ca, tmp_path)
    reloader = tls.CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")
    assert reloader.check() is False
    assert reloader.reloads == 0


async def test_half_written_rotation_keeps_the_old_pair_then_completes(tmp_path: Path, ca: pki.KeyPair) -> None:
    first = write_pair(ca, tmp_path)
    reloader = tls.CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")
    second = pki.new_serving_cert(ca, ["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(second.cert_pem)  # the key is not written yet
    bump_mtime(tmp_path / "tls.crt")
    assert reloader.check() is False
    assert await served_cert(reloader.context, ca) == der(first)
    (tmp_path / "tls.key").write_bytes(second.key_pem)
    bump_mtime(tmp_path / "tls.key")
    assert reloader.check() is True
    assert await served_cert(reloader.context, ca) == der(second)


def test_missing_files_fail_at_start(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No such file"):
        tls.CertificateReloader(tmp_path / "tls.crt", tmp_path / "tls.key")


def test_issued_certificates_keep_the_ca_unless_renewed(tmp_path: Path) -> None:
    first = tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"])
    second = tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"])
    assert first.ca_pem == second.ca_pem
    assert (tmp_path / "tls.key").stat().st_mode & 0o077 == 0
    renewed = tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"], renew_ca=True)
    assert renewed.ca_pem != first.ca_pem
    tls.server_context(renewed.cert_file, renewed.key_file)  # the pair matches
