"""The engine's results against the fingerprints recorded in
tests/golden/engine_fingerprints.json (scripts/engine_fingerprint.py): a
change that moves any of them without being meant as a model change is a bug;
one that is meant rewrites the file (`--write`) and says why."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location(
        "engine_fingerprint", ROOT / "scripts" / "engine_fingerprint.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fingerprint(cfg: str, seed: int = 0) -> str:
    from cnsim import _core

    sim = _core.Simulation(cfg, seed)
    sim.run()
    return _script().fingerprint(sim)


def test_the_fingerprint_is_stable_and_sees_a_changed_result():
    import cnsim

    sc = cnsim.load("singlehop_hotspot", seeds=[0]).replace(duration_ms=3.0)
    cfg = sc.engine_json()
    assert _fingerprint(cfg) == _fingerprint(cfg)
    assert _fingerprint(cfg, seed=1) != _fingerprint(cfg)
    loaded = sc.replace(**{"nodes.H1.load": 0.8}).engine_json()
    assert _fingerprint(loaded) != _fingerprint(cfg)


@pytest.mark.slow
def test_engine_results_match_the_recorded_fingerprints():
    fp = _script()
    golden = json.loads(fp.GOLDEN.read_text())
    bad = fp.compare(fp.fingerprints(), golden)
    assert not bad, (
        f"{len(bad)} of {len(golden)} runs moved, e.g. {bad[:5]}; if this is a model change, "
        "run `python scripts/engine_fingerprint.py --write` and say why in the commit"
    )


def test_the_fingerprint_covers_the_time_series():
    # Two runs whose counters are equal but whose series differ must differ.
    import cnsim
    import numpy as np
    from cnsim import _core

    fp = _script()
    cfg = cnsim.load("singlehop_hotspot", seeds=[0]).replace(duration_ms=3.0).engine_json()
    sim = _core.Simulation(cfg, 0)
    sim.run()
    series = sim.series()
    assert series, "the run records series"

    class Shifted:
        """The same run, one bin of one series changed."""

        def results(self):
            return sim.results()

        def series(self):
            name, key, values = series[0]
            v = (
                np.frombuffer(bytes(values), dtype="<f8").copy()
                if isinstance(values, bytes)
                else np.array(values)
            )
            v[0] += 1.0
            return [(name, key, v.astype("<f8").tobytes()), *series[1:]]

    assert fp.fingerprint(Shifted()) != fp.fingerprint(sim)
    assert fp.fingerprint(sim) == fp.fingerprint(sim)
