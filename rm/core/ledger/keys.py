"""The container-token master keys and their roll (YARN's ``RMContainerTokenSecretManager``).

Container tokens and NM tokens are signed with the *current* key and name its id. Every interval the RM makes a
new key. It is handed to the NodeManagers at once but signs nothing until its activation delay has passed, so
that every live NodeManager knows it before the first token signed with it arrives. The ring holds at most two
keys, which are exactly those the NodeManagers accept: the current key and the one before it, or, once a new
key is made, the current key and the next. A token stays valid until two keys newer than its own have been
made.

Pure: time is passed in, fresh key material is handed in by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KEY_BYTES = 32
ROLL_INTERVAL_S = 86_400.0  # yarn.resourcemanager.container-tokens.master-key-rolling-interval-secs


@dataclass(frozen=True, slots=True)
class MasterKey:
    key_id: int
    key: bytes
    created: float  # seconds since the epoch (0: not known, a key from before keys rolled)
    activates: float  # from then on it signs (once the ring's tick has seen that time)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.key_id, "key": self.key.hex(), "created": self.created, "activates": self.activates}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MasterKey:
        return cls(key_id=int(d["id"]), key=bytes.fromhex(str(d["key"])), created=float(d.get("created", 0.0)),
                   activates=float(d.get("activates", 0.0)))


@dataclass(frozen=True, slots=True)
class KeyRoll:
    """When keys roll: a new key every ``interval_s``, signing ``activation_delay_s`` after it was made."""

    interval_s: float = ROLL_INTERVAL_S
    activation_delay_s: float = 900.0

    @classmethod
    def of(cls, interval_s: float, nm_expiry_s: float) -> KeyRoll:
        """YARN's activation delay, 1.5 × the NodeManager expiry (a node that has not heard of the new key by
        then is LOST), but at most a third of the interval, so a token always has two thirds of it."""
        if not interval_s > 0:
            raise ValueError(f"the container-token key rolling interval must be positive, got {interval_s} s")
        return cls(interval_s, min(1.5 * nm_expiry_s, interval_s / 3))


class KeyRing:
    """The keys NodeManagers accept (oldest first) and the one that signs."""

    def __init__(self, keys: list[MasterKey]) -> None:
        if not keys:
            raise ValueError("a key ring needs a key")
        self.keys = sorted(keys, key=lambda k: k.key_id)[-2:]
        # until a tick says otherwise, the older key signs: every NodeManager that knows the ring accepts it
        self.current = self.keys[0]

    @classmethod
    def from_records(cls, records: tuple[dict[str, Any], ...], legacy_hex: str, *, created: float = 0.0) -> KeyRing:
        """The stored ring; a store from before keys rolled has one key, which gets id 1 (the id NodeManagers
        were told it had)."""
        if records:
            return cls([MasterKey.from_dict(r) for r in records])
        return cls([MasterKey(1, bytes.fromhex(legacy_hex), created, created)])

    def records(self) -> tuple[dict[str, Any], ...]:
        return tuple(k.to_dict() for k in self.keys)

    @property
    def newest(self) -> MasterKey:
        return self.keys[-1]

    def accepted(self) -> tuple[MasterKey, ...]:
        """What NodeManagers are to accept: every key of the ring."""
        return tuple(self.keys)

    def tick(self, now: float, roll: KeyRoll, fresh: Callable[[], bytes]) -> tuple[bool, bool]:
        """Let a made key sign once its time has come, and make a new one (of ``fresh()``) when the interval
        has passed since the newest was made. Returns (a key was activated, a key was made: the ring changed)."""
        activated = False
        if self.current is not self.newest and now >= self.newest.activates:
            self.current = self.newest
            activated = True
        if self.current is self.newest and now >= self.newest.created + roll.interval_s:
            made = MasterKey(self.newest.key_id + 1, fresh(), now, now + roll.activation_delay_s)
            self.keys = [self.newest, made]
            return activated, True
        return activated, False
