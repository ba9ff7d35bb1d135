"""Job-graph datasets: allocation instances stored on the stream dataset contract.

A job-graph dataset holds one or more :class:`~skewbench.allocation.model.Job` s.  Its rows are
the tasks (``seq`` = the task's position, ``ts`` = its instance's index, ``key`` = its group's id
over the whole dataset, ``cost`` = its processing cost in percent of one core), so the contract's
fingerprint, Great Expectations suite and description apply unchanged; the structure is in side
tables (:func:`skewbench.datasets.contract.write_side_table`):

``instances``  instance, name, first group id, groups, edges, nodes, measured (1 when the tasks'
               costs or links' rates were measured rather than uniform), meta (JSON)
``groups``     instance, group, name, tasks, cost (P_g)
``edges``      instance, edge, src, dst, rate (C_e, MB/s)
``nodes``      instance, node, capacity (mu_k^init, percent of one core)
``links``      instance, edge, src_task, dst_task, rate: measured per-link rates (when any)

The metadata's ``job_graph`` field (``{"instances": N, "tasks": m, "edges": E}``) marks the kind.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from skewbench.allocation.model import Job
from skewbench.datasets.contract import Dataset, DatasetWriter, open_dataset
from skewbench.errors import DatasetError, SkewbenchError

COLUMNS = ["seq", "ts", "key", "cost"]
TABLES = ("instances", "groups", "edges", "nodes", "links")


def is_job_graph(meta: Mapping[str, Any]) -> bool:
    return bool(meta.get("job_graph"))


def write_jobs(out_dir: str | os.PathLike, jobs: Sequence[Job], *, meta: Mapping[str, Any],
               overwrite: bool = False, progress: Callable[[int], Any] | None = None) -> dict[str, Any]:
    """Write ``jobs`` as one dataset (atomically); ``meta`` adds ``kind``, ``generator`` or
    ``source``, ``params``, ``seed``, ``name``... as for any dataset.  Returns the metadata."""
    if not jobs:
        raise SkewbenchError("no instance to write")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise SkewbenchError(f"two instances are named '{dup}'; instance names must be unique")
    for j in jobs:
        j.validate()
    inst: dict[str, list[Any]] = {k: [] for k in ("instance", "name", "group_start", "groups", "edges", "nodes",
                                                 "measured", "meta")}
    grp: dict[str, list[Any]] = {k: [] for k in ("instance", "group", "name", "tasks", "cost")}
    edg: dict[str, list[Any]] = {k: [] for k in ("instance", "edge", "src", "dst", "rate")}
    nod: dict[str, list[Any]] = {k: [] for k in ("instance", "node", "capacity")}
    lnk: dict[str, list[np.ndarray]] = {k: [] for k in ("instance", "edge", "src_task", "dst_task", "rate")}
    group_start = 0
    with DatasetWriter(out_dir, COLUMNS, overwrite=overwrite) as w:
        for i, j in enumerate(jobs):
            inst["instance"].append(i)
            inst["name"].append(j.name)
            inst["group_start"].append(group_start)
            inst["groups"].append(j.G)
            inst["edges"].append(j.E)
            inst["nodes"].append(j.K)
            inst["measured"].append(0 if j.uniform else 1)
            inst["meta"].append(json.dumps(j.meta, sort_keys=True, default=str))
            grp["instance"] += [i] * j.G
            grp["group"] += list(range(j.G))
            grp["name"] += list(j.groups)
            grp["tasks"] += j.tasks.tolist()
            grp["cost"] += j.cost.tolist()
            edg["instance"] += [i] * j.E
            edg["edge"] += list(range(j.E))
            edg["src"] += j.src.tolist()
            edg["dst"] += j.dst.tolist()
            edg["rate"] += j.rate.tolist()
            nod["instance"] += [i] * j.K
            nod["node"] += list(range(j.K))
            nod["capacity"] += j.capacity.tolist()
            for e, mat in sorted((j.link_rate or {}).items()):
                mat = np.asarray(mat, dtype=np.float64)
                ni, nj = mat.shape
                lnk["instance"].append(np.full(ni * nj, i, dtype=np.int64))
                lnk["edge"].append(np.full(ni * nj, e, dtype=np.int64))
                lnk["src_task"].append(np.repeat(np.arange(ni, dtype=np.int64), nj))
                lnk["dst_task"].append(np.tile(np.arange(nj, dtype=np.int64), ni))
                lnk["rate"].append(mat.ravel())
            w.append({"ts": np.full(j.m, float(i)), "key": group_start + j.group_of, "cost": j.costs})
            group_start += j.G
            if progress is not None:
                progress(1)
        w.write_table("instances", pa.table({k: pa.array(v, type=pa.string() if k in ("name", "meta") else pa.int64())
                                             for k, v in inst.items()}))
        w.write_table("groups", pa.table({"instance": pa.array(grp["instance"], pa.int64()),
                                          "group": pa.array(grp["group"], pa.int64()),
                                          "name": pa.array(grp["name"], pa.string()),
                                          "tasks": pa.array(grp["tasks"], pa.int64()),
                                          "cost": pa.array(grp["cost"], pa.float64())}))
        w.write_table("edges", pa.table({"instance": pa.array(edg["instance"], pa.int64()),
                                         "edge": pa.array(edg["edge"], pa.int64()),
                                         "src": pa.array(edg["src"], pa.int64()),
                                         "dst": pa.array(edg["dst"], pa.int64()),
                                         "rate": pa.array(edg["rate"], pa.float64())}))
        w.write_table("nodes", pa.table({"instance": pa.array(nod["instance"], pa.int64()),
                                         "node": pa.array(nod["node"], pa.int64()),
                                         "capacity": pa.array(nod["capacity"], pa.float64())}))
        if lnk["instance"]:
            w.write_table("links", pa.table({k: pa.array(np.concatenate(v)) for k, v in lnk.items()}))
        m = sum(j.m for j in jobs)
        full = {**meta, "n_keys": group_start,
                "job_graph": {"instances": len(jobs), "tasks": m, "edges": int(sum(j.E for j in jobs)),
                              "measured": int(sum(inst["measured"]))}}
        return w.commit(full)


def _split(table: pa.Table, n: int) -> list[dict[str, np.ndarray]]:
    """Rows of ``table`` by its ``instance`` column (sorted), as numpy columns per instance."""
    inst = table.column("instance").to_numpy()
    bounds = np.searchsorted(inst, np.arange(n + 1))
    cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in table.column_names}
    return [{c: v[bounds[i]:bounds[i + 1]] for c, v in cols.items()} for i in range(n)]


def read_jobs(ds: Dataset | str | os.PathLike, instances: Sequence[int] | None = None) -> list[Job]:
    """The jobs of a job-graph dataset (all, or the given instance indices), validated."""
    ds = ds if isinstance(ds, Dataset) else open_dataset(ds)
    if not is_job_graph(ds.meta):
        raise DatasetError(f"{ds.path} is a stream dataset, not a job graph (the allocation family replays "
                           "job graphs: `skewbench datasets generate allocation ...` or `skewbench datasets ingest "
                           "job-graph FILE.json`)")
    inst = ds.read_side_table("instances")
    n = inst.num_rows
    groups = _split(ds.read_side_table("groups"), n)
    edges = _split(ds.read_side_table("edges"), n)
    nodes = _split(ds.read_side_table("nodes"), n)
    links = _split(ds.read_side_table("links"), n) if "links" in ds.table_names else None
    cost = np.concatenate([b["cost"] for b in ds.iter_batches(["cost"])]) if ds.tuples else np.zeros(0)
    names = inst.column("name").to_pylist()
    metas = inst.column("meta").to_pylist()
    measured = inst.column("measured").to_numpy()
    tasks_per = np.array([int(g["tasks"].sum()) for g in groups], dtype=np.int64)
    if int(tasks_per.sum()) != ds.tuples:
        raise DatasetError(f"{ds.path}: the groups hold {int(tasks_per.sum())} tasks but the dataset has "
                           f"{ds.tuples} task rows")
    starts = np.concatenate([[0], np.cumsum(tasks_per)])
    chosen = range(n) if instances is None else instances
    out = []
    for i in chosen:
        if not 0 <= i < n:
            raise SkewbenchError(f"instance {i} out of range (the dataset has {n})")
        g, e, k = groups[i], edges[i], nodes[i]
        link_rate = None
        if links is not None and len(links[i]["edge"]):
            link_rate = {}
            li = links[i]
            for edge in np.unique(li["edge"]):
                sel = li["edge"] == edge
                ni = int(g["tasks"][int(e["src"][edge])])
                nj = int(g["tasks"][int(e["dst"][edge])])
                mat = np.zeros((ni, nj))
                mat[li["src_task"][sel], li["dst_task"][sel]] = li["rate"][sel]
                link_rate[int(edge)] = mat
        job = Job(name=str(names[i]), groups=[str(x) for x in g["name"]], tasks=g["tasks"], cost=g["cost"],
                  src=e["src"], dst=e["dst"], rate=e["rate"], capacity=k["capacity"],
                  task_cost=cost[starts[i]:starts[i + 1]].copy() if measured[i] else None, link_rate=link_rate,
                  meta=json.loads(metas[i] or "{}"))
        try:
            out.append(job.validate())
        except SkewbenchError as err:
            raise DatasetError(f"{ds.path}: {err}") from None
    return out
