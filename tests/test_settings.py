"""Settings come from the environment and refuse unsafe production defaults."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup(); from django.conf import settings; from chat.conf import chat_settings; print(chat_settings.CHAT_PROVIDER, settings.DATABASES['default']['ENGINE'], settings.CHANNEL_LAYERS['default']['BACKEND'])"
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "ANTHROPIC_API_KEY", "CHAT_PROVIDER", "SECRET_KEY", "DEBUG")}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60)


def test_embedded_defaults_without_services_or_key() -> None:
    out = _load({"DEBUG": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["chat.providers.offline.OfflineProvider", "django.db.backends.sqlite3", "channels.layers.InMemoryChannelLayer"]


def test_a_key_selects_anthropic_and_urls_select_services() -> None:
    out = _load({"DEBUG": "1", "ANTHROPIC_API_KEY": "sk-test", "DATABASE_URL": "postgres://u@127.0.0.1:5432/x", "REDIS_URL": "redis://127.0.0.1:6379/0"})
    assert out.stdout.split() == ["chat.providers.anthropic.AnthropicProvider", "django.db.backends.postgresql", "channels_redis.core.RedisChannelLayer"]


def test_production_refuses_the_default_secret_key() -> None:
    out = _load({"DEBUG": "False"})
    assert out.returncode != 0 and "SECRET_KEY" in out.stderr
    assert _load({"DEBUG": "False", "SECRET_KEY": "a-real-secret-" + "x" * 40}).returncode == 0


def _manage(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DEBUG") and not k.startswith(("SECURE_", "SESSION_", "CSRF_"))}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=120)


def production_environment() -> dict[str, str]:
    """The README's "Production settings" block, literally (a real secret in place of its placeholder)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Production settings", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    env = dict(line.split("=", 1) for line in block.splitlines() if line.strip() and not line.startswith("#"))
    assert env["SECRET_KEY"].startswith("<")
    env["SECRET_KEY"] = "p" + secrets.token_urlsafe(60)
    return env


def test_debug_is_off_unless_asked_for() -> None:
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG",)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, "SECRET_KEY": "s" * 60}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_check_deploy_is_clean_with_the_documented_production_environment() -> None:
    env = production_environment()
    out = _manage(["check", "--deploy", "--fail-level", "DEBUG"], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout, out.stdout + out.stderr
    # and every HTTPS setting really comes from the environment
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup(); from django.conf import settings as s; "
            "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER, s.DEBUG)")
    clean = {k: v for k, v in os.environ.items() if k != "DEBUG"}
    shown = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == "True 31536000 True True ('HTTP_X_FORWARDED_PROTO', 'https') False", shown.stderr


def test_check_deploy_warns_without_the_https_settings() -> None:
    env = {k: v for k, v in production_environment().items() if not k.startswith(("SECURE_", "SESSION_", "CSRF_COOKIE"))}
    out = _manage(["check", "--deploy"], env)
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in out.stderr + out.stdout
