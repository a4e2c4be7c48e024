"""Ed25519 keys of config documents (inference_protocol.config): no Django here,
so the settings modules can derive a key."""

from __future__ import annotations

import base64
import hashlib


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)


def generate_keypair() -> tuple[str, str]:
    """(private, public), each base64 of the raw 32 bytes (config_keygen prints them)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                serialization.NoEncryption())
    return _b64(private), public_key_of(_b64(private))


def dev_private_key(secret: str) -> str:
    """The embedded default's key (PROMPTYARD_EMBEDDED only): derived from SECRET_KEY, so every
    process of one installation agrees without configuring anything."""
    return _b64(hashlib.sha256(b"promptyard-config-dev:" + secret.encode()).digest())


def public_key_of(private_b64: str) -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.from_private_bytes(_unb64(private_b64))
    return _b64(key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def check_public_key(public_b64: str) -> None:
    """ValueError unless ``public_b64`` is an Ed25519 public key (base64 of 32 bytes)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    Ed25519PublicKey.from_public_bytes(_unb64(public_b64))


def sign(private_b64: str, data: bytes) -> str:
    """Base64 Ed25519 signature of ``data``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return _b64(Ed25519PrivateKey.from_private_bytes(_unb64(private_b64)).sign(data))


def verifies(public_b64: str, data: bytes, signature: str) -> bool:
    """Whether ``signature`` (base64) is the Ed25519 signature of ``data`` by that key."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(_unb64(public_b64)).verify(_unb64(signature), data)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True
