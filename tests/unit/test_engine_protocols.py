"""The engine told in protocols (``ndbchaos.engines.protocols``): every engine, the toy one too,
is each of ``Lifecycle``, ``Status``, ``Recovery``, ``Rules`` and ``Logs``, with call signatures
that accept what the protocol says; ``Engine`` is exactly their sum, so a new member of it must be
placed in one; the runtimes' own protocols name only what these do (besides the abilities). The
shipped engines are composed of parts (``ndbchaos.engines.parts``): each protocol member is
answered by the part of its protocol, no engine class is a mixin of its parts, and no part holds
the engine."""

from __future__ import annotations

import inspect

import pytest

from ndbchaos.engines import parts as P
from ndbchaos.engines.base import Engine, Part
from ndbchaos.engines.galera import GaleraEngine
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.protocols import PARTS, ClusterLog, Lifecycle, Logs, ManagementClient, Procedures, \
    Recovery, Rules, Status
from ndbchaos.handle import HandleEngine
from ndbchaos.runtimes.compose.cluster import ComposeEngine
from ndbchaos.runtimes.inventory.cluster import InventoryCheck

from .toy_engine import ToyEngine

ENGINES = (NdbEngine, GaleraEngine, ToyEngine)
ABILITIES = (ManagementClient, ClusterLog, Procedures, InventoryCheck)


def members(proto: type) -> dict[str, object]:
    """A protocol's members, its bases' too: name -> the function it declares, or None for an
    attribute."""
    out: dict[str, object] = {}
    for klass in reversed(proto.__mro__):
        if klass in (object,) or klass.__module__ == "typing":
            continue
        out.update({name: None for name in klass.__dict__.get("__annotations__", {}) if not name.startswith("_")})
        out.update({name: value for name, value in vars(klass).items()
                    if not name.startswith("_") and callable(value)})
    return out


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def incompatible(impl, spec) -> str | None:
    """Why a call the protocol's signature allows would not be accepted by ``impl``, or None."""
    want, have = inspect.signature(spec).parameters, inspect.signature(impl).parameters
    if inspect.ismethod(impl) and not inspect.ismethod(spec):  # a bound member: the spec's self is bound too
        want = dict(list(want.items())[1:])
    kinds = {p.kind for p in have.values()}
    has_varargs, has_varkw = inspect.Parameter.VAR_POSITIONAL in kinds, inspect.Parameter.VAR_KEYWORD in kinds
    positional = [p for p in have.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, p in enumerate(want.values()):
        if p.kind is p.VAR_KEYWORD:
            if not has_varkw:
                return f"takes no **{p.name}"
            continue
        if p.kind is p.VAR_POSITIONAL:
            if not has_varargs:
                return f"takes no *{p.name}"
            continue
        if p.kind is p.POSITIONAL_OR_KEYWORD:
            if i >= len(positional):
                if not has_varargs:
                    return f"no parameter {p.name} at position {i}"
                continue
            if positional[i].name != p.name:
                return f"parameter {i} is {positional[i].name}, not {p.name}"
        elif p.name not in have and not has_varkw:
            return f"no keyword {p.name}"
        if p.default is not p.empty and p.name in have and have[p.name].default is have[p.name].empty:
            return f"{p.name} has no default"
    required = [p.name for p in have.values() if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    extra = [name for name in required if name not in want]
    return f"requires {', '.join(extra)}, which the protocol does not pass" if extra else None


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.__name__)
@pytest.mark.parametrize("proto", PARTS, ids=lambda p: p.__name__)
def test_every_engine_is_every_part(engine, proto):
    instance = engine()
    assert isinstance(instance, proto)
    for name, spec in members(proto).items():
        assert hasattr(instance, name), f"{engine.__name__} has no {proto.__name__}.{name}"
        if spec is not None:
            why = incompatible(getattr(instance, name), spec)
            assert why is None, f"{engine.__name__}.{name} against {proto.__name__}.{name}: {why}"


def test_engine_is_exactly_the_sum_of_its_parts():
    assert PARTS == (Lifecycle, Status, Recovery, Rules, Logs)
    union = set().union(*(members(p) for p in PARTS))
    assert public(Engine) - union == set(), "an Engine member that no protocol names: place it in one"
    assert union - public(Engine) == set(), "a protocol member that Engine does not provide"


def test_the_parts_name_each_member_once_but_the_name():
    seen: dict[str, str] = {}
    for p in PARTS:
        for name in members(p):
            if name != "name":
                assert name not in seen, f"{name} in {seen.get(name)} and {p.__name__}"
                seen[name] = p.__name__


@pytest.mark.parametrize("engine, has", [
    (NdbEngine, {ManagementClient, ClusterLog, Procedures, InventoryCheck}),
    (GaleraEngine, set()),
    (ToyEngine, set()),
], ids=lambda x: getattr(x, "__name__", ""))
def test_abilities_are_what_an_engine_has_beyond_the_sum(engine, has):
    instance = engine()
    assert {a for a in ABILITIES if isinstance(instance, a)} == has
    for ability in has:
        for name, spec in members(ability).items():
            if spec is not None:
                assert incompatible(getattr(instance, name), spec) is None, f"{engine.__name__}.{name}"
    union = set().union(*(members(p) for p in PARTS))
    assert not union & set().union(*(members(a) for a in ABILITIES))


def test_the_runtimes_protocols_ask_only_what_the_parts_say():
    """What a cluster handle and the compose runtime call of an engine is a part of these, but
    ``services`` (the Compose services of each role, asked only for bounded data disks: NDB's)."""
    union = set().union(*(members(p) for p in PARTS))
    assert set(members(HandleEngine)) <= union
    assert set(members(ComposeEngine)) - union == {"services"}
    assert hasattr(NdbEngine, "services") and not hasattr(GaleraEngine, "services")
    for name, spec in members(ComposeEngine).items():
        part = next((p for p in PARTS if name in members(p)), None)
        if part is not None and spec is not None and members(part)[name] is not None:
            assert incompatible(spec, members(part)[name]) is None, name


#: the part attribute and default part class of each protocol
PART_OF = {Lifecycle: ("lifecycle", P.LifecyclePart), Status: ("state", P.StatusPart),
           Recovery: ("recovery", P.RecoveryPart), Rules: ("rules", P.RulesPart), Logs: ("logs", P.LogsPart)}


@pytest.mark.parametrize("engine", (NdbEngine, GaleraEngine), ids=lambda e: e.__name__)
def test_shipped_engines_are_composed_of_parts(engine):
    assert engine.__mro__[1:] == (Engine, object), "an engine is composed of parts, not mixed from them"
    instance = engine()
    for proto, (attr, default) in PART_OF.items():
        part = getattr(instance, attr)
        assert isinstance(part, default), f"{engine.__name__}.{attr} is not a {default.__name__}"
        for name, spec in members(proto).items():
            if spec is None:  # an attribute (the account, the roles): the engine's own
                continue
            assert name not in vars(engine), f"{engine.__name__} defines {name} itself: its {attr} part answers it"
            assert isinstance(vars(Engine)[name], Part) and vars(Engine)[name].part == attr
            assert getattr(instance, name).__self__ is part, f"{engine.__name__}.{name} is not its {attr} part's"


@pytest.mark.parametrize("engine", (NdbEngine, GaleraEngine), ids=lambda e: e.__name__)
def test_no_part_holds_the_engine(engine):
    """A part is given the parts it asks, never the engine: what depends on what is read from the
    constructors."""
    instance = engine()
    parts = [v for v in vars(instance).values() if type(v).__module__.startswith("ndbchaos.engines")]
    assert len(parts) >= 5
    for part in parts:
        for name, value in vars(part).items():
            assert value is not instance, f"{type(part).__name__}.{name} is the engine"


def test_a_subclass_may_still_answer_a_member_itself():
    """The toy engine of the extension tests overrides one rule on the engine class: that wins."""
    toy = ToyEngine()
    assert toy.consistency_models("list_append", {}).models == ("serializable",)
    assert toy.workload_params("bank") == {} and toy.rules.consistency_models("x", {}).models == ("read-committed",)
