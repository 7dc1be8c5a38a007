"""Settings come from the environment and refuse unsafe production defaults."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup(); from django.conf import settings; from chat.conf import chat_settings; print(chat_settings.CHAT_PROVIDER, settings.DATABASES['default']['ENGINE'], settings.CHANNEL_LAYERS['default']['BACKEND'])"
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "ANTHROPIC_API_KEY", "CHAT_PROVIDER", "SECRET_KEY", "DEBUG")}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60)


def test_embedded_defaults_without_services_or_key() -> None:
    out = _load({})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["chat.providers.offline.OfflineProvider", "django.db.backends.sqlite3", "channels.layers.InMemoryChannelLayer"]


def test_a_key_selects_anthropic_and_urls_select_services() -> None:
    out = _load({"ANTHROPIC_API_KEY": "sk-test", "DATABASE_URL": "postgres://u@127.0.0.1:5432/x", "REDIS_URL": "redis://127.0.0.1:6379/0"})
    assert out.stdout.split() == ["chat.providers.anthropic.AnthropicProvider", "django.db.backends.postgresql", "channels_redis.core.RedisChannelLayer"]


def test_production_refuses_the_default_secret_key() -> None:
    out = _load({"DEBUG": "False"})
    assert out.returncode != 0 and "SECRET_KEY" in out.stderr
    assert _load({"DEBUG": "False", "SECRET_KEY": "a-real-secret-" + "x" * 40}).returncode == 0
