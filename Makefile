# Two commands for a fresh clone: `make run` (the product) and `make test` (every test).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
REDIS_TEST_URL ?= redis://127.0.0.1:6379/0

.PHONY: run test test-services setup chromium lint bench clean

$(STAMP): pyproject.toml
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null || { command -v pyenv >/dev/null && pyenv install -s $$(cat .python-version); } || true
	python3 -c 'import sys; assert sys.version_info >= (3, 12), "Python >= 3.12 needed (see .python-version)"'
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo_setup
	$(PY) manage.py runserver 127.0.0.1:8000

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) manage.py chat_protocol_schema --check

test: $(STAMP) chromium lint
	node --test tests/js/
	$(PY) -m pytest -q

test-services: $(STAMP) chromium
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL) REQUIRE_SERVICES=1 $(PY) -m pytest -q

bench: $(STAMP)
	$(PY) -m tests.bench.run

clean:
	rm -rf $(VENV) var db.sqlite3* artifacts
