"""Integration tests need a Docker engine: under CI=true its absence fails the test (a skipped
chaos suite proves nothing); elsewhere the test is skipped with the reason."""

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.docker)
