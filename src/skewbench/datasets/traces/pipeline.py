"""The entry point of trace ingestion, :func:`ingest`: the options checked, pass 1 (each input
parsed by its format, keys given ids, columns spilled), the report checked, and pass 2 (the
tuples written in time order with the key dictionary and the metadata).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from skewbench.datasets.contract import DatasetWriter, check_target
from skewbench.datasets.traces.csvformat import Csv
from skewbench.datasets.traces.formats import FIXED, FORMATS, Format, canonical_key
from skewbench.datasets.traces.reading import expand_inputs
from skewbench.datasets.traces.report import Report
from skewbench.datasets.traces.spill import KeyDict, Spill, emit
from skewbench.errors import SkewbenchError

_RESERVED_META = {"kind", "name", "source", "params", "seed", "n_keys", "ingest", "schema_version",
                  "created_by", "columns", "tuples", "fingerprint", "files"}


def ingest(fmt: str, inputs: Sequence[str | os.PathLike] | str | os.PathLike,
           out_dir: str | os.PathLike, *,
           key_column: str | None = None, time_column: str | None = None,
           cost_column: str | None = None, value_column: str | None = None,
           key: str | None = None, max_malformed: float = 0.001,
           time_unit: float | None = None, overwrite: bool = False, name: str | None = None,
           progress: Callable[[int], None] | None = None,
           extra_meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Ingest trace ``inputs`` of format ``fmt`` into a dataset at ``out_dir``.

    See :mod:`skewbench.datasets.traces` for the formats.  ``key`` picks the natural key of a fixed
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
    max_malformed = _fraction(max_malformed)
    spec: Format
    if fmt == "csv":
        key_column, time_unit = _csv_options(key, key_column, time_column, time_unit)
        spec = Csv(key_column, time_column, cost_column, value_column,
                   time_unit if time_unit is not None else 1.0)
        key_name = key_column
    else:
        extra = {"--key-column": key_column, "--time-column": time_column,
                 "--cost-column": cost_column, "--value-column": value_column,
                 "--time-unit": time_unit}
        given = [k for k, v in extra.items() if v is not None]
        if given:
            raise SkewbenchError(f"{', '.join(given)}: only for --format csv, not {fmt}")
        key_name = canonical_key(fmt, key)
        spec = FIXED[fmt](key_name)
    params: dict[str, Any] = {"key": key_name, "key_column": key_column, "time_column": time_column,
                              "cost_column": cost_column, "value_column": value_column,
                              "time_unit": time_unit, "max_malformed": max_malformed}

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
        report = Report(paths, max_malformed, fmt)
        keydict = KeyDict()
        spill = _spill_inputs(spec, paths, progress, report, keydict, scratch)
        columns = list(spec.columns)
        if "value" in columns and report.value_missing:
            columns.remove("value")
        t0 = 0.0
        if spec.relative_time:
            t0 = min(c.tmin for c in spill.chunks)
            params[spec.t0_param] = int(t0) if t0.is_integer() else t0
        names = keydict.names()
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
        return _write(out, overwrite, spill, columns, names, t0, meta)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fraction(max_malformed: Any) -> float:
    """``--max-malformed`` as a float in [0, 1]."""
    try:
        max_malformed = float(max_malformed)
    except (TypeError, ValueError):
        raise SkewbenchError(f"--max-malformed must be a fraction in [0, 1], got "
                             f"{max_malformed!r}") from None
    if not 0.0 <= max_malformed <= 1.0:
        raise SkewbenchError(f"--max-malformed must be a fraction in [0, 1], got {max_malformed}")
    return max_malformed


def _csv_options(key: str | None, key_column: str | None, time_column: str | None,
                 time_unit: float | None) -> tuple[str, float | None]:
    """The csv format's key column (``key`` is a synonym) and time unit (1 when a time column is
    given without one, None without a time column)."""
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
    return key_column, time_unit


def _spill_inputs(spec: Format, paths: list[Path], progress: Callable[[int], None] | None,
                  report: Report, keydict: KeyDict, scratch: Path) -> Spill:
    """Pass 1: parse every input, count it in ``report``, give the keys ids and spill the columns
    to ``scratch``; then check the report (too many malformed lines, no tuples)."""
    spill = Spill(scratch, spec.columns)
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
    return spill


def _write(out: Path, overwrite: bool, spill: Spill, columns: list[str], names: list[str], t0: float,
           meta: dict[str, Any]) -> dict[str, Any]:
    """Pass 2: the spilled tuples in time order, the key dictionary (ids renumbered in order of
    first appearance when the order changed) and ``meta``, committed at ``out``."""
    with DatasetWriter(out, columns, overwrite=overwrite) as writer:
        remap = emit(spill, writer, columns, len(names), t0)
        if remap is not None:
            order = np.empty(len(names), dtype=np.int64)
            order[remap] = np.arange(len(names))
            names = [names[i] for i in order]
        writer.write_keys(pa.array(names, type=pa.string()))
        return writer.commit(meta)
