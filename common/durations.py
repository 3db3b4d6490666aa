"""Durations as people read them in tables: ``42s``, ``3m05s``, ``2h07m``, ``3d04h`` (two units at most)."""

from __future__ import annotations


def compact(seconds: float, sep: str = "") -> str:
    """``seconds`` rounded to whole seconds, in its two largest units, ``sep`` between them; negative ones
    signed."""
    s = round(abs(seconds))
    sign = "-" if seconds < 0 else ""
    if s < 60:
        return f"{sign}{s}s"
    if s < 3600:
        return f"{sign}{s // 60}m{sep}{s % 60:02d}s"
    if s < 86_400:
        return f"{sign}{s // 3600}h{sep}{s % 3600 // 60:02d}m"
    return f"{sign}{s // 86_400}d{sep}{s % 86_400 // 3600:02d}h"
