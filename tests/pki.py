"""A throwaway PKI for the TLS tests: a CA, a server certificate and a client certificate.

Made with the ``cryptography`` package (the dev venv has it); EC P-256 keys keep it fast.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class PKI:
    ca: Path
    server: Pair
    client: Pair
    other_ca: Path  # a CA that signed neither certificate
    stranger: Pair  # a client certificate from other_ca


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return path


def write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def new_ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
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
    return cert, key


def leaf(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    cn: str,
    sans: list[x509.GeneralName],
    usage: x509.ObjectIdentifier,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca_cert, ca_key = ca
    key = _key()
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def make_pki(out: Path, server_name: str = "localhost") -> PKI:
    """CA, server certificate for ``server_name`` and 127.0.0.1, a client certificate, and a stranger."""
    out.mkdir(parents=True, exist_ok=True)
    ca = new_ca("sanlens test CA")
    other = new_ca("some other CA")
    server = leaf(
        ca,
        server_name,
        [x509.DNSName(server_name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        ExtendedKeyUsageOID.SERVER_AUTH,
    )
    client = leaf(
        ca,
        "prometheus",
        [
            x509.DNSName("prometheus.monitoring.svc"),
            x509.UniformResourceIdentifier("spiffe://test/prometheus"),
        ],
        ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    stranger = leaf(
        other, "stranger", [x509.DNSName("prometheus.monitoring.svc")], ExtendedKeyUsageOID.CLIENT_AUTH
    )
    return PKI(
        ca=write_cert(ca[0], out / "ca.crt"),
        server=Pair(write_cert(server[0], out / "tls.crt"), write_key(server[1], out / "tls.key")),
        client=Pair(write_cert(client[0], out / "client.crt"), write_key(client[1], out / "client.key")),
        other_ca=write_cert(other[0], out / "other-ca.crt"),
        stranger=Pair(
            write_cert(stranger[0], out / "stranger.crt"), write_key(stranger[1], out / "stranger.key")
        ),
    )


def reissue_server(pki: PKI, out: Path, server_name: str) -> Pair:
    """A new server certificate from a fresh CA, written over the old files (a rotation)."""
    ca = new_ca("rotated CA")
    cert, key = leaf(ca, server_name, [x509.DNSName(server_name)], ExtendedKeyUsageOID.SERVER_AUTH)
    write_cert(ca[0], out / "rotated-ca.crt")
    write_key(key, pki.server.key)
    write_cert(cert, pki.server.cert)
    return pki.server
