# ocx-proxy developer tasks.  `make test` works on a fresh machine: it builds .venv first.
PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python

.PHONY: test bench compat interop clean

$(VPY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps: $(VPY) Makefile
	$(VPY) -m pip install --quiet --disable-pip-version-check "pytest>=7" "hypothesis>=6"
	touch $@

test: $(VENV)/.deps
	$(VPY) -m pytest -q -p no:cacheprovider tests

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# Not a test: prints microseconds per 100-tool catalog (and google protobuf's ratio if importable).
bench: $(VENV)/.deps
	$(VPY) tests/bench/bench_protobuf.py
