"""Benchmarks: the server's own overhead, against bare Channels and bare ASGI (`python -m tests.bench.run`)."""
