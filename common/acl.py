"""Hadoop access control lists and the ACLs of a YARN cluster built from them. Pure: groups are looked up by a
function the caller passes.

An ACL is written as Hadoop writes it: ``*`` is everyone; otherwise users, a space, then groups, each
comma-separated (``alice,bob ops``; `` ops`` is the group ops only; a blank value is no one).

Who may do what (YARN's rules, with shepherd's defaults where they differ):

* **administer the cluster** (refresh queues, decommission nodes, issue tokens): ``yarn.admin.acl``; unset:
  the ResourceManager's own user (YARN's default is ``*``).
* **submit to a queue**: the queue's ``acl_submit_applications`` or ``acl_administer_queue``, or those of any
  queue above it, or a cluster admin. Unset ACLs of queues below root are no one (so root's decide); root's
  ``acl_submit_applications`` is ``*`` and its ``acl_administer_queue`` no one (YARN's is ``*``, which would let
  every user kill every app).
* **modify an app** (kill, move, priority, timeout, deadline): its owner, a cluster admin, a user of
  ``acl_administer_queue`` of its queue or one above, or one of the app's own ``MODIFY_APP`` ACL. A move also
  needs the right to submit to the target queue.
* **view an app in full** (its diagnostics, tracking URL, AM host and port, resource usage, attempts,
  containers): its owner, a cluster admin, a user of ``acl_administer_queue`` of its queue or one above, or one
  of the app's own ``VIEW_APP`` ACL. Anyone else gets the app's restricted report, as YARN's
  ``ApplicationAccessType.VIEW_APP`` gives it.
* **reservations**: creating one in a queue needs ``acl_submit_reservations`` there (unset: the submit rule
  above); updating or deleting another user's needs ``acl_administer_reservations`` (unset: the queue's
  administer rule).

With ``yarn.acl.enable`` false (shepherd's default is true) every check passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

GroupsOf = Callable[[str], Iterable[str]]

SUBMIT_APPLICATIONS = "acl_submit_applications"
ADMINISTER_QUEUE = "acl_administer_queue"
SUBMIT_RESERVATIONS = "acl_submit_reservations"
ADMINISTER_RESERVATIONS = "acl_administer_reservations"
QUEUE_ACL_NAMES = (SUBMIT_APPLICATIONS, ADMINISTER_QUEUE, SUBMIT_RESERVATIONS, ADMINISTER_RESERVATIONS)
VIEW_APP = "VIEW_APP"
MODIFY_APP = "MODIFY_APP"


def _no_groups(user: str) -> Iterable[str]:
    return ()


@dataclass(frozen=True, slots=True)
class AccessList:
    """One Hadoop ACL."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    everyone: bool = False

    @classmethod
    def parse(cls, text: str) -> AccessList:
        if text.strip() == "*":
            return cls(everyone=True)
        users, _, groups = text.partition(" ")
        return cls(users=frozenset(u.strip() for u in users.split(",") if u.strip()),
                   groups=frozenset(g.strip() for g in groups.split(",") if g.strip()))

    def allows(self, user: str, groups_of: GroupsOf = _no_groups) -> bool:
        if self.everyone or user in self.users:
            return True
        return bool(self.groups) and any(g in self.groups for g in groups_of(user))

    def __str__(self) -> str:
        if self.everyone:
            return "*"
        return ",".join(sorted(self.users)) + (" " + ",".join(sorted(self.groups)) if self.groups else "")


NOBODY = AccessList()
EVERYONE = AccessList(everyone=True)


@dataclass(frozen=True, slots=True)
class AclConfig:
    """The ACLs in force: the admin ACL, and the ACLs each queue sets (keyed ``root.a.b``, by ACL name)."""

    enabled: bool = True
    admins: AccessList = NOBODY
    queues: Mapping[str, Mapping[str, AccessList]] = field(default_factory=dict)

    def _queue(self, path: str, name: str) -> AccessList | None:
        return self.queues.get(path, {}).get(name)

    def _chain(self, queue: str, name: str, groups_of: GroupsOf, user: str) -> bool:
        """Whether ``name`` of ``queue`` or of a queue above it lets ``user`` in; unset is no one, but root's
        submit ACL, which is everyone."""
        path = queue if queue == "root" or queue.startswith("root.") else f"root.{queue}"
        while path:
            acl = self._queue(path, name)
            if acl is None and path == "root" and name == SUBMIT_APPLICATIONS:
                acl = EVERYONE
            if acl is not None and acl.allows(user, groups_of):
                return True
            path = path.rpartition(".")[0]
        return False

    def is_admin(self, user: str, groups_of: GroupsOf = _no_groups) -> bool:
        return not self.enabled or self.admins.allows(user, groups_of)

    def may_administer_queue(self, user: str, queue: str, groups_of: GroupsOf = _no_groups) -> bool:
        return self.is_admin(user, groups_of) or self._chain(queue, ADMINISTER_QUEUE, groups_of, user)

    def may_submit(self, user: str, queue: str, groups_of: GroupsOf = _no_groups) -> bool:
        return self.may_administer_queue(user, queue, groups_of) or \
            self._chain(queue, SUBMIT_APPLICATIONS, groups_of, user)

    def may_modify_app(self, user: str, owner: str, queue: str, app_acls: Mapping[str, str] | None = None,
                       groups_of: GroupsOf = _no_groups) -> bool:
        if user == owner or self.may_administer_queue(user, queue, groups_of):
            return True
        own = (app_acls or {}).get(MODIFY_APP)
        return own is not None and AccessList.parse(own).allows(user, groups_of)

    def may_view_app(self, user: str, owner: str, queue: str, app_acls: Mapping[str, str] | None = None,
                     groups_of: GroupsOf = _no_groups) -> bool:
        """Whether ``user`` sees the app's full report (YARN's VIEW_APP): a ``MODIFY_APP`` ACL does not grant it."""
        if not self.enabled or user == owner or self.may_administer_queue(user, queue, groups_of):
            return True
        own = (app_acls or {}).get(VIEW_APP)
        return own is not None and AccessList.parse(own).allows(user, groups_of)

    def may_submit_reservation(self, user: str, queue: str, groups_of: GroupsOf = _no_groups) -> bool:
        if self.is_admin(user, groups_of):
            return True
        if self._has(queue, SUBMIT_RESERVATIONS):
            return self._chain(queue, SUBMIT_RESERVATIONS, groups_of, user) or \
                self._chain(queue, ADMINISTER_RESERVATIONS, groups_of, user)
        return self.may_submit(user, queue, groups_of)

    def may_administer_reservation(self, user: str, owner: str, queue: str,
                                   groups_of: GroupsOf = _no_groups) -> bool:
        if user == owner or self.is_admin(user, groups_of):
            return True
        if self._has(queue, ADMINISTER_RESERVATIONS):
            return self._chain(queue, ADMINISTER_RESERVATIONS, groups_of, user)
        return self.may_administer_queue(user, queue, groups_of)

    def _has(self, queue: str, name: str) -> bool:
        """Whether ``queue`` or a queue above it sets ``name``."""
        path = queue if queue == "root" or queue.startswith("root.") else f"root.{queue}"
        while path:
            if self._queue(path, name) is not None:
                return True
            path = path.rpartition(".")[0]
        return False


def queue_acls(values: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, AccessList]]:
    """{queue path: {ACL name: text}} -> parsed ACLs; unknown ACL names are refused."""
    out: dict[str, dict[str, AccessList]] = {}
    for path, acls in values.items():
        for name, text in acls.items():
            if name not in QUEUE_ACL_NAMES:
                raise ValueError(f"queue {path}: unknown ACL {name!r} (known: {', '.join(QUEUE_ACL_NAMES)})")
            out.setdefault(path, {})[name] = AccessList.parse(text)
    return out
