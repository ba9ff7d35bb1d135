"""The generic ``csv`` trace format: a CSV or TSV file with a header, or a Parquet file, whose key,
time, cost and value columns are named by the caller (see :mod:`skewbench.datasets.traces`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from skewbench.datasets.traces.formats import Format
from skewbench.datasets.traces.reading import (Block, Prepared, Rows, blank_mask, clip, column_of, floats, iter_blocks,
                                               np_bool, ordered_map, prepare, read_delimited, rows_from_block, take)
from skewbench.errors import SkewbenchError

PARQUET_BATCH_ROWS = 1 << 20


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


class Csv(Format):
    name = "csv"
    t0_param = "t0"

    def __init__(self, key_column: str, time_column: str | None, cost_column: str | None,
                 value_column: str | None, time_unit: float):
        super().__init__(key_column)
        self.key_column = key_column
        self.time_column = time_column
        self.cost_column = cost_column
        self.value_column = value_column
        self.time_unit = time_unit
        self.relative_time = time_column is not None
        self.columns = ("seq", "ts", "key") + (("cost",) if cost_column else ()) \
            + (("value",) if value_column else ())
        self.needed = [c for c in (key_column, time_column, cost_column, value_column) if c]
        self.needed = list(dict.fromkeys(self.needed))

    def _check_header(self, path: Path, names: list[str]) -> None:
        for role, col in (("key", self.key_column), ("time", self.time_column),
                          ("cost", self.cost_column), ("value", self.value_column)):
            if col is None:
                continue
            if col not in names:
                shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
                raise SkewbenchError(f"{path}: {role} column {col!r} is not in the header; "
                                     f"columns are: {shown}")
            if names.count(col) > 1:
                raise SkewbenchError(f"{path}: {role} column {col!r} appears more than once "
                                     "in the header")

    def iter_rows(self, path: Path, progress) -> Iterator[Rows]:
        if _is_parquet(path):
            yield from self._iter_parquet(path, progress)
            return
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") or \
            any(s.lower() in (".tsv", ".tab") for s in path.suffixes) else ","

        def tasks() -> Iterator[Callable[[], Rows]]:
            names: list[str] | None = None
            for block in iter_blocks(path, progress):
                skip_through = -1
                if names is None:
                    nb = np.flatnonzero(~blank_mask(block))
                    if len(nb) == 0:            # only blank lines so far: no header yet
                        yield partial(self._parse_text, block, None, -1, delimiter)
                        continue
                    skip_through = int(nb[0])
                    names = self._parse_header(path, block, skip_through, delimiter)
                yield partial(self._parse_text, block, names, skip_through, delimiter)

        yield from ordered_map(tasks())

    def _parse_text(self, block: Block, names: list[str] | None, skip_through: int,
                    delimiter: str) -> Rows:
        if names is None:
            return rows_from_block(prepare(block), [], keys=pa.array([], type=pa.string()))
        prep = prepare(block, quotes=True, skip_through=skip_through)
        table, row_idx, bad = read_delimited(prep, names, self.needed, delimiter, '"')
        cols = {c: column_of(table, c) for c in self.needed}
        return self._finish_text(prep, row_idx, bad, cols)

    def _parse_header(self, path: Path, block: Block, h: int, delimiter: str) -> list[str]:
        raw = block.data[block.starts[h]:block.starts[h + 1]]
        try:
            names = pcsv.read_csv(pa.BufferReader(raw), parse_options=pcsv.ParseOptions(
                delimiter=delimiter)).column_names
        except pa.ArrowException as e:
            raise SkewbenchError(f"{path}: cannot parse the header line {block.line_number(h)}: "
                                 f"{e}") from None
        self._check_header(path, names)
        return names

    def _finish_text(self, prep: Prepared, row_idx: np.ndarray, bad: np.ndarray,
                     cols: dict[str, pa.Array]) -> Rows:
        key = cols[self.key_column]
        ok = np_bool(pc.greater(pc.binary_length(key), 0))
        ts = cost = value = None
        if self.time_column:
            t_ok, ts = floats(cols[self.time_column])
            ok &= t_ok
        if self.cost_column:
            c_ok, cost = floats(cols[self.cost_column])
            ok &= c_ok & (cost > 0)
        if self.value_column:
            v_ok, value = floats(cols[self.value_column])
            ok &= v_ok
        return rows_from_block(prep, [bad, row_idx[~ok]], keys=take(key, ok),
                                ts=None if ts is None else ts[ok] * self.time_unit,
                                cost=None if cost is None else cost[ok],
                                value=None if value is None else value[ok])

    # -- Parquet

    def _iter_parquet(self, path: Path, progress) -> Iterator[Rows]:
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as e:
            raise SkewbenchError(f"{path}: cannot read as Parquet: {e}") from None
        names = pf.schema_arrow.names
        self._check_header(path, names)
        total = max(pf.metadata.num_rows, 1)
        size = path.stat().st_size
        done_rows, reported, row0 = 0, 0, 1
        try:
            for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=self.needed):
                yield self._parquet_batch(path, batch, row0)
                row0 += batch.num_rows
                done_rows += batch.num_rows
                if progress is not None:
                    pos = size * done_rows // total
                    if pos > reported:
                        progress(pos - reported)
                        reported = pos
        except (pa.ArrowException, OSError) as e:
            raise SkewbenchError(f"{path}: cannot read Parquet data: {e}") from None
        if progress is not None and size > reported:
            progress(size - reported)

    def _parquet_batch(self, path: Path, batch: pa.RecordBatch, row0: int) -> Rows:
        n = batch.num_rows
        raw_key = batch.column(self.key_column)
        key = self._as_text(path, self.key_column, raw_key)
        ok = np_bool(pc.and_(key.is_valid(), pc.greater(pc.binary_length(key), 0)))
        ts = cost = value = None
        if self.time_column:
            t_ok, ts = self._parquet_numbers(path, self.time_column, batch.column(self.time_column),
                                             time=True)
            ok &= t_ok
        if self.cost_column:
            c_ok, cost = self._parquet_numbers(path, self.cost_column,
                                               batch.column(self.cost_column))
            ok &= c_ok & (cost > 0)
        if self.value_column:
            v_ok, value = self._parquet_numbers(path, self.value_column,
                                                batch.column(self.value_column))
            ok &= v_ok
        bad = np.flatnonzero(~ok)

        def example(row: int) -> str:
            i = row - row0
            vals = {c: batch.column(c)[i].as_py() for c in self.needed}
            return clip(f"row {row}: {vals}")

        return Rows(path=path, lines=n, malformed=bad + row0, example=example,
                     keys=take(key, ok), ts=None if ts is None else ts[ok] * self.time_unit,
                     cost=None if cost is None else cost[ok],
                     value=None if value is None else value[ok])

    @staticmethod
    def _as_text(path: Path, col: str, a: pa.Array) -> pa.Array:
        if pa.types.is_dictionary(a.type):
            a = a.dictionary_decode()
        if pa.types.is_large_string(a.type) or pa.types.is_string_view(a.type):
            return a.cast(pa.string())
        if pa.types.is_string(a.type):
            return a
        try:
            return a.cast(pa.string())
        except pa.ArrowException as e:
            raise SkewbenchError(f"{path}: column {col!r} of type {a.type} cannot be used as a "
                                 f"key: {e}") from None

    def _parquet_numbers(self, path: Path, col: str, a: pa.Array,
                         time: bool = False) -> tuple[np.ndarray, np.ndarray]:
        if pa.types.is_dictionary(a.type):
            a = a.dictionary_decode()
        t = a.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            a = a.cast(pa.string())
            valid = np_bool(a.is_valid())
            ok, vals = floats(a.fill_null(""))
            return ok & valid, vals
        if time and pa.types.is_timestamp(t):
            per_s = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[t.unit]
            vals = pc.cast(a, pa.int64()).to_numpy(zero_copy_only=False)
            vals = np.asarray(vals, dtype=np.float64) / per_s
        elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) \
                or pa.types.is_boolean(t):
            vals = np.asarray(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False),
                              dtype=np.float64)
        else:
            raise SkewbenchError(f"{path}: column {col!r} has type {t}; it must be numeric"
                                 + (" or a timestamp" if time else ""))
        vals = np.where(np_bool(a.is_valid()), vals, np.nan)
        return np.isfinite(vals), vals
