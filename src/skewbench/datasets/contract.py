"""The stream dataset contract: what every stage of skewbench reads and writes.

A *stream dataset* is a directory::

    DIR/
      _skewbench.json         metadata (below); its presence marks a complete dataset
      _keys.parquet           traces only: the key dictionary, columns key int64, name string
      part-000000.parquet     the tuples, in stream order: files sorted by name, rows in file order
      part-000001.parquet
      ...

Names starting with ``_`` are ignored by Spark's Parquet reader, so ``spark.read.parquet(DIR)``
reads exactly the tuples.

Columns (Parquet, in this order):

========  =======  ==========================================================================
column    type     meaning
========  =======  ==========================================================================
seq       int64    position in the stream, ``0..m-1``, strictly increasing in stream order
ts        float64  arrival time in seconds, non-decreasing
key       int64    dense key id in ``[0, n_keys)``
cost      float64  optional; execution time in milliseconds, ``> 0``
value     float64  optional; a numeric payload (e.g. a taxi fare) for aggregation queries
========  =======  ==========================================================================

No column holds nulls.  Metadata (``_skewbench.json``), one JSON object:

* ``schema_version`` (int, currently 1), ``kind`` (``synthetic`` or ``trace``);
* ``generator`` (synthetic) or ``source`` (trace: format and input path), ``params`` (every
  parameter that produced the data), ``seed`` (synthetic; ``null`` for traces);
* ``n_keys`` (size of the key space), ``tuples`` (row count ``m``), ``columns`` (present
  columns, in order), ``fingerprint`` (below), ``files`` (``[{"name", "rows", "bytes"}]`` in order;
  ``bytes`` since 2026-11: a file of another size fails :func:`open_dataset`, and every page
  carries a CRC that readers verify);
* optional: ``tables`` (side tables: ``[{"name", "file", "rows", "digest"}]``, below), ``name`` (catalog name), ``expected_top`` (Zipf: the ids and exact probabilities of
  the most probable keys, used by validation), ``ingest`` (traces: lines read, tuples kept,
  malformed lines and examples), ``phases`` (drifting streams: per-phase tuple ranges).

*Side tables* (optional) carry structured data beside the rows, for a family whose instances are
not only a stream: ``_<name>.parquet`` files (ignored by Spark's reader, like the key dictionary),
each listed in ``tables`` with its row count and a digest of its contents (column names, types
and values).  A job graph, for example, stores its tasks as the rows (``key`` = the task's group,
``cost`` = its processing cost) and its groups, edges and nodes as side tables.  The digests
enter the fingerprint, so changing any table changes it.

The *fingerprint* is a 128-bit hash of the column contents, rendered as 32 hex digits.  Each row
is hashed with splitmix64 over ``(seq, ts, key, cost, value)`` bit patterns in two independent
lanes and the row hashes are summed modulo 2**64 per lane; the two sums and the list of present
columns are then digested with BLAKE2b.  A sum does not depend on how rows are split into files
or Spark partitions, so tasks compute partial fingerprints in parallel and the driver adds them,
and the same data always has the same fingerprint.  It is a content check, not a cryptographic
signature.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from skewbench.jit import njit

from skewbench import __version__
from skewbench.errors import DatasetError
from skewbench.hashing import mix64

SCHEMA_VERSION = 1
METADATA_FILE = "_skewbench.json"
KEYS_FILE = "_keys.parquet"
PART_PATTERN = "part-{:06d}.parquet"

REQUIRED_COLUMNS = ("seq", "ts", "key")
OPTIONAL_COLUMNS = ("cost", "value")
ALL_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
COLUMN_TYPES: dict[str, pa.DataType] = {
    "seq": pa.int64(),
    "ts": pa.float64(),
    "key": pa.int64(),
    "cost": pa.float64(),
    "value": pa.float64(),
}
KEYS_SCHEMA = pa.schema([pa.field("key", pa.int64(), nullable=False),
                         pa.field("name", pa.string(), nullable=False)])

# Parquet writing options: seq is delta-encoded to almost nothing, keys (and costs, which often
# take few distinct values) are dictionary-encoded, snappy-compressed (measured fastest here:
# about 20M rows/s on one core for seq/ts/key).  Doubles stay PLAIN: Spark 4.2's vectorized
# Parquet reader rejects BYTE_STREAM_SPLIT, which would otherwise save about 40% of the bytes.
_WRITE_OPTS = dict(
    compression="snappy",
    use_dictionary=["key", "cost"],
    column_encoding={"seq": "DELTA_BINARY_PACKED"},
    write_statistics=True,
    write_page_checksum=True,  # a CRC per page: readers verify it, so a flipped bit is an error
)


def arrow_schema(columns: Sequence[str]) -> pa.Schema:
    """The Arrow schema of a dataset with the given present columns (in contract order)."""
    check_columns(columns)
    return pa.schema([pa.field(c, COLUMN_TYPES[c], nullable=False) for c in columns])


def check_columns(columns: Sequence[str]) -> list[str]:
    cols = list(columns)
    if cols[:3] != list(REQUIRED_COLUMNS):
        raise DatasetError(f"columns must start with seq, ts, key; got {cols}")
    extra = cols[3:]
    if any(c not in OPTIONAL_COLUMNS for c in extra) or extra != sorted(extra, key=OPTIONAL_COLUMNS.index) \
            or len(set(extra)) != len(extra):
        raise DatasetError(f"optional columns must be a subset of {list(OPTIONAL_COLUMNS)} in that order; got {cols}")
    return cols


# --------------------------------------------------------------------------------------------
# fingerprint

_LANE_SEEDS = (np.uint64(0x243F6A8885A308D3), np.uint64(0x13198A2E03707344))
_COL_TAGS = np.array([0x0A, 0x1B, 0x2C, 0x3D, 0x4E], dtype=np.uint64)


@njit(cache=True)
def _fp_lane(seq, ts_bits, key, cost_bits, value_bits, has_cost, has_value, lane_seed):
    acc = np.uint64(0)
    for i in range(seq.shape[0]):
        h = mix64(lane_seed ^ np.uint64(seq[i]))
        h = mix64(h ^ ts_bits[i])
        h = mix64(h ^ np.uint64(key[i]))
        if has_cost:
            h = mix64(h ^ cost_bits[i])
        if has_value:
            h = mix64(h ^ value_bits[i])
        acc += h
    return acc


def fingerprint_partial(columns: Mapping[str, np.ndarray]) -> tuple[int, int]:
    """Order-invariant partial fingerprint (two uint64 lane sums) of a chunk of rows."""
    seq = np.ascontiguousarray(columns["seq"], dtype=np.int64)
    ts = np.ascontiguousarray(columns["ts"], dtype=np.float64).view(np.uint64)
    key = np.ascontiguousarray(columns["key"], dtype=np.int64)
    empty = np.zeros(0, dtype=np.uint64)
    cost = columns.get("cost")
    value = columns.get("value")
    cost_b = np.ascontiguousarray(cost, dtype=np.float64).view(np.uint64) if cost is not None else empty
    value_b = np.ascontiguousarray(value, dtype=np.float64).view(np.uint64) if value is not None else empty
    return tuple(int(_fp_lane(seq, ts, key, cost_b, value_b, cost is not None, value is not None, s))
                 for s in _LANE_SEEDS)  # type: ignore[return-value]


def combine_partials(partials: Sequence[tuple[int, int]]) -> tuple[int, int]:
    mask = (1 << 64) - 1
    lo = sum(p[0] for p in partials) & mask
    hi = sum(p[1] for p in partials) & mask
    return lo, hi


def fingerprint_digest(partial: tuple[int, int], columns: Sequence[str],
                       tables: Sequence[Mapping[str, Any]] = ()) -> str:
    """Final fingerprint: BLAKE2b over the schema version, present columns and lane sums (and the
    side tables' names and digests, when there are any)."""
    text = f"skewbench-v{SCHEMA_VERSION}|{','.join(columns)}|{partial[0]:016x}{partial[1]:016x}"
    if tables:
        text += "|tables:" + ",".join(f"{t['name']}={t['digest']}" for t in sorted(tables, key=lambda t: t["name"]))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def table_digest(table: pa.Table) -> str:
    """A content digest of a side table: its column names, types and values, in row order."""
    h = hashlib.blake2b(digest_size=16)
    for name, col in zip(table.column_names, table.columns):
        h.update(f"|{name}:{col.type}|".encode())
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            h.update(np.ascontiguousarray(col.to_numpy(zero_copy_only=False)).tobytes())
        else:
            h.update(json.dumps(col.to_pylist(), default=str).encode())
    return h.hexdigest()


SIDE_PATTERN = "_{}.parquet"


def write_side_table(directory: str | os.PathLike, name: str, table: pa.Table) -> dict[str, Any]:
    """Write the side table ``_<name>.parquet``; returns its entry of the metadata's ``tables``."""
    if not name.isidentifier() or name == "keys":
        raise DatasetError(f"internal: bad side table name {name!r}")
    file = SIDE_PATTERN.format(name)
    pq.write_table(table, os.path.join(os.fspath(directory), file), compression="zstd", write_page_checksum=True)
    return {"name": name, "file": file, "rows": table.num_rows, "digest": table_digest(table)}


# --------------------------------------------------------------------------------------------
# writing

@dataclass
class PartInfo:
    """What a writer task reports about one Parquet part it wrote."""

    name: str
    rows: int
    first_seq: int
    last_seq: int
    fp: tuple[int, int]
    key_max: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rows": self.rows, "first_seq": self.first_seq,
                "last_seq": self.last_seq, "fp": list(self.fp), "key_max": self.key_max}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "PartInfo":
        return PartInfo(d["name"], int(d["rows"]), int(d["first_seq"]), int(d["last_seq"]),
                        (int(d["fp"][0]), int(d["fp"][1])), int(d["key_max"]))


def write_part(directory: str | os.PathLike, index: int, columns: Mapping[str, np.ndarray],
               column_names: Sequence[str]) -> PartInfo:
    """Write one part file ``part-{index:06d}.parquet`` and return its :class:`PartInfo`.

    ``columns`` maps names to equal-length numpy arrays; ``column_names`` fixes which are present.
    """
    names = check_columns(column_names)
    arrays = [pa.array(np.ascontiguousarray(columns[c], dtype=COLUMN_TYPES[c].to_pandas_dtype()))
              for c in names]
    table = pa.Table.from_arrays(arrays, schema=arrow_schema(names))
    name = PART_PATTERN.format(index)
    opts = dict(_WRITE_OPTS)
    opts["use_dictionary"] = [c for c in opts["use_dictionary"] if c in names]
    pq.write_table(table, os.path.join(os.fspath(directory), name), row_group_size=1 << 20, **opts)
    rows = table.num_rows
    seq = columns["seq"]
    return PartInfo(name=name, rows=rows,
                    first_seq=int(seq[0]) if rows else -1, last_seq=int(seq[-1]) if rows else -1,
                    fp=fingerprint_partial({c: columns[c] for c in names}),
                    key_max=int(np.max(columns["key"])) if rows else -1)


def write_key_dictionary(directory: str | os.PathLike, names: Sequence[str] | pa.Array) -> None:
    """Write ``_keys.parquet``: key id ``i`` is ``names[i]``."""
    arr = pa.array(names, type=pa.string()) if not isinstance(names, pa.Array) else names.cast(pa.string())
    table = pa.Table.from_arrays([pa.array(np.arange(len(arr), dtype=np.int64)), arr], schema=KEYS_SCHEMA)
    pq.write_table(table, os.path.join(os.fspath(directory), KEYS_FILE), compression="zstd")


#: the lock file in a staging directory: held (flock) by the process writing it, for as long as it
#: lives, so a staging directory whose lock can be taken belongs to a process that died (killed by a
#: signal, say) and is left over; removed before the directory becomes the dataset
STAGING_LOCK = ".skewbench-staging.lock"
#: staging directories this process holds: path -> the lock's file descriptor
_HELD: dict[str, int] = {}
#: a staging directory without its lock file (created a moment before the lock) counts as left
#: over only when older than this (seconds)
STAGING_GRACE = 60.0


def staging_dir(out_dir: str | os.PathLike) -> Path:
    """A fresh temporary directory beside ``out_dir`` (same filesystem, so rename is atomic), locked
    by this process (:data:`STAGING_LOCK`); the staging directories an earlier, killed writer of
    the same ``out_dir`` left beside it are removed first (:func:`clean_stale_staging`)."""
    import fcntl

    out = Path(out_dir).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(out)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    fd = os.open(tmp / STAGING_LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, f"{os.getpid()}\n".encode())
    _HELD[str(tmp)] = fd
    return tmp


def release_staging(tmp: str | os.PathLike) -> None:
    """Remove a staging directory's lock file and release the lock (before it becomes the dataset,
    or once it is removed)."""
    fd = _HELD.pop(str(Path(tmp)), None)
    try:
        os.unlink(Path(tmp) / STAGING_LOCK)
    except OSError:
        pass
    if fd is not None:
        os.close(fd)


def clean_stale_staging(out_dir: str | os.PathLike) -> list[Path]:
    """Remove the staging directories of ``out_dir`` (``.<name>.tmp-*`` beside it) whose writer is
    gone: their lock can be taken (its process died, even by SIGKILL: the kernel releases a dead
    process's locks), or they have no lock file and are older than :data:`STAGING_GRACE`.  A live
    writer's directory (this process's or another's) is left alone.  Returns what was removed."""
    import fcntl
    import glob

    out = Path(out_dir).absolute()
    removed = []
    for d in sorted(out.parent.glob(f".{glob.escape(out.name)}.tmp-*")):
        if str(d) in _HELD or not d.is_dir():
            continue
        try:
            fd = os.open(d / STAGING_LOCK, os.O_RDWR)
        except FileNotFoundError:
            try:
                if time.time() - d.stat().st_mtime < STAGING_GRACE:
                    continue
            except OSError:
                continue
        except OSError:
            continue
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # its writer holds it: alive
                os.close(fd)
                continue
            os.close(fd)
        discard_dir(d, settle=5.0)
        removed.append(d)
    return removed


def check_target(out_dir: str | os.PathLike, overwrite: bool) -> None:
    """Refuse to clobber an existing output unless asked to, before any work starts."""
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise DatasetError(f"{out} already exists; pass --overwrite to replace it")
    if out.exists() and not out.is_dir():
        raise DatasetError(f"{out} exists and is not a directory")


def finalize(tmp: str | os.PathLike, out_dir: str | os.PathLike, parts: Sequence[PartInfo],
             meta: Mapping[str, Any], overwrite: bool = False) -> dict[str, Any]:
    """Check the parts, write the metadata and move the staging directory into place.

    The previous dataset at ``out_dir`` (with ``overwrite``) is replaced only after the new one
    is complete, so a failure at any point leaves either the old dataset or nothing, never half.
    """
    tmp = Path(tmp)
    parts = sorted(parts, key=lambda p: p.name)
    columns = check_columns(meta["columns"])
    expected = 0
    for p in parts:
        if p.rows == 0:
            continue
        if p.first_seq != expected or p.last_seq != expected + p.rows - 1:
            raise DatasetError(f"internal: part {p.name} covers seq {p.first_seq}..{p.last_seq}, "
                               f"expected to start at {expected}")
        expected += p.rows
    tuples = expected
    n_keys = int(meta["n_keys"])
    key_max = max((p.key_max for p in parts), default=-1)
    if key_max >= n_keys:
        raise DatasetError(f"key id {key_max} out of range for n_keys={n_keys}")
    full = {
        "schema_version": SCHEMA_VERSION,
        "created_by": f"skewbench {__version__}",
        **{k: v for k, v in meta.items()},
        "columns": columns,
        "tuples": tuples,
        "fingerprint": fingerprint_digest(combine_partials([p.fp for p in parts]), columns, meta.get("tables") or ()),
        "files": [{"name": p.name, "rows": p.rows, "bytes": (tmp / p.name).stat().st_size} for p in parts],
    }
    with open(tmp / METADATA_FILE, "w") as f:
        json.dump(full, f, indent=2, sort_keys=False, default=_json_default)
        f.write("\n")
    out = Path(out_dir).absolute()
    if out.exists() and not overwrite:
        release_staging(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        raise DatasetError(f"{out} already exists; pass --overwrite to replace it")
    release_staging(tmp)
    replace_dir(tmp, out)
    return full


def replace_dir(tmp: str | os.PathLike, out: str | os.PathLike) -> None:
    """Move the complete directory ``tmp`` to ``out``, replacing any previous ``out`` only after
    the new one is in place (both on one filesystem, so each rename is atomic)."""
    tmp, out = Path(tmp), Path(out)
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:12]}"
        os.rename(out, old)
    os.rename(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def discard_dir(path: str | os.PathLike, settle: float = 30.0) -> None:
    """Remove a staging or scratch directory that tasks of a failed job may still be writing to.

    When one Spark task fails, the job fails at once, but its other tasks can go on writing for a
    moment.  A plain ``rmtree`` leaves the directory behind if a part is created after it has
    listed the files.  So the directory is first renamed: a late writer's open by the old path
    then fails, as nothing creates the missing parent.  The renamed directory is removed until it
    is gone; a file opened just before the rename is caught by the next pass.  Gives up after
    ``settle`` seconds of retries (a file system refusing to delete), leaving the hidden name.
    """
    p = Path(path)
    if str(p) in _HELD:
        release_staging(p)
    if not p.exists():
        return
    gone = p.parent / f"{p.name}.discarded-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(p, gone)
    except OSError:
        gone = p
    deadline = time.monotonic() + settle
    while True:
        shutil.rmtree(gone, ignore_errors=True)
        if not gone.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o)}")


class DatasetWriter:
    """Write a dataset from an in-process sequence of chunks, atomically.

    >>> with DatasetWriter(out, ["seq", "ts", "key"]) as w:       # doctest: +SKIP
    ...     w.append({"seq": ..., "ts": ..., "key": ...})
    ...     w.commit({"kind": "trace", "source": {...}, "params": {...}, "n_keys": n})

    Leaving the block without :meth:`commit` (or with an exception) removes everything written.
    ``seq`` may be omitted from appended chunks; it is then numbered on from the previous chunk.
    """

    def __init__(self, out_dir: str | os.PathLike, columns: Sequence[str], overwrite: bool = False):
        self.out_dir = Path(out_dir)
        self.columns = check_columns(columns)
        self.overwrite = overwrite
        check_target(self.out_dir, overwrite)
        self.tmp = staging_dir(self.out_dir)
        self.parts: list[PartInfo] = []
        self.rows = 0
        self.tables: list[dict[str, Any]] = []
        self.committed: dict[str, Any] | None = None

    def append(self, chunk: Mapping[str, np.ndarray]) -> None:
        cols = dict(chunk)
        n = len(cols["key"])
        if n == 0:
            return
        if "seq" not in cols:
            cols["seq"] = np.arange(self.rows, self.rows + n, dtype=np.int64)
        missing = [c for c in self.columns if c not in cols]
        if missing:
            raise DatasetError(f"internal: chunk lacks columns {missing}")
        self.parts.append(write_part(self.tmp, len(self.parts), cols, self.columns))
        self.rows += n

    def write_keys(self, names: Sequence[str] | pa.Array) -> None:
        write_key_dictionary(self.tmp, names)

    def write_table(self, name: str, table: pa.Table) -> None:
        """Add a side table (listed in the metadata at :meth:`commit`)."""
        if any(t["name"] == name for t in self.tables):
            raise DatasetError(f"internal: side table {name!r} written twice")
        self.tables.append(write_side_table(self.tmp, name, table))

    def commit(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        extra = {"tables": self.tables} if self.tables else {}
        self.committed = finalize(self.tmp, self.out_dir, self.parts,
                                  {**meta, **extra, "columns": self.columns}, overwrite=self.overwrite)
        return self.committed

    def abort(self) -> None:
        release_staging(self.tmp)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.committed is None:
            self.abort()


# --------------------------------------------------------------------------------------------
# reading

def read_parquet(path: str | os.PathLike, columns: Sequence[str] | None = None, verify: bool = True) -> pa.Table:
    """One Parquet file as a table (page checksums verified unless ``verify`` is False).
    ``pq.read_table`` goes through ``pyarrow.dataset``, which imports pandas (a third of a
    second of every short command)."""
    with pq.ParquetFile(path, page_checksum_verification=verify) as f:
        return f.read(columns=list(columns) if columns is not None else None)


_NUMPY_TYPES = {pa.int64(): np.int64, pa.int32(): np.int32, pa.float64(): np.float64, pa.float32(): np.float32}


def to_numpy(a: pa.Array) -> np.ndarray:
    """A column as a numpy array: a zero-copy view (read-only) of a fixed-width column without
    nulls, which is every column of the contract; pyarrow's own ``to_numpy`` imports pandas on
    its first call (a third of a second of every short replay)."""
    dt = _NUMPY_TYPES.get(a.type)
    if dt is not None and a.null_count == 0:
        return np.frombuffer(a.buffers()[1], dtype=dt, count=len(a), offset=a.offset * np.dtype(dt).itemsize)
    return a.to_numpy(zero_copy_only=False)

@dataclass
class Dataset:
    """A dataset directory opened for reading (metadata checked, files located)."""

    path: Path
    meta: dict[str, Any]
    files: list[Path] = field(default_factory=list)

    @property
    def tuples(self) -> int:
        return int(self.meta["tuples"])

    @property
    def n_keys(self) -> int:
        return int(self.meta["n_keys"])

    @property
    def columns(self) -> list[str]:
        return list(self.meta["columns"])

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.path.name)

    def iter_batches(self, columns: Sequence[str] | None = None,
                     batch_size: int = 1 << 20) -> Iterator[dict[str, np.ndarray]]:
        """Yield the tuples in stream order as dicts of numpy arrays."""
        cols = list(columns) if columns is not None else self.columns
        for f in self.files:
            try:
                pf = pq.ParquetFile(f, page_checksum_verification=True)
                for batch in pf.iter_batches(batch_size=batch_size, columns=cols):
                    yield {c: to_numpy(batch.column(c)) for c in cols}
            except (pa.ArrowException, OSError) as e:
                raise DatasetError(f"{self.path}: cannot read {f.name}: {_one_line(e)}") from None

    def first_value(self, column: str) -> float:
        """The first tuple's value of ``column`` (one small read)."""
        for b in self.iter_batches([column], batch_size=1):
            return float(b[column][0])
        raise DatasetError(f"{self.path}: no tuples")

    def last_value(self, column: str) -> float:
        """The last tuple's value of ``column`` (reads one row group of the last file)."""
        for f in reversed(self.files):
            try:
                pf = pq.ParquetFile(f, page_checksum_verification=True)
                for g in reversed(range(pf.num_row_groups)):
                    col = pf.read_row_group(g, columns=[column]).column(column)
                    if len(col):
                        return float(col[-1].as_py())
            except (pa.ArrowException, OSError) as e:
                raise DatasetError(f"{self.path}: cannot read {f.name}: {_one_line(e)}") from None
        raise DatasetError(f"{self.path}: no tuples")

    def read_table(self, columns: Sequence[str] | None = None) -> pa.Table:
        cols = list(columns) if columns is not None else self.columns
        try:
            tables = [read_parquet(f, cols) for f in self.files]
        except (pa.ArrowException, OSError) as e:
            raise DatasetError(f"{self.path}: cannot read Parquet data: {_one_line(e)}") from None
        if not tables:
            return arrow_schema(self.columns).empty_table().select(cols)
        return pa.concat_tables(tables)

    def read_keys(self) -> np.ndarray:
        return np.concatenate([b["key"] for b in self.iter_batches(["key"])]) if self.files \
            else np.zeros(0, dtype=np.int64)

    @property
    def table_names(self) -> list[str]:
        return [t["name"] for t in self.meta.get("tables") or ()]

    def read_side_table(self, name: str) -> pa.Table:
        """A side table (:data:`SIDE_PATTERN`) by name; :class:`DatasetError` if absent or unreadable."""
        entry = next((t for t in self.meta.get("tables") or () if t["name"] == name), None)
        if entry is None:
            raise DatasetError(f"{self.path}: no side table '{name}' (tables: {', '.join(self.table_names) or 'none'})")
        try:
            table = read_parquet(self.path / entry["file"])
        except (pa.ArrowException, OSError) as e:
            raise DatasetError(f"{self.path}: cannot read side table {entry['file']}: {_one_line(e)}") from None
        if table_digest(table) != entry["digest"]:
            raise DatasetError(f"{self.path}: side table {entry['file']} is not the one the dataset was written with "
                               "(its digest differs): corrupted, or changed after the fingerprint was taken "
                               "(regenerate the dataset)")
        return table

    def key_values(self) -> np.ndarray | None:
        """The keys' values as 64-bit integers, indexed by dense key id, when the key dictionary
        names every key by the canonical decimal text of one (``-?[1-9][0-9]*`` or ``0`` within
        int64: a trace of numeric ids, such as user or job ids); ``None`` otherwise (a synthetic
        stream, or keys that are not numbers), when the dense ids are the values.  This is what an
        engine's partitioner would hash: the real key, not its position in the dictionary."""
        table = self.key_dictionary()
        if table is None or table.num_rows != self.n_keys:
            return None
        ids = to_numpy(table.column("key").combine_chunks())
        if not np.array_equal(ids, np.arange(self.n_keys)):
            return None
        return integer_values(table.column("name").combine_chunks())

    def key_dictionary(self) -> pa.Table | None:
        p = self.path / KEYS_FILE
        if not p.exists():
            return None
        try:
            return read_parquet(p, verify=False)
        except (pa.ArrowException, OSError) as e:
            raise DatasetError(f"{self.path}: cannot read key dictionary: {_one_line(e)}") from None


def integer_values(names: pa.Array) -> np.ndarray | None:
    """The 64-bit integers that key texts ``names`` (a string array) spell, when every one is the
    canonical decimal text of one (``-?[1-9][0-9]*`` or ``0``, within int64); ``None`` otherwise."""
    import pyarrow.compute as pc

    if not pc.all(pc.match_substring_regex(names, r"^(0|-?[1-9][0-9]{0,18})$")).as_py():
        return None
    try:
        values = pc.cast(names, pa.int64())
    except pa.ArrowInvalid:  # beyond int64
        return None
    return np.array(to_numpy(values), dtype=np.int64)  # a writable copy


def _one_line(e: BaseException) -> str:
    """An exception's message on one line (pyarrow's span several)."""
    return " ".join(str(e).split())


def open_dataset(path: str | os.PathLike) -> Dataset:
    """Open a dataset directory, checking that it is complete and that its side tables are the ones
    it was written with (their digests); :class:`DatasetError` if not."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"dataset {p} does not exist")
    if not p.is_dir():
        raise DatasetError(f"dataset {p} is not a directory")
    mp = p / METADATA_FILE
    if not mp.exists():
        raise DatasetError(f"{p} is not a skewbench dataset (no {METADATA_FILE}; "
                           "an interrupted write leaves none)")
    try:
        meta = json.loads(mp.read_text())
    except (OSError, ValueError) as e:
        raise DatasetError(f"{mp}: unreadable metadata: {_one_line(e)}") from None
    if not isinstance(meta, dict):
        raise DatasetError(f"{mp}: metadata must be a JSON object")
    for k in ("schema_version", "columns", "tuples", "n_keys", "fingerprint", "files"):
        if k not in meta:
            raise DatasetError(f"{mp}: metadata lacks '{k}'")
    if meta["schema_version"] != SCHEMA_VERSION:
        raise DatasetError(f"{p}: schema version {meta['schema_version']} is not supported "
                           f"(this skewbench reads version {SCHEMA_VERSION})")
    check_columns(meta["columns"])
    files = []
    for entry in meta["files"]:
        fp = p / entry["name"]
        if not fp.exists():
            raise DatasetError(f"{p}: data file {entry['name']} listed in metadata is missing")
        size = fp.stat().st_size
        if "bytes" in entry and size != entry["bytes"]:
            raise DatasetError(f"{p}: data file {entry['name']} is {size:,} bytes, {entry['bytes']:,} when the dataset "
                               "was written: corrupted or truncated, or changed after its fingerprint was taken "
                               "(regenerate or re-ingest it)")
        files.append(fp)
    for entry in meta.get("tables") or ():
        if not isinstance(entry, dict) or not {"name", "file", "rows", "digest"} <= set(entry):
            raise DatasetError(f"{mp}: malformed side table entry {entry!r}")
        if not (p / entry["file"]).exists():
            raise DatasetError(f"{p}: side table {entry['file']} listed in metadata is missing")
    ds = Dataset(path=p, meta=meta, files=files)
    for name in ds.table_names:  # each side table's digest (small tables): a changed one is refused here,
        ds.read_side_table(name)  # by every family's replay, not only by the ones that read the tables
    return ds


def recompute_fingerprint(ds: Dataset) -> str:
    """Recompute the fingerprint from the data (reads every row)."""
    partials = [fingerprint_partial(b) for b in ds.iter_batches()]
    tables = [{"name": n, "digest": table_digest(ds.read_side_table(n))} for n in ds.table_names]
    return fingerprint_digest(combine_partials(partials), ds.columns, tables)
