# The two set-up commands: `make run` (the demo data, then the dashboard and API on the
# embedded store at http://127.0.0.1:8765/) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-long test-sdk test-pooler reliability reliability-postgres failover bench bench-growth bench-core bench-lineage bench-search bench-search-peers bench-recall bench-removal profile-search bench-api bench-fleet bench-replicas bench-exact clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/sessiondb demo
	$(BIN)/sessiondb serve

# The default run: every test not marked `long` (pyproject.toml), at most 10 minutes on a
# quiet 2-core machine (8.7 minutes there on two workers; 12.8 on one). The long tiers run under their own targets: `make reliability`
# (tests/reliability), `make reliability-postgres` (tests/postgres), `make failover`
# (tests/failover) and `make test-long` (the rest: the rotation race, the lineage model and
# the identity reads at full size).
test: $(STAMP)
	$(BIN)/python -m pytest -q --ignore=tests/sdk --numprocesses=auto --maxprocesses=4

# The SDKs' own session tests with only the fixture swapped, each on the SDK's own class
# (the control) and on sessiondb over SQLite and PostgreSQL (tests/sdk, docs/adapters/sdk-suites.md).
test-sdk: $(STAMP)
	$(BIN)/python -m pytest -q tests/sdk

# The contract suite through pgbouncer in transaction mode in front of the suite's server
# (tests/pgpooler.py; Debian's `pgbouncer` package, which .ci/run installs): every rule a
# user can observe, with each transaction on whichever server connection is free.
test-pooler: $(STAMP)
	$(BIN)/python -m pytest -q sessiondb/testing/contract --sessiondb-backend=pgbouncer

test-long: $(STAMP)
	$(BIN)/python -m pytest -q -m long --ignore=tests/reliability --ignore=tests/postgres --ignore=tests/failover --ignore=tests/sdk

# The reliability harness, quick and long tiers (tests/reliability, about half an hour on 2 cores);
# the figures it records are rendered into docs/reliability.md even when a test fails.
FIGURES := build/reliability-figures.jsonl
reliability: $(STAMP)
	@mkdir -p build && rm -f $(FIGURES)
	@start=$$(date +%s); \
	SESSIONDB_FIGURES=$(CURDIR)/$(FIGURES) $(BIN)/python -m pytest -q tests/reliability -m "long or not long"; \
	status=$$?; \
	$(BIN)/python tests/reliability/render_figures.py $(FIGURES) docs/reliability.md $$(( $$(date +%s) - start )); \
	exit $$status

# The PostgreSQL server killed with SIGKILL mid-load, 100 times and more (tests/postgres, -m long).
reliability-postgres: $(STAMP)
	$(BIN)/python -m pytest -q tests/postgres -m long

# A pg_auto_failover formation (monitor, primary, synchronous secondary on loopback) whose
# primary is SIGKILLed 20 times mid-load (tests/failover, docs/fleet.md; about 10 minutes).
# The figures (failover times) are printed, hence -s.
failover: $(STAMP)
	.ci/install-failover
	$(BIN)/python -m pytest -q -s tests/failover -m long

# Side by side with the peers (docs/benchmarks.md, .json and charts; about 10 minutes).
# The peers and matplotlib live in their own venv, never in the project's dependencies.
# OpenAI Agents gets its own venv: hermes-agent's pins hold openai-agents back to an old
# release when both share one, and each peer runs at its current release.
PEERS := bench/.venv-peers
PEER_PACKAGES := hermes-agent==0.19.0 langchain-community greenlet matplotlib
OPENAI := bench/.venv-openai
$(PEERS)/.installed:
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/pip install --quiet --upgrade pip
	$(PEERS)/bin/pip install --quiet $(PEER_PACKAGES) || for p in $(PEER_PACKAGES); do \
	  $(PEERS)/bin/pip install --quiet "$$p" || echo "bench: could not install $$p (reported n/a)"; done
	touch $@

$(OPENAI)/.installed:
	$(PYTHON) -m venv $(OPENAI)
	$(OPENAI)/bin/pip install --quiet --upgrade pip
	$(OPENAI)/bin/pip install --quiet --upgrade openai-agents || echo "bench: could not install openai-agents (reported n/a)"
	touch $@

bench: $(STAMP) $(PEERS)/.installed $(OPENAI)/.installed
	$(BIN)/python bench/compare.py

# One writer's append in exact units, each beside its target (docs/benchmarks.json's `exact`):
# callgrind's instructions per append (valgrind from Debian, installed here when missing),
# WAL pages per append, and CPU per message of an append of 100 beside OpenAI's add_items
# (bench/exact.py; about 5 minutes).
bench-exact: $(STAMP) $(OPENAI)/.installed
	command -v valgrind >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind; } \
	  || echo "bench: could not install valgrind (instructions reported n/a)"
	$(BIN)/python bench/exact.py
	$(BIN)/python bench/compare.py --render-only

# How cost grows with 10k, 100k and 1M stored messages (docs/benchmarks-growth.md and a
# chart; about 10 minutes, so not part of `make bench`).
bench-growth: $(STAMP) $(PEERS)/.installed
	$(BIN)/python bench/bench_growth.py

bench-core: $(STAMP)
	$(BIN)/python bench/bench_core.py

bench-search: $(STAMP)
	$(BIN)/python bench/bench_search.py

# make bench's search workload alone, beside Hermes (about 2 minutes; --variant NAME=DIR adds
# the sessiondb of another source tree, for a before and after), and where a search goes.
bench-search-peers: $(STAMP) $(PEERS)/.installed
	$(BIN)/python bench/search_rounds.py

# Recall on LoCoMo's development conversations (../shared/recall/, skipped with a sentence where
# absent): hit@5, hit@10, all@10 by category and p50/p99, query language and lexical recall, on
# SQLite and on a private PostgreSQL server, and both on SQLite over 201,740 messages (the
# conversations stored 44 times over; about 5 minutes).
# What a forget (deletion, scrub, the raw scan; S-55) and a retention sweep cost, and the appends' p99 beside each.
bench-removal: $(STAMP)
	$(BIN)/python bench/bench_removal.py

bench-recall: $(STAMP)
	$(BIN)/pip install --quiet -e '.[wordllama]'  # the vector modes' embedder, weights in its wheel
	$(BIN)/python bench/recall.py --copies 44

profile-search: $(STAMP)
	$(BIN)/python bench/profile_search.py

bench-lineage: $(STAMP)
	$(BIN)/python bench/bench_lineage.py

bench-api: $(STAMP)
	$(BIN)/python bench/bench_api.py

# Writer processes on one PostgreSQL server against the raw psycopg loop, OpenAI's
# SQLAlchemySession (asyncpg, in the peers' venv) and sessiondb on SQLite (docs/fleet.md).
# The peer lives in a venv of its own, like the others, never in the project's dependencies.
FLEET_PEER := bench/.venv-fleet
$(FLEET_PEER)/.installed:
	$(PYTHON) -m venv $(FLEET_PEER)
	$(FLEET_PEER)/bin/pip install --quiet --upgrade pip
	$(FLEET_PEER)/bin/pip install --quiet openai-agents "sqlalchemy[asyncio]" asyncpg || echo "bench: could not install the SQLAlchemySession peer (reported n/a)"
	touch $@

# Searches from a hot standby under an append load on the primary, beside the primary's own
# (bench/bench_replicas.py, docs/fleet.md; about 2 minutes).
bench-replicas: $(STAMP)
	$(BIN)/python bench/bench_replicas.py

bench-fleet: $(STAMP) $(FLEET_PEER)/.installed
	$(BIN)/python bench/bench_fleet.py --peer-python $(FLEET_PEER)/bin/python

clean:
	rm -rf $(VENV) build *.egg-info
