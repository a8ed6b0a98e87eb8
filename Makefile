# Everything a fresh machine needs comes from this file and pyproject.toml.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: install run demo record test test-postgres lint bench bench-postgres clean

$(BIN)/gpu-tracker: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

## The project's own modules are compiled to bytecode here, once per change: the editable install
## leaves them as source, and where PYTHONDONTWRITEBYTECODE is set Python would otherwise compile
## every module a command imports again at each start (0.03 s for --help, more for history).
install: $(BIN)/gpu-tracker
	$(BIN)/python -m compileall -q tracker db scrapers >/dev/null

## The main job: the hourly collector on the embedded SQLite default (no server needed).
run: install
	$(BIN)/gpu-tracker run

## Fill a demo store (demo.db here, never the default live store) from the bundled recordings,
## then import the real public price history in tests/fixtures/history-archives (sources and
## licences in its README) so history, trends, plot and alerts backtest show real movement, and
## show the cheapest H100s. No network. Replayed and live prices never share a store. The archives
## are older than the default raw retention (365 days): the demo's collection keeps raw intervals
## longer, so backtests and --as-of questions over them still read their raw prices.
DEMO_DB ?= sqlite:///$(CURDIR)/demo.db
DEMO_ARCHIVES := tests/fixtures/history-archives
DEMO := GPU_TRACKER_RETENTION__RAW_DAYS=36500 $(BIN)/gpu-tracker --db '$(DEMO_DB)'
demo: install
	$(DEMO) scrape --replay
	$(DEMO) import $(DEMO_ARCHIVES)/tugot17_*.jsonl
	$(DEMO) import $(DEMO_ARCHIVES)/ewyluda_*.csv
	$(DEMO) import $(DEMO_ARCHIVES)/opencomputeprices_*.csv
	$(DEMO) prices --gpu H100 --limit 15

## Refresh the replay recordings from the providers themselves (needs the network): every active
## provider's real answers, secrets replaced, into RECORD_DIR (default: the bundled recordings),
## collected into a store of their own (record.db here). A provider that fails keeps its old one.
RECORD_DIR ?= $(CURDIR)/tracker/recordings
RECORD_DB ?= sqlite:///$(CURDIR)/record.db
record: install
	$(BIN)/gpu-tracker --db $(RECORD_DB) scrape --record $(RECORD_DIR) --no-alerts

## The test suite. PostgreSQL tests run when TRACKER_TEST_DATABASE_URL is set, else skip.
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## The whole suite with a local PostgreSQL (database `test`): every backend-parametrised
## test then runs on PostgreSQL as well as on SQLite.
test-postgres: install
	TRACKER_TEST_DATABASE_URL=$${TRACKER_TEST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test} \
		$(BIN)/python -m pytest $(PYTEST_ARGS)

## Pyflakes-level checks (unused imports, undefined names).
lint: install
	$(BIN)/ruff check --select F --exclude db/migrations/versions tracker scrapers db tests bench

## Every benchmark; with TRACKER_BENCH_DATABASE_URL set (from the environment or the make command
## line) each also measures on that PostgreSQL server (bench/README.md).
bench: install
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

## The benchmarks with a local PostgreSQL too (database `test`; the bench works in databases of
## its own beside it).
bench-postgres: install
	TRACKER_BENCH_DATABASE_URL=$${TRACKER_BENCH_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test} \
		$(MAKE) bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache demo.db record.db
