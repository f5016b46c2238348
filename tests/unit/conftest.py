"""Fixtures shared by unit tests."""

import pytest


@pytest.fixture(scope="session")
def native_lib():
    """The native client driver's library, built for this source; the test skips with the reason
    when it cannot be built here (no C compiler or libmariadb-dev)."""
    from ndbchaos.workload import native
    try:
        native.build()
        return native.load()
    except native.NativeUnavailable as e:
        pytest.skip(f"native driver not buildable here: {e}")
