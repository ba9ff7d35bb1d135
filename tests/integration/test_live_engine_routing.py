"""The live job routed by the strategies' Java routers in the engine (issue 41, items 2-3):
``routing="engine"`` makes each pace subtask (one source of the stream, tuples ``j, j + s, ...``)
decide every tuple's worker with its own router, and the run checks each tuple's worker against
the Python replay's decision, naming the first tuple, its key, its source and both workers where
they differ; each phase reports its routers' nanoseconds a tuple.

Run on a Flink mini-cluster in the client's JVM through :func:`skewbench.live.flink.run` (no
calibration: nothing here is timed against a prediction), every strategy with a router, 5
sources: 8 workers on a Zipf stream of int64 ids and on the Slashdot sample (integer key values
the engines' partitioners hash), 100 workers on the Apache log sample (string keys: the request
paths; Flink's network memory raised for 5 x 100 channels).  Needs the Flink environment: ``make
slow``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TUPLES = 4000
P = 8
S = 5
#: each stream's workers
STREAMS = {"zipf-1.5": P, "slashdot": P, "apache-log": 100}
#: a mini-cluster's network buffers for 100 workers (its default 64 MB holds 2,048 buffers, fewer
#: than the 5 sources x 100 workers channels need)
NETWORK = {"taskmanager.memory.network.min": "512mb", "taskmanager.memory.network.max": "512mb"}


@pytest.fixture(scope="module")
def runs(flink_env, shared_data, tmp_path_factory):
    """{dataset: [(engine phase, recorded)]}: every router's phase on each stream, one JVM each."""
    from skewbench.datasets.catalog import load_catalog
    from skewbench.live import decisions as dec
    from skewbench.live import flink, routers
    from skewbench.live.config import LiveConfig
    from skewbench.live.run import engine_phase, engine_settings, with_routing
    from skewbench.materialize import materialize

    root = tmp_path_factory.mktemp("engine-routing")
    state = root / "state"
    names = routers.names(state)
    out = {}
    for entry in load_catalog(REPO / "datasets" / "catalog.yaml", shared_data=shared_data).select(list(STREAMS)):
        path = materialize(entry, root / "data", engine="local")["path"]
        workers = STREAMS[entry.name]
        cfg = LiveConfig(dataset=entry.name, workers=workers, sources=S, tuples=TUPLES, rate=40_000.0, cost=0.005,
                         grouping=tuple(names), engines=("flink",), routing="engine")
        stream = dec.read_stream(str(path), cfg)
        decided = [dec.grouping_phase(stream, n, cfg) for n in names]
        phases = with_routing(decided, "flink", False, frozenset(names))
        assert [p.routing for p in phases] == ["engine"] * len(names)
        eps = [engine_phase(p, cfg, 1, engine_settings(cfg)) for p in phases]
        dirs = flink.run(eps, root / f"work-{entry.name}", state=state, mini_cluster=NETWORK if workers > P else {})
        out[entry.name] = [(ep, flink.read_phase(d)) for ep, d in zip(eps, dirs)]
    return out


@pytest.mark.parametrize("dataset", list(STREAMS))
def test_every_router_in_the_engine_equals_the_replay_tuple_for_tuple(runs, dataset):
    from skewbench.live.run import check_routing

    for ep, rec in runs[dataset]:
        check_routing(ep, rec)  # every tuple once, on the replay's worker (RoutingMismatch otherwise)
        assert rec.work.shape[0] == ep.tuples and ep.workers == STREAMS[dataset]
        assert rec.route is not None and int(rec.route[:, 1].sum()) == ep.tuples, ep.name
        assert 0.0 < rec.router_ns_per_tuple < 1e6, (ep.name, rec.router_ns_per_tuple)
    if dataset == "slashdot":  # the engines' partitioners hashed the trace's values, not the dense ids
        kafka = next(ep for ep, _ in runs[dataset] if ep.router == "kafka")
        assert not np.array_equal(kafka.route_key, kafka.dense)


def test_a_router_that_disagrees_with_the_replay_is_named(runs):
    """The check can fail: the replay's decision of one tuple moved to another worker, the engine's
    routing of it (unchanged) no longer matches, and the message names both workers."""
    from skewbench.live.run import RoutingMismatch, check_routing

    ep, rec = next((e, r) for e, r in runs["zipf-1.5"] if e.router == "pkg")
    worker = ep.worker.copy()
    i = 1234
    worker[i] = (worker[i] + 1) % P
    bad = dataclasses.replace(ep, worker=worker)
    with pytest.raises(RoutingMismatch, match=rf"its router in the engine decided other workers than the replay for 1 "
                                              rf"of its {TUPLES:,} tuples; the first, tuple {i} \(key \d+, hashed as \d+, "
                                              rf"source {i % S}\): engine {ep.worker[i]}, replay {worker[i]}"):
        check_routing(bad, rec)
