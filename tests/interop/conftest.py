"""The live-server fixtures of the browser tests, reused by the standard-client tests."""
from tests.e2e.conftest import demo_db, e2e_dir, start_live_server  # noqa: F401 (pytest fixtures)
