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

Modules
-------
:mod:`~skewbench.datasets.traces.pipeline` (:func:`ingest`: options, the two passes),
:mod:`~skewbench.datasets.traces.formats` (the fixed formats, their keys),
:mod:`~skewbench.datasets.traces.csvformat` (the generic ``csv`` format, CSV or Parquet),
:mod:`~skewbench.datasets.traces.reading` (inputs, blocks of lines, the parsing every format
shares), :mod:`~skewbench.datasets.traces.report` (the counts and the malformed-line check) and
:mod:`~skewbench.datasets.traces.spill` (key ids, the external sort).
"""

from skewbench.datasets.traces.formats import DEFAULT_KEYS, FORMATS, KEYS
from skewbench.datasets.traces.pipeline import ingest
from skewbench.datasets.traces.reading import expand_inputs, total_input_bytes

__all__ = ["FORMATS", "KEYS", "DEFAULT_KEYS", "ingest", "expand_inputs", "total_input_bytes"]
