"""The ledger's snapshot views, kept incrementally: a node's or app's view is rebuilt only after it changed.

The ledger calls :meth:`ViewCache.node_changed` / :meth:`ViewCache.app_changed` wherever it changes something
a view shows (a node's state or allocation; an app's asks, usage, AM ask, priority, queue, blacklist, fair
share, size estimate or end), and :meth:`ViewCache.build` rebuilds just those, so building a snapshot costs
about O(changes) rather than O(cluster) — which the simulator needs and the live RM gets for free. The test
suite checks the cache against a full rebuild (``Ledger.check_views``).
"""

from __future__ import annotations

from collections.abc import Callable

from common.ids import AppId, NodeId
from rm.core.model import AppView, NodeView


class ViewCache:
    def __init__(self) -> None:
        self.nodes: dict[NodeId, NodeView] = {}
        self.apps: dict[AppId, AppView] = {}
        self.dirty_nodes: set[NodeId] = set()
        self.dirty_apps: set[AppId] = set()

    def node_changed(self, node_id: NodeId) -> None:
        self.dirty_nodes.add(node_id)

    def app_changed(self, app_id: AppId) -> None:
        self.dirty_apps.add(app_id)

    def build(
        self,
        node_view: Callable[[NodeId], NodeView | None],
        app_view: Callable[[AppId], AppView | None],
    ) -> None:
        """Rebuild the views of what changed; a view builder returns None for what leaves the snapshot."""
        for nid in self.dirty_nodes:
            nv = node_view(nid)
            if nv is None:
                self.nodes.pop(nid, None)
            else:
                self.nodes[nid] = nv
        self.dirty_nodes.clear()
        for aid in self.dirty_apps:
            av = app_view(aid)
            if av is None:
                self.apps.pop(aid, None)  # an app that comes back is appended, after the others
            else:
                self.apps[aid] = av
        self.dirty_apps.clear()
