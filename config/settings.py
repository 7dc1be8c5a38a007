"""Settings from the environment; every service has an embedded default (SQLite, in-memory layer)."""
import os
import warnings
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from chat.conf import ChatSettings
from chat.infra.redis_client import channel_layer_host

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env") if (BASE_DIR / ".env").exists() else None

_DEV_SECRET = "dev-insecure-secret-key-change-me"
DEBUG = env.bool("DEBUG", default=False)  # on only when asked for (`make run` and the tests ask for it)
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET)
if not DEBUG and SECRET_KEY == _DEV_SECRET:
    raise ImproperlyConfigured("Set SECRET_KEY: production settings refuse the default development key.")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# HTTPS in production, from the environment (README "Production settings" lists the values that make
# `manage.py check --deploy` clean). Defaults are off so plain-HTTP development and the tests keep working.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=False)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=False)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = env.str("SESSION_COOKIE_SAMESITE", default="Lax")
CSRF_COOKIE_SAMESITE = env.str("CSRF_COOKIE_SAMESITE", default="Lax")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Behind a TLS-terminating proxy: "HTTP_X_FORWARDED_PROTO,https" (only if the proxy always sets or strips it).
_proxy_ssl = env.list("SECURE_PROXY_SSL_HEADER", default=[])
if _proxy_ssl and len(_proxy_ssl) != 2:
    raise ImproperlyConfigured("SECURE_PROXY_SSL_HEADER is '<HEADER>,<value>', e.g. HTTP_X_FORWARDED_PROTO,https")
SECURE_PROXY_SSL_HEADER = (_proxy_ssl[0], _proxy_ssl[1]) if _proxy_ssl else None
USE_X_FORWARDED_HOST = env.bool("USE_X_FORWARDED_HOST", default=False)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "servestatic",  # the static files' middleware's own system checks (and no warning at startup without them)
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "channels",
    "drf_spectacular",  # the OpenAPI document's views (templates) ...
    "drf_spectacular_sidecar",  # ... and Swagger UI's files, served by us (no CDN)
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
    # the browser's language (Accept-Language), or the one chosen with the demo's switcher (set_language's cookie)
    "django.middleware.locale.LocaleMiddleware",
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
                "django.template.context_processors.i18n",
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

# Redis: channel layer + (through chat.conf, which reads REDIS_URL) the durable run log; in-process otherwise.
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    # channel_layer_host: a socket timeout above channels-redis's blocking wait, so idle receives end quietly
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [channel_layer_host(REDIS_URL)]}}
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Chat engine: every setting has its default in chat/conf.py; only variables set in the environment
# become settings here, parsed by the type chat.conf declares (CHAT_PROVIDER may be an alias).
# The demo has no internet search: its web_search backend searches the article corpus (and says so).
CHAT_WEB_SEARCH_BACKEND = "pages.demo.web_search.corpus_search"
for _name, _spec in ChatSettings.specs().items():
    if _name in os.environ:  # a dict setting (CHAT_PRICES) is JSON in the environment
        globals()[_name] = env.json(_name) if _spec.cast is dict else env.get_value(_name, cast=_spec.cast)

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

LANGUAGE_CODE = "en"
# The languages the demo offers (its switcher lists them); every app's catalogs cover all of them (docs/translations.md).
LANGUAGES = [("en", "English"), ("de", "Deutsch"), ("es", "Español"), ("fr", "Français")]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
if DEBUG:  # in development static files come from the finders; STATIC_ROOT exists only after collectstatic
    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
# Uploaded chat attachments (served only through the chat API, never from MEDIA_URL: no URL maps this folder).
MEDIA_ROOT = env.path("MEDIA_ROOT", default=BASE_DIR / "var" / "media")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # In production collectstatic writes hashed names (served with long caching) and gzip copies, and rewrites the ES
    # module imports to the hashed names (chat/infra/staticfiles.py). Development and the tests run no collectstatic (and
    # Django's test runner turns DEBUG off, so a manifest would be looked up): the plain names there.
    "staticfiles": {"BACKEND": "servestatic.storage.CompressedStaticFilesStorage" if DEBUG
                    else "chat.infra.staticfiles.ModuleManifestStaticFilesStorage"},
}

# Logs: one JSON object a line (LOG_FORMAT=json, the default with DEBUG off) or plain text; every line a turn
# writes carries its run_id, conversation_id, user_id and error_code (chat.infra.logs). No message text is logged.
LOG_FORMAT = env.str("LOG_FORMAT", default="text" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"chat_context": {"()": "chat.infra.logs.RunContextFilter"}},
    "formatters": {
        "json": {"()": "chat.infra.logs.JsonFormatter"},
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [run=%(run_id)s] %(message)s"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["chat_context"], "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
    # Django's own console handler would print its records a second time, unformatted: they go to the root's only
    "loggers": {"django": {"handlers": [], "level": "INFO"}},
}
