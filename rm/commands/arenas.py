"""glibc's malloc settings for the ResourceManager: ``MALLOC_ARENA_MAX=2`` and fixed mmap and trim thresholds.

The RM's threads (the event loop, the store's, gRPC's) each get a malloc arena of their own by default, and
the memory a burst of large requests leaves in them is not given back; two arenas keep that lasting growth
small. By default, too, every buffer of a few megabytes (a big request as it is received) is a fresh mapping
whose pages the kernel faults in and zeroes on the event loop, milliseconds each time: with buffers up to
8 MiB taken from the heap, and up to 16 MiB of freed heap kept before it is given back, they reuse pages
(docs/results/security.md). glibc reads the variables once, when the process starts, so they have to be in the
environment the RM process is started with: the systemd unit and the container image set them, ``shepherd up``
starts its RM with them, and a bare ``shepherd rm`` started without ``MALLOC_ARENA_MAX`` starts itself again,
once, with them.

A value the user set is kept as it is, whatever it is.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence

ARENA_VAR = "MALLOC_ARENA_MAX"
RM_ARENAS = "2"
RM_MALLOC = {ARENA_VAR: RM_ARENAS,
             "MALLOC_MMAP_THRESHOLD_": str(8 << 20),  # twice the largest message the RM reads (limits.MAX_MESSAGE)
             "MALLOC_TRIM_THRESHOLD_": str(16 << 20)}
RESTARTED = "SHEPHERD_RM_ARENAS_SET"  # set in the restarted process: it never restarts itself again

log = logging.getLogger("shepherd.rm")


def rm_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment to start an RM process with: ``base`` (default: this process's) with each of
    ``RM_MALLOC`` it does not set already."""
    env = dict(os.environ if base is None else base)
    for name, value in RM_MALLOC.items():
        env.setdefault(name, value)
    return env


def _subcommand(args: Sequence[str]) -> tuple[str, list[str]]:
    """The command a ``shepherd`` command line runs, and its arguments (the top-level options skipped)."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option == "--cluster" and rest:  # the only top-level option that takes a value
            rest.pop(0)
    return (rest[0], rest[1:]) if rest else ("", [])


def restart_command(args: Sequence[str], orig_argv: Sequence[str], executable: str,
                    env: Mapping[str, str]) -> list[str] | None:
    """The command line a bare ``shepherd rm`` restarts itself with to have ``MALLOC_ARENA_MAX`` set, or None
    when it runs as it is: another command, only a check or help, the variable set already (by the user or by
    an earlier restart), or no way to run this process again."""
    command, rest = _subcommand(args)
    if command != "rm" or {"--check-config", "--help", "-h"} & set(rest):
        return None
    if ARENA_VAR in env or RESTARTED in env:
        return None
    if not executable or len(orig_argv) < 2:
        return None
    return [executable, *orig_argv[1:]]


def restart_rm_with_arenas() -> None:
    """Replace this process (a ``shepherd rm`` about to start) with the same command and ``MALLOC_ARENA_MAX=2``
    when it was started without the variable; returns only when nothing is to be done or the restart failed
    (logged: the RM then runs with glibc's default arenas)."""
    argv = restart_command(sys.argv[1:], getattr(sys, "orig_argv", ()), sys.executable, os.environ)
    if argv is None:
        return
    env = rm_environment()
    env[RESTARTED] = "1"
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        log.warning("could not restart with %s=%s (%s); running with glibc's default malloc arenas",
                    ARENA_VAR, RM_ARENAS, exc)
