"""A host page of the test suite for the frontend tools' browser tests (tests/e2e/test_frontend_tools.py)."""
