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


# -- the time each suite took: one table at the end of the run (CI's budget is read from it) ----

_SUITE_S: dict[str, float] = {}
_SUITE_N: dict[str, int] = {}


def pytest_runtest_logreport(report):
    """Setup, call and teardown of every test, summed per test file (a session cluster's start
    and removal count for the file whose test started or ended it)."""
    suite = report.nodeid.split("::", 1)[0]
    _SUITE_S[suite] = _SUITE_S.get(suite, 0.0) + report.duration
    if report.when == "call":
        _SUITE_N[suite] = _SUITE_N.get(suite, 0) + 1


def pytest_terminal_summary(terminalreporter):
    if not _SUITE_S:
        return
    tr = terminalreporter
    total = sum(_SUITE_S.values())
    tr.write_sep("-", f"time per suite ({total:.0f} s in all)")
    width = max(len(s) for s in _SUITE_S)
    for suite, secs in sorted(_SUITE_S.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{suite:<{width}}  {_SUITE_N.get(suite, 0):>5} tests  {secs:>8.1f} s  "
                      f"{100 * secs / total:>5.1f} %")
