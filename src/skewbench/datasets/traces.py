"""Ingest real traces into the stream dataset contract (:mod:`skewbench.datasets.contract`).

:func:`ingest` reads one or more input files of a known trace format, turns every well-formed
record into a tuple ``(seq, ts, key[, cost][, value])`` and writes a dataset directory with
:class:`~skewbench.datasets.contract.DatasetWriter`.  Keys are the trace's natural keys (strings
or large integers) dictionary-encoded to dense ``int64`` ids ``0..n_keys-1`` **in order of first
appearance in the output stream**; the dictionary ``id -> original text`` is written to
``_keys.parquet`` beside the tuples.

Inputs
------
``inputs`` is a list of files and/or directories, read as one concatenated stream in the order
given; a directory stands for its regular files sorted by name (names starting with ``.`` or
``_``, e.g. ``_SUCCESS``, are ignored).  Every text input may be gzip-compressed (recognised by
its magic bytes, so ``.gz`` or not).  A *line* is a physical line, ``\\n`` or ``\\r\\n``
terminated; records never span lines.  Empty lines are skipped and counted as ``blank_lines``
(they are not data lines).  In every format a line that is not valid UTF-8 or that contains a
stray carriage return is malformed.

Formats
-------
``slashdot``
    SNAP edge list ``FromNodeId<TAB>ToNodeId``; lines starting with ``#`` are comments (counted
    as ``comment_lines``, not data lines).  Key: the source node (``key="source"``, default) or
    the target node (``key="target"``), as written in the file.  The trace has no time: tuple
    ``i`` gets ``ts = i`` (one tuple per second, in line order).  No cost, no value.
    Malformed: not exactly two TAB-separated fields, or a field that is not a non-negative
    decimal integer.

``google-cluster``
    Google cluster-usage trace v2 ``task_events`` (CSV, no header, 13 columns).  Key: job ID
    (column 3, ``key="job"``, default) or scheduling class (column 8,
    ``key="scheduling-class"``).  ``ts`` = column 1 (microseconds since the trace start)
    divided by 10**6, i.e. seconds since the trace start (not rebased).  Value: the CPU
    request (column 10), *only if every kept row has one*; if any kept row has an empty CPU
    request the dataset has no ``value`` column and the count is reported as
    ``ingest.value_missing`` (an empty CPU request is otherwise fine).  Rows with timestamp
    ``0`` (before the trace window) or ``2**63-1`` (after it) are well-formed but outside the
    trace: they are dropped and counted as ``dropped_out_of_trace``.  Malformed: not 13
    fields, a timestamp or key field that is not a non-negative integer (fitting int64), or a
    non-empty CPU request that is not a finite number.

``debs2015``
    DEBS 2015 Grand Challenge "compact ride" CSV, no header, 9 columns: medallion, trip
    distance, drop-off time (epoch seconds), pickup cell x, pickup cell y, drop-off cell x,
    drop-off cell y, fare, tip.  Key: the route ``"px.py-dx.dy"`` (``key="route"``, default;
    cell numbers normalised as integers) or the medallion (``key="medallion"``).  ``ts`` =
    drop-off time relative to the earliest kept drop-off time, which is stored as
    ``params.t0_epoch``.  Value: the fare.  Malformed: not 9 fields, or a field used by the
    chosen key, the time or the fare that does not parse (integers for times and cells, a
    finite number for the fare, a non-empty medallion).

``apache-log``
    Apache combined (or common) log format, ``host ident user [time] "request" status bytes
    ["referer" "agent" ...]``.  Key: the request URL path, i.e. the URL of
    ``"METHOD URL [PROTOCOL]"`` without its query string or fragment (``key="path"``,
    default) or the client address (``key="client"``).  ``ts`` = the ``[17/May/2015:10:05:03
    +0000]`` time in seconds relative to the earliest line, whose epoch time is stored as
    ``params.t0_epoch``.  No cost, no value.  Malformed: a line that does not match the format,
    an unparseable time, or (for ``key="path"``) a request that is not ``METHOD URL [PROTO]``
    (e.g. ``"-"``).

``csv``
    A generic file with a header: CSV (``,``; ``.tsv``/``.tab`` files use TAB), or Parquet
    (``.parquet``/``.pq``).  ``key_column`` (required) names the key; its text is the key
    (Parquet non-string keys are rendered as text).  ``time_column`` (optional, numeric; in
    Parquet also a timestamp, converted to epoch seconds): ``ts = time * time_unit`` relative
    to the earliest kept time (``params.t0``, in seconds); without it ``ts`` is the tuple
    index.  ``cost_column`` (optional, must be ``> 0``) and ``value_column`` (optional,
    finite) fill ``cost``/``value``.  Each file has its own header.  Malformed: a wrong number
    of fields, an odd number of ``"`` characters (a record spanning lines), an empty or null
    key, or a time/cost/value that is missing or not a finite number (cost not ``> 0``).

Time order
----------
The contract wants ``ts`` non-decreasing.  Real traces are not always sorted (the DEBS and
Apache samples are only roughly time-ordered), so the tuples are **stably sorted by time**:
ties keep their input order.  Tuples arriving after a later-stamped one are counted as
``ingest.reordered``; nothing is dropped.  The sort is an external one: pass 1 spills the
parsed columns (~32 bytes per tuple) to a scratch directory beside ``out_dir``; pass 2 merges
with a buffer bounded by how far the data is out of order.  Key ids are then assigned in order
of first appearance in the sorted stream.

Malformed lines and the report
------------------------------
Malformed lines are never silently dropped: they are counted and up to 5 examples (file, line
number, text truncated to 200 characters) are kept.  If ``malformed / lines > max_malformed``
(default 0.001, i.e. 0.1 %) ingestion fails with :class:`~skewbench.errors.SkewbenchError` and
nothing is written.  Otherwise the metadata's ``ingest`` object records ``lines`` (data lines,
or Parquet rows), ``tuples``, ``malformed``, ``malformed_examples``, ``dropped`` (plus the
reason, ``dropped_out_of_trace``), ``reordered``, ``blank_lines``, ``comment_lines``,
``header_lines`` and per-file counts; ``tuples + dropped + malformed == lines`` always holds.
As a safety net against a wrong ``--format`` on a huge input, ingestion stops early once
100,000 lines have been read and every one of them was malformed.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import shutil
import tempfile
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from skewbench.datasets.contract import DatasetWriter, check_target
from skewbench.errors import SkewbenchError

__all__ = ["FORMATS", "KEYS", "DEFAULT_KEYS", "ingest", "expand_inputs", "total_input_bytes"]

FORMATS = ("slashdot", "google-cluster", "debs2015", "apache-log", "csv")

#: The natural keys of each fixed format, the default first.
KEYS: dict[str, tuple[str, ...]] = {
    "slashdot": ("source", "target"),
    "google-cluster": ("job", "scheduling-class"),
    "debs2015": ("route", "medallion"),
    "apache-log": ("path", "client"),
}
DEFAULT_KEYS = {fmt: keys[0] for fmt, keys in KEYS.items()}
_KEY_ALIASES = {
    "slashdot": {"src": "source", "from": "source", "dst": "target", "to": "target"},
    "google-cluster": {"job-id": "job", "job_id": "job", "scheduling_class": "scheduling-class",
                       "class": "scheduling-class"},
    "debs2015": {},
    "apache-log": {"url": "path", "ip": "client", "host": "client"},
}

BLOCK_BYTES = 16 << 20          # text is read in blocks of about this many bytes (whole lines)
MAX_LINE_BYTES = 16 << 20       # a longer line is refused (a file without newlines is not a trace)
PARSE_THREADS = max(1, min(4, os.cpu_count() or 1))   # blocks parsed in parallel
PARQUET_BATCH_ROWS = 1 << 20
PART_ROWS = 1 << 20             # rows per output Parquet part
MAX_EXAMPLES = 5
EXAMPLE_CHARS = 200
EARLY_STOP_LINES = 100_000
OUT_OF_TRACE = (0, (1 << 63) - 1)
_INT64_MAX_TEXT = str((1 << 63) - 1)

_NUMBER_RE = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
_LOG_RE = (r'^(?P<client>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<request>(?:[^"\\]|\\.)*)" '
           r'(?P<status>\d{3}|-) (?P<size>\d+|-)(?: [^\r\n]*)?\r?\n?$')
# After a line matched _LOG_RE (a fast, capture-free check), these extract the fields from its
# start (captures over the whole line are ~10x slower).  A request word: no space, no bare quote.
_WORD = r'(?:[^\s"\\]|\\\S)+'
_CLIENT_PREFIX_RE = r"^(?P<client>\S+) \S+ \S+ \[(?P<time>[^\]]+)\]"
_URL_PREFIX_RE = _CLIENT_PREFIX_RE + rf' "(?P<method>[A-Za-z]+) (?P<url>{_WORD})(?: {_WORD})?"'
_LOG_TIME_FORMAT = "%d/%b/%Y:%H:%M:%S %z"
_SURROGATE = re.compile("[\udc80-\udcff]")
_RESERVED_META = {"kind", "name", "source", "params", "seed", "n_keys", "ingest", "schema_version",
                  "created_by", "columns", "tuples", "fingerprint", "files"}


# --------------------------------------------------------------------------------------------
# inputs

def expand_inputs(inputs: Sequence[str | os.PathLike] | str | os.PathLike) -> list[Path]:
    """The input files, in reading order: directories expand to their files sorted by name."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if not inputs:
        raise SkewbenchError("no input files given")
    out: list[Path] = []
    for item in inputs:
        p = Path(item).expanduser().absolute()
        if not p.exists():
            raise SkewbenchError(f"input {p} does not exist")
        if p.is_dir():
            files = sorted(c for c in p.iterdir()
                           if c.is_file() and not c.name.startswith((".", "_")))
            if not files:
                raise SkewbenchError(f"input directory {p} contains no files")
            out.extend(files)
        elif p.is_file():
            out.append(p)
        else:
            raise SkewbenchError(f"input {p} is not a regular file or directory")
    return out


def total_input_bytes(inputs: Sequence[str | os.PathLike] | str | os.PathLike) -> int:
    """Sum of the on-disk sizes of the inputs: the total for :func:`ingest`'s ``progress``."""
    return sum(p.stat().st_size for p in expand_inputs(inputs))


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def _open_binary(path: Path):
    """``(stream, raw)``: a decompressing stream if the file is gzip, and the raw file."""
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise SkewbenchError(f"{path}: cannot open: {e.strerror or e}") from None
    magic = raw.read(2)
    raw.seek(0)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw
    return raw, raw


# --------------------------------------------------------------------------------------------
# blocks of whole lines

class _Block:
    """Whole lines of one input file: ``data`` ends with ``\\n``; ``first_line`` is 1-based."""

    def __init__(self, path: Path, data: bytes, first_line: int):
        self.path = path
        self.data = data
        self.first_line = first_line
        self.arr = np.frombuffer(data, dtype=np.uint8)
        nl = np.flatnonzero(self.arr == 10)
        self.starts = np.empty(len(nl) + 1, dtype=np.int64)
        self.starts[0] = 0
        self.starts[1:] = nl + 1
        self.n_lines = len(nl)

    def text(self, i: int) -> str:
        raw = self.data[self.starts[i]:self.starts[i + 1] - 1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        return _clip(raw.decode("utf-8", errors="backslashreplace"))

    def line_number(self, i: int) -> int:
        return self.first_line + int(i)


def _clip(text: str) -> str:
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS - 3] + "..."


def _iter_blocks(path: Path, progress: Callable[[int], None] | None,
                 block_bytes: int | None = None) -> Iterator[_Block]:
    block_bytes = block_bytes or BLOCK_BYTES
    stream, raw = _open_binary(path)
    reported = 0
    line_no = 1
    carry = b""
    first = True
    try:
        while True:
            try:
                chunk = stream.read(block_bytes)
            except (OSError, EOFError, zlib.error) as e:
                raise SkewbenchError(f"{path}: cannot read (corrupt or truncated?): {e}") from None
            if first:
                first = False
                if chunk.startswith(b"\xef\xbb\xbf"):
                    chunk = chunk[3:]
            eof = not chunk
            data = carry + chunk if carry else chunk
            if eof:
                if not data:
                    break
                if not data.endswith(b"\n"):
                    data += b"\n"
                carry = b""
            else:
                cut = data.rfind(b"\n")
                if cut < 0:
                    if len(data) > MAX_LINE_BYTES:
                        raise SkewbenchError(f"{path}: line {line_no:,} is longer than {MAX_LINE_BYTES:,} bytes; a "
                                             "trace's lines are at most that long")
                    carry = data
                    continue
                data, carry = data[:cut + 1], data[cut + 1:]
            block = _Block(path, data, line_no)
            yield block
            line_no += block.n_lines
            if progress is not None:
                pos = raw.tell()
                if pos > reported:
                    progress(pos - reported)
                    reported = pos
            if eof:
                break
        if progress is not None:
            size = path.stat().st_size
            if size > reported:
                progress(size - reported)
    finally:
        stream.close()
        raw.close()


def _blank_mask(block: _Block) -> np.ndarray:
    """Lines that are empty (or just ``\\r``)."""
    lens = np.diff(block.starts) - 1
    one = np.flatnonzero(lens == 1)
    blank = lens == 0
    blank[one] = block.arr[block.starts[one]] == 13
    return blank


def _ordered_map(tasks: Iterable[Callable[[], _Rows]]) -> Iterator[_Rows]:
    """Run parsing tasks on ``PARSE_THREADS`` threads (Arrow and numpy release the GIL) and yield
    their results in task order, with a bounded number of blocks in flight."""
    if PARSE_THREADS <= 1:
        for task in tasks:
            yield task()
        return
    pool = ThreadPoolExecutor(PARSE_THREADS, thread_name_prefix="skewbench-ingest")
    inflight: deque[Future] = deque()
    try:
        for task in tasks:
            inflight.append(pool.submit(task))
            if len(inflight) > PARSE_THREADS:
                yield inflight.popleft().result()
        while inflight:
            yield inflight.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class _Prepared:
    """A block with the lines that the parser must not see removed."""

    block: _Block
    blank: int
    comment: int
    header: int
    premal: np.ndarray          # block line indices that are malformed before parsing
    parse_idx: np.ndarray       # block line index of each line handed to the parser
    parse_data: bytes
    parse_starts: np.ndarray    # line starts in parse_data, plus its length


def _prepare(block: _Block, *, comments: bool = False, quotes: bool = False,
             skip_through: int = -1) -> _Prepared:
    """Classify the lines of a block: blank, comment, header (``<= skip_through``), malformed
    before parsing (bad UTF-8, a stray ``\\r``, an odd number of quotes), or to be parsed."""
    arr, starts, n = block.arr, block.starts, block.n_lines
    lens = np.diff(starts) - 1                       # without the '\n'
    nonempty = lens > 0
    blank = _blank_mask(block)
    premal = np.zeros(n, dtype=bool)
    if b"\r" in block.data:
        cr = np.flatnonzero(arr == 13)
        lone = cr[arr[cr + 1] != 10]
        premal[np.searchsorted(starts, lone, side="right") - 1] = True
    try:
        block.data.decode("utf-8")
    except UnicodeDecodeError:
        text = block.data.decode("utf-8", errors="surrogateescape")
        line, pos = 0, 0
        for m in _SURROGATE.finditer(text):
            line += text.count("\n", pos, m.start())
            pos = m.start()
            premal[line] = True
    if quotes and b'"' in block.data:
        qpos = np.flatnonzero(arr == 34)
        counts = np.bincount(np.searchsorted(starts, qpos, side="right") - 1, minlength=n)
        premal |= (counts % 2) == 1
    skip = blank.copy()
    comment = np.zeros(n, dtype=bool)
    if comments:
        first = np.zeros(n, dtype=np.uint8)
        first[nonempty] = arr[starts[:-1][nonempty]]
        comment = ~blank & (first == ord("#"))
        skip |= comment
    header = np.zeros(n, dtype=bool)
    if skip_through >= 0:
        header[:skip_through + 1] = ~blank[:skip_through + 1]
        skip |= header
    premal &= ~skip
    skip |= premal
    if skip.any():
        keep = ~skip
        parse_idx = np.flatnonzero(keep)
        kept_lens = lens[keep] + 1
        parse_data = arr[np.repeat(keep, lens + 1)].tobytes()
        parse_starts = np.zeros(len(parse_idx) + 1, dtype=np.int64)
        np.cumsum(kept_lens, out=parse_starts[1:])
    else:
        parse_idx = np.arange(n, dtype=np.int64)
        parse_data = block.data
        parse_starts = starts
    return _Prepared(block, int(blank.sum()), int(comment.sum()), int(header.sum()),
                     np.flatnonzero(premal), parse_idx, parse_data, parse_starts)


def _read_delimited(prep: _Prepared, names: list[str], include: list[str], delimiter: str,
                    quote: str | None) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Parse the prepared lines as delimited text, every column a string.

    Returns the table, the block line index of each row and of each line with a wrong number of
    fields.
    """
    if not prep.parse_data:
        empty = pa.table({c: pa.array([], type=pa.string()) for c in include})
        return empty, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    bad: list[int | None] = []

    def on_invalid(row) -> str:
        bad.append(row.number)
        return "skip"

    try:
        table = pcsv.read_csv(
            pa.BufferReader(prep.parse_data),
            read_options=pcsv.ReadOptions(column_names=names, use_threads=False),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char=quote or False,
                                             double_quote=True, newlines_in_values=False,
                                             ignore_empty_lines=False,
                                             invalid_row_handler=on_invalid),
            convert_options=pcsv.ConvertOptions(include_columns=include,
                                                column_types={c: pa.string() for c in include},
                                                strings_can_be_null=False,
                                                quoted_strings_can_be_null=False),
        )
    except pa.ArrowException as e:
        raise SkewbenchError(f"{prep.block.path}: cannot parse the lines from line "
                             f"{prep.block.first_line}: {e}") from None
    n_parsed = len(prep.parse_idx)
    if any(b is None for b in bad):
        raise SkewbenchError(f"{prep.block.path}: cannot locate malformed lines near line "
                             f"{prep.block.first_line} (the CSV parser gave no line number)")
    bad_pos = np.asarray(bad, dtype=np.int64) - 1
    valid = np.ones(n_parsed, dtype=bool)
    valid[bad_pos] = False
    row_idx = prep.parse_idx[valid]
    if len(row_idx) != table.num_rows:
        raise SkewbenchError(f"{prep.block.path}: parsed {table.num_rows} records from "
                             f"{n_parsed - len(bad_pos)} lines starting at line "
                             f"{prep.block.first_line}; records must not span lines")
    return table, row_idx, prep.parse_idx[bad_pos]


def _lines_array(prep: _Prepared) -> pa.Array:
    """The prepared lines as one Arrow string array (each string keeps its line terminator)."""
    n = len(prep.parse_idx)
    return pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(np.ascontiguousarray(prep.parse_starts, dtype=np.int64)),
        pa.py_buffer(prep.parse_data))


# --------------------------------------------------------------------------------------------
# vectorised field parsing; masks are numpy bool arrays

def _col(table: pa.Table, name: str) -> pa.Array:
    c = table.column(name)
    return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c


def _np_bool(a) -> np.ndarray:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return a.fill_null(False).to_numpy(zero_copy_only=False).astype(bool, copy=False)


def _take(a: pa.Array, mask: np.ndarray) -> pa.Array:
    return a.filter(pa.array(mask, type=pa.bool_()))


def _uints(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative decimal integers fitting int64: ``(ok, values)`` (values 0 where not ok)."""
    ok = _np_bool(pc.ascii_is_decimal(a))
    n = len(a)
    vals = np.zeros(n, dtype=np.int64)
    if n == 0:
        return ok, vals
    length = pc.binary_length(a).to_numpy(zero_copy_only=False)
    long = ok & (length >= 19)
    if long.any():
        fits = _np_bool(pc.less_equal(a, pa.scalar(_INT64_MAX_TEXT)))
        ok &= ~long | ((length == 19) & fits)
    if ok.any():
        vals[ok] = pc.cast(_take(a, ok), pa.int64()).to_numpy()
    return ok, vals


def _floats(a: pa.Array, allow_empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Finite decimal numbers: ``(ok, values)``; values NaN where not ok or empty."""
    t = pc.utf8_trim_whitespace(a)
    ok = _np_bool(pc.match_substring_regex(t, _NUMBER_RE))
    vals = np.full(len(a), np.nan)
    if ok.any():
        vals[ok] = pc.cast(_take(t, ok), pa.float64()).to_numpy()
        ok &= np.isfinite(vals)
    if allow_empty:
        ok |= _np_bool(pc.equal(pc.binary_length(t), 0))
    return ok, vals


# --------------------------------------------------------------------------------------------
# the formats

@dataclass
class _Rows:
    """What a parser returns for one block (or Parquet batch) of one input file."""

    path: Path
    lines: int                                  # data lines (not blank/comment/header)
    malformed: np.ndarray                       # global 1-based line numbers, sorted
    example: Callable[[int], str]               # line number -> text
    keys: pa.Array                              # string keys of the kept tuples
    ts: np.ndarray | None = None                # None: the tuple index
    cost: np.ndarray | None = None
    value: np.ndarray | None = None             # NaN marks a missing value (google only)
    dropped: int = 0
    blank: int = 0
    comment: int = 0
    header: int = 0


def _rows_from_block(prep: _Prepared, bad_idx: Sequence[np.ndarray], **kw) -> _Rows:
    block = prep.block
    idx = np.sort(np.concatenate([prep.premal, *bad_idx]).astype(np.int64))
    lines = block.n_lines - prep.blank - prep.comment - prep.header
    return _Rows(path=block.path, lines=lines, malformed=idx + block.first_line,
                 example=lambda ln: block.text(ln - block.first_line),
                 blank=prep.blank, comment=prep.comment, header=prep.header, **kw)


class _Format:
    name = ""
    columns: tuple[str, ...] = ("seq", "ts", "key")
    relative_time = False       # ts made relative to the earliest tuple (t0 stored in params)
    t0_param = "t0_epoch"

    def __init__(self, key: str):
        self.key = key

    def iter_rows(self, path: Path, progress) -> Iterator[_Rows]:
        return _ordered_map(partial(self.parse, block) for block in _iter_blocks(path, progress))

    def parse(self, block: _Block) -> _Rows:  # pragma: no cover - abstract
        raise NotImplementedError


class _Slashdot(_Format):
    name = "slashdot"

    def parse(self, block: _Block) -> _Rows:
        prep = _prepare(block, comments=True)
        table, row_idx, bad = _read_delimited(prep, ["source", "target"], ["source", "target"],
                                              "\t", None)
        src, dst = _col(table, "source"), _col(table, "target")
        ok = _uints(src)[0] & _uints(dst)[0]
        keys = _take(src if self.key == "source" else dst, ok)
        return _rows_from_block(prep, [bad, row_idx[~ok]], keys=keys)


class _GoogleCluster(_Format):
    name = "google-cluster"
    columns = ("seq", "ts", "key", "value")
    _NAMES = [f"c{i}" for i in range(1, 14)]

    def parse(self, block: _Block) -> _Rows:
        prep = _prepare(block)
        key_col = "c3" if self.key == "job" else "c8"
        table, row_idx, bad = _read_delimited(prep, self._NAMES, ["c1", key_col, "c10"], ",",
                                              None)
        ts_ok, ts_us = _uints(_col(table, "c1"))
        key_ok, _ = _uints(_col(table, key_col))
        cpu_ok, cpu = _floats(_col(table, "c10"), allow_empty=True)
        ok = ts_ok & key_ok & cpu_ok
        inside = ok & (ts_us != OUT_OF_TRACE[0]) & (ts_us != OUT_OF_TRACE[1])
        return _rows_from_block(prep, [bad, row_idx[~ok]],
                                keys=_take(_col(table, key_col), inside),
                                ts=ts_us[inside] / 1e6, value=cpu[inside],
                                dropped=int(ok.sum() - inside.sum()))


class _Debs2015(_Format):
    name = "debs2015"
    columns = ("seq", "ts", "key", "value")
    relative_time = True
    _NAMES = ["medallion", "distance", "dropoff", "px", "py", "dx", "dy", "fare", "tip"]

    def parse(self, block: _Block) -> _Rows:
        prep = _prepare(block)
        include = ["medallion", "dropoff", "fare"] if self.key == "medallion" else \
            ["dropoff", "px", "py", "dx", "dy", "fare"]
        table, row_idx, bad = _read_delimited(prep, self._NAMES, include, ",", None)
        ts_ok, ts = _uints(_col(table, "dropoff"))
        fare_ok, fare = _floats(_col(table, "fare"))
        ok = ts_ok & fare_ok
        if self.key == "medallion":
            med = _col(table, "medallion")
            ok &= _np_bool(pc.greater(pc.binary_length(med), 0))
            keys = _take(med, ok)
        else:
            cells = {}
            for c in ("px", "py", "dx", "dy"):
                c_ok, cells[c] = _uints(_col(table, c))
                ok &= c_ok
            s = {c: pc.cast(pa.array(v[ok]), pa.string()) for c, v in cells.items()}
            keys = pc.binary_join_element_wise(
                pc.binary_join_element_wise(s["px"], s["py"], "."),
                pc.binary_join_element_wise(s["dx"], s["dy"], "."), "-")
        return _rows_from_block(prep, [bad, row_idx[~ok]], keys=keys,
                                ts=ts[ok].astype(np.float64), value=fare[ok])


class _ApacheLog(_Format):
    name = "apache-log"
    relative_time = True

    def parse(self, block: _Block) -> _Rows:
        prep = _prepare(block)
        row_idx = prep.parse_idx
        if len(row_idx) == 0:
            return _rows_from_block(prep, [], keys=pa.array([], type=pa.string()),
                                    ts=np.zeros(0))
        lines = _lines_array(prep)
        ok = _np_bool(pc.match_substring_regex(lines, _LOG_RE))
        m = pc.extract_regex(_take(lines, ok),
                             _CLIENT_PREFIX_RE if self.key == "client" else _URL_PREFIX_RE)
        good = _np_bool(m.is_valid())
        when = pc.strptime(pc.struct_field(m, "time"), format=_LOG_TIME_FORMAT, unit="s",
                           error_is_null=True)
        good &= _np_bool(when.is_valid())
        ok[ok] = good
        if self.key == "client":
            keys = pc.struct_field(m, "client")
        else:
            keys = pc.replace_substring_regex(pc.struct_field(m, "url"), r"[?#].*$", "",
                                              max_replacements=1)
        keys = _take(keys.cast(pa.string()), good)
        ts = pc.cast(_take(when, good), pa.int64()).to_numpy().astype(np.float64)
        return _rows_from_block(prep, [row_idx[~ok]], keys=keys, ts=ts)


class _Csv(_Format):
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

    def iter_rows(self, path: Path, progress) -> Iterator[_Rows]:
        if _is_parquet(path):
            yield from self._iter_parquet(path, progress)
            return
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") or \
            any(s.lower() in (".tsv", ".tab") for s in path.suffixes) else ","

        def tasks() -> Iterator[Callable[[], _Rows]]:
            names: list[str] | None = None
            for block in _iter_blocks(path, progress):
                skip_through = -1
                if names is None:
                    nb = np.flatnonzero(~_blank_mask(block))
                    if len(nb) == 0:            # only blank lines so far: no header yet
                        yield partial(self._parse_text, block, None, -1, delimiter)
                        continue
                    skip_through = int(nb[0])
                    names = self._parse_header(path, block, skip_through, delimiter)
                yield partial(self._parse_text, block, names, skip_through, delimiter)

        yield from _ordered_map(tasks())

    def _parse_text(self, block: _Block, names: list[str] | None, skip_through: int,
                    delimiter: str) -> _Rows:
        if names is None:
            return _rows_from_block(_prepare(block), [], keys=pa.array([], type=pa.string()))
        prep = _prepare(block, quotes=True, skip_through=skip_through)
        table, row_idx, bad = _read_delimited(prep, names, self.needed, delimiter, '"')
        cols = {c: _col(table, c) for c in self.needed}
        return self._finish_text(prep, row_idx, bad, cols)

    def _parse_header(self, path: Path, block: _Block, h: int, delimiter: str) -> list[str]:
        raw = block.data[block.starts[h]:block.starts[h + 1]]
        try:
            names = pcsv.read_csv(pa.BufferReader(raw), parse_options=pcsv.ParseOptions(
                delimiter=delimiter)).column_names
        except pa.ArrowException as e:
            raise SkewbenchError(f"{path}: cannot parse the header line {block.line_number(h)}: "
                                 f"{e}") from None
        self._check_header(path, names)
        return names

    def _finish_text(self, prep: _Prepared, row_idx: np.ndarray, bad: np.ndarray,
                     cols: dict[str, pa.Array]) -> _Rows:
        key = cols[self.key_column]
        ok = _np_bool(pc.greater(pc.binary_length(key), 0))
        ts = cost = value = None
        if self.time_column:
            t_ok, ts = _floats(cols[self.time_column])
            ok &= t_ok
        if self.cost_column:
            c_ok, cost = _floats(cols[self.cost_column])
            ok &= c_ok & (cost > 0)
        if self.value_column:
            v_ok, value = _floats(cols[self.value_column])
            ok &= v_ok
        return _rows_from_block(prep, [bad, row_idx[~ok]], keys=_take(key, ok),
                                ts=None if ts is None else ts[ok] * self.time_unit,
                                cost=None if cost is None else cost[ok],
                                value=None if value is None else value[ok])

    # -- Parquet

    def _iter_parquet(self, path: Path, progress) -> Iterator[_Rows]:
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

    def _parquet_batch(self, path: Path, batch: pa.RecordBatch, row0: int) -> _Rows:
        n = batch.num_rows
        raw_key = batch.column(self.key_column)
        key = self._as_text(path, self.key_column, raw_key)
        ok = _np_bool(pc.and_(key.is_valid(), pc.greater(pc.binary_length(key), 0)))
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
            return _clip(f"row {row}: {vals}")

        return _Rows(path=path, lines=n, malformed=bad + row0, example=example,
                     keys=_take(key, ok), ts=None if ts is None else ts[ok] * self.time_unit,
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
            valid = _np_bool(a.is_valid())
            ok, vals = _floats(a.fill_null(""))
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
        vals = np.where(_np_bool(a.is_valid()), vals, np.nan)
        return np.isfinite(vals), vals


# --------------------------------------------------------------------------------------------
# key dictionary, report, spill, ordered emission

class _KeyDict:
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
class _FileStats:
    path: str
    lines: int = 0
    tuples: int = 0
    malformed: int = 0
    dropped: int = 0


@dataclass
class _Report:
    paths: list[Path]
    max_malformed: float
    fmt: str
    lines: int = 0
    tuples: int = 0
    malformed: int = 0
    dropped: int = 0
    blank: int = 0
    comment: int = 0
    header: int = 0
    value_missing: int = 0
    reordered: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, _FileStats] = field(default_factory=dict)

    def add(self, rows: _Rows) -> None:
        kept = len(rows.keys)
        self.lines += rows.lines
        self.tuples += kept
        self.malformed += len(rows.malformed)
        self.dropped += rows.dropped
        self.blank += rows.blank
        self.comment += rows.comment
        self.header += rows.header
        if rows.value is not None and kept:
            self.value_missing += int(np.isnan(rows.value).sum())
        fs = self.files.setdefault(str(rows.path), _FileStats(str(rows.path)))
        fs.lines += rows.lines
        fs.tuples += kept
        fs.malformed += len(rows.malformed)
        fs.dropped += rows.dropped
        for ln in rows.malformed[:MAX_EXAMPLES - len(self.examples)]:
            self.examples.append({"file": str(rows.path), "line": int(ln),
                                  "text": rows.example(int(ln))})
        if self.lines >= EARLY_STOP_LINES and self.malformed == self.lines:
            raise SkewbenchError(self._message(early=True))

    def check(self) -> None:
        if self.lines and self.malformed / self.lines > self.max_malformed:
            raise SkewbenchError(self._message())

    def _message(self, early: bool = False) -> str:
        where = str(self.paths[0]) if len(self.paths) == 1 else \
            f"{len(self.paths)} inputs ({self.paths[0]}, ...)"
        first = self.examples[0] if self.examples else None
        at = ""
        if first is not None:
            loc = f"line {first['line']}" if len(self.paths) == 1 else \
                f"{first['file']} line {first['line']}"
            at = f"; first at {loc}: {first['text']!r}"
        if early:
            return (f"{where}: all of the first {self.lines} lines are malformed; is "
                    f"--format {self.fmt} right?{at}")
        return (f"{where}: {self.malformed} of {self.lines} lines "
                f"({_pct(self.malformed / self.lines)}) are malformed, above --max-malformed "
                f"{_pct(self.max_malformed)}{at}")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "lines": self.lines,
            "tuples": self.tuples,
            "malformed": self.malformed,
            "malformed_examples": self.examples,
            "dropped": self.dropped,
        }
        if self.fmt == "google-cluster":
            d["dropped_out_of_trace"] = self.dropped
            d["value_missing"] = self.value_missing
        d.update({
            "reordered": self.reordered,
            "blank_lines": self.blank,
            "comment_lines": self.comment,
            "header_lines": self.header,
            "files": [vars(f) for f in self.files.values()],
        })
        return d


def _pct(x: float) -> str:
    return f"{x * 100:.4g}%"


@dataclass
class _Chunk:
    start: int
    rows: int
    tmin: float


class _Spill:
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


def _emit(spill: _Spill, writer: DatasetWriter, data_columns: Sequence[str], n_keys: int,
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


# --------------------------------------------------------------------------------------------
# the entry point

def _canonical_key(fmt: str, key: str | None) -> str:
    if key is None:
        return DEFAULT_KEYS[fmt]
    k = key.strip().lower()
    k = _KEY_ALIASES[fmt].get(k, k)
    if k not in KEYS[fmt]:
        raise SkewbenchError(f"--key {key!r} is not a key of format {fmt}; choose one of "
                             f"{', '.join(KEYS[fmt])} (default {DEFAULT_KEYS[fmt]})")
    return k


def ingest(fmt: str, inputs: Sequence[str | os.PathLike] | str | os.PathLike,
           out_dir: str | os.PathLike, *,
           key_column: str | None = None, time_column: str | None = None,
           cost_column: str | None = None, value_column: str | None = None,
           key: str | None = None, max_malformed: float = 0.001,
           time_unit: float | None = None, overwrite: bool = False, name: str | None = None,
           progress: Callable[[int], None] | None = None,
           extra_meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Ingest trace ``inputs`` of format ``fmt`` into a dataset at ``out_dir``.

    See the module documentation for the formats.  ``key`` picks the natural key of a fixed
    format (:data:`KEYS`; ``None`` = the default); for ``csv`` use ``key_column`` (``key`` is
    accepted as a synonym).  ``max_malformed`` is the fraction of data lines allowed to be
    malformed.  ``time_unit`` (csv with ``time_column`` only) is the number of seconds per unit
    of the time column, default 1.  ``progress(n)`` is called with the number of input bytes
    (as stored on disk, i.e. compressed for gzip) consumed since the previous call; their total
    is :func:`total_input_bytes`.  ``extra_meta`` adds top-level metadata entries (e.g. the
    catalog's ``catalog_params``); it may not replace the entries written here or by the contract.

    The metadata records ``source.inputs`` (the expanded input files, absolute), every option in
    ``params`` (plus ``t0_epoch``/``t0`` where times are made relative) and the ``ingest`` report.
    Returns the committed metadata.  Raises :class:`SkewbenchError` for bad options, missing or
    unreadable inputs, too many malformed lines or no tuples; nothing is left at ``out_dir``
    then (an existing dataset is replaced only with ``overwrite`` and only on success).
    """
    if fmt not in FORMATS:
        raise SkewbenchError(f"unknown trace format {fmt!r}; choose one of {', '.join(FORMATS)}")
    try:
        max_malformed = float(max_malformed)
    except (TypeError, ValueError):
        raise SkewbenchError(f"--max-malformed must be a fraction in [0, 1], got "
                             f"{max_malformed!r}") from None
    if not 0.0 <= max_malformed <= 1.0:
        raise SkewbenchError(f"--max-malformed must be a fraction in [0, 1], got {max_malformed}")

    params: dict[str, Any]
    if fmt == "csv":
        if key is not None and key_column is not None and key != key_column:
            raise SkewbenchError(f"format csv: --key {key!r} and --key-column {key_column!r} "
                                 "disagree; use --key-column")
        key_column = key_column if key_column is not None else key
        if not key_column:
            raise SkewbenchError("format csv needs --key-column (the name of the key column in "
                                 "the header)")
        if time_unit is not None:
            if time_column is None:
                raise SkewbenchError("--time-unit needs --time-column")
            try:
                time_unit = float(time_unit)
            except (TypeError, ValueError):
                raise SkewbenchError(f"--time-unit must be a positive number, got "
                                     f"{time_unit!r}") from None
            if not (math.isfinite(time_unit) and time_unit > 0):
                raise SkewbenchError(f"--time-unit must be a positive number, got {time_unit}")
        elif time_column is not None:
            time_unit = 1.0
        spec: _Format = _Csv(key_column, time_column, cost_column, value_column,
                             time_unit if time_unit is not None else 1.0)
        key_name = key_column
    else:
        extra = {"--key-column": key_column, "--time-column": time_column,
                 "--cost-column": cost_column, "--value-column": value_column,
                 "--time-unit": time_unit}
        given = [k for k, v in extra.items() if v is not None]
        if given:
            raise SkewbenchError(f"{', '.join(given)}: only for --format csv, not {fmt}")
        key_name = _canonical_key(fmt, key)
        spec = {"slashdot": _Slashdot, "google-cluster": _GoogleCluster, "debs2015": _Debs2015,
                "apache-log": _ApacheLog}[fmt](key_name)
    params = {"key": key_name, "key_column": key_column, "time_column": time_column,
              "cost_column": cost_column, "value_column": value_column, "time_unit": time_unit,
              "max_malformed": max_malformed}

    extra = dict(extra_meta or {})
    clash = sorted(set(extra) & _RESERVED_META)
    if clash:
        raise ValueError(f"extra_meta may not set {clash}")

    paths = expand_inputs(inputs)
    check_target(out_dir, overwrite)
    out = Path(out_dir).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.spill-", dir=out.parent))
    try:
        report = _Report(paths, max_malformed, fmt)
        keydict = _KeyDict()
        spill = _Spill(scratch, spec.columns)
        try:
            for path in paths:
                for rows in spec.iter_rows(path, progress):
                    report.add(rows)
                    spill.add({"ts": rows.ts, "key": keydict.encode(rows.keys),
                               "cost": rows.cost, "value": rows.value})
        finally:
            spill.close()
        report.reordered = spill.reordered
        report.check()
        if spill.rows == 0:
            raise SkewbenchError(
                f"{paths[0] if len(paths) == 1 else f'{len(paths)} inputs'}: no tuples "
                f"({report.lines} data lines, {report.malformed} malformed, {report.dropped} "
                f"dropped)")
        columns = list(spec.columns)
        if "value" in columns and report.value_missing:
            columns.remove("value")
        t0 = 0.0
        if spec.relative_time:
            t0 = min(c.tmin for c in spill.chunks)
            params[spec.t0_param] = int(t0) if t0.is_integer() else t0
        names = keydict.names()
        with DatasetWriter(out, columns, overwrite=overwrite) as writer:
            remap = _emit(spill, writer, columns, len(names), t0)
            if remap is not None:
                order = np.empty(len(names), dtype=np.int64)
                order[remap] = np.arange(len(names))
                names = [names[i] for i in order]
            writer.write_keys(pa.array(names, type=pa.string()))
            meta = {
                "kind": "trace",
                "name": name,
                "source": {"format": fmt, "inputs": [str(p) for p in paths], "key": key_name},
                "params": params,
                "seed": None,
                "n_keys": len(names),
                "ingest": report.to_dict(),
                **extra,
            }
            return writer.commit(meta)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
