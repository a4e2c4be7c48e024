"""Where a webhook may point: http(s) URLs whose host resolves only to global
addresses, unless WEBHOOK_ALLOWED_NETWORKS lets an address in (server-side
request forgery: a webhook must not be a way to reach the server's own network,
its metadata service or its loopback ports). Checked at registration and again
before every attempt (a name may be re-pointed after registration)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from core.errors import ApiError

MAX_URL_LENGTH = 2000


def _refuse(message: str, code: str = "invalid_webhook_url") -> ApiError:
    return ApiError(message, code=code, field="url")


def _allowed(address) -> bool:
    networks = [ipaddress.ip_network(n, strict=False) for n in settings.WEBHOOK_ALLOWED_NETWORKS]
    return any(address.version == net.version and address in net for net in networks)


def _internal(address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


def check_webhook_url(url) -> str:
    """The URL if a delivery may go there, else a 400 naming the reason."""
    if not isinstance(url, str) or not url.strip():
        raise _refuse("url is required: an http(s) URL.")
    if len(url) > MAX_URL_LENGTH:
        raise _refuse(f"url is at most {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise _refuse(f"url does not parse: {exc}.") from None
    if parts.scheme not in ("http", "https"):
        raise _refuse("url must be http:// or https://.")
    if not parts.hostname:
        raise _refuse("url has no host.")
    if parts.username is not None or parts.password is not None:
        raise _refuse("url must not carry credentials; verify deliveries by their signature.")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise _refuse("url contains whitespace or control characters.")
    check_host(parts.hostname, port or (443 if parts.scheme == "https" else 80))
    return url.strip()


def check_host(host: str, port: int) -> None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise _refuse(f"The host {host!r} does not resolve ({exc}).",
                      code="webhook_host_unresolvable") from None
    addresses = {ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}
    inside = sorted(str(a) for a in addresses if _internal(a) and not _allowed(a))
    if inside:
        raise _refuse(f"The host {host!r} resolves to an address inside the network ({', '.join(inside)}): "
                      "webhooks go to public addresses only (WEBHOOK_ALLOWED_NETWORKS lets others in).",
                      code="webhook_url_forbidden")
