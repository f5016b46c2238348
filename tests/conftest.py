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
    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPPED.append((report.nodeid, skip_reason(report)))


# -- every skip, listed at the end of the run: a green run says what it did not prove -------------

_SKIPPED: list[tuple[str, str]] = []


def skip_reason(report) -> str:
    """The reason of a skipped report, one line (pytest keeps it as (file, line, "Skipped: why"))."""
    longrepr = report.longrepr
    why = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    why = why.removeprefix("Skipped: ")
    return " ".join(why.split())


def skipped_lines(skipped: list[tuple[str, str]]) -> list[str]:
    """One line per reason, its tests' count and the first of them, most frequent first."""
    by_reason: dict[str, list[str]] = {}
    for nodeid, why in skipped:
        by_reason.setdefault(why, []).append(nodeid)
    out = []
    for why, ids in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        more = f" (and {len(ids) - 1} more)" if len(ids) > 1 else ""
        out.append(f"{len(ids):>4} x {ids[0]}{more}: {why}")
    return out


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if _SKIPPED:
        ci = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
        tr.write_sep("-", f"skipped: {len(_SKIPPED)} tests" + (" under CI=true" if ci else "")
                     + " (not proven by this run)")
        for line in skipped_lines(_SKIPPED):
            tr.write_line(line)
    if not _SUITE_S:
        return
    total = sum(_SUITE_S.values())
    tr.write_sep("-", f"time per suite ({total:.0f} s in all)")
    width = max(len(s) for s in _SUITE_S)
    for suite, secs in sorted(_SUITE_S.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{suite:<{width}}  {_SUITE_N.get(suite, 0):>5} tests  {secs:>8.1f} s  "
                      f"{100 * secs / total:>5.1f} %")
