"""The dotted paths 0.1.0 told hosts to put in their settings, URLconf and uvicorn command still work, with a
DeprecationWarning naming the new path (docs/architecture.md lists them)."""
from __future__ import annotations

import importlib
import sys

import pytest

from chat.infra.logs import JsonFormatter, RunContextFilter
from chat.infra.staticfiles import ModuleManifestStaticFilesStorage
from chat.ops.urls import urlpatterns

pytest.importorskip("uvicorn")  # the old --ws path is uvicorn's


@pytest.mark.parametrize(("old", "name", "new", "expected"), [
    ("chat.ops_urls", "urlpatterns", "chat.ops.urls", urlpatterns),
    ("chat.logs", "RunContextFilter", "chat.infra.logs", RunContextFilter),
    ("chat.logs", "JsonFormatter", "chat.infra.logs", JsonFormatter),
    ("chat.staticfiles", "ModuleManifestStaticFilesStorage", "chat.infra.staticfiles", ModuleManifestStaticFilesStorage),
    ("chat.wsserver", "UvicornWebSocketProtocol", "chat.api.wsserver", None),
])
def test_an_old_path_still_works_and_warns_with_the_new_one(old: str, name: str, new: str, expected: object) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    value = getattr(module, name)
    assert value is (expected if expected is not None else getattr(importlib.import_module(new), name))
