"""Signed server-action tokens: bound to user, conversation, action and data; expiring; single use."""
from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from django.core import signing

SALT = "chat.server-action"


@dataclass(frozen=True)
class ActionClaims:
    user_id: int
    conversation_id: int
    action: str
    data_hash: str
    nonce: str


def data_hash(data: Any) -> str:
    """A stable digest of the action's data (key order does not matter)."""
    raw = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def action_token_sign(*, user_id: int, conversation_id: int, action: str, data: Any) -> str:
    """A token the server will accept once, for this user, conversation, action and data."""
    claims = {"u": user_id, "c": conversation_id, "a": action, "h": data_hash(data), "n": secrets.token_hex(12)}
    return signing.dumps(claims, salt=SALT, compress=True)


class TokenInvalid(Exception):
    """The token is missing, altered, expired or not for this request."""


def action_token_verify(token: str | None, *, user_id: int, conversation_id: int, action: str, data: Any, max_age: int) -> ActionClaims:
    """Claims of a valid token for exactly this request; raises TokenInvalid otherwise (replay is checked by the caller)."""
    if not token:
        raise TokenInvalid("missing token")
    try:
        raw = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.SignatureExpired as exc:
        raise TokenInvalid("expired token") from exc
    except signing.BadSignature as exc:
        raise TokenInvalid("bad signature") from exc
    claims = ActionClaims(raw["u"], raw["c"], raw["a"], raw["h"], raw["n"])
    if claims.user_id != user_id or claims.conversation_id != conversation_id:
        raise TokenInvalid("token is not for this user or conversation")
    if claims.action != action or claims.data_hash != data_hash(data):
        raise TokenInvalid("token does not match the action or its data")
    return claims
