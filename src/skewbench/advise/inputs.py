"""Reading the keys ``skewbench advise`` is given: a file, a dataset, or keys in memory.

What it reads (``fmt``; ``"auto"`` decides from the file, below):

``lines``
    One key per line, the whole line (``\\n`` or ``\\r\\n`` ended; blank lines are skipped).
``csv``
    A CSV file with a header (``,``; TAB for ``.tsv``/``.tab``, or a header with TABs and no
    comma), quoted fields allowed: the key is the column ``key_column`` (default ``key``); with
    ``count_column`` (default ``count`` when the header has one) each row is ``key, count``.
``counts``
    ``key,count`` pairs without a header (or under the header ``key,count``); a key that holds
    a comma is quoted.  A key listed twice counts the sum; a count of 0 drops the key.
``parquet``
    A Parquet file: the key column ``key_column``, else ``key``, else its only column; counts
    from ``count_column`` (or a column ``count``).  Keys of any type are read as their text.
``dataset``
    A skewbench dataset directory (``docs/datasets.md``), or the name of a catalog dataset
    materialised under the data root (``skewbench datasets generate catalog NAME``): its
    tuples' keys, by their dictionary's names.

``auto``: a directory is a dataset; ``.parquet``/``.pq`` (or Parquet's magic bytes) is Parquet;
otherwise a text file (gzip allowed, by its magic bytes) whose first non-blank line decides:
``key,count`` (the header) or ``<text>,<integer>`` is ``counts``; a line with a comma or a TAB,
or the single word ``key``, is a CSV header; anything else starts ``lines``.  ``--format``
overrides the guess.

Limits (each refused with one line): a file of at most :data:`MAX_FILE_BYTES` (after gzip),
at most :data:`MAX_ROWS` lines, rows or pairs, keys of at most :data:`MAX_KEY_BYTES` bytes of
UTF-8, counts in ``[0, MAX_COUNT]`` summing to at most 2^53 (exact in floating point).  A file
with a NUL byte, or that is not UTF-8, is refused as binary data, as is an empty one.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pyarrow as pa

from skewbench.advise.keys import (
    FORMATS, Keys, arrow_ints, check_key_lengths, check_rows, finish, first_line, from_pairs, from_texts, split_lines,
    text_array,
)
from skewbench.advise.limits import MAX_FILE_BYTES
from skewbench.datasets.contract import open_dataset, to_numpy
from skewbench.errors import SkewbenchError

_COUNTS_LINE = re.compile(r'^(?:"(?:[^"]|"")*"|[^",\t]*),[ \t]*[0-9]+[ \t]*$')


def read_keys(source: Any, fmt: str = "auto", key_column: str | None = None,
              count_column: str | None = None) -> Keys:
    """Keys from ``source``: a path (file or dataset directory), a catalog dataset's name, a
    mapping ``key -> count``, or an iterable of keys (a stream); see the module docstring."""
    if fmt not in FORMATS:
        raise SkewbenchError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if isinstance(source, Mapping):
        return from_pairs("key,count pairs", "counts", text_array([str(k) for k in source]),
                          np.asarray([_count(v) for v in source.values()], dtype=np.int64))
    if not isinstance(source, (str, os.PathLike)):
        return from_texts("keys", "lines", _texts(source))
    path = _resolve(str(source))
    if path.is_dir() or fmt == "dataset":
        return _from_dataset(path)
    return _from_file(path, fmt, key_column, count_column)


def _texts(items: Iterable[Any]) -> pa.Array:
    arr = np.asarray(list(items) if not isinstance(items, np.ndarray) else items)
    if arr.dtype.kind in "iu":
        return arrow_ints(arr).cast(pa.large_string())
    return text_array([str(x) for x in arr.tolist()])


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise SkewbenchError(f"a key's count must be an integer, got {v!r}")
    return int(v)


def _resolve(source: str) -> Path:
    """A path, or the directory of the catalog dataset ``source`` under the data root."""
    path = Path(source).expanduser()
    if path.exists():
        if not (path.is_dir() or path.is_file()):
            raise SkewbenchError(f"{path} is not a regular file or a directory")
        return path
    if os.sep not in source:
        from skewbench.datasets.catalog import load_catalog
        from skewbench.settings import settings

        if source in load_catalog().names():
            root = settings().data_root
            if (root / source).is_dir():
                return root / source
            raise SkewbenchError(f"catalog dataset {source!r} is not materialised under {root}: "
                                 f"`skewbench datasets generate catalog {source} --root {root}` writes it")
    raise SkewbenchError(f"{source}: no such file, dataset directory or catalog dataset")


def _read_bytes(path: Path) -> bytes:
    size = path.stat().st_size
    if size == 0:
        raise SkewbenchError(f"{path} is empty: no keys")
    if size > MAX_FILE_BYTES:
        raise SkewbenchError(f"{path} holds {size:,} bytes; at most {MAX_FILE_BYTES:,} are read (a sample of "
                             "the keys is enough)")
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.open(io.BytesIO(data)) as g:
                data = g.read(MAX_FILE_BYTES + 1)
        except (OSError, EOFError) as e:
            raise SkewbenchError(f"{path}: a damaged gzip file ({e})") from None
        if len(data) > MAX_FILE_BYTES:
            raise SkewbenchError(f"{path} holds over {MAX_FILE_BYTES:,} bytes uncompressed; at most that is read")
    return data


def _check_text(path: Path, data: bytes) -> None:
    nul = data.find(b"\x00")
    if nul >= 0:
        raise SkewbenchError(f"{path} is binary data, not keys (a NUL byte at offset {nul:,})")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SkewbenchError(f"{path} is binary data or not UTF-8 text (byte 0x{data[e.start]:02x} at offset "
                             f"{e.start:,})") from None


def _guess(path: Path, data: bytes, key_column: str | None, count_column: str | None) -> str:
    first = first_line(data)
    if not first:
        raise SkewbenchError(f"{path} holds only blank lines: no keys")
    if key_column or count_column:
        return "csv"
    if first.replace(" ", "").lower() == "key,count" or _COUNTS_LINE.match(first):
        return "counts"
    if "," in first or "\t" in first or first.strip() == "key":
        return "csv"
    return "lines"


def _from_file(path: Path, fmt: str, key_column: str | None, count_column: str | None) -> Keys:
    with open(path, "rb") as f:
        magic = f.read(4)
    if fmt == "parquet" or (fmt == "auto" and (path.suffix.lower() in (".parquet", ".pq") or magic == b"PAR1")):
        from skewbench.advise.tables import read_parquet_keys

        return read_parquet_keys(path, key_column, count_column)
    data = _read_bytes(path)
    _check_text(path, data)
    if fmt == "auto":
        fmt = _guess(path, data, key_column, count_column)
    if fmt == "lines":
        return from_texts(str(path), "lines", split_lines(path, data))
    from skewbench.advise.tables import read_csv_keys

    return read_csv_keys(path, data, fmt, key_column, count_column)


def _from_dataset(path: Path) -> Keys:
    """A dataset's tuples' keys: its key dictionary's names (a synthetic stream's ids as text)."""
    ds = open_dataset(path)
    check_rows(path, ds.tuples, "tuples")
    parts = [np.asarray(b["key"], dtype=np.int64) for b in ds.iter_batches(["key"], 1 << 20)]
    stream = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    table = ds.key_dictionary()
    if table is not None and table.num_rows == ds.n_keys:
        order = np.argsort(to_numpy(table.column("key").combine_chunks()), kind="stable")
        names = table.column("name").combine_chunks().take(arrow_ints(order))
    else:
        names = arrow_ints(np.arange(ds.n_keys)).cast(pa.large_string())
    check_key_lengths(str(path), names)
    counts = np.bincount(stream, minlength=ds.n_keys).astype(np.int64)
    seen = np.flatnonzero(counts > 0)
    if seen.size < ds.n_keys:  # keys of the key space that no tuple has: renumber the others
        remap = np.full(ds.n_keys, -1, dtype=np.int64)
        remap[seen] = np.arange(seen.size)
        stream, counts, names = remap[stream], counts[seen], names.take(arrow_ints(seen))
    return finish(str(path), "dataset", names, counts, stream)


