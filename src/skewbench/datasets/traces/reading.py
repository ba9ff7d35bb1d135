"""Reading trace inputs, shared by every format: the input files (directories, gzip), blocks of
whole lines, the lines a parser must not see (blank, comment, header, malformed before parsing:
bad UTF-8, a stray carriage return, an odd number of quotes), delimited parsing with Arrow, the
vectorised field parsers and :class:`Rows`, what a format's parser returns for one block.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from skewbench.errors import SkewbenchError

BLOCK_BYTES = 16 << 20          # text is read in blocks of about this many bytes (whole lines)
MAX_LINE_BYTES = 16 << 20       # a longer line is refused (a file without newlines is not a trace)
PARSE_THREADS = max(1, min(4, os.cpu_count() or 1))   # blocks parsed in parallel
EXAMPLE_CHARS = 200
_INT64_MAX_TEXT = str((1 << 63) - 1)

_NUMBER_RE = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
_SURROGATE = re.compile("[\udc80-\udcff]")


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

class Block:
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
        return clip(raw.decode("utf-8", errors="backslashreplace"))

    def line_number(self, i: int) -> int:
        return self.first_line + int(i)


def clip(text: str) -> str:
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS - 3] + "..."


def iter_blocks(path: Path, progress: Callable[[int], None] | None,
                 block_bytes: int | None = None) -> Iterator[Block]:
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
            block = Block(path, data, line_no)
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


def blank_mask(block: Block) -> np.ndarray:
    """Lines that are empty (or just ``\\r``)."""
    lens = np.diff(block.starts) - 1
    one = np.flatnonzero(lens == 1)
    blank = lens == 0
    blank[one] = block.arr[block.starts[one]] == 13
    return blank


def ordered_map(tasks: Iterable[Callable[[], Rows]]) -> Iterator[Rows]:
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
class Prepared:
    """A block with the lines that the parser must not see removed."""

    block: Block
    blank: int
    comment: int
    header: int
    premal: np.ndarray          # block line indices that are malformed before parsing
    parse_idx: np.ndarray       # block line index of each line handed to the parser
    parse_data: bytes
    parse_starts: np.ndarray    # line starts in parse_data, plus its length


def prepare(block: Block, *, comments: bool = False, quotes: bool = False,
             skip_through: int = -1) -> Prepared:
    """Classify the lines of a block: blank, comment, header (``<= skip_through``), malformed
    before parsing (bad UTF-8, a stray ``\\r``, an odd number of quotes), or to be parsed."""
    arr, starts, n = block.arr, block.starts, block.n_lines
    lens = np.diff(starts) - 1                       # without the '\n'
    nonempty = lens > 0
    blank = blank_mask(block)
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
    return Prepared(block, int(blank.sum()), int(comment.sum()), int(header.sum()),
                     np.flatnonzero(premal), parse_idx, parse_data, parse_starts)


def read_delimited(prep: Prepared, names: list[str], include: list[str], delimiter: str,
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


def lines_array(prep: Prepared) -> pa.Array:
    """The prepared lines as one Arrow string array (each string keeps its line terminator)."""
    n = len(prep.parse_idx)
    return pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(np.ascontiguousarray(prep.parse_starts, dtype=np.int64)),
        pa.py_buffer(prep.parse_data))




# --------------------------------------------------------------------------------------------
# vectorised field parsing; masks are numpy bool arrays

def column_of(table: pa.Table, name: str) -> pa.Array:
    c = table.column(name)
    return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c


def np_bool(a) -> np.ndarray:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    return a.fill_null(False).to_numpy(zero_copy_only=False).astype(bool, copy=False)


def take(a: pa.Array, mask: np.ndarray) -> pa.Array:
    return a.filter(pa.array(mask, type=pa.bool_()))


def uints(a: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative decimal integers fitting int64: ``(ok, values)`` (values 0 where not ok)."""
    ok = np_bool(pc.ascii_is_decimal(a))
    n = len(a)
    vals = np.zeros(n, dtype=np.int64)
    if n == 0:
        return ok, vals
    length = pc.binary_length(a).to_numpy(zero_copy_only=False)
    long = ok & (length >= 19)
    if long.any():
        fits = np_bool(pc.less_equal(a, pa.scalar(_INT64_MAX_TEXT)))
        ok &= ~long | ((length == 19) & fits)
    if ok.any():
        vals[ok] = pc.cast(take(a, ok), pa.int64()).to_numpy()
    return ok, vals


def floats(a: pa.Array, allow_empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Finite decimal numbers: ``(ok, values)``; values NaN where not ok or empty."""
    t = pc.utf8_trim_whitespace(a)
    ok = np_bool(pc.match_substring_regex(t, _NUMBER_RE))
    vals = np.full(len(a), np.nan)
    if ok.any():
        vals[ok] = pc.cast(take(t, ok), pa.float64()).to_numpy()
        ok &= np.isfinite(vals)
    if allow_empty:
        ok |= np_bool(pc.equal(pc.binary_length(t), 0))
    return ok, vals




# --------------------------------------------------------------------------------------------
# what a parser returns

@dataclass
class Rows:
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


def rows_from_block(prep: Prepared, bad_idx: Sequence[np.ndarray], **kw) -> Rows:
    block = prep.block
    idx = np.sort(np.concatenate([prep.premal, *bad_idx]).astype(np.int64))
    lines = block.n_lines - prep.blank - prep.comment - prep.header
    return Rows(path=block.path, lines=lines, malformed=idx + block.first_line,
                 example=lambda ln: block.text(ln - block.first_line),
                 blank=prep.blank, comment=prep.comment, header=prep.header, **kw)
