"""The live DAG's steps (``dags/skewbench_live.py``), as plain functions: no Airflow here.

``check_params`` -> ``prepare_dataset`` (per dataset) -> ``open_tracking`` -> ``run_dataset``
(per dataset, one at a time: two live runs at once would share the cores they measure) ->
``log_results`` -> ``report``; ``fail_tracking`` when any of them fails.

Parameters (the DAG's Params form, in sections, checked again here with one sentence per bad
value before anything starts; names as ``skewbench live``'s options unless said):

Datasets          ``datasets``: catalog names; empty: every entry of the catalog's ``live`` set
Engines           ``engines`` (``flink`` and/or ``spark``), ``flink_address`` (HOST:PORT of a running
                  Flink's REST endpoint; empty: a local standalone cluster of ``taskmanagers``
                  TaskManagers started for the run), ``native`` (the engines' own routing too)
Strategies        ``strategies``: grouping strategies; ``routing`` (replay: the replay's decisions
                  carried in each tuple; engine: on Flink, the strategies with a Java router decide
                  in each source at run time, checked against the replay tuple for tuple)
Shedders          ``shedders``: operator shedders in front of worker 0
Stream and work   ``workers``; ``duration`` (s of stream per Flink phase) at ``load`` (percent of the
                  workers' capacity) unless ``rate`` (tuples per second) or ``tuples`` (the prefix)
                  is given; ``cost`` (ms or 'dataset'), ``work`` (sleep or cpu)
Flink job         ``job`` (agg: the keyed windowed aggregation; map: the stateless worker),
                  ``window`` (ms), ``merge_parallelism`` (0: the workers'), ``state_backend``,
                  ``checkpoint_interval`` (s, 0: none)
Measurement       ``repeat`` (runs of every phase: medians with their range), ``spark_tuples``
                  (the prefix a Spark stage runs)
Capacity search   ``capacity_search`` (on Flink, after the phases: each of ``capacity_strategies``'
                  capacity searched over rates ``repeat`` times, :mod:`skewbench.live.capacity_run`,
                  beside the capacity its routing predicts), ``capacity_duration`` (a probe's seconds
                  of stream at the predicted capacity), ``capacity_steps`` (halvings of the bracket)

A dataset's outputs go to ``<runs root>/<logical date>/live-<run id>/<dataset>/``: ``live.json``
(written atomically once the run is complete; :func:`skewbench.live.run.live_rows`'s result with
the attempt), ``capacity.json`` with the capacity search (when it ran), the engines' per-tuple
timings in ``work/``, and ``failure.json`` when the run failed (its reason, for the MLflow parent).  The run's page is ``live.html`` beside them.

This module imports only light modules at import time: the DAG reads it at parse time.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping

from skewbench.errors import SkewbenchError
from skewbench.live import config as lc

DAG_ID = "skewbench_live"
#: the catalog set the DAG runs when no dataset is named
SET = "live"
#: the grouping strategies run by default: ``skewbench live``'s, and spark-sql, so that both
#: engines' own routing (Flink's keyBy for flink, Spark SQL's repartition for spark-sql) is checked
DEFAULT_STRATEGIES = (*lc.DEFAULT_GROUPING, "spark-sql")
RESULTS, FAILURE, PAGE, CAPACITY = "live.json", "failure.json", "live.html", "capacity.json"
#: the capacity search's defaults (those of :mod:`skewbench.live.capacity_run` and
#: :mod:`skewbench.live.capacity`, repeated here so that parsing the DAG imports neither; a test
#: keeps them equal)
CAPACITY_STRATEGIES = ("kg", "pkg", "dc", "sg")
CAPACITY_DURATION_S = 8.0
CAPACITY_STEPS = 5


def _grouping_names() -> list[str]:
    from skewbench import registry

    return registry.names("grouping")


def _default_flink_address() -> str:
    from skewbench.settings import settings

    return settings().flink_address


def params_schema() -> dict[str, dict[str, Any]]:
    """Every Param: type, default, form section, description (with the allowed range in words:
    the form's number inputs would clamp a value silently, :func:`check_params` refuses it)."""
    return {
        "datasets": {"type": "array", "items": {"type": "string"}, "default": [], "section": "Datasets",
                     "description": f"Catalog datasets to execute live; empty = every entry of the catalog's "
                                    f"'{SET}' set."},
        "engines": {"type": "array", "items": {"type": "string"}, "default": list(lc.ENGINES),
                    "examples": list(lc.ENGINES), "section": "Engines",
                    "description": "Engines to execute each strategy on (flink needs the Flink environment, "
                                   "make flink-env)."},
        # null or text: Airflow's form refuses an empty required text field (the trigger button
        # stayed disabled with the local default, "")
        "flink_address": {"type": ["null", "string"], "default": _default_flink_address() or None, "section": "Engines",
                          "description": "HOST:PORT of a running Flink cluster's REST endpoint (default: "
                                         "SKEWBENCH_FLINK_ADDRESS, the deployed stack's JobManager); empty = a "
                                         "local Flink started for the run."},
        "taskmanagers": {"type": "integer", "default": 2, "section": "Engines",
                         "description": "TaskManagers of the local Flink cluster started when flink_address is "
                                        "empty, each a process of its own (allowed: 1 to 16)."},
        "native": {"type": "boolean", "default": True, "section": "Engines",
                   "description": "Also execute the engines' own routing (Flink's keyBy for flink, Spark SQL's "
                                  "repartition for spark-sql), checked against the strategy to the tuple."},
        "strategies": {"type": "array", "items": {"type": "string"}, "default": list(DEFAULT_STRATEGIES),
                       "examples": _grouping_names(), "section": "Strategies",
                       "description": "Grouping strategies, each executed with its own decisions."},
        "shedders": {"type": "array", "items": {"type": "string"}, "default": [],
                     "examples": list(lc.DEFAULT_SHEDDING) + ["ns"], "section": "Shedders",
                     "description": "Operator shedders in front of worker 0 (e.g. las, bl, sm, fk); empty = none."},
        "routing": {"type": "string", "enum": list(lc.ROUTINGS), "default": lc.LiveConfig.routing,
                    "section": "Strategies",
                    "description": "On Flink: replay = each tuple carries the replay's decision; engine = the "
                                   "strategies with a Java router decide in each source at run time (checked "
                                   "against the replay tuple for tuple, their time a tuple on each row); the "
                                   "others keep the replay's."},
        "workers": {"type": "integer", "default": 8, "section": "Stream and work",
                    "description": f"Parallelism (allowed: 1 to {lc.MAX_WORKERS})."},
        "duration": {"type": "number", "default": 30.0, "section": "Stream and work",
                     "description": f"Seconds of stream per Flink phase, at the offered rate (allowed: 1 to "
                                    f"{lc.MAX_DURATION_S:,.0f}); the dataset's length caps it."},
        "load": {"type": "number", "default": lc.DEFAULT_LOAD, "section": "Stream and work",
                 "description": "The offered rate in percent of the workers' capacity (workers x 1000 / mean cost, "
                                "tuples per second) (allowed: above 0 and at most 1,000)."},
        "rate": {"type": ["null", "number"], "default": None, "section": "Stream and work",
                 "description": f"Tuples per second, each stamped when due; empty = from load; a number overrides "
                                f"load (allowed: 0 to {lc.MAX_RATE:,.0f}; 0 = every tuple due at once, which has no "
                                f"steady state to measure on Flink)."},
        "tuples": {"type": ["null", "integer"], "default": None, "section": "Stream and work",
                   "description": f"The stream's first tuples per Flink phase; empty = from duration at the rate "
                                  f"(allowed: 1 to {lc.MAX_TUPLES:,})."},
        "cost": {"type": "string", "default": "1", "section": "Stream and work",
                 "description": f"Work per tuple in milliseconds, or 'dataset' (its cost column) (allowed: above 0 "
                                f"and at most {lc.MAX_COST_MS:,.0f})."},
        "work": {"type": "string", "enum": list(lc.WORK), "default": "sleep", "section": "Stream and work",
                 "description": "sleep: a worker with a core of its own (right with fewer cores than workers); "
                                "cpu: busy, for a cluster with a core per worker."},
        "job": {"type": "string", "enum": list(lc.JOBS), "default": "agg", "section": "Flink job",
                "description": "agg: a keyed windowed aggregation in Flink state (count and sum per key and "
                               "window), with the merge stage split keys need; map: the stateless worker."},
        "window": {"type": "number", "default": 1000.0, "section": "Flink job",
                   "description": "The aggregation's tumbling window, milliseconds of event time (the due time) "
                                  "(allowed: above 1 and at most 3,600,000)."},
        "merge_parallelism": {"type": "integer", "default": 0, "section": "Flink job",
                              "description": f"The merge stage's parallelism; 0 = the workers' (allowed: 0 to "
                                             f"{lc.MAX_WORKERS})."},
        "state_backend": {"type": "string", "enum": list(lc.STATE_BACKENDS), "default": "hashmap",
                          "section": "Flink job",
                          "description": "Flink's keyed state: hashmap (on the heap) or rocksdb."},
        "checkpoint_interval": {"type": "number", "default": 0.0, "section": "Flink job",
                                "description": "Seconds between checkpoints; 0 = none (allowed: 0 to 3,600)."},
        "repeat": {"type": "integer", "default": 3, "section": "Measurement",
                   "description": f"Runs of every phase on each engine (the strategies' order rotated): the "
                                  f"medians with their minimum and maximum (allowed: 1 to {lc.MAX_REPEAT})."},
        "spark_tuples": {"type": "integer", "default": lc.SPARK_TUPLES, "section": "Measurement",
                         "description": f"The stream's first tuples a Spark stage runs (a batch) (allowed: 1 to "
                                        f"{lc.MAX_TUPLES:,})."},
        "capacity_search": {"type": "boolean", "default": True, "section": "Capacity search",
                            "description": "On Flink, after the phases: search each capacity strategy's capacity "
                                           "(the largest rate its job sustains with the workers, judged by the "
                                           "sources' lag trend; repeat searches each) beside the capacity its "
                                           "routing predicts. Runs only when engines has flink."},
        "capacity_strategies": {"type": "array", "items": {"type": "string"}, "default": list(CAPACITY_STRATEGIES),
                                "examples": _grouping_names(), "section": "Capacity search",
                                "description": "Grouping strategies whose capacity is searched."},
        "capacity_duration": {"type": "number", "default": CAPACITY_DURATION_S, "section": "Capacity search",
                              "description": "A probe's seconds of stream at the predicted capacity (allowed: 1 "
                                             "to 120)."},
        "capacity_steps": {"type": "integer", "default": CAPACITY_STEPS, "section": "Capacity search",
                           "description": "Halvings of the bracket between a sustained and an unsustained rate "
                                          "after the first two probes (allowed: 0 to 20)."},
    }


def form_params() -> dict[str, dict[str, Any]]:
    """The Params of the trigger form (what :func:`params_schema` says, as Airflow's Param takes it)."""
    return {name: dict(spec) for name, spec in params_schema().items()}


# --------------------------------------------------------------------------------------------
# check_params


def _names(name: str, v: Any, known: list[str] | None, bad: list[str], allow_empty: bool = True) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        bad.append(f"parameter '{name}' is a list of names, got {v!r}.")
        return []
    if len(set(v)) != len(v):
        bad.append(f"parameter '{name}' names {sorted({x for x in v if v.count(x) > 1})[0]!r} twice.")
    if not v and not allow_empty:
        bad.append(f"parameter '{name}' is empty; choose from {', '.join(known or [])}.")
    unknown = [x for x in v if known is not None and x not in known]
    if unknown:
        bad.append(f"parameter '{name}': {', '.join(map(repr, unknown))} "
                   f"{'is' if len(unknown) == 1 else 'are'} not one of {', '.join(known or [])}.")
    return list(v)


def _number(name: str, v: Any, lo: float, hi: float, integer: bool, bad: list[str], low_open: bool = False,
            empty: bool = False) -> Any:
    """``v`` within [lo, hi] (``(lo, hi]`` when ``low_open``); ``empty``: None is allowed too."""
    if v is None and empty:
        return v
    ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok_type or not math.isfinite(float(v)):
        bad.append(f"parameter '{name}' is {'an integer' if integer else 'a number'}{' or empty' if empty else ''}, "
                   f"got {v!r}.")
        return v
    if not (v > lo if low_open else v >= lo) or v > hi:
        words = f"above {_plain(lo)}" if low_open else _plain(lo)
        bad.append(f"parameter '{name}': {v!r} is out of range; allowed: "
                   f"{words + ' and at most ' if low_open else words + ' to '}{_plain(hi)}.")
    return v


def _plain(x: float) -> str:
    """A bound as a person writes it: 3,600,000, not 3.6e+06."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,g}"


def _choice(name: str, v: Any, allowed: tuple[str, ...], bad: list[str]) -> None:
    if v not in allowed:
        bad.append(f"parameter '{name}': {v!r} is not one of {', '.join(allowed)}.")


def _cost(v: Any, bad: list[str]) -> str | float:
    if v == "dataset":
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        bad.append(f"parameter 'cost' is milliseconds per tuple or 'dataset', got {v!r}.")
        return 1.0
    _number("cost", f, 0.0, lc.MAX_COST_MS, False, bad, low_open=True)
    return f


def _operator_shedders(names: list[str], bad: list[str]) -> None:
    from skewbench import registry

    partition = [n for n in names if getattr(registry.get("shedding", n), "kind", "operator") != "operator"]
    if partition:
        bad.append(f"parameter 'shedders': {', '.join(partition)} partition{'s' if len(partition) == 1 else ''} a "
                   "windowed aggregation; the live mode runs operator shedders (e.g. las, bl, sm, fk).")


def _values(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Every parameter's value (defaults filled in) and one sentence per bad one."""
    from skewbench import registry

    schema = params_schema()
    bad = [f"unknown parameter '{k}'; known: {', '.join(schema)}." for k in params if k not in schema]
    v = {k: params.get(k, spec["default"]) for k, spec in schema.items()}
    v["datasets"] = _names("datasets", v["datasets"], None, bad)
    v["engines"] = _names("engines", v["engines"], list(lc.ENGINES), bad, allow_empty=False)
    v["strategies"] = _names("strategies", v["strategies"], registry.names("grouping"), bad)
    v["shedders"] = _names("shedders", v["shedders"], registry.names("shedding"), bad)
    if not bad and not v["strategies"] and not v["shedders"]:
        bad.append("no strategy to run: name grouping strategies or shedders.")
    if not bad:
        _operator_shedders(v["shedders"], bad)
    _choice("routing", v["routing"], lc.ROUTINGS, bad)
    _number("workers", v["workers"], 1, lc.MAX_WORKERS, True, bad)
    _number("duration", v["duration"], 1.0, lc.MAX_DURATION_S, False, bad)
    _number("load", v["load"], 0.0, 1000.0, False, bad, low_open=True)
    _number("rate", v["rate"], 0.0, lc.MAX_RATE, False, bad, empty=True)
    _number("tuples", v["tuples"], 1, lc.MAX_TUPLES, True, bad, empty=True)
    v["cost"] = _cost(v["cost"], bad)
    _choice("work", v["work"], lc.WORK, bad)
    _choice("job", v["job"], lc.JOBS, bad)
    _number("window", v["window"], 1.0, 3_600_000.0, False, bad, low_open=True)
    _number("merge_parallelism", v["merge_parallelism"], 0, lc.MAX_WORKERS, True, bad)
    _choice("state_backend", v["state_backend"], lc.STATE_BACKENDS, bad)
    _number("checkpoint_interval", v["checkpoint_interval"], 0.0, 3600.0, False, bad)
    _number("repeat", v["repeat"], 1, lc.MAX_REPEAT, True, bad)
    _number("spark_tuples", v["spark_tuples"], 1, lc.MAX_TUPLES, True, bad)
    _number("taskmanagers", v["taskmanagers"], 1, 16, True, bad)
    if not isinstance(v["capacity_search"], bool):
        bad.append(f"parameter 'capacity_search' is true or false, got {v['capacity_search']!r}.")
    v["capacity_strategies"] = _names("capacity_strategies", v["capacity_strategies"], registry.names("grouping"), bad,
                                      allow_empty=not (v["capacity_search"] is True and "flink" in v["engines"]))
    _number("capacity_duration", v["capacity_duration"], 1.0, 120.0, False, bad)
    _number("capacity_steps", v["capacity_steps"], 0, 20, True, bad)
    if v["rate"] == 0 and not isinstance(v["rate"], bool) and "flink" in v["engines"]:
        bad.append("parameter 'rate': 0 (every tuple due at once) has no steady state to measure on Flink; leave it "
                   "empty (from load) or give tuples per second.")
    if not isinstance(v["native"], bool):
        bad.append(f"parameter 'native' is true or false, got {v['native']!r}.")
    addr = v["flink_address"] = v["flink_address"] or ""
    host, _, port = addr.rpartition(":") if isinstance(addr, str) else ("", "", "")
    if not isinstance(addr, str) or (addr and (not host or not port.isdigit() or not 0 < int(port) < 65536)):
        bad.append(f"parameter 'flink_address' is HOST:PORT of a Flink REST endpoint or empty, got {addr!r}.")
    return v, bad


def _check_flink(v: Mapping[str, Any]) -> None:
    """The Flink engine's needs: the Flink environment, a JVM, a reachable address, and the job's
    jar (compiled now when its source changed: a JDK is needed then)."""
    from skewbench.settings import flink_environment, settings

    flink_environment()  # one line naming `make flink-env`
    if shutil.which("java") is None:
        raise SkewbenchError("the Flink engine runs its job on a JVM and `java` is not on PATH: install a JDK "
                             "(make java installs openjdk-17-jdk-headless)")
    if v["flink_address"]:
        import socket

        host, _, port = v["flink_address"].rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as e:
            raise SkewbenchError(f"parameter 'flink_address': nothing answers at {v['flink_address']} "
                                 f"({e.strerror or e}); start the Flink cluster or leave the address empty") from None
    from skewbench.live.flink import job_jar

    job_jar(settings().state)


def check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Validate the run's parameters and resolve the datasets; :class:`SkewbenchError` with one
    sentence per bad value (all of them, in one line) before anything starts."""
    v, bad = _values(params)
    if bad:
        raise SkewbenchError(" ".join(bad))
    from skewbench.datasets.catalog import load_catalog

    entries = load_catalog().select(v["datasets"] or None, None if v["datasets"] else SET)
    missing = [e.name for e in entries if not e.available]
    if missing:
        raise SkewbenchError(f"the input of dataset(s) {', '.join(missing)} is absent: nothing to run live")
    v["datasets"] = [e.name for e in entries]
    cfg = config(v, v["datasets"][0])
    cfg.check()
    if searches(v):
        from skewbench.live.capacity_run import check_config

        check_config(capacity_config(v, v["datasets"][0]))
    if v["cost"] != "dataset":
        _check_work(cfg, float(v["cost"]))
    if "flink" in v["engines"]:
        _check_flink(v)
    return v


def _check_work(cfg: lc.LiveConfig, cost_ms: float) -> None:
    """At a fixed cost: the work of a strategy's phase on Flink (the prefix ``duration`` or
    ``tuples`` gives, :meth:`LiveConfig.check_work`, which a run checks again on the dataset's own
    length) and of its Spark stage (``spark_tuples``) within
    :data:`skewbench.live.config.MAX_SECONDS_PER_STRATEGY`."""
    try:
        if "flink" in cfg.engines:
            cfg.check_work(cost_ms)
    except SkewbenchError as e:
        raise SkewbenchError(str(e).replace("fewer --tuples", "a shorter duration, fewer tuples, a lower load or a "
                                                              "lower cost")) from None
    seconds = cfg.spark_tuples * cost_ms / 1000.0 / cfg.workers
    if "spark" in cfg.engines and seconds > lc.MAX_SECONDS_PER_STRATEGY:
        raise SkewbenchError(f"parameter 'spark_tuples': {cfg.spark_tuples:,} tuples of {cost_ms:g} ms on "
                             f"{cfg.workers} workers take at least {seconds:.0f} s per strategy on Spark; at most "
                             f"{lc.MAX_SECONDS_PER_STRATEGY:.0f}: fewer spark_tuples or a lower cost.")


def config(conf: Mapping[str, Any], dataset: str) -> lc.LiveConfig:
    """The live run of one dataset (:class:`skewbench.live.config.LiveConfig`) from checked
    parameters (:func:`check_params`; ``rate`` and ``tuples`` None: from ``load`` and ``duration``)."""
    rate = conf["rate"]
    return lc.LiveConfig(dataset=dataset, workers=conf["workers"], tuples=conf["tuples"],
                         rate=None if rate is None else float(rate), load=float(conf["load"]),
                         duration_s=float(conf["duration"]), repeat=conf["repeat"], job=conf["job"],
                         window_ms=float(conf["window"]), merge_parallelism=conf["merge_parallelism"],
                         state_backend=conf["state_backend"], checkpoint_s=float(conf["checkpoint_interval"]),
                         taskmanagers=conf["taskmanagers"], spark_tuples=conf["spark_tuples"], cost=conf["cost"],
                         work=conf["work"], engines=tuple(conf["engines"]), grouping=tuple(conf["strategies"]),
                         shedding=tuple(conf["shedders"]), native=bool(conf["native"]),
                         routing=conf["routing"], flink_address=conf["flink_address"])


def searches(conf: Mapping[str, Any]) -> bool:
    """Whether the run searches capacities: ``capacity_search`` set and Flink among the engines."""
    return bool(conf.get("capacity_search")) and "flink" in conf["engines"]


def capacity_config(conf: Mapping[str, Any], dataset: str) -> lc.LiveConfig:
    """The capacity search's live configuration: the run's (:func:`config`) on Flink alone, with
    the capacity strategies, no shedders, a probe's duration, each probe's rate its own."""
    import dataclasses

    return dataclasses.replace(config(conf, dataset), engines=("flink",), grouping=tuple(conf["capacity_strategies"]),
                               shedding=(), rate=None, tuples=None, duration_s=float(conf["capacity_duration"]))


# --------------------------------------------------------------------------------------------
# where a run writes


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "run"


def run_dir(logical_date: str, run_id: str) -> Path:
    """``<runs root>/<logical date>/live-<run id>``: this DAG run's outputs."""
    from skewbench.settings import settings

    return settings().runs_root / _safe(str(logical_date)[:10]) / f"live-{_safe(run_id)}"


def dataset_dir(out_root: str | os.PathLike, dataset: str) -> Path:
    return Path(out_root) / _safe(dataset)


def _write_json(path: Path, doc: Any) -> None:
    """Write ``doc`` to ``path`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, default=float, indent=1) + "\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# the steps


def prepare_dataset(name: str, conf: Mapping[str, Any]) -> dict[str, Any]:
    """Materialise one catalog dataset (kept when up to date) and validate it (Great
    Expectations), as the nightly does; a dataset without a cost column is refused when the run's
    cost is ``dataset``."""
    from skewbench.datasets.catalog import load_catalog
    from skewbench.datasets.contract import open_dataset
    from skewbench.errors import ValidationFailed
    from skewbench.materialize import materialize
    from skewbench.settings import settings

    entry = load_catalog().select([name])[0]
    engine = "spark" if entry.spec is not None and entry.spec.tuples > 5_000_000 else "local"
    status = materialize(entry, settings().data_root, engine=engine, validate=True)
    if status["validation"] == "failed":
        raise ValidationFailed(status["detail"])
    ds = open_dataset(status["path"])
    if conf.get("cost") == "dataset" and "cost" not in ds.columns:
        raise SkewbenchError(f"{name} has no cost column: give the run a cost in milliseconds, not 'dataset'")
    return {"name": name, "path": status["path"], "status": status["status"], "fingerprint": ds.meta["fingerprint"],
            "tuples": ds.meta["tuples"]}


def attempt_note(attempt: int) -> str:
    """What a run's attempt means for its numbers (logged, and tagged in MLflow)."""
    if attempt <= 1:
        return "1: the run's first attempt"
    return (f"{attempt}: retried after a failed attempt; every phase ran again from the start and only this "
            "attempt's timings are kept (a run's timing after a restart is not a measurement)")


def run_dataset(conf: Mapping[str, Any], dataset: Mapping[str, Any], out_root: str, attempt: int = 1,
                progress: Callable[[str], None] = print, cluster: Any = None) -> dict[str, Any]:
    """Execute one dataset live (:func:`skewbench.live.run.live_rows`), then, when the run
    :func:`searches`, search its capacities on Flink (:func:`skewbench.live.capacity_run.capacity_search`:
    a cluster of its own, calibrated again); write ``capacity.json`` and ``live.json`` once both
    are complete, or ``failure.json`` (the reason) and raise.  A retry discards what an earlier
    attempt left and runs everything again.  ``cluster``: a running local Flink cluster both use
    (kept running; :func:`skewbench.live.flinkcluster.local_cluster`), else each starts its own."""
    from skewbench.live.run import live_rows
    from skewbench.settings import settings

    out = dataset_dir(out_root, dataset["name"])
    if attempt > 1:
        progress(f"attempt {attempt_note(attempt)}")
    for stale in (out / RESULTS, out / FAILURE, out / CAPACITY):
        stale.unlink(missing_ok=True)
    shutil.rmtree(out / "work", ignore_errors=True)
    (out / "work").mkdir(parents=True)
    step = None  # the live run's; the capacity search's is named in the reason
    try:
        res = live_rows(dataset["path"], config(conf, dataset["name"]), out / "work", state=settings().state,
                        progress=progress, cluster=cluster)
        found = None
        if searches(conf):
            from skewbench.live.capacity_run import SearchSettings, capacity_search

            step = "capacity search"
            progress(f"{dataset['name']}: the capacity search of {', '.join(conf['capacity_strategies'])}")
            found = capacity_search(dataset["path"], capacity_config(conf, dataset["name"]),
                                    SearchSettings(steps=int(conf["capacity_steps"])), out / "work" / "capacity",
                                    state=settings().state, duration_s=float(conf["capacity_duration"]),
                                    progress=progress, cluster=cluster)
    except Exception as e:
        _write_json(out / FAILURE, {"dataset": dataset["name"], "attempt": attempt,
                                    "error": f"{type(e).__name__}: {' '.join(str(e).split())}"[:2000],
                                    **({"step": step} if step else {})})
        raise
    if found is not None:
        _write_json(out / CAPACITY, {**found, "dataset": dataset["name"], "attempt": attempt})
    doc = {**res.to_dict(), "dataset": dataset["name"], "attempt": attempt, "attempt_note": attempt_note(attempt)}
    _write_json(out / RESULTS, doc)
    return {"dataset": dataset["name"], "path": str(out / RESULTS), "rows": len(res.rows), "attempt": attempt,
            "capacity": None if found is None else str(out / CAPACITY)}


def open_tracking(conf: Mapping[str, Any], dag_id: str, run_id: str) -> dict[str, str]:
    from skewbench.live import tracking

    eid, pid = tracking.open_parent(conf, dag_id, run_id)
    return {"experiment_id": eid, "parent_run_id": pid}


def failure_reason(out_root: str, datasets: list[str], fallback: str) -> str:
    """The reasons the datasets' runs wrote (``failure.json``), else ``fallback``."""
    reasons = []
    for name in datasets:
        f = dataset_dir(out_root, name) / FAILURE
        if f.is_file():
            doc = json.loads(f.read_text())
            step = f", {doc['step']}" if doc.get("step") else ""
            reasons.append(f"{name} (attempt {doc.get('attempt')}{step}): {doc.get('error')}")
    return "; ".join(reasons) or fallback


def fail_tracking(conf: Mapping[str, Any], dag_id: str, run_id: str, fallback: str) -> str:
    """End the DAG run's MLflow parent FAILED with the reason; returns the reason."""
    from skewbench.live import tracking

    reason = failure_reason(conf["out_root"], list(conf["datasets"]), fallback)
    tracking.fail(dag_id, run_id, reason)
    return reason


def load_results(conf: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every dataset's ``live.json`` of the run (with its ``path``, and its capacity search's
    ``capacity.json`` as ``capacity`` when there is one: else None); an error names a missing one."""
    out = []
    for name in conf["datasets"]:
        f = dataset_dir(conf["out_root"], name) / RESULTS
        if not f.is_file():
            raise SkewbenchError(f"{name}: no {RESULTS} in {f.parent}: its live run did not complete")
        cap = f.with_name(CAPACITY)
        out.append({**json.loads(f.read_text()), "path": str(f),
                    "capacity": {**json.loads(cap.read_text()), "path": str(cap)} if cap.is_file() else None})
    return out


def log_results(conf: Mapping[str, Any], dag_id: str, run_id: str) -> dict[str, Any]:
    """Log every dataset's live result to MLflow (:func:`skewbench.live.tracking.log_results`);
    what was logged is saved beside the results for the report."""
    from skewbench.live import tracking

    logged = tracking.log_results(load_results(conf), dag_id, run_id)
    _write_json(Path(conf["out_root"]) / "mlflow-live.json", logged)
    return {k: v for k, v in logged.items() if k != "children"}


def describe(result: Mapping[str, Any]) -> str:
    """What a dataset's live run executed, in one line: per engine the tuples of a phase and the
    runs of each (Flink: the stream's prefix at its rate; Spark: a batch stage's tuples)."""
    s, rows = result["stream"], result["rows"]
    engines = []
    for engine in dict.fromkeys(r["engine"] for r in rows):
        mine = [r for r in rows if r["engine"] == engine]
        tuples = max(int(r.get("tuples_offered") or 0) for r in mine)
        runs = max(int(r.get("repeat") or 1) for r in mine)
        what = (f"{tuples:,} tuples at {s['rate']:,.0f}/s" if engine == "flink" and s.get("rate")
                else f"a batch stage of {tuples:,} tuples" if engine == "spark" else f"{tuples:,} tuples")
        engines.append(f"{engine}: {what}, {runs} run{'s' if runs != 1 else ''} a phase")
    return (f"{result.get('dataset') or s['dataset']} ({s['workers']} workers, {s['cost_model']}; "
            f"{'; '.join(engines)})")


def report(conf: Mapping[str, Any], dag_id: str, run_id: str) -> str:
    """The run's page (``live.html``: simulated against measured), logged to the MLflow parent,
    which it ends FINISHED; returns the run's summary (the console table per dataset)."""
    from skewbench.live import tracking
    from skewbench.live.cli import table
    from skewbench.present.livepage import write_page

    results = load_results(conf)
    saved = Path(conf["out_root"]) / "mlflow-live.json"
    simulated = json.loads(saved.read_text()).get("simulated", {}) if saved.is_file() else {}
    runs = [{**r, "simulated": simulated.get(r["dataset"], {}),
             "retry": r.get("attempt_note") if int(r.get("attempt", 1)) > 1 else None} for r in results]
    page = write_page(runs, Path(conf["out_root"]) / PAGE, f"skewbench live: simulated vs measured, {run_id}")
    url = tracking.finish(dag_id, run_id, page)
    lines = []
    for r in results:
        lines += [f"{describe(r)}, attempt {r.get('attempt_note')}", table(r["rows"])]
        lines += [f"  {a['engine']}: {a['metric']} ranks {a['strategies']} strategies alike, Kendall tau "
                  f"{'-' if a['kendall_tau'] is None else format(a['kendall_tau'], '.3f')}" for a in r["agreement"]]
        if r.get("capacity"):
            from skewbench.live.capacity_run import table as capacity_table

            n = int(r["capacity"]["repeat"])
            lines += [f"capacity on flink ({r['capacity']['workers']} workers, {n} search{'es' if n != 1 else ''} "
                      f"each):", capacity_table(r["capacity"])]
        lines.append("")
    lines += [f"page: {page}", f"MLflow: {url}"]
    return "\n".join(lines)
