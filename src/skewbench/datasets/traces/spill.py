"""The external sort of an ingest: dense key ids in order of first appearance (:class:`KeyDict`),
pass 1 spilling the parsed columns to a scratch directory (:class:`Spill`) and pass 2 writing
them in stable time order (:func:`emit`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skewbench.datasets.contract import DatasetWriter

PART_ROWS = 1 << 20             # rows per output Parquet part


class KeyDict:
    """Assigns dense ids to key strings in order of first appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def encode(self, keys: pa.Array) -> np.ndarray:
        if len(keys) == 0:
            return np.zeros(0, dtype=np.int64)
        enc = pc.dictionary_encode(keys)
        ids = self.ids
        uniq = enc.dictionary.to_pylist()
        gid = np.fromiter((ids.setdefault(s, len(ids)) for s in uniq), dtype=np.int64,
                          count=len(uniq))
        return gid[enc.indices.to_numpy(zero_copy_only=False)]

    def names(self) -> list[str]:
        return list(self.ids)


@dataclass
class _Chunk:
    start: int
    rows: int
    tmin: float


class Spill:
    """Pass-1 output: the parsed columns appended to raw files in a scratch directory."""

    def __init__(self, directory: Path, columns: Sequence[str]):
        self.dir = directory
        self.columns = [c for c in ("ts", "key", "cost", "value") if c in columns]
        self.files = {c: open(directory / f"{c}.bin", "wb") for c in self.columns}
        self.chunks: list[_Chunk] = []
        self.rows = 0
        self.running_max = -math.inf
        self.reordered = 0

    def add(self, cols: dict[str, np.ndarray]) -> None:
        n = len(cols["key"])
        if n == 0:
            return
        ts = cols["ts"]
        if ts is None:
            ts = np.arange(self.rows, self.rows + n, dtype=np.float64)
        ts = np.ascontiguousarray(ts, dtype=np.float64)
        prior = np.empty(n)
        prior[0] = self.running_max
        if n > 1:
            np.maximum.accumulate(ts[:-1], out=prior[1:])
            np.maximum(prior[1:], self.running_max, out=prior[1:])
        self.reordered += int(np.count_nonzero(ts < prior))
        self.running_max = max(self.running_max, float(ts.max()))
        data = {**cols, "ts": ts}
        for c in self.columns:
            dtype = np.int64 if c == "key" else np.float64
            np.ascontiguousarray(data[c], dtype=dtype).tofile(self.files[c])
        self.chunks.append(_Chunk(self.rows, n, float(ts.min())))
        self.rows += n

    def close(self) -> None:
        for f in self.files.values():
            f.close()

    def read(self, i: int, columns: Sequence[str]) -> dict[str, np.ndarray]:
        ch = self.chunks[i]
        out = {}
        for c in columns:
            dtype = np.int64 if c == "key" else np.float64
            out[c] = np.fromfile(self.dir / f"{c}.bin", dtype=dtype, count=ch.rows,
                                 offset=ch.start * 8)
        return out


class _PartBuffer:
    """Collects emitted rows and appends them to the writer in parts of ``PART_ROWS`` rows."""

    def __init__(self, writer: DatasetWriter, columns: Sequence[str]):
        self.writer = writer
        self.columns = list(columns)
        self.pending: list[dict[str, np.ndarray]] = []
        self.n = 0

    def add(self, cols: dict[str, np.ndarray]) -> None:
        if len(cols["key"]) == 0:
            return
        self.pending.append(cols)
        self.n += len(cols["key"])
        if self.n >= PART_ROWS:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        if not self.pending:
            return
        allc = {c: np.concatenate([p[c] for p in self.pending]) for c in self.columns}
        n = len(allc["key"])
        full = n if final else n - n % PART_ROWS
        for s in range(0, full, PART_ROWS):
            self.writer.append({c: v[s:s + PART_ROWS] for c, v in allc.items()})
        rest = {c: v[full:] for c, v in allc.items()}
        self.pending = [rest] if n > full else []
        self.n = n - full

    def close(self) -> None:
        self._flush(final=True)


def _sorted(run: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    ts = run["ts"]
    if len(ts) > 1 and np.any(ts[1:] < ts[:-1]):
        order = np.argsort(ts, kind="stable")
        return {c: v[order] for c, v in run.items()}
    return run


def emit(spill: Spill, writer: DatasetWriter, data_columns: Sequence[str], n_keys: int,
          t0: float) -> np.ndarray | None:
    """Pass 2: write the spilled tuples in stable time order.

    Each spilled chunk is sorted stably into a *run*; the runs not yet written are kept in input
    order.  After chunk ``i`` every buffered tuple with a time ``<=`` the smallest time of the
    chunks still to come can be written.  The runs are merged (a stable sort of their
    concatenation, in input order, so ties keep input order) only when at least half of the
    buffer can be written, which keeps the work linear; the buffer holds only as much as the
    data is out of order (everything, if the last chunk goes back to the first time).

    Returns the old-id -> new-id map when the order changed (ids then follow first appearance
    in the sorted stream), else ``None``.
    """
    cols = [c for c in ("ts", "key", "cost", "value") if c in data_columns]
    mins = np.array([c.tmin for c in spill.chunks])
    after = np.append(np.minimum.accumulate(mins[::-1])[::-1][1:], np.inf)
    remap = np.full(n_keys, -1, dtype=np.int64) if spill.reordered else None
    next_id = 0
    out = _PartBuffer(writer, cols)
    runs: list[dict[str, np.ndarray]] = []
    buffered = 0
    for i in range(len(spill.chunks)):
        runs.append(_sorted(spill.read(i, cols)))
        buffered += len(runs[-1]["ts"])
        ready = sum(int(np.searchsorted(r["ts"], after[i], side="right")) for r in runs)
        if ready == 0 or 2 * ready < buffered and i + 1 < len(spill.chunks):
            continue
        cur = runs[0] if len(runs) == 1 else \
            _sorted({c: np.concatenate([r[c] for r in runs]) for c in cols})
        emit = {c: v[:ready] for c, v in cur.items()}
        runs = [{c: v[ready:] for c, v in cur.items()}] if ready < buffered else []
        buffered -= ready
        if remap is not None:
            keys = emit["key"]
            uniq, first = np.unique(keys, return_index=True)
            new = remap[uniq] < 0
            fresh = uniq[new][np.argsort(first[new], kind="stable")]
            remap[fresh] = np.arange(next_id, next_id + len(fresh))
            next_id += len(fresh)
            emit["key"] = remap[keys]
        if t0:
            emit["ts"] = emit["ts"] - t0
        out.add(emit)
    if buffered:  # cannot happen: the last threshold is +inf
        raise RuntimeError("internal: tuples left after the last chunk")
    out.close()
    if remap is not None and next_id != n_keys:
        raise RuntimeError(f"internal: {next_id} of {n_keys} keys seen while re-numbering")
    return remap
