"""Consistency models and anomalies: what each model forbids and what anomalies rule out, as
Elle states them (its consistency-model tests give these sets)."""

from __future__ import annotations

import pytest

from ndbchaos.txn import models as M


def boundary(*anomalies):
    n, a = M.boundary(anomalies)
    return set(n), set(a)


def test_read_committed_forbids():
    assert M.prohibited(["read-committed"]) == {
        "dirty-update", "G1a", "G1b", "G1c", "G1", "G0", "PL-1-cycle-exists", "PL-2-cycle-exists",
        "cyclic-versions", "duplicate-elements", "incompatible-order", "future-read", "garbage-read"}


def test_g1a_rules_out_read_committed_and_everything_stronger():
    assert boundary("G1a") == ({"read-committed"}, {
        "read-atomic", "update-atomic", "causal-cerone", "consistent-view", "cursor-stability",
        "forward-consistent-view", "monotonic-atomic-view", "monotonic-snapshot-read", "monotonic-view",
        "parallel-snapshot-isolation", "prefix", "repeatable-read", "serializable", "snapshot-isolation",
        "strong-read-committed", "strong-snapshot-isolation", "strong-serializable", "strong-session-read-committed",
        "strong-session-serializable", "strong-session-snapshot-isolation", "update-serializable"})


@pytest.mark.parametrize("anomalies,weakest", [
    (("internal",), {"read-atomic"}),
    (("G-single",), {"consistent-view"}),
    (("G-single-item",), {"consistent-view", "repeatable-read"}),
    (("G2", "internal"), {"read-atomic"}),
    (("lost-update",), {"update-atomic", "cursor-stability"}),
    (("G-single-realtime",), {"strong-snapshot-isolation"}),
    (("cyclic-versions",), {"read-uncommitted"}),
    (("G2-item",), {"repeatable-read"}),
    (("G1c-process",), {"strong-session-read-committed"}),
    ((), set()),
])
def test_weakest_models_ruled_out(anomalies, weakest):
    assert boundary(*anomalies)[0] == weakest


def test_g_single_realtime_also_rules_out_strict_serializability():
    assert boundary("G-single-realtime") == ({"strong-snapshot-isolation"}, {"strong-serializable"})


def test_impossible_models_of_dirty_update_and_g_si():
    assert {M.friendly(m) for m in M.impossible_models(["G-SI"])} == {
        "snapshot-isolation", "serializable", "strong-serializable", "strong-session-serializable",
        "strong-session-snapshot-isolation", "strong-snapshot-isolation"}
    assert "update-atomic" in {M.friendly(m) for m in M.impossible_models(["dirty-update"])}


def test_unknown_models_are_named():
    with pytest.raises(ValueError, match="unknown consistency model.*stricct"):
        M.prohibited(["stricct-snappshot-isolation"]) if M.check_models(["stricct-snappshot-isolation"]) else None


def test_strict_serializable_forbids_every_cycle_variant():
    p = M.prohibited(["strict-serializable"])
    for kind in ("G0", "G1c", "G-single-item", "G2-item", "G0-realtime", "G-single-item-realtime", "G2-item-process",
                 "internal", "lost-update"):
        assert kind in p
