"""Hadoop ACLs and YARN's rules on them (common.acl), and the user tokens and callers of rm.service.authz."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.acl import NOBODY, AccessList, AclConfig, queue_acls
from common.errors import Forbidden
from rm.service import authz
from rm.service.config import own_user
from rm.service.settings import load_rm_settings

GROUPS = {"alice": ("eng",), "bob": ("ops",), "carol": ("eng", "ops")}


def groups(user: str) -> tuple[str, ...]:
    return GROUPS.get(user, ())


def test_hadoop_acl_strings() -> None:
    assert AccessList.parse("*").allows("anyone")
    assert AccessList.parse(" * ").allows("anyone")
    both = AccessList.parse("alice,bob ops")
    assert both.allows("alice")
    assert both.allows("bob")
    assert not both.allows("dave")
    assert both.allows("carol", groups)  # in ops
    only_group = AccessList.parse(" eng")
    assert not only_group.users
    assert only_group.allows("alice", groups)
    assert not only_group.allows("bob", groups)
    assert not AccessList.parse(" ").allows("alice", groups)
    assert not AccessList.parse("").allows("alice", groups)
    assert str(both) == "alice,bob ops"


def acls(**queues: dict[str, str]) -> AclConfig:
    return AclConfig(admins=AccessList.parse("root"),
                     queues=queue_acls({p.replace("_", "."): a for p, a in queues.items()}))


def test_submit_follows_the_queue_and_the_queues_above_it() -> None:
    cfg = acls(root={"acl_submit_applications": " ", "acl_administer_queue": " "},
               root_a={"acl_submit_applications": "alice"},
               root_b={"acl_submit_applications": " ops", "acl_administer_queue": "carol"})
    assert cfg.may_submit("alice", "root.a", groups)
    assert not cfg.may_submit("bob", "root.a", groups)
    assert cfg.may_submit("bob", "root.b", groups)  # group ops
    assert cfg.may_submit("carol", "root.b", groups)
    assert not cfg.may_submit("alice", "root.b", groups)
    assert not cfg.may_submit("alice", "root.c", groups)  # unset below root: root's, which is no one here
    assert cfg.may_submit("root", "root.c", groups)  # the admin
    assert cfg.may_submit("alice", "a", groups)  # a leaf name is under root


def test_the_defaults_let_everyone_submit_and_no_one_administer_queues() -> None:
    cfg = AclConfig(admins=AccessList.parse("root"))
    assert cfg.may_submit("anyone", "root.default")
    assert not cfg.may_administer_queue("anyone", "root.default")
    assert not cfg.may_modify_app("bob", "alice", "root.default")
    assert cfg.may_modify_app("alice", "alice", "root.default")
    assert cfg.may_modify_app("root", "alice", "root.default")
    off = AclConfig(enabled=False, admins=NOBODY)
    assert off.may_modify_app("bob", "alice", "root.default")
    assert off.is_admin("bob")


def test_modify_needs_ownership_queue_administration_or_the_apps_own_acl() -> None:
    cfg = acls(root_b={"acl_administer_queue": "carol"})
    assert cfg.may_modify_app("carol", "alice", "root.b", None, groups)
    assert not cfg.may_modify_app("carol", "alice", "root.a", None, groups)
    assert cfg.may_modify_app("bob", "alice", "root.a", {"MODIFY_APP": "bob"}, groups)
    assert not cfg.may_modify_app("bob", "alice", "root.a", {"VIEW_APP": "bob"}, groups)


def test_reservation_acls_fall_back_to_the_queue_acls() -> None:
    cfg = acls(root={"acl_submit_applications": " "},
               root_a={"acl_submit_applications": "alice"},
               root_b={"acl_submit_reservations": "bob", "acl_administer_reservations": "carol"})
    assert cfg.may_submit_reservation("alice", "root.a")
    assert not cfg.may_submit_reservation("bob", "root.a")
    assert cfg.may_submit_reservation("bob", "root.b")
    assert not cfg.may_submit_reservation("alice", "root.b")
    assert cfg.may_administer_reservation("carol", "bob", "root.b")
    assert cfg.may_administer_reservation("bob", "bob", "root.b")
    assert not cfg.may_administer_reservation("alice", "bob", "root.b")
    assert not cfg.may_administer_reservation("alice", "bob", "root.a")  # falls back to administer_queue
    with pytest.raises(ValueError, match="unknown ACL"):
        queue_acls({"root.a": {"acl_everything": "*"}})


def test_acls_are_read_from_capacity_scheduler_xml_and_the_yaml_tree(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    props = {"yarn.scheduler.capacity.root.queues": "a,b",
             "yarn.scheduler.capacity.root.a.capacity": "50", "yarn.scheduler.capacity.root.b.capacity": "50",
             "yarn.scheduler.capacity.root.acl_submit_applications": " ",
             "yarn.scheduler.capacity.root.a.acl_submit_applications": "alice",
             "yarn.scheduler.capacity.root.b.acl_administer_queue": "carol ops"}
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
    (conf / "capacity-scheduler.xml").write_text(f"<configuration>{body}</configuration>")
    (conf / "yarn-site.xml").write_text("<configuration><property><name>yarn.admin.acl</name>"
                                        "<value>ada</value></property></configuration>")
    cfg = load_rm_settings(env={}, conf_dir=conf).config.acl_config
    assert cfg.enabled
    assert cfg.is_admin("ada")
    assert not cfg.is_admin(own_user() + "x")
    assert cfg.may_submit("alice", "root.a")
    assert not cfg.may_submit("bob", "root.a")
    assert cfg.may_administer_queue("carol", "root.b")

    yaml_file = tmp_path / "shepherd.yaml"
    yaml_file.write_text("queues:\n  a: {capacity: 100, acl_submit_applications: dave}\n"
                         "yarn.acl.enable: 'false'\n")
    cfg = load_rm_settings(env={}, config_file=yaml_file).config.acl_config
    assert not cfg.enabled
    assert cfg.queues["root.a"]["acl_submit_applications"].allows("dave")


def test_callers_come_from_credentials_not_from_names() -> None:
    secret = "s3cret"
    owner = own_user()
    assert authz.caller(secret, secret) == authz.Caller(owner)
    assert authz.caller(secret, secret, "alice") == authz.Caller("alice", real=owner)
    token = authz.issue_user_token(secret, "bob", now=1000.0, lifetime_s=60)
    assert authz.caller(secret, token, "alice", now=1010.0) == authz.Caller("bob")  # the name is ignored
    with pytest.raises(Forbidden):
        authz.caller(secret, token, now=1061.0)  # expired
    with pytest.raises(Forbidden):
        authz.caller("another secret", token, now=1010.0)  # another cluster's
    with pytest.raises(authz.Unauthenticated):
        authz.caller(secret, "")
    assert authz.caller(None, "", "mallory") == authz.Caller("mallory", authenticated=False)


def test_view_needs_ownership_queue_administration_an_admin_or_the_apps_own_view_acl() -> None:
    cfg = acls(root_b={"acl_administer_queue": "carol"})
    assert cfg.may_view_app("alice", "alice", "root.a", None, groups)  # its owner
    assert not cfg.may_view_app("bob", "alice", "root.a", None, groups)
    assert cfg.may_view_app("carol", "alice", "root.b", None, groups)  # the queue's administrator
    assert not cfg.may_view_app("carol", "alice", "root.a", None, groups)
    assert cfg.may_view_app("bob", "alice", "root.a", {"VIEW_APP": "bob"}, groups)
    assert cfg.may_view_app("bob", "alice", "root.a", {"VIEW_APP": " ops"}, groups)  # bob is in ops
    assert not cfg.may_view_app("bob", "alice", "root.a", {"MODIFY_APP": "bob"}, groups)  # modify is not view
    assert not cfg.may_view_app("dr.who", "alice", "root.a", {"VIEW_APP": "bob"}, groups)
    assert cfg.may_view_app("dr.who", "alice", "root.a", {"VIEW_APP": "*"}, groups)
    assert AclConfig(admins=AccessList.parse("root")).may_view_app("root", "alice", "root.a")
    assert AclConfig(enabled=False, admins=NOBODY).may_view_app("dr.who", "alice", "root.a")
