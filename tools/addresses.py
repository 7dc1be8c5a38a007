"""Which network addresses the server may connect to for a tool: public ones, and the networks a setting allows.

`fetch_webpage` (CHAT_FETCH_ALLOWED_NETWORKS) and MCP servers over HTTP (CHAT_MCP_ALLOWED_NETWORKS) share these
rules. A host is refused when *any* address it resolves to is loopback, private, link-local, multicast, reserved or
otherwise not global, unless an allowed network holds that address: a name must not hide a private address behind a
public one. `GuardedNetworkBackend` applies the rule to every connection an httpx2 client opens (redirects
included) and connects to the very address it checked, so a second DNS answer cannot swap in another one.
"""
from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpcore2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class AddressRefused(Exception):
    """`host` may not be reached: it does not resolve, or it resolves to a refused address (`reason`).

    `str()` names the host and the address only (never a URL's path, query or credentials), so it is safe to show."""

    def __init__(self, host: str, reason: str, *, unresolved: bool = False) -> None:
        self.host, self.reason, self.unresolved = host, reason, unresolved
        # "loopback address 127.0.0.1" for an address, "localhost resolves to a loopback address 127.0.0.1" for a name
        refused = reason if _literal(host) is not None else f"{host} resolves to a {reason}"
        super().__init__(f"cannot resolve {host}: {reason}" if unresolved else refused)


def networks(raw: str) -> list[Network]:
    """A comma-separated list of networks (CIDR) as networks; a bad entry is skipped (`network_problems` names it)."""
    out: list[Network] = []
    for part in raw.split(","):
        if part.strip():
            try:
                out.append(ipaddress.ip_network(part.strip(), strict=False))
            except ValueError:
                continue
    return out


def network_problems(raw: str) -> list[str]:
    """The entries of a comma-separated list of networks that are not networks (for `manage.py check`)."""
    bad = []
    for part in raw.split(","):
        try:
            if part.strip():
                ipaddress.ip_network(part.strip(), strict=False)
        except ValueError:
            bad.append(part.strip())
    return bad


def address_refusal(ip: IPAddress, allowed: Sequence[Network]) -> str | None:
    """Why this address may not be reached (e.g. "loopback address 127.0.0.1"), or None for a public or allowed one."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if any(ip in net for net in allowed):
        return None
    for kind in ("loopback", "link_local", "private", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return f"{kind.replace('_', '-')} address {ip}"
    if not ip.is_global:
        return f"non-public address {ip}"
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _checked(host: str, addresses: Iterable[IPAddress], allowed: Sequence[Network]) -> IPAddress:
    """The first of `addresses` if every one may be reached; raises AddressRefused otherwise."""
    found = list(addresses)
    if not found:
        raise AddressRefused(host, "no address", unresolved=True)
    for ip in found:  # all of them: a host must not hide a private address behind a public one
        why = address_refusal(ip, allowed)
        if why:
            raise AddressRefused(host, why)
    return found[0]


def _addresses(infos: Iterable[tuple[Any, ...]]) -> list[IPAddress]:
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


async def resolve_allowed(host: str, port: int, allowed: Sequence[Network]) -> IPAddress:
    """The address to connect to for `host` (its first), once every address it resolves to passed `address_refusal`."""
    literal = _literal(host)
    if literal is not None:
        return _checked(host, [literal], allowed)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise AddressRefused(host, str(exc.strerror or exc), unresolved=True) from None
    return _checked(host, _addresses(infos), allowed)


def resolve_allowed_sync(host: str, port: int, allowed: Sequence[Network]) -> IPAddress:
    """`resolve_allowed` for synchronous code (a form's validation)."""
    literal = _literal(host)
    if literal is not None:
        return _checked(host, [literal], allowed)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise AddressRefused(host, str(exc.strerror or exc), unresolved=True) from None
    return _checked(host, _addresses(infos), allowed)


def url_host(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) URL; ValueError saying what is wrong with it otherwise."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ValueError("the URL is not valid") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("the URL is not an http(s) URL with a host")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def url_refusal(url: str, allowed: Sequence[Network]) -> str | None:
    """Why `url` may not be connected to (not an http(s) URL; its host does not resolve, or resolves to an address
    `address_refusal` refuses), or None. Resolves the name and sends nothing."""
    try:
        host, port = url_host(url)
        resolve_allowed_sync(host, port, allowed)
    except (ValueError, AddressRefused) as exc:
        return str(exc)
    return None


def guarded_transport(allowed: Sequence[Network], **options: Any) -> Any:
    """An `httpx2.AsyncHTTPTransport(**options)` whose every connection goes through `GuardedNetworkBackend`."""
    import httpx2

    transport = httpx2.AsyncHTTPTransport(**options)
    pool = transport._pool
    # httpx2 takes no network backend; its pool hands this attribute to each connection it opens (none yet)
    pool._network_backend = cast("httpcore2.AsyncNetworkBackend", GuardedNetworkBackend(allowed, pool._network_backend))
    return transport


class GuardedNetworkBackend:  # an httpcore2.AsyncNetworkBackend (httpcore2 is imported only when a client is made)
    """An httpcore2 network backend that resolves each host itself, refuses it (AddressRefused) unless every address
    passes `address_refusal`, then has `backend` connect to the address it checked (TLS still verifies the host name)."""

    def __init__(self, allowed: Sequence[Network], backend: Any) -> None:
        self.allowed, self.backend = list(allowed), backend

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> Any:
        ip = await resolve_allowed(host, port, self.allowed)
        return await self.backend.connect_tcp(str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None) -> Any:
        raise AddressRefused(path, "unix socket")

    async def sleep(self, seconds: float) -> None:
        await self.backend.sleep(seconds)
