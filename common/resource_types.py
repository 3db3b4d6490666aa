"""Hadoop's resource types: which ones a cluster schedules (``resource-types.xml``) and how much of each a
node offers (``node-resources.xml``).

Both files sit in the Hadoop configuration directory and are read into the same layered
:class:`~common.hadoop_conf.Configuration` as ``yarn-site.xml``, so, as in Hadoop, their properties may as
well be written in ``yarn-site.xml`` or in shepherd's YAML file.

* ``yarn.resource-types``: the extra types, comma-separated; ``yarn.resource-types.<name>.units``,
  ``.type`` (only ``COUNTABLE``), ``.minimum-allocation``, ``.maximum-allocation`` and ``.tags`` per type.
  ``memory-mb`` and ``vcores`` always exist and may not be listed; their maximum allocation may be set as
  ``yarn.resource-types.memory-mb.maximum-allocation`` (and ``vcores``), which wins over
  ``yarn.scheduler.maximum-allocation-mb`` (``-vcores``).
* ``yarn.nodemanager.resource-type.<name>``: the amount of a type this node offers, optionally with units
  (``16Gi``), converted to the type's units (rounded down, as Hadoop does); a bare number (``4``) is taken
  in the type's own units (Hadoop would read it as unitless and convert it, so ``memory-mb = 8192`` became
  8192 bytes there).

Names: Hadoop's well-known ``yarn.io/gpu`` and ``yarn.io/fpga`` are shepherd's ``gpu`` and ``fpga``
(:func:`common.resources.shepherd_name`); every other name stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from common.hadoop_conf import Configuration, HadoopConfError
from common.resources import MEMORY, VCORES, shepherd_name

RESOURCE_TYPES = "yarn.resource-types"
NODE_PREFIX = "yarn.nodemanager.resource-type."
MANDATORY = (MEMORY, VCORES)
MANDATORY_UNITS = {MEMORY: "Mi", VCORES: ""}
_RESERVED = frozenset({"memory", MEMORY, VCORES})  # names yarn.resource-types may not list
NO_MINIMUM = "shepherd does not round asks up to a minimum"

# Hadoop's units: decimal prefixes and binary ones; amounts are counted in a type's units
UNITS: Mapping[str, Fraction] = {
    "p": Fraction(1, 10**12), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 10**3),
    "": Fraction(1), "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30),
    "Ti": Fraction(2**40), "Pi": Fraction(2**50),
}
# an optional name space (dot-separated labels) and a slash, then a name that starts with a letter
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAME = re.compile(rf"^(?:(?:{_LABEL}\.)*{_LABEL}/)?[A-Za-z][\w.-]*$", re.ASCII)
_AMOUNT = re.compile(r"^(\d+) ?([A-Za-z]*)$")


@dataclass(frozen=True, slots=True)
class ResourceType:
    name: str  # shepherd's name ("gpu")
    hadoop_name: str  # as configured ("yarn.io/gpu")
    units: str = ""
    minimum: int = 0  # read and checked, not applied: shepherd does not round asks up
    maximum: int | None = None  # None: no configured bound (the largest node's amount bounds an ask)


@dataclass(frozen=True, slots=True)
class ResourceTypes:
    """What a configuration says about resource types. ``declared`` is False when ``yarn.resource-types`` is
    not set: then the cluster's types are those its nodes offer."""

    extra: tuple[ResourceType, ...] = ()
    declared: bool = False
    source: str | None = None  # where yarn.resource-types came from
    mandatory_maximum: Mapping[str, int] = field(default_factory=dict)  # yarn.resource-types.memory-mb... set
    ignored: tuple[str, ...] = ()  # properties read but not applied, each with why

    def names(self) -> frozenset[str] | None:
        """memory-mb, vcores and the declared types (shepherd's names); None when none are declared."""
        return frozenset((*MANDATORY, *(t.name for t in self.extra))) if self.declared else None

    def maximum(self) -> dict[str, int]:
        """The configured maximum allocation of each extra type that has one."""
        return {t.name: t.maximum for t in self.extra if t.maximum is not None}

    def units(self, name: str) -> str:
        """The units a type's amounts are counted in (shepherd's name; "" for an unknown type, as Hadoop)."""
        if name in MANDATORY_UNITS:
            return MANDATORY_UNITS[name]
        return next((t.units for t in self.extra if t.name == name), "")


def convert_units(amount: int, units: str, to: str) -> int:
    """``amount`` in ``units`` counted in ``to``, rounded down; ``ValueError`` for a unit Hadoop lacks."""
    for u in (units, to):
        if u not in UNITS:
            raise ValueError(f"unknown unit {u!r} (known: {', '.join(repr(k) for k in UNITS)})")
    return int(amount * UNITS[units] / UNITS[to])


def _where(conf: Configuration, key: str) -> str:
    return f"{key} = {conf.get(key)!r} (from {conf.source(key)})"


def _count(conf: Configuration, key: str, *, least: int) -> int | None:
    text = (conf.get(key) or "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise HadoopConfError(f"{_where(conf, key)} is not an integer") from None
    if value < least:
        raise HadoopConfError(f"{_where(conf, key)} must be at least {least}")
    return value


def _ignored(conf: Configuration, key: str, why: str) -> str:
    return f"{key} (from {conf.source(key)}) is ignored: {why}"


def read_resource_types(conf: Configuration) -> ResourceTypes:
    """The resource types ``conf`` declares; ``HadoopConfError`` naming the property and its file when one is
    unusable (as Hadoop refuses to start on it)."""
    ignored: list[str] = []
    mandatory: dict[str, int] = {}
    for name in MANDATORY:
        prefix = f"{RESOURCE_TYPES}.{name}"
        top = _count(conf, f"{prefix}.maximum-allocation", least=1)
        if top is not None:
            mandatory[name] = top
        if conf.get(f"{prefix}.minimum-allocation"):
            ignored.append(_ignored(conf, f"{prefix}.minimum-allocation", NO_MINIMUM))
    listed = conf.get(RESOURCE_TYPES)
    if listed is None:
        return ResourceTypes(mandatory_maximum=mandatory, ignored=tuple(ignored))
    extra: list[ResourceType] = []
    for hadoop in (n.strip() for n in listed.split(",")):
        if not hadoop:
            continue
        where = _where(conf, RESOURCE_TYPES)
        if hadoop in _RESERVED:
            own = VCORES if hadoop == VCORES else MEMORY
            raise HadoopConfError(f"{where}: {hadoop} is always defined and may not be listed "
                                  f"(set its maximum with {RESOURCE_TYPES}.{own}.maximum-allocation)")
        if not _NAME.match(hadoop):
            raise HadoopConfError(f"{where}: {hadoop!r} is not a valid resource name (a letter, then "
                                  "letters, digits, '.', '_' or '-', optionally after a name space and a "
                                  "slash, as in yarn.io/gpu)")
        name = shepherd_name(hadoop)
        if any(t.name == name for t in extra):
            alias = f" (as {name})" if name != hadoop else ""
            raise HadoopConfError(f"{where}: {hadoop} is listed twice{alias}")
        prefix = f"{RESOURCE_TYPES}.{hadoop}"
        units = (conf.get(f"{prefix}.units") or "").strip()
        if units not in UNITS:
            raise HadoopConfError(f"{_where(conf, f'{prefix}.units')} is not a unit Hadoop knows "
                                  f"({', '.join(repr(k) for k in UNITS)})")
        kind = (conf.get(f"{prefix}.type") or "COUNTABLE").strip()
        if kind != "COUNTABLE":
            raise HadoopConfError(f"{_where(conf, f'{prefix}.type')}: the only resource type is COUNTABLE")
        minimum = _count(conf, f"{prefix}.minimum-allocation", least=0) or 0
        maximum = _count(conf, f"{prefix}.maximum-allocation", least=1)
        if maximum is not None and maximum < minimum:
            raise HadoopConfError(f"{_where(conf, f'{prefix}.maximum-allocation')} is below its "
                                  f"minimum-allocation {minimum}")
        if minimum:
            ignored.append(_ignored(conf, f"{prefix}.minimum-allocation", NO_MINIMUM))
        if (conf.get(f"{prefix}.tags") or "").strip():
            ignored.append(_ignored(conf, f"{prefix}.tags", "shepherd has no tagged (volume) resources"))
        extra.append(ResourceType(name, hadoop, units, minimum, maximum))
    return ResourceTypes(tuple(extra), True, conf.source(RESOURCE_TYPES), mandatory, tuple(ignored))


def node_resources(conf: Configuration, types: ResourceTypes) -> dict[str, int]:
    """What ``yarn.nodemanager.resource-type.<name>`` says this node offers, by shepherd's names, in each
    type's units. ``memory-mb`` and ``vcores`` are included when set above zero (zero: detect them). A type
    that ``yarn.resource-types`` does not declare, when it is set, is an error, as Hadoop's NodeManager
    refuses to start on it."""
    known = types.names()
    out: dict[str, int] = {}
    for key in conf.names():
        if not key.startswith(NODE_PREFIX):
            continue
        hadoop = key[len(NODE_PREFIX):]
        text = (conf.get(key) or "").strip()
        m = _AMOUNT.match(text)
        if not hadoop or m is None:
            raise HadoopConfError(f"{_where(conf, key)} is not an amount of a resource type, like 2 or 16G")
        name = shepherd_name(hadoop)
        if known is not None and name not in known:
            raise HadoopConfError(f"{_where(conf, key)}: {hadoop} is not a resource type of "
                                  f"{RESOURCE_TYPES} (from {types.source}): "
                                  f"{', '.join(t.hadoop_name for t in types.extra) or 'none'}")
        try:  # a bare number is already in the type's units (memory-mb: MB)
            amount = convert_units(int(m.group(1)), m.group(2) or types.units(name), types.units(name))
        except ValueError as exc:
            raise HadoopConfError(f"{_where(conf, key)}: {exc}") from None
        if amount or name not in MANDATORY:
            out[name] = amount
    return out
