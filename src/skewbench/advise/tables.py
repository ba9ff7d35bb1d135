"""Keys from tables: a CSV file with a header, ``key,count`` pairs, a Parquet file
(:mod:`skewbench.advise.keys` describes the formats and limits)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa

from skewbench.advise.keys import Keys, check_rows, csv_header, from_pairs, from_texts
from skewbench.advise.limits import MAX_FILE_BYTES
from skewbench.datasets.contract import to_numpy
from skewbench.errors import SkewbenchError


def _one_line(e: BaseException, limit: int = 240) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[:limit] + " ..."


def _columns(path: Path, names: list[str], key_column: str | None, count_column: str | None,
             fallback_only: bool) -> tuple[str, str | None]:
    """The key column (``key_column``, else ``key``, else the only column when ``fallback_only``)
    and the count column (``count_column``, else ``count`` when present)."""
    shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
    key = key_column or ("key" if "key" in names else (names[0] if fallback_only and len(names) == 1 else None))
    if key is None or key not in names:
        hint = f"column {key_column!r} is not among" if key_column else "no column 'key' among"
        raise SkewbenchError(f"{path}: no key column: {hint} the columns {shown} (name it with --key-column)")
    count = count_column or ("count" if "count" in names and key != "count" else None)
    if count is not None and count not in names:
        raise SkewbenchError(f"{path}: count column {count!r} is not among the columns {shown}")
    if count == key:
        raise SkewbenchError(f"{path}: the key and count columns are both {key!r}")
    return key, count


def _counts(path: Path, col: pa.ChunkedArray) -> np.ndarray:
    if col.null_count:
        raise SkewbenchError(f"{path}: {col.null_count:,} row(s) without a count")
    return to_numpy(col.combine_chunks().cast(pa.int64())).astype(np.int64)


def _keys_of(path: Path, col: pa.ChunkedArray) -> pa.Array:
    """A key column as text (integers as their decimal text), refusing nulls and empty keys."""
    import pyarrow.compute as pc

    arr = col.combine_chunks()
    if arr.null_count:
        raise SkewbenchError(f"{path}: {arr.null_count:,} row(s) without a key")
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        try:
            arr = arr.cast(pa.large_string())
        except pa.ArrowInvalid:
            raise SkewbenchError(f"{path}: the key column holds binary data that is not UTF-8 text") from None
    if not pa.types.is_large_string(arr.type):
        try:
            arr = arr.cast(pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SkewbenchError(f"{path}: keys of type {arr.type} cannot be read as text ({_one_line(e)})") from None
    if len(arr) and int(pc.min(pc.binary_length(arr)).as_py()) == 0:
        i = int(np.argmax(to_numpy(pc.binary_length(arr)) == 0))
        raise SkewbenchError(f"{path}: row {i + 1:,} has an empty key")
    return arr


def read_csv_keys(path: Path, data: bytes, fmt: str, key_column: str | None, count_column: str | None) -> Keys:
    """Keys from a CSV file with a header (``fmt`` "csv") or from key,count pairs ("counts")."""
    import pyarrow.csv as pcsv

    tab = path.suffix.lower() in (".tsv", ".tab")
    header = csv_header(path, data, "\t" if tab else ",")
    if not tab and len(header) == 1 and "\t" in header[0]:
        tab, header = True, csv_header(path, data, "\t")
    delimiter = "\t" if tab else ","
    if fmt == "counts":
        has_header = [h.strip().lower() for h in header] == ["key", "count"]
        names = ["key", "count"]
        key, count = "key", "count"
        read = pcsv.ReadOptions(column_names=names, block_size=1 << 24)
    else:
        key, count = _columns(path, header, key_column, count_column, fallback_only=True)
        has_header = False
        read = pcsv.ReadOptions(block_size=1 << 24)
    body = data
    if has_header:  # the header key,count (after any blank lines): read what follows it
        body = data.lstrip(b" \t\r\n")
        body = body[body.index(b"\n") + 1:] if b"\n" in body else b""
        if not body.strip():
            raise SkewbenchError(f"{path}: a header and no key,count pairs")
    include = [key] + ([count] if count else [])
    types = {key: pa.large_string(), **({count: pa.int64()} if count else {})}
    try:
        table = pcsv.read_csv(io.BytesIO(body), read_options=read,
                              parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True,
                                                              newlines_in_values=False, ignore_empty_lines=True),
                              convert_options=pcsv.ConvertOptions(include_columns=include, column_types=types,
                                                                  strings_can_be_null=False,
                                                                  quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowKeyError) as e:
        raise SkewbenchError(f"{path}: {_one_line(e)}") from None
    what = "key,count pairs" if count else "rows"
    check_rows(path, table.num_rows, what)
    keys = _keys_of(path, table.column(key))
    if count:
        return from_pairs(str(path), fmt, keys, _counts(path, table.column(count)))
    return from_texts(str(path), fmt, keys)


def read_parquet_keys(path: Path, key_column: str | None, count_column: str | None) -> Keys:
    """Keys from a Parquet file (the key column, else ``key``, else its only column)."""
    import pyarrow.parquet as pq

    size = path.stat().st_size
    if size == 0:
        raise SkewbenchError(f"{path} is empty: no keys")
    if size > MAX_FILE_BYTES:
        raise SkewbenchError(f"{path} holds {size:,} bytes; at most {MAX_FILE_BYTES:,} are read")
    try:
        pf = pq.ParquetFile(path)
        key, count = _columns(path, pf.schema_arrow.names, key_column, count_column, fallback_only=True)
        rows = pf.metadata.num_rows
        check_rows(path, rows, "rows")
        table = pf.read(columns=[key] + ([count] if count else []))
    except (pa.ArrowInvalid, OSError) as e:
        raise SkewbenchError(f"{path}: not a readable Parquet file ({_one_line(e)})") from None
    keys = _keys_of(path, table.column(key))
    if count:
        col = table.column(count)
        if not pa.types.is_integer(col.type):
            raise SkewbenchError(f"{path}: the count column {count!r} holds {col.type}, not integers")
        return from_pairs(str(path), "parquet", keys, _counts(path, col))
    return from_texts(str(path), "parquet", keys)
