"""Settings from the environment; every service has an embedded default (SQLite, in-memory layer)."""
import os
import warnings
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env") if (BASE_DIR / ".env").exists() else None

_DEV_SECRET = "dev-insecure-secret-key-change-me"
DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET)
if not DEBUG and SECRET_KEY == _DEV_SECRET:
    raise ImproperlyConfigured("Set SECRET_KEY: production settings refuse the default development key.")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "channels",
    "chat",
    "tools",
    "payloads",
    "pages",
    "pages.demo",  # the demo site: only this project installs it
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files straight from daphne (no proxy needed): collectstatic output, compressed, cache headers.
    # Async-capable, so async views (SSE) do not run behind a sync adapter (see the README's dependencies).
    "servestatic.middleware.ServeStaticMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite in WAL mode with a busy timeout unless DATABASE_URL says otherwise.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=20000;",
        }
    )
    # A file (not :memory:) so async tests and threads share it; one per test process so parallel runs
    # in one work tree never collide. var/ is git-ignored, so a fresh clone has to create it.
    (BASE_DIR / "var").mkdir(exist_ok=True)
    DATABASES["default"]["TEST"] = {"NAME": env.str("SQLITE_TEST_NAME", default=str(BASE_DIR / "var" / f"test-{os.getpid()}.sqlite3"))}
# Persistent connections: Channels runs close_old_connections() around every websocket message, which
# with CONN_MAX_AGE=0 closes and reopens the database (and re-runs SQLite's PRAGMAs) once per frame.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=600))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis: channel layer + durable run log when REDIS_URL is set; in-process otherwise.
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Chat engine.
ANTHROPIC_API_KEY = env.str("ANTHROPIC_API_KEY", default="")
ANTHROPIC_BASE_URL = env.str("ANTHROPIC_BASE_URL", default="") or None
_PROVIDERS = {
    "anthropic": "chat.providers.anthropic.AnthropicProvider",
    "offline": "chat.providers.offline.OfflineProvider",
    "scripted": "chat.providers.scripted.ScriptedProvider",
}
_provider_name = env.str("CHAT_PROVIDER", default="anthropic" if ANTHROPIC_API_KEY else "offline")
CHAT_PROVIDER = _PROVIDERS.get(_provider_name, _provider_name)
CHAT_MODEL = env.str("CHAT_MODEL", default="claude-sonnet-5")
CHAT_MAX_ITERATIONS = env.int("CHAT_MAX_ITERATIONS", default=5)
CHAT_MAX_TOKENS = env.int("CHAT_MAX_TOKENS", default=2000)
CHAT_TEMPERATURE = env.float("CHAT_TEMPERATURE", default=0.0)
CHAT_HISTORY_TOKEN_BUDGET = env.int("CHAT_HISTORY_TOKEN_BUDGET", default=60000)
CHAT_PROVIDER_MAX_RETRIES = env.int("CHAT_PROVIDER_MAX_RETRIES", default=3)
CHAT_PROVIDER_TIMEOUT = env.float("CHAT_PROVIDER_TIMEOUT", default=60.0)
CHAT_PROVIDER_STALL_TIMEOUT = env.float("CHAT_PROVIDER_STALL_TIMEOUT", default=30.0)
CHAT_OFFLINE_DELAY = env.float("CHAT_OFFLINE_DELAY", default=0.02)  # seconds between offline tokens
CHAT_COALESCE_WINDOW = env.float("CHAT_COALESCE_WINDOW", default=0.03)
# A streaming answer is saved CHAT_FLUSH_INTERVAL after its first text, then at windows doubling up to
# CHAT_FLUSH_MAX_INTERVAL: a crash loses less than a second of text, and a 5 s (500-token) turn stays <= 12 writes.
CHAT_FLUSH_INTERVAL = env.float("CHAT_FLUSH_INTERVAL", default=0.25)
CHAT_FLUSH_MAX_INTERVAL = env.float("CHAT_FLUSH_MAX_INTERVAL", default=0.9)
CHAT_RUN_LOG_TTL = env.int("CHAT_RUN_LOG_TTL", default=3600)  # seconds a finished run stays replayable
CHAT_HEARTBEAT_INTERVAL = env.float("CHAT_HEARTBEAT_INTERVAL", default=2.0)
CHAT_STALE_AFTER = env.float("CHAT_STALE_AFTER", default=8.0)
CHAT_GRACEFUL_SHUTDOWN = env.bool("CHAT_GRACEFUL_SHUTDOWN", default=True)  # SIGTERM lets running runs finish
CHAT_SHUTDOWN_TIMEOUT = env.float("CHAT_SHUTDOWN_TIMEOUT", default=10.0)  # then they are saved as interrupted
CHAT_MAX_FRAME_BYTES = env.int("CHAT_MAX_FRAME_BYTES", default=64 * 1024)
CHAT_MAX_MESSAGE_CHARS = env.int("CHAT_MAX_MESSAGE_CHARS", default=16000)
CHAT_RATE_LIMIT_PER_MINUTE = env.int("CHAT_RATE_LIMIT_PER_MINUTE", default=30)
CHAT_MAX_SOCKETS_PER_USER = env.int("CHAT_MAX_SOCKETS_PER_USER", default=20)
CHAT_MAX_RUNNING_PER_USER = env.int("CHAT_MAX_RUNNING_PER_USER", default=4)
CHAT_ACTION_TOKEN_MAX_AGE = env.int("CHAT_ACTION_TOKEN_MAX_AGE", default=3600)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}

AUTH_PASSWORD_VALIDATORS = [] if DEBUG else [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "frame-ancestors": ["'none'"],
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
if DEBUG:  # in development static files come from the finders; STATIC_ROOT exists only after collectstatic
    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
# Gzip copies made by collectstatic; no manifest, so unhashed URLs (the tray's ES module imports) keep working.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "servestatic.storage.CompressedStaticFilesStorage"},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}
