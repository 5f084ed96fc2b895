"""The installed package's version (`cnsim.__version__`), for the modules
that record it: read from the package metadata, once asked."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version


def cnsim_version() -> str:
    """The version cnsim is installed as ("0+unknown" when it is not)."""
    try:
        return version("cnsim")
    except PackageNotFoundError:  # pragma: no cover
        return "0+unknown"


@cache
def engine_version() -> str:
    """The engine's version (`cnsim._core.version()`), asked once: a
    constant of the loaded extension."""
    import cnsim._core as _core

    return _core.version()
