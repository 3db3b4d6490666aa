"""Hosts made of network namespaces, for the multi-host tests and the partition drills: each host is a namespace
with one veth link to a bridge in a namespace of its own, and an address on a subnet that exists only there.
Nothing outside these namespaces is ever addressed. Taking a host's link down partitions it from the others while
its processes keep running, as a pulled cable or a dead switch port would.

Needs root and iproute2's ``ip``; :func:`unavailable` says why a machine cannot make them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field

SUBNET = "10.213.7"  # the prefix of the hosts' addresses, on the bridge of the namespaces made here


def ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)


def in_ns(ns: str, *args: str) -> list[str]:
    """The command line that runs this Python with ``args`` inside namespace ``ns``."""
    return ["ip", "netns", "exec", ns, sys.executable, *args]


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None when they can be tried."""
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    return None


@dataclass
class Network:
    """A bridge and the hosts joined to it; :meth:`make` creates the bridge, :meth:`remove` every namespace."""

    prefix: str = field(default_factory=lambda: f"sh{uuid.uuid4().hex[:5]}")
    hosts: dict[str, str] = field(default_factory=dict)  # namespace -> address

    @property
    def switch(self) -> str:
        return f"{self.prefix}sw"

    def make(self) -> str | None:
        """Create the bridge's namespace; the reason when the machine refuses namespaces (nothing is left)."""
        made = ip("netns", "add", self.switch)
        if made.returncode != 0:
            return f"this machine refuses network namespaces: ip netns add: {made.stderr.strip()}"
        for args in (["-n", self.switch, "link", "add", "br0", "type", "bridge"],
                     ["-n", self.switch, "link", "set", "br0", "up"]):
            self._must(*args)
        return None

    def add_host(self, n: int) -> str:
        """Host ``n`` (1-254): a namespace with ``eth0`` at ``SUBNET.n`` on the bridge; its name."""
        ns, address = f"{self.prefix}h{n}", f"{SUBNET}.{n}"
        self._must("netns", "add", ns)
        self.hosts[ns] = address
        for args in (["link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{n}", "netns",
                      self.switch],
                     ["-n", self.switch, "link", "set", f"p{n}", "master", "br0", "up"],
                     ["-n", ns, "addr", "add", f"{address}/24", "dev", "eth0"],
                     ["-n", ns, "link", "set", "eth0", "up"],
                     ["-n", ns, "link", "set", "lo", "up"]):
            self._must(*args)
        return ns

    def link(self, ns: str, up: bool) -> None:
        """Take host ``ns``'s only link down (a partition) or bring it back."""
        self._must("-n", ns, "link", "set", "eth0", "up" if up else "down")

    def remove(self) -> None:
        for ns in [*self.hosts, self.switch]:
            ip("netns", "del", ns)
        self.hosts.clear()

    @staticmethod
    def _must(*args: str) -> None:
        done = ip(*args)
        if done.returncode != 0:
            raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
