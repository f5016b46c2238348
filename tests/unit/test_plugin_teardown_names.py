"""The report's teardown steps carry what the plugin's fixtures do, not pytest's "<lambda>"."""

import functools

import pytest

from ndbchaos import pytest_plugin as P


class FixtureDef:
    def __init__(self, argname, finalizers):
        self.argname, self._finalizers = argname, finalizers


def _setup(fd):
    gen = P.pytest_fixture_setup(fd, None)
    next(gen)
    with pytest.raises(StopIteration):
        gen.send(None)


def test_a_yield_fixtures_teardown_is_named_after_what_it_does():
    calls = []
    fd = FixtureDef("scenario_run", [functools.partial(calls.append, "close"), lambda: calls.append("forget")])
    _setup(fd)
    assert [f.__name__ for f in fd._finalizers] == [P.TEARDOWNS["scenario_run"], "done"]
    for f in fd._finalizers:
        f()
    assert calls == ["close", "forget"]


def test_a_plain_fixture_and_foreign_fixtures():
    fd = FixtureDef("play", [lambda: None])
    _setup(fd)
    assert [f.__name__ for f in fd._finalizers] == [P.TEARDOWNS["play"]]
    other = FixtureDef("tmp_path", [lambda: None])
    _setup(other)
    assert other._finalizers[0].__name__ == "<lambda>"


def test_the_catalogues_parameters_are_named_too():
    # a directly parametrized argument's only finalizer is pytest's own
    for arg in ("sc", "sk"):
        fd = FixtureDef(arg, [lambda: None])
        _setup(fd)
        assert [f.__name__ for f in fd._finalizers] == [P.TEARDOWNS[arg]]
