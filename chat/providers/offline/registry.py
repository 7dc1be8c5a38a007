"""The offline model's intents: each scores a request (0 = not this one) and handles it; chosen by the highest score,
ties by registration order, handled by name. Deterministic: the same request always gets the same reply. A name is
registered once: a second registration elsewhere is kept out and reported by a system check, as for tools and pages."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

from chat.infra.registration import Registry, caller_origin
from chat.providers.offline.reading import Reading


@dataclass(frozen=True)
class Reply:
    """What the model says; `tool` is a call to make (name, input); `intent` names the handler (diagnostics)."""

    text: str
    tool: tuple[str, dict[str, Any]] | None = None
    intent: str = ""


Matcher = Callable[[Reading], float]
Handler = Callable[[Reading], Reply]


@dataclass(frozen=True)
class Intent:
    name: str
    match: Matcher
    handle: Handler
    description: str = ""


class IntentRegistry(Registry[Intent]):
    """Intents by name, in registration order; `choose` scores them all, `reply` runs the chosen one's handler."""

    @overload
    def register(self, spec: Intent, *, origin: str | None = None) -> Intent: ...
    @overload
    def register(self, spec: str, match: Matcher, *, description: str = "", origin: str | None = None) -> Callable[[Handler], Handler]: ...

    def register(self, spec: Intent | str, match: Matcher | None = None, *, description: str = "",
                 origin: str | None = None) -> Intent | Callable[[Handler], Handler]:
        """Add an `Intent`; or, given a name and a matcher, a decorator adding the handler it decorates under that name.
        A name taken by a registration elsewhere is not added (the first stays) but recorded in `duplicates`."""
        origin = origin or caller_origin(*self._registry_files())
        if isinstance(spec, Intent):
            return super().register(spec, origin=origin)
        if match is None:
            raise TypeError("an intent registered by name needs its matcher")
        name, matcher = spec, match

        def deco(handle: Handler) -> Handler:
            super(IntentRegistry, self).register(Intent(name, matcher, handle, description or (handle.__doc__ or "").strip()), origin=origin)
            return handle
        return deco

    def names(self) -> list[str]:
        return [i.name for i in self]

    def choose(self, reading: Reading) -> str:
        """The name of the best-scoring intent ("help" when nothing scores)."""
        best, best_score = "help", 0.0
        for intent in self:
            score = float(intent.match(reading))
            if score > best_score:
                best, best_score = intent.name, score
        return best

    def reply(self, reading: Reading) -> Reply:
        """The chosen intent's reply, named after it."""
        name = self.choose(reading)
        chosen = next(i for i in self if i.name == name)
        reply = chosen.handle(reading)
        return Reply(reply.text, reply.tool, name)


intents = IntentRegistry()
intent = intents.register
