"""Changing a raw scenario by dotted name (`--set pause.xoff_bytes=120000`,
`Scenario.replace(**{"nodes.S1.load": 0.5})`)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterable
from typing import Any

from ..errors import ScenarioError, ScenarioWarning, names_a_key, param_of
from .model import MAX_SEEDS, TOP_KEYS


def parse_value(text: str) -> Any:
    """A `--set` value: a TOML literal (number, bool, string, array, inline
    table), or else the text itself as a string."""
    import tomllib  # only with --set: not on every run's path

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Sets `key` (dotted) in a raw scenario; `nodes.NAME.field` addresses a
    node by name and `links.A-B.field` a link by its ends."""
    parts = key.split(".")
    if not all(p.strip() for p in parts):
        raise ScenarioError(f"{key}: not a dotted parameter name", param=key, option="--set")
    top = TOP_KEYS
    if parts[0] not in top:
        raise ScenarioError(
            f"{key}: unknown parameter '{parts[0]}'; known top-level names: {', '.join(sorted(top))}",
            param=key,
            option="--set",
        )
    cur: Any = raw
    i = 0
    while i < len(parts) - 1:
        p = parts[i]
        if p in ("nodes", "links") and i == 0:
            items = cur.get(p, [])
            want = parts[i + 1]
            match = [it for it in items if it.get("name") == want or f"{it.get('a')}-{it.get('b')}" == want]
            if not match:
                known = [it.get("name") or f"{it.get('a')}-{it.get('b')}" for it in items]
                raise ScenarioError(
                    f"{key}: no {p[:-1]} named '{want}'; {p}: {', '.join(map(str, known))}",
                    param=key,
                    option="--set",
                )
            cur = match[0]
            i += 2
            continue
        nxt = cur.get(p)
        if nxt is None:
            nxt = cur[p] = {}
        if not isinstance(nxt, dict):
            raise ScenarioError(
                f"{key}: '{'.'.join(parts[: i + 1])}' is not a table", param=key, option="--set"
            )
        cur = nxt
        i += 1
    if i != len(parts) - 1:
        raise ScenarioError(
            f"{key}: expected nodes.NAME.PARAMETER or links.A-B.PARAMETER", param=key, option="--set"
        )
    cur[parts[-1]] = value


def name_sets(e: BaseException, keys: Iterable[str]) -> ScenarioError:
    """An error found after `--set KEY=VALUE` overrides (by the Python checks
    or by the engine's rules), named as every `--set` error is: `--set KEY:
    ...`, with the keys set put first when the parameter at fault (its
    `param`, the engine's `path`) is another one, which a rule found."""
    if isinstance(e, ScenarioError) and e.option == "--set":
        return e
    keys = list(keys)
    param = param_of(e)
    what = str(e) if names_a_key(param, keys) else f"{', '.join(keys)}: {e}"
    return ScenarioError(what, param=param, option="--set")


def _table(raw: dict[str, Any], name: str) -> dict[str, Any]:
    t = raw.get(name)
    if not isinstance(t, dict):
        t = raw[name] = {}
    return t


def _seeds_value(seeds: int | Iterable[int]) -> int | list[int]:
    """A seeds choice as the file writes it: a count N for 0..N-1, else the list."""
    if isinstance(seeds, bool):
        raise ScenarioError.at("seeds", f"{seeds} is not allowed; expected a count or a list of seeds")
    if isinstance(seeds, int):
        return seeds
    if isinstance(seeds, range) and seeds.start == 0 and seeds.step == 1:
        return len(seeds)  # a count, without listing a billion seeds
    if hasattr(seeds, "__len__") and len(seeds) > MAX_SEEDS:  # type: ignore[arg-type]
        raise ScenarioError.at("seeds", f"{len(seeds):,} seeds is not allowed; at most {MAX_SEEDS:,}")  # type: ignore[arg-type]
    try:
        lst = [int(s) for s in itertools.islice(seeds, MAX_SEEDS + 1)]
    except (TypeError, ValueError):
        raise ScenarioError.at(
            "seeds", f"{seeds!r} is not allowed; expected a count or a list of seeds"
        ) from None
    if len(lst) > MAX_SEEDS:
        raise ScenarioError.at("seeds", f"more than {MAX_SEEDS:,} seeds is not allowed")
    return len(lst) if lst and lst == list(range(len(lst))) else lst


def _fit_windows(raw: dict[str, Any]) -> None:
    """After a duration change: clip windows to the run, drop those past its
    end; warns (ScenarioWarning, one line) for each window clipped or
    dropped and the metrics that go with it, which would otherwise vanish
    silently (`res.metric("jain")` then has no value)."""
    dur = raw.get("duration_ms")
    if not isinstance(dur, int | float) or dur <= 0:
        return
    notes: list[str] = []
    m = raw.get("measure") or {}
    if isinstance(m.get("end_ms"), int | float) and m["end_ms"] > dur:
        notes.append(
            f"measure [{_ms(m.get('start_ms', 0))}, {_ms(m['end_ms'])}] clipped to end at {_ms(dur)}"
        )
        m["end_ms"] = dur
    if isinstance(m.get("start_ms"), int | float) and m["start_ms"] >= dur:
        notes.append(f"measure starts at {_ms(m['start_ms'])}, after the run: it starts at 0")
        m["start_ms"] = 0.0
    for name, w in list((raw.get("windows") or {}).items()):
        if not isinstance(w, dict):
            continue
        if w.get("start_ms", 0) >= dur:
            del raw["windows"][name]
            lost = ""
            for section in ("fairness", "utilization"):
                if (raw.get(section) or {}).get("window", section) == name:
                    raw.pop(section, None)
                    lost += f" with [{section}] and its metrics ({_LOST[section]})"
            notes.append(f"window {name} starts at {_ms(w.get('start_ms', 0))}, after the run: dropped{lost}")
        elif w.get("end_ms", 0) > dur:
            notes.append(
                f"window {name} [{_ms(w.get('start_ms', 0))}, {_ms(w['end_ms'])}] clipped to end at {_ms(dur)}"
            )
            w["end_ms"] = dur
    h = raw.get("hotspot")
    if isinstance(h, dict) and isinstance(h.get("start_ms"), int | float) and h["start_ms"] >= dur:
        notes.append(f"the hotspot starts at {_ms(h['start_ms'])}, after the run: no bottleneck_utilization")
    elif isinstance(h, dict) and isinstance(h.get("end_ms"), int | float) and h["end_ms"] > dur:
        notes.append(
            f"the hotspot window [{_ms(h.get('start_ms', 0))}, {_ms(h['end_ms'])}] clipped to end at {_ms(dur)}"
        )
    if notes:
        warnings.warn(f"duration_ms = {_ms(dur)}: " + "; ".join(notes), ScenarioWarning, stacklevel=4)


#: What a section dropped with its window takes along.
_LOST = {"fairness": "jain, dev_max, dev_min, dev_mean, dev_rms", "utilization": "link_utilization"}


def _ms(v: Any) -> str:
    return f"{v:g} ms" if isinstance(v, int | float) else str(v)
