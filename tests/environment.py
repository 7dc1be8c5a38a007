"""Loaded by pytest before Django's settings (`-p tests.environment` in pyproject): the development environment.

The settings default to production (DEBUG off, which refuses the development SECRET_KEY); the test
run asks for development settings, as `make run` does. Servers the tests start inherit it unless a
test sets its own (the production-settings tests do)."""
import os

os.environ.setdefault("DEBUG", "1")
