"""The keys ``skewbench advise`` works on (:class:`Keys`), their limits, and building them from a
stream of key texts or from key,count pairs; :mod:`skewbench.advise.inputs` reads them from files.

Keys are kept as their texts, dictionary-encoded in order of first appearance (key id ``i`` is
the ``i``-th distinct key), with their tuple counts and, unless the input is ``key,count``
pairs, the stream of key ids in input order.  When every key is an integer's canonical decimal
text (within int64) the integers are kept too (:func:`skewbench.datasets.contract.integer_values`),
which the engines may hash as Java ``long`` values.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from skewbench.advise.limits import MAX_COUNT, MAX_KEY_BYTES, MAX_ROWS, MAX_TOTAL
from skewbench.datasets.contract import integer_values, to_numpy
from skewbench.errors import SkewbenchError

FORMATS = ("auto", "lines", "csv", "counts", "parquet", "dataset")


def arrow_ints(values: np.ndarray) -> pa.Array:
    """An int64 Arrow array over ``values`` (pyarrow's own conversions import pandas on first use,
    a fifth of a second of every call)."""
    arr = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), int(arr.size), [None, pa.py_buffer(arr)])


def text_array(texts: list[str]) -> pa.Array:
    """A large_string Arrow array of ``texts`` (without pyarrow's pandas-importing conversion)."""
    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(encoded), [None, pa.py_buffer(offsets),
                                                                   pa.py_buffer(b"".join(encoded))])


@dataclass
class Keys:
    """Keys as read: ``names[i]`` is key id ``i``'s text (first appearance order), ``counts[i]``
    its tuples (> 0), ``stream`` the key ids in input order (None for key,count pairs),
    ``values`` the integers the texts spell when every one does (else None)."""

    source: str
    fmt: str
    names: pa.Array
    counts: np.ndarray
    stream: np.ndarray | None
    values: np.ndarray | None

    @property
    def tuples(self) -> int:
        return int(self.counts.sum())

    @property
    def distinct(self) -> int:
        return int(self.counts.size)

    def name(self, i: int) -> str:
        return str(self.names[int(i)].as_py())

    def text_buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """The keys' UTF-8 bytes concatenated and their offsets (``len + 1`` of them)."""
        arr = self.names.cast(pa.large_string()) if self.names.type != pa.large_string() else self.names
        _, off_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        return data, np.ascontiguousarray(offsets)


def split_lines(path: Path, data: bytes) -> pa.Array:
    """Every non-blank line of ``data`` (without its ``\\n`` or ``\\r\\n``), as a string array."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if raw.size == 0:
        check_rows(path, 0, "lines")
    nl = np.flatnonzero(raw == 10)
    starts = np.concatenate([[0], nl + 1])
    ends = np.concatenate([nl, [raw.size]])
    ends = ends - ((ends > starts) & (raw[np.maximum(ends - 1, 0)] == 13))
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    check_rows(path, starts.size, "lines")
    lengths = ends - starts
    if lengths.size and int(lengths.max()) > MAX_KEY_BYTES:
        i = int(np.argmax(lengths > MAX_KEY_BYTES))
        line = int(np.searchsorted(nl, starts[i])) + 1
        raise SkewbenchError(f"{path}: line {line:,} holds a key of {int(lengths[i]):,} bytes; keys are at most "
                             f"{MAX_KEY_BYTES:,} bytes")
    marks = np.zeros(raw.size + 1, dtype=np.int8)
    marks[starts] = 1  # line starts and ends are distinct positions
    marks[ends] -= 1
    inside = np.cumsum(marks[:-1], dtype=np.int8).astype(bool)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), int(lengths.size),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(raw[inside])])


def check_rows(path: Any, rows: int, what: str) -> None:
    if rows == 0:
        raise SkewbenchError(f"{path}: no keys")
    if rows > MAX_ROWS:
        raise SkewbenchError(f"{path} holds {rows:,} {what}; at most {MAX_ROWS:,} are read (a sample of the keys "
                             "is enough)")


def check_key_lengths(source: str, texts: pa.Array) -> None:
    """Refuse keys longer than :data:`MAX_KEY_BYTES` bytes (one line naming the first)."""
    import pyarrow.compute as pc

    if len(texts) == 0:
        return
    lengths = to_numpy(pc.binary_length(texts))
    if int(lengths.max()) > MAX_KEY_BYTES:
        i = int(np.argmax(lengths > MAX_KEY_BYTES))
        raise SkewbenchError(f"{source}: key {i + 1:,} holds {int(lengths[i]):,} bytes; keys are at most "
                             f"{MAX_KEY_BYTES:,} bytes")


def from_texts(source: str, fmt: str, texts: pa.Array) -> Keys:
    """Keys from a stream of key texts (one per tuple)."""
    import pyarrow.compute as pc

    check_rows(source, len(texts), "keys")
    check_key_lengths(source, texts)
    enc = pc.dictionary_encode(texts)
    stream = to_numpy(enc.indices).astype(np.int64)
    names = enc.dictionary
    return finish(source, fmt, names, np.bincount(stream, minlength=len(names)).astype(np.int64), stream)


def from_pairs(source: str, fmt: str, texts: pa.Array, counts: np.ndarray) -> Keys:
    """Keys from key,count pairs (a key listed twice counts the sum; a count of 0 drops it)."""
    import pyarrow.compute as pc

    check_rows(source, len(texts), "key,count pairs")
    check_key_lengths(source, texts)
    if counts.size and (int(counts.min()) < 0 or int(counts.max()) > MAX_COUNT):
        i = int(np.argmax((counts < 0) | (counts > MAX_COUNT)))
        raise SkewbenchError(f"{source}: pair {i + 1:,} has count {int(counts[i]):,}; a count is an integer in "
                             f"[0, {MAX_COUNT:,}]")
    enc = pc.dictionary_encode(texts)
    ids = to_numpy(enc.indices).astype(np.int64)
    summed = np.bincount(ids, weights=counts, minlength=len(enc.dictionary))
    if float(summed.sum()) > MAX_TOTAL:
        raise SkewbenchError(f"{source}: the counts sum to {float(summed.sum()):.3g} tuples; at most 2^53")
    kept = np.flatnonzero(summed > 0)
    if kept.size == 0:
        raise SkewbenchError(f"{source}: every count is 0: no keys")
    names = enc.dictionary.take(arrow_ints(kept)) if kept.size < summed.size else enc.dictionary
    return finish(source, fmt, names, summed[kept].astype(np.int64), None)


def finish(source: str, fmt: str, names: pa.Array, counts: np.ndarray, stream: np.ndarray | None) -> Keys:
    names = names.cast(pa.large_string()) if names.type != pa.large_string() else names
    return Keys(source, fmt, names, counts, stream, integer_values(names))


def first_line(data: bytes) -> str:
    for line in io.BytesIO(data[:1 << 16]):
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if text.strip():
            return text
    return ""


def csv_header(path: Path, data: bytes, delimiter: str) -> list[str]:
    """The column names of a CSV file's first non-blank line."""
    first = first_line(data)
    return next(csv.reader([first], delimiter=delimiter)) if first else []
