"""Cookie-authenticated websockets: the Origin is compared as Django's CSRF check does (scheme, host and
port against the request's own, or an exact CSRF_TRUSTED_ORIGINS entry); no wildcard ever admits one."""
from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from chat.api.auth import origin_refusal
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True)


async def session_socket(user: Any, origin: bytes, host: bytes = b"testserver", extra: list[tuple[bytes, bytes]] | None = None) -> Any:
    client = AsyncClient()
    await database_sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    ws, _ = await ws_connect(None, headers=[(b"cookie", cookie), (b"origin", origin), (b"host", host), *(extra or [])])
    return ws


@pytest.mark.parametrize(("host", "origin"), [
    (b"localhost:8000", b"http://localhost:6666"),  # another port of the same host name
    (b"127.0.0.1:8000", b"https://127.0.0.1:1"),
    (b"testserver", b"https://testserver"),  # another scheme
    (b"testserver", b"http://testserver:80"),  # not the browser's serialisation of our origin
    (b"localhost:8000", b"http://127.0.0.1:8000"),  # another allowed host is not this request's host
])
async def test_same_host_name_other_scheme_or_port_is_refused(user: Any, settings: Any, host: bytes, origin: bytes) -> None:
    settings.ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
    assert await session_socket(user, origin, host) is None


async def test_own_origin_is_accepted(user: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["localhost"]
    ws = await session_socket(user, b"http://localhost:8000", b"localhost:8000")
    assert ws is not None
    await ws.close()


async def test_wildcard_allowed_hosts_admit_no_foreign_origin(user: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["*"]
    assert await session_socket(user, b"http://evil.example", b"chat.example.com") is None
    ws = await session_socket(user, b"http://chat.example.com", b"chat.example.com")
    assert ws is not None
    await ws.close()


async def test_dot_domain_allowed_hosts_admit_no_sibling_subdomain(user: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = [".example.com"]
    assert await session_socket(user, b"http://attacker.example.com", b"chat.example.com") is None
    ws = await session_socket(user, b"http://chat.example.com", b"chat.example.com")
    assert ws is not None
    await ws.close()


async def test_host_not_in_allowed_hosts_is_refused(user: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    assert await session_socket(user, b"http://evil.example", b"evil.example") is None


async def test_csrf_trusted_origins_exact_entries_only(user: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com", "https://*.example.org"]
    ws = await session_socket(user, b"https://app.example.com", b"chat.example.com")
    assert ws is not None
    await ws.close()
    assert await session_socket(user, b"http://app.example.com", b"chat.example.com") is None  # scheme counts
    assert await session_socket(user, b"https://a.example.org", b"chat.example.com") is None  # no wildcards


async def test_scheme_behind_a_tls_proxy(user: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proto = [(b"x-forwarded-proto", b"https")]
    ws = await session_socket(user, b"https://chat.example.com", b"chat.example.com", proto)
    assert ws is not None
    await ws.close()
    assert await session_socket(user, b"http://chat.example.com", b"chat.example.com", proto) is None
    assert await session_socket(user, b"https://chat.example.com", b"chat.example.com") is None  # plain ws: http


def test_wss_scope_is_https(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["chat.example.com"]
    scope = {"scheme": "wss", "headers": [(b"host", b"chat.example.com")]}
    assert origin_refusal("https://chat.example.com", scope) is None
    assert origin_refusal("http://chat.example.com", scope) is not None
    assert origin_refusal("https://chat.example.com", {"headers": []}) is not None  # no Host: refuse
