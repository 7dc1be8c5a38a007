"""chat.asgi: the websocket entry a host mounts, and what it does to the process once built."""
from __future__ import annotations

import gc
from typing import Any

import pytest

from chat.asgi import websocket_application


@pytest.fixture
def unfrozen() -> Any:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process keeps collecting everything, as before


@pytest.mark.parametrize("freeze", [True, False])
def test_building_the_app_freezes_what_is_loaded_unless_told_not_to(settings: Any, unfrozen: Any, freeze: bool) -> None:
    settings.CHAT_GC_FREEZE = freeze
    assert gc.get_freeze_count() == 0
    websocket_application()
    assert (gc.get_freeze_count() > 10_000) is freeze  # Django and the apps: far more than a few objects
