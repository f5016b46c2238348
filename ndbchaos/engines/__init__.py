"""Engines map roles to containers and supply what is engine specific."""

from __future__ import annotations

from ..errors import UsageError


def get_engine(name: str):
    if name == "galera":
        from .galera import GaleraEngine
        return GaleraEngine()
    if name == "ndb":
        from .ndb import NdbEngine
        return NdbEngine()
    raise UsageError(f"unknown engine {name!r} (expected ndb, galera or auto)")
