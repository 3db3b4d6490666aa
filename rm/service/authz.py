"""Who is calling the client doors, and whether they may do what they ask.

**Credentials.** Every door takes the same two kinds of bearer credential (REST ``Authorization: Bearer``,
gRPC ``authorization`` metadata; Hadoop IPC carries RM delegation tokens instead, whose owner is the caller):

* the cluster's **client secret** authenticates the cluster's owner (the user the RM runs as). Like a Hadoop
  proxy user, the owner may act for another user by naming it (``?user.name=`` or ``?doAs=`` on REST, the
  request's ``user`` field on gRPC); the change is then made, and checked, as that user.
* a **user token** (``shepherd admin token --user alice``, signed with a key derived from the client secret)
  authenticates that one user; a user name in the request is ignored.

The user is therefore always one the RM authenticated, or one the owner vouched for, never a bare query
parameter. An RM without a client secret (``--insecure``) believes the name a request gives and checks no ACL.

**Reads** without a credential (open unless ``authenticate_reads``) are made as the anonymous web user
``dr.who``, as Hadoop's web apps make them: every app is listed, but only a viewer of an app (VIEW_APP) gets its
full report; the others get YARN's restricted one, and a refusal for its attempts and containers.

**Authorization** is :mod:`common.acl`'s rules on the ACLs in force (``RMConfig.acl_config``): each door calls
the check for its operation before making the change, so the same ask gets the same answer everywhere, as
YARN's ``AccessControlException``.
"""

from __future__ import annotations

import grp
import hashlib
import hmac
import pwd
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from common import tokens
from common.acl import AclConfig
from common.errors import Forbidden, YarnError
from rm.service.config import own_user

if TYPE_CHECKING:
    from rm.core.entities import App
    from rm.service.server import ResourceManager

ANONYMOUS = "dr.who"
DEFAULT_TOKEN_LIFETIME_S = 7 * 24 * 3600.0
MAX_TOKEN_LIFETIME_S = 365 * 24 * 3600.0


class Unauthenticated(YarnError):
    status = 401
    exception = "AuthorizationException"
    java_class = "org.apache.hadoop.security.authorize.AuthorizationException"


class AccessDenied(Forbidden):
    """YARN's refusal of an operation the ACLs do not allow the caller."""

    exception = "AccessControlException"
    java_class = "org.apache.hadoop.security.AccessControlException"


@dataclass(frozen=True, slots=True)
class Caller:
    """Whom a change is made for, and who proved it."""

    user: str
    real: str = ""  # the authenticated owner acting for ``user``; "" when ``user`` authenticated itself
    authenticated: bool = True

    def __str__(self) -> str:
        return f"{self.user} (via {self.real})" if self.real else self.user


# ------------------------------------------------------------------------------------------------ user tokens


def _user_key(client_secret: str) -> bytes:
    return hmac.new(client_secret.encode(), b"shepherd user token key", hashlib.sha256).digest()


def issue_user_token(client_secret: str, user: str, *, now: float, lifetime_s: float) -> str:
    return tokens.sign(_user_key(client_secret), "user", {"user": user, "issued": int(now),
                                                         "expires": int(now + lifetime_s)})


def read_user_token(client_secret: str, token: str, *, now: float) -> str:
    """The user of a genuine, unexpired user token; raises ``tokens.InvalidToken`` otherwise."""
    fields = tokens.verify(_user_key(client_secret), token, "user", now=now)
    user = fields.get("user")
    if not isinstance(user, str) or not user:
        raise tokens.InvalidToken("a user token names its user")
    return user


def caller(client_secret: str | None, bearer: str, acting_for: str = "", *, now: float | None = None) -> Caller:
    """The caller a bearer credential proves (``acting_for``: the user the request names, if any)."""
    if not client_secret:  # insecure: believe the name
        return Caller(acting_for or ANONYMOUS, authenticated=False)
    if not bearer:
        raise Unauthenticated("Unable to obtain user name, user not authenticated: send Authorization: Bearer "
                              "<client secret or user token>")
    if hmac.compare_digest(bearer.encode(), client_secret.encode()):
        owner = own_user()
        if acting_for and acting_for != owner:
            return Caller(acting_for, real=owner)
        return Caller(owner)
    try:
        return Caller(read_user_token(client_secret, bearer, now=time.time() if now is None else now))
    except tokens.InvalidToken as exc:
        raise Forbidden(f"the client secret does not match, nor is it a user token of this cluster ({exc})") \
            from None


def viewer(client_secret: str | None, bearer: str, acting_for: str = "", *, now: float | None = None) -> Caller:
    """The caller of a read: as :func:`caller` when it presents a credential; without one (reads are open unless
    ``authenticate_reads``) the anonymous web user ``dr.who``, whose name proves nothing and who sees only what
    the ACLs let everyone see. On an insecure RM, the name given."""
    if not client_secret:
        return Caller(acting_for or ANONYMOUS, authenticated=False)
    if not bearer:
        return Caller(ANONYMOUS, authenticated=False)
    return caller(client_secret, bearer, acting_for, now=now)


# ------------------------------------------------------------------------------------------------ groups


@lru_cache(maxsize=4096)
def _groups(user: str) -> tuple[str, ...]:
    """The user's local groups (primary first), as Hadoop's shell-based group mapping finds them."""
    out: list[str] = []
    try:
        primary = pwd.getpwnam(user).pw_gid
        out.append(grp.getgrgid(primary).gr_name)
    except (KeyError, OverflowError):
        pass
    out += [g.gr_name for g in grp.getgrall() if user in g.gr_mem and g.gr_name not in out]
    return tuple(out)


def groups_of(user: str) -> tuple[str, ...]:
    return _groups(user)


# ------------------------------------------------------------------------------------------------ checks


def app_acls(app: App) -> dict[str, str] | None:
    """The app's own ACLs (VIEW_APP, MODIFY_APP) from its submission, if it carried any."""
    acls = app.am_launch.get("acls") if isinstance(app.am_launch, dict) else None
    if not isinstance(acls, dict):
        return None
    return {str(k): str(v) for k, v in acls.items() if isinstance(v, str)}


_UNCHECKED = AclConfig(enabled=False)


class Authorizer:
    """The ACL checks of one RM, on the ACLs it has in force now (they change with a queue refresh)."""

    def __init__(self, rm: ResourceManager) -> None:
        self.rm = rm

    @property
    def acls(self) -> AclConfig:
        """The ACLs in force; none without a client secret (insecure: no name is proven, anyone may do anything)."""
        return self.rm.cfg.acl_config if self.rm.cfg.client_secret else _UNCHECKED

    def _queue(self, name: str) -> str:
        """The full path of a queue name, or the name itself when no queue has it (the operation refuses it)."""
        try:
            from rm.core.queues import resolve_queue

            return str(resolve_queue(self.rm.state.queues, name).path)
        except ValueError:
            return name if name.startswith("root") else f"root.{name or 'default'}"

    def admin(self, who: Caller, operation: str) -> None:
        if not self.acls.is_admin(who.user, groups_of):
            raise AccessDenied(f"User {who.user} doesn't have permission to call '{operation}'")

    def submit(self, who: Caller, queue: str, app_id: str) -> None:
        path = self._queue(queue)
        if not self.acls.may_submit(who.user, path, groups_of):
            raise AccessDenied(f"User {who.user} does not have permission to submit {app_id} to queue {path}")

    def modify(self, who: Caller, app: App) -> None:
        if not self.acls.may_modify_app(who.user, app.user, str(app.queue), app_acls(app), groups_of):
            raise AccessDenied(f"User {who.user} cannot perform operation MODIFY_APP on {app.app_id}")

    def may_view(self, who: Caller, app: App) -> bool:
        """Whether the caller sees the app's full report; the restricted one otherwise (YARN's VIEW_APP)."""
        return self.acls.may_view_app(who.user, app.user, str(app.queue), app_acls(app), groups_of)

    def view(self, who: Caller, app: App) -> None:
        """Refuse what only a viewer of the app may read (its attempts, containers, logs), as YARN does."""
        if not self.may_view(who, app):
            raise AccessDenied(f"User {who.user} does not have privilege to see this application {app.app_id}")

    def move(self, who: Caller, app: App, target: str) -> None:
        self.modify(who, app)
        path = self._queue(target)
        if not self.acls.may_submit(who.user, path, groups_of):
            raise AccessDenied(f"User {who.user} cannot submit applications to target queue {path}")

    def reserve(self, who: Caller, queue: str) -> None:
        path = self._queue(queue)
        if not self.acls.may_submit_reservation(who.user, path, groups_of):
            raise AccessDenied(f"User {who.user} does not have permission to submit reservations to queue {path}")

    def change_reservation(self, who: Caller, rid: str) -> None:
        res = self.rm.state.reservation_plan().get(rid)  # an unknown id is refused as the operation would
        if not self.acls.may_administer_reservation(who.user, res.user, str(res.queue), groups_of):
            raise AccessDenied(f"User {who.user} cannot change reservation {rid} of user {res.user} in queue "
                               f"{res.queue}")
