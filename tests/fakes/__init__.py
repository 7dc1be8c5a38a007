"""Local, real-network fakes of external services, for tests."""
