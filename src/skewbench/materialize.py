"""Materialise catalog entries: generate or ingest, skip what is up to date, optionally validate.

Shared by ``skewbench datasets generate catalog`` and the Airflow datasets DAG, so that both make
the same decisions.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable

from skewbench.datasets.catalog import Entry, same_params
from skewbench.datasets.contract import METADATA_FILE, open_dataset
from skewbench.errors import DatasetError, SkewbenchError


def catalog_params(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The catalog parameters a dataset was made from, as recorded in its metadata."""
    return meta.get("catalog_params") or (meta.get("params") if meta.get("kind") == "synthetic" else None)


def input_files(entry: Entry) -> list[list[Any]]:
    """``[path, size, mtime_ns]`` of every file an entry reads (directories expanded), recorded
    in the dataset's metadata as ``catalog_inputs``: a file replaced at the same path changes it."""
    if not entry.inputs:
        return []
    from skewbench.datasets.traces import expand_inputs

    out = []
    for f in expand_inputs(list(entry.inputs)):
        st = f.stat()
        out.append([str(f), int(st.st_size), int(st.st_mtime_ns)])
    return out


def is_up_to_date(entry: Entry, out: Path) -> bool:
    """True when ``out`` holds a complete dataset made from exactly ``entry``'s parameters and,
    for an entry with input files, from the same files (path, size and modification time)."""
    if not (out / METADATA_FILE).exists():
        return False
    try:
        meta = open_dataset(out).meta
    except DatasetError:
        return False
    recorded = catalog_params(meta)
    if recorded is None or not same_params(recorded, entry.params()):
        return False
    return not entry.inputs or meta.get("catalog_inputs") == input_files(entry)


def materialize(entry: Entry, root: Path, *, overwrite: bool = False, engine: str = "spark",
                partitions: int | None = None, validate: bool = False,
                bar: Callable[..., Any] | None = None, spark: Any = None) -> dict[str, Any]:
    """Make ``root/entry.name`` hold ``entry``; returns ``{"status", "validation", "detail", "path"}``.

    ``status`` is ``skipped`` (an optional trace whose input is absent), ``up-to-date`` (kept) or
    ``written``; ``validation`` is ``None`` (not asked), ``valid`` or ``failed`` (the report's
    message is then the detail).  Bad inputs raise :class:`SkewbenchError`.
    """
    out = Path(root) / entry.name
    if not entry.available:
        missing = [str(p) for p in entry.inputs if not p.exists()]
        if entry.optional:
            return {"status": "skipped", "validation": None, "detail": f"input absent: {missing[0]}",
                    "path": str(out)}
        raise SkewbenchError(f"dataset '{entry.name}': input {missing[0]} does not exist")
    if out.exists() and not (out / METADATA_FILE).exists() and any(out.iterdir()):
        raise SkewbenchError(f"{out} exists and is not a skewbench dataset; move it away first")
    progress = bar or (lambda *a, **k: nullcontext(None))
    if not overwrite and is_up_to_date(entry, out):
        status = {"status": "up-to-date", "detail": "", "path": str(out)}
        meta = open_dataset(out).meta
    else:
        replace = out.exists()
        if entry.spec is not None:
            if engine == "spark":
                from skewbench.spark import generate_on_spark, get_spark

                with progress(None, f"{entry.name} (spark tasks)", unit="tasks") as update:
                    meta = generate_on_spark(spark or get_spark(), entry.spec, out, partitions=partitions,
                                             name=entry.name, overwrite=replace, progress=update)
            else:
                from skewbench.datasets.generators import generate

                with progress(entry.spec.tuples, entry.name) as update:
                    meta = generate(entry.spec, out, name=entry.name, overwrite=replace, progress=update)
        elif entry.workload is not None:
            fn = entry.workload_function()
            with progress(None, f"{entry.name} ({entry.workload.rpartition(':')[2]})") as update:
                meta = fn(out, params=dict(entry.options), seed=entry.seed, inputs=list(entry.inputs), name=entry.name,
                          overwrite=replace, progress=update,
                          extra_meta={"catalog_params": entry.params(), "catalog_inputs": input_files(entry)})
        else:
            from skewbench.datasets.traces import ingest

            with progress(None, f"ingest {entry.name}", unit="B") as update:
                meta = ingest(entry.trace, list(entry.inputs), out, name=entry.name, overwrite=replace,
                              progress=update,
                              extra_meta={"catalog_params": entry.params(), "catalog_inputs": input_files(entry)},
                              **entry.options)
        status = {"status": "written", "path": str(out)}
    status["detail"] = f"{meta['tuples']:,} tuples, fingerprint {meta['fingerprint']}"
    status["validation"] = None
    if validate:
        from skewbench.validation import validate_dataset

        report = validate_dataset(out, spark=spark)
        status["validation"] = "valid" if report.success else "failed"
        if not report.success:
            status["detail"] = report.message()
    return status
