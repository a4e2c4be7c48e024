"""The client's address, through the proxies this deployment trusts.

`REMOTE_ADDR` is the peer of the connection. Behind a load balancer that is the
balancer, shared by every client; the client is then in `X-Forwarded-For`, which
anyone can also send. So the header is read only when the peer is one of
TRUSTED_PROXIES (addresses or networks), and from the right: each trusted proxy
appends the address it saw, so the first address from the right that is not a
trusted proxy is the client (what a client wrote further left is ignored).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(p.strip(), strict=False) for p in proxies if p.strip())


def _trusted(addr: str, networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def client_ip(meta: Mapping[str, Any]) -> str:
    """The client address for a request's META (or an ASGI scope's headers as META)."""
    peer = meta.get("REMOTE_ADDR", "") or ""
    networks = _networks(tuple(settings.TRUSTED_PROXIES))
    if not networks or not _trusted(peer, networks):
        return peer
    forwarded = meta.get("HTTP_X_FORWARDED_FOR", "")
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, networks):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:  # not an address: the proxy chain is broken; use the last proxy
                return peer
    return hops[0] if hops else peer


def request_client_ip(request: HttpRequest) -> str:
    """client_ip for a Django request (django-axes' AXES_CLIENT_IP_CALLABLE)."""
    return client_ip(request.META)
