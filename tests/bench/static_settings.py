"""Bench settings: this repo's production settings with the static-file server named by BENCH_STATIC."""
import os

from config.settings import *  # noqa: F403
from config.settings import MIDDLEWARE

STATIC_ROOT = os.environ["BENCH_STATIC_ROOT"]
_SERVERS = {"whitenoise": "whitenoise.middleware.WhiteNoiseMiddleware", "servestatic": "servestatic.middleware.ServeStaticMiddleware"}
_ours = set(_SERVERS.values())
MIDDLEWARE = [m for m in MIDDLEWARE if m not in _ours]
if os.environ["BENCH_STATIC"] in _SERVERS:  # "none": no static server (the baseline for other requests)
    MIDDLEWARE.insert(1, _SERVERS[os.environ["BENCH_STATIC"]])
