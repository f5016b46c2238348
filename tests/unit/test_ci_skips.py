"""A suite that cannot go green by accident: under CI=true what CI provides must run. NDB asked for
(``NDBCHAOS_NDB_DIST``, ``NDBCHAOS_NDB_IMAGE``) and not available fails the tests that need it, a
missing or broken distribution fails everywhere, and only a host without NDB and nothing asking
for it skips; an unsupported fault skips under CI only when it is a limit of the host. No Docker:
image presence is faked, the distribution is a folder of ELF headers."""

import pytest

from ndbchaos import faults, pytest_plugin, settings
from ndbchaos.engines.ndb import image as ndb_image
from ndbchaos.errors import FaultUnsupported
from ndbchaos.faults import netem
from tests.conftest import skipped_lines
from tests.integration.helpers import skip_without_ndb

from .test_ndb_image import fake_dist


@pytest.fixture
def host(monkeypatch, tmp_path):
    """No NDB image here; the Docker engine answers; NDB asked for through nothing."""
    present: set[str] = set()
    monkeypatch.setattr(ndb_image.docker, "image_present", lambda name: name in present)
    monkeypatch.setattr(ndb_image.docker, "docker_available", lambda: (True, ""))
    for v in (ndb_image.DIST_ENV, ndb_image.IMAGE_ENV, "CI"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("NDBCHAOS_CACHE", str(tmp_path / "cache"))
    return present


@pytest.mark.parametrize("ci", [True, False])
def test_a_distribution_that_names_no_file_fails_everywhere(host, monkeypatch, tmp_path, ci):
    monkeypatch.setenv(ndb_image.DIST_ENV, str(tmp_path / "nonexistent" / "x.tar.xz"))
    with pytest.raises(Exception, match="no such file or directory"):
        ndb_image.unavailable()  # a broken input, never "NDB not available"
    fail, why = ndb_image.missing_for_tests(ci=ci)
    assert fail is True and "no such file or directory" in why and "\n" not in why
    monkeypatch.setenv("CI", "true" if ci else "false")
    with pytest.raises(pytest.fail.Exception, match="cannot be used"):
        skip_without_ndb()


def test_a_good_distribution_runs(host, monkeypatch, tmp_path):
    monkeypatch.setenv(ndb_image.DIST_ENV, str(fake_dist(tmp_path / "d")))
    assert ndb_image.unavailable() is None and ndb_image.missing_for_tests(ci=True) is None
    monkeypatch.setenv("CI", "true")
    skip_without_ndb()  # returns: nothing to skip or fail


def test_an_image_ci_names_and_does_not_have_fails_under_ci_only(host, monkeypatch):
    monkeypatch.setenv(ndb_image.IMAGE_ENV, "mine:1")
    fail, why = ndb_image.missing_for_tests(ci=True)
    assert fail is True and "NDBCHAOS_NDB_IMAGE=mine:1" in why and "CI=true" in why
    fail, why = ndb_image.missing_for_tests(ci=False)
    assert fail is False and "mine:1" in why
    host.add("mine:1")
    assert ndb_image.missing_for_tests(ci=True) is None


def test_a_users_ci_without_ndb_skips_naming_what_the_host_lacks(host, monkeypatch):
    for ci in (True, False):
        fail, why = ndb_image.missing_for_tests(ci=ci)
        assert fail is False and why.startswith("this host has no NDB image") and ndb_image.DIST_ENV in why
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.skip.Exception, match="NDB not available: this host has no NDB image"):
        skip_without_ndb()


def test_an_unsupported_fault_skips_under_ci_only_on_a_host_limit():
    kernel = netem.NetemUnsupported("netem", reason="the kernel has no sch_netem")
    engine = FaultUnsupported("ndb_mgm 'ALL STATUS': galera has no management client")
    assert faults.host_limit(kernel) and not faults.host_limit(engine)
    for ci in (True, False):
        with pytest.raises(pytest.skip.Exception, match="this host cannot do the fault: the kernel has no sch_netem"):
            faults.unsupported(kernel, ci=ci)
    with pytest.raises(pytest.skip.Exception, match="galera has no management client"):
        faults.unsupported(engine, ci=False)
    with pytest.raises(pytest.fail.Exception, match="under CI=true only a limit of the host"):
        faults.unsupported(engine, ci=True)


def test_skip_if_unsupported_follows_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="galera has no cluster log"):
        with faults.skip_if_unsupported():
            raise FaultUnsupported("backup: galera has no cluster log to follow a backup in")
    with pytest.raises(pytest.skip.Exception, match="no sch_netem"):
        with faults.skip_if_unsupported():
            raise netem.NetemUnsupported("netem", reason="no sch_netem here")


def _through_the_plugin(e: Exception):
    """What the plugin's wrapper of every test call does with ``e`` raised by the test."""
    call = pytest_plugin.pytest_runtest_call(item=None)
    next(call)
    call.throw(e)


def test_the_plugin_applies_the_same_rule_to_every_test(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="galera has no management client"):
        _through_the_plugin(FaultUnsupported("ndb_mgm: galera has no management client"))
    with pytest.raises(pytest.skip.Exception, match="sch_netem"):
        _through_the_plugin(netem.NetemUnsupported("netem", reason="the kernel has no sch_netem"))
    monkeypatch.setenv("CI", "false")
    settings.use(None)  # the settings are read once: read them again
    with pytest.raises(pytest.skip.Exception, match="galera has no management client"):
        _through_the_plugin(FaultUnsupported("ndb_mgm: galera has no management client"))


def test_every_skip_is_listed_by_reason():
    lines = skipped_lines([("a.py::t1", "NDB not available: x"), ("a.py::t2", "NDB not available: x"),
                           ("b.py::t3", "no sch_netem")])
    assert lines == ["   2 x a.py::t1 (and 1 more): NDB not available: x", "   1 x b.py::t3: no sch_netem"]


def test_the_known_failures_are_strict_expected_failures_naming_their_finding():
    """A scenario that fails today on a finding of the engine is an expected failure, strict (a
    fix, or a changed expectation, makes the run fail and is noticed), never only `slow`."""
    from ndbchaos.catalogue import helpers, test_datanode_loss, test_operations
    for mod in (test_datanode_loss, test_operations):
        by_name = {p.id: p for p in helpers.params(mod.SCENARIOS, mod.KNOWN_FAILURES)}
        assert mod.KNOWN_FAILURES
        for name, reason in mod.KNOWN_FAILURES.items():
            (xfail,) = [m for m in by_name[name].marks if m.name == "xfail"]
            assert xfail.kwargs == {"strict": True, "reason": reason} and reason.startswith("finding ")
        assert all(not any(m.name == "xfail" for m in p.marks) for n, p in by_name.items()
                   if n not in mod.KNOWN_FAILURES)
    with pytest.raises(Exception, match="known failures name no declaration: no_such_scenario"):
        helpers.params(test_operations.SCENARIOS, {"no_such_scenario": "finding 0"})
