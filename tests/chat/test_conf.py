"""chat.conf: every engine setting has its default in one place; bad values are system-check errors."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chat.checks import check_chat_settings
from chat.conf import ChatSettings, chat_settings

ROOT = Path(__file__).resolve().parents[2]
SPECS = ChatSettings.specs()


@pytest.fixture
def bare(settings: Any, monkeypatch: Any) -> Any:
    """A host project that sets none of the engine's settings (and has no REDIS_URL and no key)."""
    for name in [*SPECS, "REDIS_URL"]:
        if hasattr(settings, name):
            delattr(settings, name)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    chat_settings.reload()  # deleting a setting sends no setting_changed
    yield settings
    chat_settings.reload()


def test_a_project_without_chat_settings_gets_every_default(bare: Any) -> None:
    derived = {"CHAT_PROVIDER", "CHAT_REDIS_URL", "CHAT_RUN_LOG_BACKEND", "ANTHROPIC_BASE_URL"}
    for name, spec in SPECS.items():
        if name not in derived:
            assert getattr(chat_settings, name) == spec.default, name
    assert chat_settings.CHAT_PROVIDER == "chat.providers.offline.OfflineProvider"
    assert chat_settings.CHAT_REDIS_URL == ""
    assert chat_settings.CHAT_RUN_LOG_BACKEND == "chat.runs.log.MemoryRunLog"
    assert chat_settings.ANTHROPIC_BASE_URL is None
    assert check_chat_settings() == []


def test_every_setting_is_typed_documented_and_castable() -> None:
    assert len(SPECS) >= 25
    for name, spec in SPECS.items():
        assert spec.help and spec.kind is not None, name
        assert spec.cast in (str, int, float, bool, dict), name


def test_provider_aliases_and_the_default_follow_the_key(bare: Any, monkeypatch: Any) -> None:
    bare.CHAT_PROVIDER = "scripted"
    assert chat_settings.CHAT_PROVIDER == "chat.providers.scripted.ScriptedProvider"
    bare.CHAT_PROVIDER = "tests.bench.provider.BenchProvider"
    assert chat_settings.CHAT_PROVIDER == "tests.bench.provider.BenchProvider"
    del bare.CHAT_PROVIDER
    chat_settings.reload()
    bare.ANTHROPIC_API_KEY = "sk-test"
    assert chat_settings.CHAT_PROVIDER == "chat.providers.anthropic.AnthropicProvider"
    del bare.ANTHROPIC_API_KEY
    chat_settings.reload()
    assert chat_settings.CHAT_PROVIDER == "chat.providers.offline.OfflineProvider"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")  # the SDK reads it there too
    chat_settings.reload()
    assert chat_settings.CHAT_PROVIDER == "chat.providers.anthropic.AnthropicProvider"


def test_redis_url_and_run_log_backend_follow_the_project(bare: Any) -> None:
    bare.REDIS_URL = "redis://example:6379/3"
    assert chat_settings.CHAT_REDIS_URL == "redis://example:6379/3"
    assert chat_settings.CHAT_RUN_LOG_BACKEND == "chat.runs.log.RedisRunLog"
    bare.CHAT_REDIS_URL = ""  # the engine may stay in-process while the project uses Redis elsewhere
    assert chat_settings.CHAT_RUN_LOG_BACKEND == "chat.runs.log.MemoryRunLog"
    bare.CHAT_RUN_LOG_BACKEND = "redis"
    assert chat_settings.CHAT_RUN_LOG_BACKEND == "chat.runs.log.RedisRunLog"


def test_overrides_are_honoured_and_other_names_fall_through(settings: Any) -> None:
    settings.CHAT_MAX_TOKENS = 77
    assert chat_settings.CHAT_MAX_TOKENS == 77
    settings.CHAT_MAX_TOKENS = 78
    assert chat_settings.CHAT_MAX_TOKENS == 78
    assert chat_settings.TIME_ZONE == settings.TIME_ZONE  # custom providers read their own settings here


def _ids(**values: Any) -> list[str]:
    from django.test import override_settings

    with override_settings(**values):
        return [m.id for m in check_chat_settings()]


@pytest.mark.parametrize(("values", "expected"), [
    ({"CHAT_MAX_TOKENS": "2000"}, ["chat.E001"]),
    ({"CHAT_GRACEFUL_SHUTDOWN": "no"}, ["chat.E001"]),
    ({"CHAT_TEMPERATURE": True}, ["chat.E001"]),
    ({"CHAT_MAX_TOKENS": -1}, ["chat.E002"]),
    ({"CHAT_MAX_RUNNING_PER_USER": 0}, ["chat.E002"]),
    ({"CHAT_COALESCE_WINDOW": -0.5}, ["chat.E002"]),
    ({"CHAT_PROVIDER": "chat.providers.nowhere.Provider"}, ["chat.E003"]),
    ({"CHAT_PROVIDER": "chat.conf.ChatSettings"}, ["chat.E004"]),
    ({"CHAT_PROVIDER": 3}, ["chat.E001"]),
    ({"CHAT_RUN_LOG_BACKEND": "chat.runs.log.nothing"}, ["chat.E005"]),
    ({"CHAT_RUN_LOG_BACKEND": "redis", "CHAT_REDIS_URL": ""}, ["chat.E006"]),
    ({"CHAT_MAX_TOKEN": 5}, ["chat.W001"]),
    ({"CHAT_COALESCE_WINDOW": 0, "CHAT_TEMPERATURE": 1, "CHAT_PROVIDER": "offline"}, []),
])
def test_wrong_values_are_check_messages(values: dict[str, Any], expected: list[str]) -> None:
    assert _ids(**values) == expected


def test_manage_py_check_fails_on_a_wrong_setting() -> None:
    env = {**os.environ, "CHAT_PROVIDER": "chat.providers.nowhere.Provider"}
    out = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "chat.E003" in out.stderr, out.stderr


def test_the_settings_reference_lists_every_setting_and_its_check_fails_when_stale(tmp_path: Path) -> None:
    """docs/settings.md is generated from chat/conf.py (`make lint` runs the check); every setting is in it once."""
    from django.core.management import CommandError, call_command

    from chat.management.commands.chat_settings_doc import settings_text

    call_command("chat_settings_doc", "--check")
    text = settings_text()
    for name in SPECS:
        assert text.count(f"| `{name}` |") == 1, name
    assert "| `CHAT_MAX_FRAME_BYTES` | int > 0 | `65536` (64 KiB) |" in text
    stale = tmp_path / "settings.md"
    stale.write_text(text.replace("CHAT_MODEL", "CHAT_MODLE"), encoding="utf-8")
    with pytest.raises(CommandError, match="stale settings reference"):
        call_command("chat_settings_doc", "--check", "--output", str(stale))
