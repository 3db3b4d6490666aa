"""Garbage collection in the RM process, whose one event loop serves every heartbeat and allocate call.

CPython's cyclic collector stops the loop while it runs, and a full collection walks every tracked object: at
start-up the RM holds some hundreds of thousands (gRPC, FastAPI, pydantic, SQLAlchemy, the recovered ledger),
and full collections of 150 ms each were measured to set the heartbeat p99 with 1,000 NodeManagers. So once
the RM has started (ledger recovered, listeners up):

* ``gc.freeze()`` moves everything alive then into the permanent generation, which no collection walks again
  (what start-up left as garbage is collected first, so it is not frozen with the rest);
* a full collection waits for ``OLD`` middle-generation collections instead of 10 (CPython also waits until
  the long-lived heap has grown by a quarter since the last one): each walks every object created since
  start-up (the ledger's nodes, apps, asks and containers), so it runs a tenth as often.

The young and middle thresholds stay CPython's: pauses stay short because the generations stay small. A larger
young threshold looks cheaper but is not: the trigger counts allocations *minus deallocations*, and an allocate
call that replaces an AM's ask table frees as many old objects as it makes new ones, so the young generation grows
unseen. Measured with ``bench/bench_allocate.py`` (100 AMs re-sending 1,000 asks): at 700 a young collection
walked at most ~1,200 objects and a middle one ~9,000; at 2,000-10,000 a young one walked over 100,000.

Garbage cycles are still collected (they are rare on the hot paths; ``proto/serve.py`` avoids the one a refused
gRPC call makes); those that live long enough to reach the oldest generation just wait longer.
"""

from __future__ import annotations

import gc

YOUNG = 700
MIDDLE = 10
OLD = 100


def tune_gc() -> int:
    """Freeze the start-up heap and set the thresholds above; call once, after start-up, in the RM process.
    Returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, MIDDLE, OLD)
    return gc.get_freeze_count()
