"""The trace formats with fixed columns (``slashdot``, ``google-cluster``, ``debs2015``,
``apache-log``; the generic ``csv`` is :mod:`skewbench.datasets.traces.csvformat`), each a
:class:`Format` whose ``parse`` turns one block of lines into :class:`~skewbench.datasets.traces.reading.Rows`;
their natural keys (:data:`KEYS`) and the aliases ``--key`` accepts.  The mapping of each format
is documented in :mod:`skewbench.datasets.traces`.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skewbench.datasets.traces.reading import (Block, Rows, column_of, floats, iter_blocks, lines_array, np_bool,
                                               ordered_map, prepare, read_delimited, rows_from_block, take, uints)
from skewbench.errors import SkewbenchError

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
OUT_OF_TRACE = (0, (1 << 63) - 1)

_LOG_RE = (r'^(?P<client>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<request>(?:[^"\\]|\\.)*)" '
           r'(?P<status>\d{3}|-) (?P<size>\d+|-)(?: [^\r\n]*)?\r?\n?$')
# After a line matched _LOG_RE (a fast, capture-free check), these extract the fields from its
# start (captures over the whole line are ~10x slower).  A request word: no space, no bare quote.
_WORD = r'(?:[^\s"\\]|\\\S)+'
_CLIENT_PREFIX_RE = r"^(?P<client>\S+) \S+ \S+ \[(?P<time>[^\]]+)\]"
_URL_PREFIX_RE = _CLIENT_PREFIX_RE + rf' "(?P<method>[A-Za-z]+) (?P<url>{_WORD})(?: {_WORD})?"'
_LOG_TIME_FORMAT = "%d/%b/%Y:%H:%M:%S %z"


def canonical_key(fmt: str, key: str | None) -> str:
    if key is None:
        return DEFAULT_KEYS[fmt]
    k = key.strip().lower()
    k = _KEY_ALIASES[fmt].get(k, k)
    if k not in KEYS[fmt]:
        raise SkewbenchError(f"--key {key!r} is not a key of format {fmt}; choose one of "
                             f"{', '.join(KEYS[fmt])} (default {DEFAULT_KEYS[fmt]})")
    return k


class Format:
    name = ""
    columns: tuple[str, ...] = ("seq", "ts", "key")
    relative_time = False       # ts made relative to the earliest tuple (t0 stored in params)
    t0_param = "t0_epoch"

    def __init__(self, key: str):
        self.key = key

    def iter_rows(self, path: Path, progress) -> Iterator[Rows]:
        return ordered_map(partial(self.parse, block) for block in iter_blocks(path, progress))

    def parse(self, block: Block) -> Rows:  # pragma: no cover - abstract
        raise NotImplementedError


class Slashdot(Format):
    name = "slashdot"

    def parse(self, block: Block) -> Rows:
        prep = prepare(block, comments=True)
        table, row_idx, bad = read_delimited(prep, ["source", "target"], ["source", "target"],
                                              "\t", None)
        src, dst = column_of(table, "source"), column_of(table, "target")
        ok = uints(src)[0] & uints(dst)[0]
        keys = take(src if self.key == "source" else dst, ok)
        return rows_from_block(prep, [bad, row_idx[~ok]], keys=keys)


class GoogleCluster(Format):
    name = "google-cluster"
    columns = ("seq", "ts", "key", "value")
    _NAMES = [f"c{i}" for i in range(1, 14)]

    def parse(self, block: Block) -> Rows:
        prep = prepare(block)
        key_col = "c3" if self.key == "job" else "c8"
        table, row_idx, bad = read_delimited(prep, self._NAMES, ["c1", key_col, "c10"], ",",
                                              None)
        ts_ok, ts_us = uints(column_of(table, "c1"))
        key_ok, _ = uints(column_of(table, key_col))
        cpu_ok, cpu = floats(column_of(table, "c10"), allow_empty=True)
        ok = ts_ok & key_ok & cpu_ok
        inside = ok & (ts_us != OUT_OF_TRACE[0]) & (ts_us != OUT_OF_TRACE[1])
        return rows_from_block(prep, [bad, row_idx[~ok]],
                                keys=take(column_of(table, key_col), inside),
                                ts=ts_us[inside] / 1e6, value=cpu[inside],
                                dropped=int(ok.sum() - inside.sum()))


class Debs2015(Format):
    name = "debs2015"
    columns = ("seq", "ts", "key", "value")
    relative_time = True
    _NAMES = ["medallion", "distance", "dropoff", "px", "py", "dx", "dy", "fare", "tip"]

    def parse(self, block: Block) -> Rows:
        prep = prepare(block)
        include = ["medallion", "dropoff", "fare"] if self.key == "medallion" else \
            ["dropoff", "px", "py", "dx", "dy", "fare"]
        table, row_idx, bad = read_delimited(prep, self._NAMES, include, ",", None)
        ts_ok, ts = uints(column_of(table, "dropoff"))
        fare_ok, fare = floats(column_of(table, "fare"))
        ok = ts_ok & fare_ok
        if self.key == "medallion":
            med = column_of(table, "medallion")
            ok &= np_bool(pc.greater(pc.binary_length(med), 0))
            keys = take(med, ok)
        else:
            cells = {}
            for c in ("px", "py", "dx", "dy"):
                c_ok, cells[c] = uints(column_of(table, c))
                ok &= c_ok
            s = {c: pc.cast(pa.array(v[ok]), pa.string()) for c, v in cells.items()}
            keys = pc.binary_join_element_wise(
                pc.binary_join_element_wise(s["px"], s["py"], "."),
                pc.binary_join_element_wise(s["dx"], s["dy"], "."), "-")
        return rows_from_block(prep, [bad, row_idx[~ok]], keys=keys,
                                ts=ts[ok].astype(np.float64), value=fare[ok])


class ApacheLog(Format):
    name = "apache-log"
    relative_time = True

    def parse(self, block: Block) -> Rows:
        prep = prepare(block)
        row_idx = prep.parse_idx
        if len(row_idx) == 0:
            return rows_from_block(prep, [], keys=pa.array([], type=pa.string()),
                                    ts=np.zeros(0))
        lines = lines_array(prep)
        ok = np_bool(pc.match_substring_regex(lines, _LOG_RE))
        m = pc.extract_regex(take(lines, ok),
                             _CLIENT_PREFIX_RE if self.key == "client" else _URL_PREFIX_RE)
        good = np_bool(m.is_valid())
        when = pc.strptime(pc.struct_field(m, "time"), format=_LOG_TIME_FORMAT, unit="s",
                           error_is_null=True)
        good &= np_bool(when.is_valid())
        ok[ok] = good
        if self.key == "client":
            keys = pc.struct_field(m, "client")
        else:
            keys = pc.replace_substring_regex(pc.struct_field(m, "url"), r"[?#].*$", "",
                                              max_replacements=1)
        keys = take(keys.cast(pa.string()), good)
        ts = pc.cast(take(when, good), pa.int64()).to_numpy().astype(np.float64)
        return rows_from_block(prep, [row_idx[~ok]], keys=keys, ts=ts)


#: The class of each fixed format (``csv`` takes its columns from the header: see ``csvformat``).
FIXED: dict[str, type[Format]] = {"slashdot": Slashdot, "google-cluster": GoogleCluster, "debs2015": Debs2015,
                                  "apache-log": ApacheLog}
