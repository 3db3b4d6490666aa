"""Errors of the state store."""

from __future__ import annotations


class StoreError(Exception):
    """The state store could not do what was asked; nothing of a failed write was stored.

    The driver's (or JSON encoder's) exception is chained as ``__cause__``. ``transient`` is False when retrying
    the same write cannot succeed (a value that cannot be stored, a constraint the rows break).
    """

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class LeaseLost(StoreError):
    """Another ResourceManager holds the store now: this one must stop writing."""

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)


class StoreLocked(StoreError):
    """A live ResourceManager holds the store's lease."""

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)


class StoreMissing(StoreError):
    """The store does not exist (and creating it was not asked for)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, transient=False)
