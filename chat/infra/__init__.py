"""Infrastructure every layer and app builds on, knowing nothing of turns: database threads, single-row SQL, Redis,
metrics, tracing, logs, cached staff settings, the registry base, where pages are, admin display, static files."""
