# Antidote: the verbs people expect. `make run` and `make test` are all a newcomer needs.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Installed requirements are re-installed only when a requirements file is newer than this.
STAMP := $(VENV)/.requirements-installed
# The web's port (`make run PORT=8001`); honcho hands it to the Procfile's first process, the web.
PORT ?= 8000
URL := http://127.0.0.1:$(PORT)/

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: run test lint format bench tour screenshots docs docs-serve migrations-check clean venv

venv: $(STAMP)

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "Antidote needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) --version 2>&1)."; \
		echo "Set PYTHON=python3.12 (say) to use another interpreter."; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt requirements-dev.txt requirements-ldap.txt | $(PY)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	@$(PY) -m pip install --disable-pip-version-check -q -r requirements-ldap.txt 2>/dev/null \
		|| echo "LDAP sign-in left out: python-ldap needs OpenLDAP's headers to build" \
			"(Debian: apt-get install libldap2-dev libsasl2-dev); everything else works."
	@touch $(STAMP)

# Web, spark worker, default worker, beat and the broker sources' consumer under one supervisor (Procfile):
# Ctrl-C stops them all. The demo's RabbitMQ-fed queue uses a local RabbitMQ when one answers.
# The demo's messages are sent by the default worker once it is up (seed_demo --background), a
# chunk every few seconds, and the dashboard shows how far it is: the web does not wait for them.
# Not DEBUG: the demo shows the console's own 404 and 500 pages, as production does; the web
# process serves the static files itself (SERVE_STATIC).
run: export SERVE_STATIC := 1
run: export ANTIDOTE_AMQP_URL ?= amqp://guest:guest@127.0.0.1:5672/%2F
run: export ANTIDOTE_NATS_URL ?= nats://127.0.0.1:4222
# Database 3: Celery may use 0, the tests 7 and the soak benchmark 11.
run: export ANTIDOTE_REDIS_STREAMS_URL ?= redis://127.0.0.1:6379/3
# A Spark JVM that starts fast (the C1 compiler only, one GC thread): half the CPU to the first
# counts on two cores. Production leaves it unset, for long jobs' speed.
run: export SPARK_DRIVER_JAVA_OPTIONS ?= -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
run: venv
	$(PY) manage.py migrate --no-input --verbosity 0
	$(PY) manage.py seed_demo --background
	@echo
	@echo "Antidote is starting at $(URL) (Django admin: $(URL)admin/)."
	@echo "Log in with a user printed above; run 'make run' again for new passwords."
	@echo "Ctrl-C stops every process."
	@echo
	honcho start -f Procfile -p $(PORT)

# Tests keep their own VAR_DIR (test database, broker folder) apart from `make run`'s data;
# TEST_VAR_DIR lets two runs (CI's SQLite and PostgreSQL ones) go side by side.
TEST_VAR_DIR ?= $(CURDIR)/var/test
# tests/sso's OpenID provider is an npm package: installed when npm is there (its tests skip
# without Node.js, outside CI).
OIDC_PROVIDER := tests/sso/oidc_provider
# The tests' Spark JVMs start as `make run`'s do (C1 only, one GC thread): their jobs are small and
# many, and two suites share two cores in CI; measured on the Spark-heavy tests, 12% less CPU.
# They also map the classes Spark loads from an archive written once (workers/spark_classes.py),
# where each JVM the tests start (theirs, and every worker's) would read them from the jars
# again: a session's start and first jobs in about 60% of the CPU. Written again when the
# requirements change; a JVM that cannot use it (another JDK) starts without it.
SPARK_CLASSES := var/spark-classes.jsa
$(SPARK_CLASSES): $(STAMP)
	$(PY) -m workers.spark_classes $@
test: export SPARK_DRIVER_JAVA_OPTIONS ?= -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
	-XX:SharedArchiveFile=$(CURDIR)/$(SPARK_CLASSES) -Xlog:cds=off -Xlog:cds+dynamic=off
test: venv $(SPARK_CLASSES)
	@if command -v npm >/dev/null && [ ! -d $(OIDC_PROVIDER)/node_modules/oidc-provider ]; then \
		npm ci --prefix $(OIDC_PROVIDER) --no-audit --no-fund --loglevel=error; fi
	VAR_DIR=$(TEST_VAR_DIR) $(PY) -m pytest $(PYTEST_ARGS)

# ruff, then the import rules of pyproject.toml: workers never imports console, and no circle.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	PYTHONPATH=$(CURDIR) $(VENV)/bin/lint-imports --no-cache

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: venv
	$(PY) -m bench

# The README's screenshots (docs/tour/), from a demo of their own in var/tour, in Chromium.
tour: venv
	$(PY) docs/tour.py

# The documentation's gallery (docs/gallery/), taken by the browser test that checks every page
# fits the screen, so the pictures show the product as it is.
screenshots: venv
	SCREENSHOTS_DIR=$(CURDIR)/docs/gallery VAR_DIR=$(TEST_VAR_DIR) $(PY) -m pytest -q \
		tests/browser/test_every_page_fits.py

# The documentation site (mkdocs.yml, docs/) into var/site, strict: a broken link or anchor fails.
# The API's page is made from the schema, written again first from the code.
docs: venv
	$(PY) manage.py spectacular --file docs/reference/openapi.yaml
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The same site on http://127.0.0.1:8001/, rebuilt as you write.
docs-serve: venv
	$(PY) manage.py spectacular --file docs/reference/openapi.yaml
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001

migrations-check: venv
	$(PY) manage.py makemigrations --check --dry-run

# Leftovers of tests, lint and Spark. Data (var/) and the virtualenv are kept: remove them by hand
# to start over.
clean:
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -print0 | xargs -0 -r rm -rf
	rm -rf .pytest_cache .ruff_cache .hypothesis spark-warehouse metastore_db derby.log staticfiles
