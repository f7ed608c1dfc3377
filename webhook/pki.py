"""Small X.509 toolkit built on ``cryptography``: a CA, serving certificates and client certificates.

Used by ``turnstile certs`` (the webhook's serving certificate in self-managed mode) and by the local control
plane (the API server's serving certificate and the admin client certificate). Keys are ECDSA P-256, which
Go's TLS stack and Python's ``ssl`` both accept; SANs carry every name because Go ignores the CN.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: Path, key_path: Path) -> None:
        """Writes both files; the key is readable by its owner only."""
        cert_path.parent.mkdir(parents=True, exist_ok=True)
        cert_path.write_bytes(self.cert_pem)
        key_path.touch(mode=0o600, exist_ok=True)
        key_path.chmod(0o600)
        key_path.write_bytes(self.key_pem)

    @classmethod
    def read(cls, cert_path: Path, key_path: Path) -> KeyPair:
        return cls(cert_path.read_bytes(), key_path.read_bytes())


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name(attrs)


def _now() -> datetime.datetime:
    # Backdated a little so that a freshly issued certificate is valid on a peer whose clock lags.
    return datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)


def new_ca(common_name: str = "turnstile-ca", *, validity: datetime.timedelta = DEFAULT_VALIDITY) -> KeyPair:
    """A self-signed CA that can sign serving and client certificates."""
    key = _new_key()
    subject = _name(common_name)
    start = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _issue(
    ca: KeyPair,
    *,
    common_name: str,
    organizations: tuple[str, ...],
    sans: list[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    validity: datetime.timedelta,
) -> KeyPair:
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an ECDSA key written by turnstile")
    key = _new_key()
    start = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organizations))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _general_names(hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def new_serving_cert(ca: KeyPair, hosts: list[str], *, validity: datetime.timedelta = DEFAULT_VALIDITY) -> KeyPair:
    """A TLS server certificate for ``hosts`` (DNS names or IP addresses), signed by ``ca``."""
    if not hosts:
        raise ValueError("a serving certificate needs at least one host name or IP address")
    return _issue(
        ca,
        common_name=hosts[0],
        organizations=(),
        sans=_general_names(hosts),
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        validity=validity,
    )


def new_client_cert(
    ca: KeyPair, user: str, groups: tuple[str, ...] = (), *, validity: datetime.timedelta = DEFAULT_VALIDITY
) -> KeyPair:
    """A client certificate: the API server reads the user from CN and the groups from O."""
    return _issue(
        ca,
        common_name=user,
        organizations=groups,
        sans=[],
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        validity=validity,
    )


def new_private_key_pem() -> bytes:
    """A bare private key in SEC1 form ("EC PRIVATE KEY"): the API server signs service-account tokens with it
    and reads the public half from the same file, which it does not accept in PKCS#8 form."""
    return _new_key().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
