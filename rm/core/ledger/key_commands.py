"""The container-token keys of the ledger: the meta record a new cluster starts with (its first key) and the
roll that makes and activates later keys (:mod:`rm.core.ledger.keys` holds the pure ring)."""

from __future__ import annotations

import secrets
from dataclasses import replace

from rm.core.ledger.base import LedgerBase
from rm.core.ledger.keys import KEY_BYTES, KeyRoll, MasterKey
from rm.core.records import MetaRecord


class KeyCommands(LedgerBase):
    @staticmethod
    def fresh_meta(cluster_timestamp: int) -> MetaRecord:
        created = cluster_timestamp / 1000
        first = MasterKey(1, secrets.token_bytes(KEY_BYTES), created, created)
        return MetaRecord(
            cluster_timestamp=cluster_timestamp,
            next_app_seq=1,
            epoch=0,
            amrm_key_hex=secrets.token_hex(32),
            container_key_hex=first.key.hex(),
            container_keys=(first.to_dict(),),
        )

    def roll_container_keys(self, now: float) -> list[str]:
        """Activate a made container-token key whose time has come, make a new one every rolling interval
        (stored with the meta record). Returns log lines."""
        roll = KeyRoll.of(self.config.container_key_roll_s, self.config.nm_expiry_s)
        ring = self.container_keys
        activated, made = ring.tick(now, roll, lambda: secrets.token_bytes(KEY_BYTES))
        events = []
        if activated:
            events.append(f"container-token key {ring.current.key_id} now signs container and NM tokens")
        if made:
            self.meta = replace(self.meta, container_keys=ring.records(), container_key_hex=ring.newest.key.hex())
            self.mark_meta()
            events.append(f"container-token key {ring.newest.key_id} made; it signs from "
                          f"{roll.activation_delay_s:g} s on, and key {ring.keys[0].key_id} is the only older "
                          "one NodeManagers still accept")
        return events
