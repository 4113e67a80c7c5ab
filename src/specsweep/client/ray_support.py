"""The one place Ray is imported: it is an optional extra (``pip install 'specsweep[ray]'``), so
every user (``run --executor ray``, ``bench --ray-address``) gets the same install hint."""

from __future__ import annotations

from typing import Any

from specsweep.errors import MissingDependency


def require_ray(what: str) -> Any:
    """The ``ray`` module; without it, MissingDependency saying that ``what`` needs the extra."""
    try:
        import ray
    except ImportError as e:
        raise MissingDependency(what, "ray") from e
    return ray
