"""cnsim: a packet-level simulator of congestion management in data-center
Ethernet (IEEE 802.3x PAUSE, 802.1Qau BCN / ECM / QCN, and the RoCE
schemes DCQCN, DCTCP, TIMELY, HPCC, Swift over a shared transport).

    import cnsim
    sc = cnsim.load("baseline").replace(scheme="bcn", seeds=range(4))
    res = cnsim.run(sc)
    res.summary            # one row per seed
    res.metrics            # per metric: mean, 95% CI, n
    res.save("results/x")  # the results directory of docs/results.md
    res = cnsim.open_results("results/x")   # reopen it later
    df = cnsim.sweep("baseline", grid={"bcn.w": [2, 4]}, seeds=4, out="results/w")
    c = cnsim.fluid.compare(cnsim.load("baseline"))   # fluid model beside the packet runs

Everything is imported on first use, so `import cnsim` (and `cnsim --help`)
stays quick.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: Public name -> (module, attribute); None: the module itself.
_LAZY: dict[str, tuple[str, str | None]] = {
    "ScenarioError": (".errors", "ScenarioError"),
    "ScenarioWarning": (".errors", "ScenarioWarning"),
    "Scenario": (".scenario", "Scenario"),
    "load": (".scenario", "load"),
    "resolve": (".scenario", "resolve"),
    "Results": (".results", "Results"),
    "open_results": (".reopen", "open_results"),
    "run": (".runner", "run"),
    "sweep": (".sweeps", "sweep"),
    "load_sweep": (".sweeps", "load_sweep"),
    "fluid": (".fluid", None),
}

__all__ = [
    "ScenarioError",
    "ScenarioWarning",
    "Scenario",
    "load",
    "resolve",
    "Results",
    "open_results",
    "run",
    "sweep",
    "load_sweep",
    "fluid",
    "__version__",
]

if TYPE_CHECKING:  # pragma: no cover
    from . import fluid
    from .errors import ScenarioError, ScenarioWarning
    from .reopen import open_results
    from .results import Results
    from .runner import run
    from .scenario import Scenario, load, resolve
    from .sweeps import load_sweep, sweep


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from ._version import cnsim_version

        return cnsim_version()
    if name not in _LAZY:
        raise AttributeError(f"module 'cnsim' has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = import_module(module, __name__)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
