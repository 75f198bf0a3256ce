"""A throw-away self-signed certificate for ``--tls`` (127.0.0.1 and localhost), made with ``cryptography``.

``cryptography`` is a dependency of sanlens-sim, not of the exporter; it is imported only
when a certificate is made, so the rest of the simulator runs where it is missing.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from pathlib import Path

from sanlens.errors import SanlensError

INSTALL_HINT = "pip install cryptography"


class TlsUnavailable(SanlensError):
    """The simulator's --tls needs the optional ``cryptography`` package."""


def make_self_signed(folder: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """Write ``cert.pem`` and ``key.pem`` (EC P-256, valid 30 days) into ``folder``; return their paths."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ModuleNotFoundError:
        raise TlsUnavailable(
            f"the simulator's --tls makes its certificate with the 'cryptography' package, "
            f"which is not installed: {INSTALL_HINT}"
        ) from None
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sanlens simulator")])
    now = _dt.datetime.now(_dt.UTC)
    alt: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    try:
        ip = ipaddress.ip_address(host)
        if str(ip) != "127.0.0.1":
            alt.append(x509.IPAddress(ip))
    except ValueError:
        alt.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(minutes=5))
        .not_valid_after(now + _dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path
