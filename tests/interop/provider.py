"""The live server's model for the standard-client tests: the offline model, except that a message containing
FAIL_OVERLOADED gets the provider failure `overloaded` (select with CHAT_PROVIDER=tests.interop.provider.FailingOfflineProvider)."""
from __future__ import annotations

from collections.abc import AsyncIterator

from chat.providers.base import ProviderError, ProviderEvent, ProviderRequest
from chat.providers.offline import OfflineProvider

TRIGGER = "FAIL_OVERLOADED"


class FailingOfflineProvider(OfflineProvider):
    """OfflineProvider, with one scripted failure for tests."""

    name = "offline-failing"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        last = request.messages[-1] if request.messages else {}
        if last.get("role") == "user" and isinstance(last.get("content"), str) and TRIGGER in last["content"]:
            raise ProviderError("overloaded", "The model is overloaded (test).")
        async for event in super().stream(request):
            yield event
