"""The fake model server of a provider test module: the class its FAKE_SERVER names, serving on a free port."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Any]:
    with request.module.FAKE_SERVER() as fake:
        yield fake
