"""The demo's settings with one more page: /tools-host/, a host page whose classic scripts register frontend tools
(docs/tray.md's example, read from the docs, and the fault tests' own tools). Used as DJANGO_SETTINGS_MODULE by a
live server of tests/e2e/test_frontend_tools.py."""
from config.settings import *  # noqa: F403

ROOT_URLCONF = "tests.e2e.tools_host.urls"
