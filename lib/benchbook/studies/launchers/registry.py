"""The registry of launchers by name: `register` (a decorator on a `Launcher` subclass) and `get`.

A module of its own, so that each launcher module imports it without importing the package that
imports them.
"""

from __future__ import annotations

from ...errors import UnknownNameError
from .base import Launcher

REGISTRY: dict[str, Launcher] = {}


def register(cls: type[Launcher]) -> type[Launcher]:
    REGISTRY[cls.name] = cls()
    return cls


def get(name: str) -> Launcher:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownNameError("launcher", name, list(REGISTRY)) from None
