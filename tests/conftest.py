"""Fixtures shared by the unit and the integration tests."""

import os

import pytest


@pytest.fixture(scope="session")
def native_lib():
    """The native client driver's library, built for this source. When it cannot be built here (no
    C compiler or libmariadb-dev) the test skips with the reason, and fails under CI=true, where
    setup builds it."""
    from ndbchaos.workload import native
    try:
        native.build()
        return native.load()
    except native.NativeUnavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"native driver not buildable under CI: {e}")
        pytest.skip(f"native driver not buildable here: {e}")
