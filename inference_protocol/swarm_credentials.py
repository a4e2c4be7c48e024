"""Who may join the checkpoint swarm: libtorrent's SSL torrents.

A published torrent's info dict carries the swarm CA's certificate (``ssl-cert``),
so its info hash, which the signed manifest names, pins that CA. libtorrent then
serves the torrent only over TLS, on the SSL listen socket, and both ends must
present a certificate that the torrent's CA signed: a host without one is turned
away in the handshake, before any BitTorrent message.

The CA key is derived from the config signing key (CONFIG_SIGNING_KEY), which only
the control plane holds, so it needs no secret of its own; Ed25519 signatures are
deterministic, so the CA certificate is the same bytes at every publish. The control
plane issues each worker a credential (``manage.py swarm_credential``): a key and a
certificate for any torrent of this CA (subjectAltName ``*``, libtorrent's match for
every torrent name), valid SWARM_CREDENTIAL_DAYS.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from inference_protocol.signing import _unb64

if TYPE_CHECKING:  # cryptography loads only where swarm credentials are made
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

CA_NAME = "Promptyard swarm CA"
# libtorrent loads DH parameters with every certificate and reports an error for
# none; TLS 1.3 (what peers negotiate) does not use them. RFC 7919's ffdhe2048 group.
DH_PARAMS_PEM = """-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
"""
_CA_FROM = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
_CA_UNTIL = datetime.datetime(9999, 12, 31, tzinfo=datetime.UTC)


@dataclasses.dataclass(frozen=True)
class SwarmCredential:
    cert_pem: str
    key_pem: str

    @classmethod
    def from_files(cls, cert_file: str | Path, key_file: str | Path) -> SwarmCredential:
        return cls(Path(cert_file).read_text(), Path(key_file).read_text())


def _ca_key(signing_key_b64: str) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=b"promptyard swarm CA v1").derive(_unb64(signing_key_b64))
    return Ed25519PrivateKey.from_private_bytes(seed)


def _name(common_name: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def ca_cert_pem(signing_key_b64: str) -> str:
    """The swarm CA's self-signed certificate (the same bytes for the same key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    key = _ca_key(signing_key_b64)
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    cert = (x509.CertificateBuilder().subject_name(_name(CA_NAME)).issuer_name(_name(CA_NAME))
            .public_key(key.public_key())
            .serial_number(int.from_bytes(hashlib.sha256(public).digest()[:16], "big") >> 1)
            .not_valid_before(_CA_FROM).not_valid_after(_CA_UNTIL)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         key_cert_sign=True, crl_sign=True, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, None))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def issue_credential(signing_key_b64: str, host: str, *, days: int) -> SwarmCredential:
    """A fresh key and a certificate for ``host``, signed by the swarm CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(host)).issuer_name(_name(CA_NAME))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("*")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(_ca_key(signing_key_b64), None))
    return SwarmCredential(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM).decode(),
        key_pem=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()).decode())
