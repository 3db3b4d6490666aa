"""The account a NodeManager runs containers as: never root unless explicitly allowed."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from nodemanager.launch import Account, LaunchError, check_reachable, container_account, submitter_account


def test_a_root_nodemanager_maps_containers_to_nobody_by_default() -> None:
    nobody = pwd.getpwnam("nobody")
    assert container_account(None, False, euid=0) == Account("nobody", nobody.pw_uid, nobody.pw_gid)
    assert container_account(None, False, euid=1000) is None  # not root: containers run as the daemon's user
    assert container_account(None, True, euid=0) is None  # explicitly allowed root containers
    with pytest.raises(ValueError, match="may not run as root"):
        container_account("root", False, euid=0)
    with pytest.raises(ValueError, match="does not exist"):
        container_account("no-such-user-here", False, euid=0)


def test_with_limit_users_off_the_app_s_user_is_the_account_unless_root_or_a_system_account() -> None:
    nobody = pwd.getpwnam("nobody")
    assert submitter_account("nobody", 1000) == Account("nobody", nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(LaunchError, match="maps to root"):
        submitter_account("root", 0)  # root never, whatever the lowest uid allowed
    with pytest.raises(LaunchError, match=r"uid 1\) is below the lowest uid containers may run as \(1000"):
        submitter_account("daemon", 1000)
    assert submitter_account("daemon", 1).uid == 1
    with pytest.raises(LaunchError, match="has no account on this host"):
        submitter_account("no-such-user-here", 1000)
    with pytest.raises(LaunchError, match="names no user"):
        submitter_account("", 1000)


def test_a_work_dir_the_account_cannot_reach_is_refused(tmp_path: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    account = Account("nobody", nobody.pw_uid, nobody.pw_gid)
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True)
    private.chmod(0o700)
    if os.geteuid() == nobody.pw_uid:
        pytest.skip("running as nobody")
    with pytest.raises(ValueError, match="cannot enter"):
        check_reachable(account, private / "work")
    private.chmod(0o711)
    tmp_path.chmod(0o755)
    for parent in tmp_path.parents:
        if parent.stat().st_mode & 0o001 == 0:
            pytest.skip(f"{parent} is private on this machine")
    check_reachable(account, private / "work")
