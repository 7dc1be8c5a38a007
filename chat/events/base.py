"""What every frame shares: closed models whose `type` comes first; what every event of a run shares: its envelope."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_json

TERMINAL_TYPES: frozenset[str] = frozenset({"complete", "error", "cancelled"})


def _type_required(schema: dict[str, Any]) -> None:
    """`type` has a default for builders' convenience, but every frame carries it."""
    required = schema.setdefault("required", [])
    if "type" in schema.get("properties", {}) and "type" not in required:
        required.insert(0, "type")


class Frame(BaseModel):
    """A protocol object: unknown fields are refused, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_type_required)


def omit_none(value: Any) -> bool:
    """For `Field(exclude_if=...)`: an optional field that is absent from the wire rather than null."""
    return value is None


def _json(value: object) -> str:
    return to_json(value).decode()


@dataclass(frozen=True, slots=True)
class Envelope:
    """What every event of one run repeats, JSON-encoded once per run: `"run_id":…,"seq":` and `,"conversation_id":…`."""

    run_id: str
    conversation_id: int | None
    head: str = field(init=False)
    tail: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "head", f'"run_id":{_json(self.run_id)},"seq":')
        object.__setattr__(self, "tail", f',"conversation_id":{_json(self.conversation_id)}')

    def around_seq(self, wire: str) -> tuple[str, str]:
        """A seq-0 frame of this run cut around its seq (a Redis script fills in the next one)."""
        at = wire.index(self.head) + len(self.head)
        if wire[at:at + 2] not in ("0,", "0}"):
            raise ValueError("not a seq-0 frame of this run")
        return wire[:at], wire[at + 1:]


class RunEvent(Frame):
    """Every event of a run: `type` first (readers look for it in the first bytes), then the envelope."""

    type: str
    run_id: str
    seq: int = Field(ge=0)
    conversation_id: int | None
    terminal: ClassVar[bool] = False

    @classmethod
    def build(cls, env: Envelope, seq: int, **fields: Any) -> Self:
        """The validated event."""
        return cls(run_id=env.run_id, seq=seq, conversation_id=env.conversation_id, **fields)

    def envelope(self) -> Envelope:
        return Envelope(self.run_id, self.conversation_id)
