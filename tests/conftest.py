"""The fixtures every test file may ask for, and the hypothesis profiles.  Plain helpers (paths, the MCP test client
``RelayProcess``, ``run_proxy``, ``run_check``...) are in helpers.py, which test files import."""
import os
import sys

import pytest

from helpers import FIXTURES, RelayProcess


@pytest.fixture(autouse=True)
def cache_home(request, monkeypatch, tmp_path_factory):
    """Relays started without --output-dir keep their files (the catalog cache, spills) in a directory of the
    test session, never in the user's cache: XDG_CACHE_HOME (Linux).  Not in the interop tier, whose real CLIs
    and package managers keep their own caches there."""
    if "interop" not in request.node.nodeid.split("/"):
        home = tmp_path_factory.getbasetemp() / "cache-home"
        home.mkdir(exist_ok=True)
        monkeypatch.setenv("XDG_CACHE_HOME", str(home))


@pytest.fixture
def http_server():
    """Start ``McpHttpServer``s (tests/fixtures/http_servers.py) on 127.0.0.1; all stop at the end."""
    if FIXTURES not in sys.path:
        sys.path.insert(0, FIXTURES)
    import http_servers

    made = []

    def start(**kw):
        srv = http_servers.McpHttpServer(**kw)
        made.append(srv)
        return srv

    yield start
    for srv in made:
        srv.stop()


@pytest.fixture
def relay_factory(tmp_path):
    """Start relays with ``--output-dir`` in tmp_path; all are closed at the end."""
    started = []

    def start(relay_args=(), server_args=(), **kw):
        args = ["--output-dir", str(tmp_path / "spill")] + list(relay_args)
        relay = RelayProcess(args, server_args, **kw)
        started.append(relay)
        return relay

    yield start
    for relay in started:
        if relay.proc.poll() is None:
            relay.proc.kill()
            relay.proc.wait()


# Hypothesis profiles.  `make compat` runs the whole suite once per Python 3.8-3.13
# and selects the lighter "compat" profile with HYPOTHESIS_PROFILE=compat; tests
# that pin max_examples with @settings keep their own count.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is always installed by the Makefile
    _hypothesis_settings = None
if _hypothesis_settings is not None:
    _hypothesis_settings.register_profile("compat", max_examples=30, deadline=None)
    # No per-example deadline: on a loaded 2-core machine a 100 kB example can take
    # longer than 200 ms, and speed is measured in `make bench`, never in tests.
    _hypothesis_settings.register_profile("suite", deadline=None)
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "suite")
