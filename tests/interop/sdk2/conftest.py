"""Fixtures of the SDK 2.x interop tier (the helpers live in harness.py)."""
import tempfile

import pytest

from harness import Servers, write_table


@pytest.fixture(scope="session")
def workdir():
    with tempfile.TemporaryDirectory(prefix="ocx-interop2-") as path:
        yield path


@pytest.fixture(scope="session")
def servers(workdir):
    registry = Servers(workdir)
    yield registry
    registry.stop()


def pytest_terminal_summary(terminalreporter):
    write_table(terminalreporter)
