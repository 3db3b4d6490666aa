"""The ledger keeps the hash of each node's registration session with the node's record, so that an RM restart
still knows which NodeManager may register as the node."""

from __future__ import annotations

from common.resources import Resources
from rm.core.ledger import Ledger
from rm.core.queues import build_queues
from rm.core.records import NodeRecord, StoredState
from rm.core.state_types import CoreConfig

TS = 1_700_000_000_000
CAP = Resources.of(memory_mb=4096, vcores=4)


def test_a_node_keeps_its_session_hash_across_a_restart_until_it_unregisters() -> None:
    st = Ledger(Ledger.fresh_meta(TS), build_queues(), CoreConfig())
    st.register_node("n1:7040", "n1:8042", "", CAP, [], 1.0, session_hash="ab" * 32)
    (stored,) = [r for r in st.drain_records() if isinstance(r, NodeRecord)]
    assert stored.session_hash == "ab" * 32
    back = Ledger.recover(StoredState(meta=st.meta, apps=(), attempts=(), containers=(), nodes=(stored,)),
                          build_queues(), CoreConfig(), now=2.0)
    node = back.nodes["n1:7040"]  # type: ignore[index]
    assert (node.state, node.session_hash) == ("NEW", "ab" * 32)  # its NodeManager has yet to come back
    back.register_node("n1:7040", "n1:8042", "", CAP, [], 3.0, session_hash="cd" * 32)  # a new session
    assert back.nodes["n1:7040"].session_hash == "cd" * 32  # type: ignore[index]
    back.unregister_node("n1:7040", 4.0)
    node = back.nodes["n1:7040"]  # type: ignore[index]
    assert (node.state, node.session_hash) == ("SHUTDOWN", "")
    (gone,) = [r for r in back.drain_records() if isinstance(r, NodeRecord) and r.state == "SHUTDOWN"]
    assert gone.session_hash == ""
