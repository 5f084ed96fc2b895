"""Columnar tables without a dataframe library: what the engine hands over
(each numeric column one little-endian buffer, read in place as a typed
memoryview; strings as lists) and what `cnsim.metrics` derives from it.

A `cnsim run` needs no more than this: polars (and numpy) are imported only
when a user asks for a DataFrame (`Table.to_polars`, `Results.flows`, ...),
so the whole process costs little more than the simulation. Parquet is
written from these columns by the engine's writer (`write_parquet`), in one
pass, without building a DataFrame."""

from __future__ import annotations

import array
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import reduce
from operator import add
from typing import Any

#: Engine dtype tags (numpy's spelling) -> memoryview format.
_FORMATS = {"<u8": "Q", "<i8": "q", "<f8": "d", "|b1": "?"}
#: memoryview format -> the dtype tag the Parquet writer takes.
_TAGS = {"Q": "<u8", "q": "<i8", "d": "<f8", "?": "|b1"}

Column = Sequence[Any]


def column(value: Any) -> Column:
    """A column as the engine gives it: `(dtype, bytes)` becomes a typed
    memoryview over the bytes (no copy); a list of strings stays a list."""
    if isinstance(value, tuple):
        dtype, buf = value
        fmt = _FORMATS[dtype]
        if sys.byteorder != "little" and fmt != "?":  # pragma: no cover - the engine writes little-endian
            import array

            a = array.array(fmt, bytes(buf))
            a.byteswap()
            return memoryview(a)
        return memoryview(buf).cast("B").cast(fmt)
    return value


class Table:
    """Named columns of equal length, in order."""

    __slots__ = ("_cols",)

    def __init__(self, columns: Mapping[str, Column] | None = None) -> None:
        self._cols: dict[str, Column] = dict(columns or {})

    def __getstate__(self) -> dict[str, Any]:
        # Typed buffers travel as (format, bytes): a memoryview does not pickle.
        return {
            n: ("buffer", c.format, c.tobytes()) if isinstance(c, memoryview) else ("list", list(c))
            for n, c in self._cols.items()
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._cols = {
            n: memoryview(v[2]).cast("B").cast(v[1]) if v[0] == "buffer" else v[1] for n, v in state.items()
        }

    @classmethod
    def from_engine(cls, raw: Mapping[str, Any]) -> Table:
        return cls({k: column(v) for k, v in raw.items()})

    @property
    def columns(self) -> list[str]:
        return list(self._cols)

    def __len__(self) -> int:
        return len(next(iter(self._cols.values()))) if self._cols else 0

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def __getitem__(self, name: str) -> Column:
        try:
            return self._cols[name]
        except KeyError:
            raise KeyError(f"no column {name!r}; columns: {', '.join(self._cols)}") from None

    def get(self, name: str, default: Any = None) -> Any:
        return self._cols.get(name, default)

    def with_columns(self, **cols: Column) -> Table:
        """A new table with `cols` added (or replaced), after the others."""
        return Table({**self._cols, **cols})

    def select(self, names: Sequence[str]) -> Table:
        return Table({n: self[n] for n in names})

    def drop(self, predicate: Callable[[str], bool]) -> Table:
        """Without the columns whose name satisfies `predicate`."""
        return Table({n: c for n, c in self._cols.items() if not predicate(n)})

    def rows(self) -> Iterator[dict[str, Any]]:
        names = list(self._cols)
        for values in zip(*self._cols.values(), strict=True):
            yield dict(zip(names, values, strict=True))

    def row(self, i: int) -> dict[str, Any]:
        return {n: c[i] for n, c in self._cols.items()}

    def where(self, mask: Sequence[bool]) -> Table:
        """The rows where `mask` is true, in order."""
        keep = [i for i, m in enumerate(mask) if m]
        return self.take(keep)

    def slice(self, start: int, stop: int) -> Table:
        """Rows `start` to `stop` (typed columns: views of the same buffer, no copy)."""
        out: dict[str, Column] = {}
        for n, c in self._cols.items():
            out[n] = c[start:stop]
        return Table(out)

    def take(self, indices: Sequence[int]) -> Table:
        """The rows at `indices`, in that order (typed columns stay typed)."""
        out: dict[str, Column] = {}
        for n, c in self._cols.items():
            if isinstance(c, memoryview):
                out[n] = memoryview(array.array(c.format, [c[i] for i in indices]))
            else:
                out[n] = [c[i] for i in indices]
        return Table(out)

    @classmethod
    def from_polars(cls, df: Any) -> Table:
        """A Table of a polars DataFrame (as `open_results` reads Parquet):
        unsigned / signed 64-bit integers, floats without nulls and booleans
        as typed buffers, everything else as lists."""
        import polars as pl

        cols: dict[str, Column] = {}
        for name in df.columns:
            s = df[name]
            fmt = {pl.UInt64: "Q", pl.Int64: "q", pl.Float64: "d", pl.Boolean: "?"}.get(s.dtype)
            if fmt is not None and s.null_count() == 0:
                arr = s.to_numpy()
                cols[name] = memoryview(arr.tobytes()).cast("B").cast(fmt)
            else:
                cols[name] = s.to_list()
        return cls(cols)

    def to_polars(self) -> Any:
        """A polars DataFrame (numeric columns without a copy through numpy)."""
        import numpy as np
        import polars as pl

        data = {}
        for n, c in self._cols.items():
            if isinstance(c, memoryview):
                data[n] = pl.Series(n, np.asarray(c))
            else:
                data[n] = pl.Series(n, list(c), strict=False)
        return pl.DataFrame(data)

    def __repr__(self) -> str:
        return f"<Table {len(self)} rows: {', '.join(self._cols)}>"


def seq_sum(values: Sequence[float]) -> float:
    """Sum in row order, as a loop adds them (0.0 for no values): exactly the
    engine's and polars' `cum_sum`, unlike Python 3.12's compensated `sum`."""
    return reduce(add, values, 0.0)


def seq_mean(values: Sequence[float]) -> float | None:
    """Mean in row order, None for no values."""
    return seq_sum(values) / len(values) if len(values) else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile with linear interpolation between the two nearest
    ranks (numpy's default `method="linear"`, Hyndman and Fan's type 7),
    computed as numpy 2 computes it, to the last bit; None for no values."""
    n = len(values)
    if n == 0:
        return None
    v = sorted(values)
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        return float(v[-1])
    if virtual < 0:
        return float(v[0])
    prev = float(int(virtual))  # floor: virtual >= 0
    gamma = virtual - prev
    a, b = v[int(prev)], v[int(prev) + 1]
    diff = b - a
    # numpy's _lerp: a + (b - a) t, and b - (b - a)(1 - t) from t = 1/2 on.
    return float(b - diff * (1 - gamma)) if gamma >= 0.5 else float(a + diff * gamma)


def _list_kind(values: Sequence[Any]) -> str | None:
    """The Parquet type of a column of Python values by its first value
    that is not None; None when it has no such value (no rows, or nulls
    only: the type is another chunk's, or the declaration's)."""
    first = next((v for v in values if v is not None), None)
    if first is None:
        return None
    if isinstance(first, str):
        return "str"
    if isinstance(first, bool):
        return "bool"
    if isinstance(first, int):
        return "i64"
    return "f64"


#: A declared column type (crates/cnsim-core/src/outputs.rs) -> the kind the
#: engine's writer takes for it: a list of values, or (u64) a typed buffer.
_DECLARED_KINDS = {"str": "str", "i64": "i64", "f64": "f64", "bool": "bool", "u64": "<u8"}


def write_parquet(
    path: Any,
    chunks: Sequence[Table],
    *,
    seed_column: Sequence[int] | None = None,
    metadata: Sequence[tuple[str, str]] = (),
    declared: str | None = None,
) -> None:
    """Writes tables of one schema, one after the other, as one Parquet file
    (through the engine's writer: no DataFrame is built). With
    `seed_column`, each chunk gets a first column `seed` (Int64) holding its
    seed. `declared`: the file's declaration (outputs.rs, by name: `flows`,
    `queues`, ...), which gives a column of Python values its type even when
    no chunk has a value in it (a seed without rows writes the schema of any
    other), and the columns of a file with no chunk at all; a column it does
    not declare is typed by its values (str, int, float; None is null),
    taken from the first chunk that has one, else a float column of nulls.
    `metadata`: key-value pairs for the file's footer (the run that wrote it)."""
    import cnsim._core as _core

    from .declarations import output_type

    kinds: dict[str, str] = {}
    for t in chunks:
        for n, c in t._cols.items():
            if n in kinds or isinstance(c, memoryview):
                continue
            d = output_type(declared, n) if declared is not None else None
            k = _DECLARED_KINDS[d] if d is not None and d != "u64" else _list_kind(c)
            if k is not None:
                kinds[n] = k
    out = []
    for i, t in enumerate(chunks):
        cols: list[tuple[str, str, Any]] = []
        if seed_column is not None:
            cols.append(("seed", "seed", (int(seed_column[i]), len(t))))
        for n, c in t._cols.items():
            if isinstance(c, memoryview):
                cols.append((n, _TAGS[c.format], c.cast("B") if c.format == "?" else c))
            else:
                cols.append((n, kinds.get(n, "f64"), list(c)))
        out.append(cols)
    if not out and declared is not None:
        from .declarations import output_columns

        cols = [("seed", "seed", (0, 0))] if seed_column is not None else []
        for n, d in output_columns(declared):
            if n == "seed" or "<" in n:  # the seed is the writer's; a per-window column needs the windows
                continue
            k = _DECLARED_KINDS[d]
            fmt = {v: f for f, v in _TAGS.items()}.get(k)
            cols.append((n, k, [] if fmt is None else memoryview(array.array("B" if fmt == "?" else fmt))))
        out.append(cols)
    _core.write_parquet(str(path), out, list(metadata))
