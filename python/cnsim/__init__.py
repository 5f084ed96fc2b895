"""cnsim: a packet-level simulator of congestion management in data-center
Ethernet (IEEE 802.3x PAUSE, 802.1Qau BCN / ECM / QCN).

    import cnsim
    sc = cnsim.load("baseline").replace(scheme="bcn", seeds=range(4))
    res = cnsim.run(sc)
    res.summary            # one row per seed
    res.save("results/x")  # the on-disk layout of interface.md
    df = cnsim.sweep("baseline", grid={"bcn.w": [2, 4]}, seeds=4, out="results/w")
    c = cnsim.fluid.compare(cnsim.load("baseline"))   # fluid model beside the packet runs
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import fluid
from .errors import ScenarioError
from .results import Results
from .runner import run
from .scenario import Scenario, load, resolve
from .sweep import load_sweep, sweep

try:
    __version__ = version("cnsim")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0+unknown"

__all__ = [
    "ScenarioError",
    "Results",
    "Scenario",
    "load",
    "resolve",
    "run",
    "sweep",
    "load_sweep",
    "fluid",
    "__version__",
]
