"""This repo's settings with the most permissive DRF defaults a host could have (see test_drf_defaults)."""
from config.settings import *  # noqa: F403

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
}
