"""The allocation family's instances (allocation.spec.md section 4): the paper's sets have the spec's
shapes and numbers, E5 follows GEN and is reproducible per instance, grouping replays become job
graphs with the hand-computed costs and rates, and users' JSON job graphs parse, fail with the
field's JSON path, and round-trip."""

from __future__ import annotations

import copy
import json
import math
import re

import numpy as np
import pytest

from skewbench.allocation import instances as I
from skewbench.allocation.model import Job
from skewbench.errors import SkewbenchError


def _plain_json(job: Job) -> None:
    assert json.loads(json.dumps(job.meta)) == job.meta


# ---------------------------------------------------------------------------------------------
# E1-E4


def test_example2_matches_e1():
    (job,) = I.example2()
    assert job.groups == ["v1", "v2", "v3", "v4"]
    assert job.tasks.tolist() == [10, 20, 10, 10]
    assert job.cost.tolist() == [40.0] * 4 and job.total_cost == 160.0
    assert list(zip(job.src.tolist(), job.dst.tolist())) == [(0, 1), (1, 2), (2, 3)]
    assert job.rate.tolist() == [100.0, 90.0, 10.0] and job.imc_total == 200.0
    assert job.capacity.tolist() == [40.0] * 4
    assert job.m == 50 and job.uniform and job.meta == {"set": "e1"}


def test_priority_sweep():
    jobs = I.priority()
    assert [j.meta["f"] for j in jobs] == [2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1, 1.0]
    for j in jobs:
        assert j.tasks.tolist() == [4, 4, 10] and j.cost.tolist() == [40.0, 40.0, 100.0]
        assert j.capacity.tolist() == [100.0] * 3
        assert j.rate[0] == 10.0 and j.rate[1] == pytest.approx(10.0 * j.meta["f"])
        assert j.meta["set"] == "e2"
        _plain_json(j)
    # RS ranks v2 -> v3 first only while f > 1.75 (spec E2)
    assert [bool(j.rs[1] > j.rs[0]) for j in jobs] == [j.meta["f"] > 1.75 for j in jobs]
    assert len({j.name for j in jobs}) == len(jobs)
    assert [j.meta["f"] for j in I.priority([1.75])] == [1.75]


def test_asymmetry_matches_e3():
    jobs = I.asymmetry()
    assert [j.meta for j in jobs] == [{"set": "e3", "f": f} for f in range(1, 8)]
    for f, j in enumerate(jobs, start=1):
        assert j.tasks.tolist() == [10, 10 * f]
        assert j.cost.tolist() == [200.0, 200.0] and j.rate.tolist() == [100.0]
        assert j.capacity.tolist() == [80.0] * 6
    with pytest.raises(SkewbenchError, match="whole number"):
        I.asymmetry([1.25])


def test_pipeline_e4_and_noise():
    (job,) = I.pipeline()
    assert job.tasks.tolist() == [100] * 4 and job.cost.tolist() == [100.0] * 4
    assert job.rate.tolist() == [100.0] * 3 and job.capacity.tolist() == [100.0] * 8
    assert job.meta["set"] == "e4" and job.meta["noise"] == 0
    (a,) = I.pipeline(noise=0.05, seed=3)
    (b,) = I.pipeline(noise=0.05, seed=3)
    (c,) = I.pipeline(noise=0.05, seed=4)
    assert np.all(np.abs(a.rate - 100.0) <= 5.0) and np.any(a.rate != 100.0)
    assert a.rate.tolist() == b.rate.tolist() and a.rate.tolist() != c.rate.tolist()
    (small,) = I.pipeline(tasks_per_group=10, groups=3, nodes=2, capacity=250.0)
    assert small.tasks.tolist() == [10] * 3 and small.capacity.tolist() == [250.0] * 2
    with pytest.raises(SkewbenchError, match="tasks_per_group"):
        I.pipeline(tasks_per_group=0)


# ---------------------------------------------------------------------------------------------
# E5


@pytest.fixture(scope="module")
def e5() -> list[Job]:
    return I.random_graphs()


def test_random_graphs_shape(e5):
    assert len(e5) == 2000
    assert e5[0].name == "e5-0000" and e5[1999].name == "e5-1999"
    for i, j in enumerate(e5):
        assert j.m == 17 and 3 <= j.G <= 7
        assert abs(j.total_cost - 500.0) <= 1e-9
        assert np.all((j.rate >= 5.0) & (j.rate <= 20.0))
        assert np.all(j.src < j.dst)  # edges go forward (topological group order)
        assert set(range(1, j.G)) <= set(j.dst.tolist())  # every group >= 1 has an incoming edge
        assert j.capacity.tolist() == [100.0] * 8
        assert j.meta == {"set": "e5", "index": i, "eta": 0.5}
    assert {j.G for j in e5} == {3, 4, 5, 6, 7}


def test_random_graphs_cost_law():
    # eta = 0: PC exactly proportional to task count
    for j in I.random_graphs(count=50, eta=0.0, seed=5):
        assert np.allclose(j.cost, 500.0 * j.tasks / 17.0, rtol=1e-12)


def test_random_graphs_fanout_law(e5):
    ones = could = 0
    for i, j in enumerate(e5):
        n, _, edges, _, fanout = I._gen(np.random.default_rng([0, i]), 17, 500.0, 0.5)
        assert n.tolist() == j.tasks.tolist() and edges == list(zip(j.src.tolist(), j.dst.tolist()))
        out = np.bincount(j.src, minlength=j.G)
        for g, f in enumerate(fanout):
            assert out[g] >= f  # the repair only adds edges
            if j.G - 1 - g >= 2:
                could += 1
                ones += f == 1
    assert abs(ones / could - 0.70) <= 0.05


def test_random_graphs_reproducible_per_instance(e5):
    for i in (0, 7, 1234, 1999):
        alone = I.random_graph(i)
        ref = e5[i]
        assert alone.name == ref.name and alone.meta == ref.meta
        for attr in ("tasks", "cost", "src", "dst", "rate", "capacity"):
            assert getattr(alone, attr).tolist() == getattr(ref, attr).tolist()
    again = I.random_graphs(count=5)
    assert [j.rate.tolist() for j in again] == [j.rate.tolist() for j in e5[:5]]
    other = I.random_graphs(count=5, seed=1)
    assert [j.rate.tolist() for j in other] != [j.rate.tolist() for j in e5[:5]]


# ---------------------------------------------------------------------------------------------
# E6, E8


@pytest.mark.parametrize("fn, topo, step, total_imc, total_pc, tasks", [
    (I.twitter, "twitter", 25.0, 143.0, 610.0, [4, 12, 6, 1]),
    (I.stock, "stock", 50.0, 790.0, 630.0, [2, 2, 8, 8, 4, 1]),
])
def test_real_workload_proxies(fn, topo, step, total_imc, total_pc, tasks):
    jobs = fn()
    for j in jobs:
        assert j.imc_total == total_imc and j.total_cost == total_pc and j.tasks.tolist() == tasks
        assert j.K == 100 and j.meta["set"] == f"e6-{topo}" and j.meta["placeholder"] is True
        _plain_json(j)
    mus = [j.meta["mu"] for j in jobs]
    assert mus == [float(j.capacity[0]) for j in jobs]
    assert np.allclose(np.diff(mus), step)
    first = jobs[0]
    largest = float(first.per_task.max())
    assert mus[0] % 25 == 0 and largest <= mus[0] and total_pc <= 100 * mus[0]
    assert mus[0] - 25 < largest or total_pc > 100 * (mus[0] - 25)  # the smallest such multiple of 25
    assert mus[-1] >= total_pc > mus[-2]  # ends where everything fits on one node
    assert [j.meta["mu"] for j in fn(capacities=[300, 400], nodes=10)] == [300, 400]
    assert fn(nodes=10)[0].meta["mu"] == 75  # sum P / 10 > 50


def test_stock_edges():
    (j, *_) = I.stock()
    edges = [(j.groups[a], j.groups[b], r) for a, b, r in zip(j.src, j.dst, j.rate)]
    assert edges == [("TRD", "VWAP", 150.0), ("VWAP", "JOIN", 150.0), ("QTE", "JOIN", 300.0),
                     ("JOIN", "FLT", 170.0), ("FLT", "OUT", 20.0)]


def test_rate_schedule_and_e8_job():
    s = I.rate_schedule()
    assert s[0] == (0.0, 120.0, 1.0) and s[1] == (120.0, 300.0, 1.0)
    assert [r for _, _, r in s[2:]] == [0.5, 0.75, 0.3, 1.0, 0.6]
    assert all(b - a == 240.0 for a, b, _ in s[2:])
    assert all(s[k][1] == s[k + 1][0] for k in range(len(s) - 1)) and s[-1][1] == 1500.0
    (job,) = I.twitter_e8()
    assert job.capacity.tolist() == [400.0] * 100 and job.imc_total == 143.0
    assert job.meta["schedule"] == [list(p) for p in s] and job.meta["set"] == "e8"
    _plain_json(job)


# ---------------------------------------------------------------------------------------------
# grouping replays

WT = [30, 10, 0]
SWT = [20, 5, 0, 10, 5, 0]  # source 0, then source 1


def test_from_grouping_by_hand():
    job = I.from_grouping(WT, SWT, 2, 3, name="toy", duration_s=2.0, tuple_cost_ms=4.0, tuple_bytes=1e5,
                          source_pc=5.0, capacity=10.0)
    # worker PC = tuples x 4 ms / 2 s = 2 ms/s per tuple = 0.2% per tuple; the idle worker gets IDLE_PC
    assert job.groups == ["sources", "workers"] and job.tasks.tolist() == [2, 3]
    assert job.task_cost.tolist() == pytest.approx([5.0, 5.0, 6.0, 2.0, I.IDLE_PC])
    assert job.cost.tolist() == pytest.approx([10.0, 8.0 + I.IDLE_PC])
    # link rate = tuples x 1e5 B / 2 s / 1e6 = 0.05 MB/s per tuple
    assert np.allclose(job.link_rate[0], [[1.0, 0.25, 0.0], [0.5, 0.25, 0.0]], rtol=1e-12, atol=0)
    assert job.rate.tolist() == pytest.approx([2.0]) and job.imc_total == pytest.approx(2.0)
    assert job.K == 3 and job.capacity.tolist() == [10.0] * 3  # ceil(18.001 / (0.7 x 10)) = 3
    assert not job.uniform and job.meta["tuple_cost_ms"] == 4.0
    _plain_json(job)


def test_from_grouping_defaults():
    job = I.from_grouping(WT, SWT, 2, 3, name="toy", duration_s=2.0, capacity=10.0)
    # derived tuple cost: the busiest worker (30 tuples) costs 80% of a node of 10
    assert job.meta["tuple_cost_ms"] == pytest.approx(0.8 * 10 * 10 * 2 / 30)
    assert float(job.task_cost[2]) == pytest.approx(8.0)
    assert job.total_cost <= I.TARGET_UTILISATION * 10.0 * job.K
    measured = I.from_grouping(WT, SWT, 2, 3, name="m", worker_cost=[1.0, 2.0, 3.0], nodes=1)
    assert measured.task_cost.tolist() == [10.0, 10.0, 1.0, 2.0, 3.0] and measured.K == 1


@pytest.mark.parametrize("wt, swt, s, n, msg", [
    (WT, SWT, 3, 3, r"source_worker_tuples has 6 entries; expected sources x workers = 3 x 3 = 9"),
    (WT, SWT, 2, 2, r"worker_tuples has 3 entries for 2 workers"),
    ([30, 10, 1], SWT, 2, 3, r"differ from worker_tuples"),
    ([30, 10, -1], [20, 5, 0, 10, 5, -1], 2, 3, r"finite numbers >= 0"),
])
def test_from_grouping_shape_errors(wt, swt, s, n, msg):
    with pytest.raises(SkewbenchError, match=msg):
        I.from_grouping(wt, swt, s, n, name="bad")


def test_from_grouping_worker_cost_shape():
    with pytest.raises(SkewbenchError, match="worker_cost needs one finite cost > 0 per worker"):
        I.from_grouping(WT, SWT, 2, 3, name="bad", worker_cost=[1.0, 2.0])


def test_from_grouping_results(tmp_path):
    from skewbench.results import write_results

    rows = [
        {"strategy": "kg", "workers": 3, "sources": 2, "seed": 0, "worker_tuples": WT,
         "source_worker_tuples": SWT, "dataset": "zipf"},
        {"strategy": "sg", "workers": 2, "sources": 1, "seed": 1, "worker_tuples": [20, 20],
         "source_worker_tuples": [20, 20], "dataset": "zipf"},
    ]
    write_results(tmp_path / "res", "grouping", rows, [], {"dataset": {"name": "zipf"}})
    jobs = I.from_grouping_results(tmp_path / "res", duration_s=2.0, capacity=10.0)
    assert [j.name for j in jobs] == ["zipf/kg n=3 s=2 seed=0", "zipf/sg n=2 s=1 seed=1"]
    # one derived tuple cost for the dataset: its busiest worker anywhere (30 tuples) costs 80%
    assert [j.meta["tuple_cost_ms"] for j in jobs] == pytest.approx([0.8 * 10 * 10 * 2 / 30] * 2)
    assert jobs[1].task_cost.tolist()[1:] == pytest.approx([20 * 8.0 / 30] * 2)
    assert jobs[0].meta["strategy"] == "kg" and jobs[1].meta["seed"] == 1
    only = I.from_grouping_results(tmp_path / "res", strategies=["sg"], tuple_cost_ms=1.0)
    assert [j.meta["strategy"] for j in only] == ["sg"] and only[0].meta["tuple_cost_ms"] == 1.0
    with pytest.raises(SkewbenchError, match="no results for strategy pkg"):
        I.from_grouping_results(tmp_path / "res", strategies=["pkg"])
    with pytest.raises(SkewbenchError, match="unknown option cpu"):
        I.from_grouping_results(tmp_path / "res", cpu=1)


# ---------------------------------------------------------------------------------------------
# users' job graphs

GOOD = {
    "name": "toy",
    "groups": [{"name": "v1", "tasks": 2, "cost": 20}, {"name": "v2", "tasks": 3, "cost": 30},
               {"name": "v3", "tasks": 1, "cost": 5}],
    "edges": [{"from": "v1", "to": "v2", "rate": 10}, {"from": "v2", "to": "v3", "rate": 4.5}],
    "nodes": [{"capacity": 50, "count": 2}, {"capacity": 100}],
}


def test_parse_good_instance():
    (job,) = I.parse_job_graphs(GOOD, source="toy.json")
    assert job.name == "toy" and job.groups == ["v1", "v2", "v3"]
    assert job.tasks.tolist() == [2, 3, 1] and job.cost.tolist() == [20.0, 30.0, 5.0]
    assert job.src.tolist() == [0, 1] and job.dst.tolist() == [1, 2] and job.rate.tolist() == [10.0, 4.5]
    assert job.capacity.tolist() == [50.0, 50.0, 100.0] and job.uniform


def test_parse_lists_and_defaults():
    second = {"groups": [{"name": "a", "tasks": 1, "task_costs": [7.5]}], "nodes": [{"capacity": 10}]}
    for obj in ([GOOD, second], {"instances": [GOOD, second]}):
        jobs = I.parse_job_graphs(obj)
        assert [j.name for j in jobs] == ["toy", "instance-1"]
        assert jobs[1].cost.tolist() == [7.5] and jobs[1].E == 0 and jobs[1].task_cost.tolist() == [7.5]


def test_parse_task_costs():
    obj = copy.deepcopy(GOOD)
    obj["groups"][1] = {"name": "v2", "tasks": 3, "task_costs": [5, 10, 15]}
    (job,) = I.parse_job_graphs(obj)
    assert job.cost.tolist() == [20.0, 30.0, 5.0]
    assert job.task_cost.tolist() == [10.0, 10.0, 5.0, 10.0, 15.0, 5.0] and not job.uniform
    obj["groups"][1]["cost"] = 30
    assert I.parse_job_graphs(obj)[0].task_cost.tolist() == job.task_cost.tolist()


def _set(path, value):
    def apply(obj):
        *head, last = path
        for k in head:
            obj = obj[k]
        if value is _DELETE:
            del obj[last]
        else:
            obj[last] = value
    return apply


_DELETE = object()

BAD = [
    (["groups", 0, "tasks"], 0, "groups[0].tasks: must be an integer >= 1, got 0"),
    (["groups", 0, "tasks"], 2.5, "groups[0].tasks: must be an integer >= 1, got 2.5"),
    (["groups", 0, "tasks"], True, "groups[0].tasks: must be an integer >= 1, got true"),
    (["groups", 1, "cost"], -1, "groups[1].cost: must be a number > 0, got -1"),
    (["groups", 1, "cost"], 0, "groups[1].cost: must be a number > 0, got 0"),
    (["groups", 1, "cost"], float("nan"), "groups[1].cost: must be a finite number, got NaN"),
    (["groups", 1, "cost"], float("inf"), "groups[1].cost: must be a finite number, got Infinity"),
    (["groups", 1, "cost"], "30", 'groups[1].cost: must be a number, got "30"'),
    (["groups", 1, "cost"], False, "groups[1].cost: must be a number, got false"),
    (["groups", 2, "cpu"], 3, "groups[2]: unknown field 'cpu'; fields: name, tasks, cost, task_costs"),
    (["groups", 0, "cost"], _DELETE, "groups[0]: missing field 'cost' (or give task_costs)"),
    (["groups", 0, "name"], _DELETE, "groups[0]: missing field 'name'"),
    (["groups", 2, "name"], "v1", "groups[2].name: duplicate group 'v1' (also groups[0])"),
    (["groups", 2, "name"], "", 'groups[2].name: must be a non-empty string, got ""'),
    (["groups", 0, "task_costs"], [10, 10, 10], "groups[0].task_costs: needs one cost per task (2), got 3"),
    (["groups", 0, "task_costs"], [10, 11], "groups[0].task_costs: sum to 21 but cost is 20; they must agree "
                                            "(or omit cost)"),
    (["groups", 0, "task_costs"], [25, -5], "groups[0].task_costs[1]: must be a number > 0, got -5"),
    (["groups"], [], "groups: must not be empty"),
    (["groups"], {"v1": 1}, 'groups: must be a list, got {"v1": 1}'),
    (["groups", 1], 7, "groups[1]: must be an object, got 7"),
    (["edges", 1, "to"], "v9", "edges[1].to: unknown group 'v9' (groups: v1, v2, v3)"),
    (["edges", 0, "from"], 1, "edges[0].from: must be a group name, got 1"),
    (["edges", 0, "to"], "v1", "edges[0]: self-loop: group 'v1' cannot send to itself"),
    (["edges", 1], {"from": "v1", "to": "v2", "rate": 1}, "edges[1]: duplicate edge v1 -> v2 (also edges[0])"),
    (["edges", 0, "rate"], -1, "edges[0].rate: must be a number >= 0, got -1"),
    (["edges", 0, "rate"], None, "edges[0].rate: must be a number, got null"),
    (["edges", 0, "rate"], _DELETE, "edges[0]: missing field 'rate'"),
    (["edges", 0, "weight"], 1, "edges[0]: unknown field 'weight'; fields: from, to, rate"),
    (["nodes"], [], "nodes: must not be empty"),
    (["nodes", 0, "count"], 0, "nodes[0].count: must be an integer >= 1, got 0"),
    (["nodes", 1, "capacity"], 0, "nodes[1].capacity: must be a number > 0, got 0"),
    (["nodes", 1, "cores"], 4, "nodes[1]: unknown field 'cores'; fields: capacity, count"),
    (["nodes"], _DELETE, "missing field 'nodes'"),
    (["name"], 3, "name: must be a non-empty string, got 3"),
    (["meta"], [1], "meta: must be an object, got [1]"),
    (["gpus"], 1, "unknown field 'gpus'; fields: name, groups, edges, nodes, meta"),
]


@pytest.mark.parametrize("path, value, msg", BAD, ids=[m.split(":")[0] + f"-{i}" for i, (_, _, m) in enumerate(BAD)])
def test_parse_errors_name_the_field(path, value, msg):
    bad = copy.deepcopy(GOOD)
    _set(path, value)(bad)
    with pytest.raises(SkewbenchError, match=f"^{re.escape(f'F.json: {msg}')}$"):
        I.parse_job_graphs(bad, source="F.json")
    # inside a list of instances the path starts with the instance
    sep = ": " if msg.startswith(("missing", "unknown")) else "."
    inside = f"F.json: instances[1]{sep}{msg.replace('(also ', '(also instances[1].')}"
    with pytest.raises(SkewbenchError, match=f"^{re.escape(inside)}$"):
        I.parse_job_graphs({"instances": [GOOD, bad]}, source="F.json")


def test_parse_errors_top_level():
    cases = [
        ({"instances": [GOOD], "x": 1}, "F: unknown field 'x'; fields: instances"),
        ({"instances": []}, "F: instances: must not be empty"),
        ([GOOD, 5], "F: [1]: must be an object, got 5"),
        (3, "F: a job graph must be an object or a list of them, got 3"),
        ([GOOD, GOOD], "F: [1].name: duplicate instance name 'toy' (also [0])"),
    ]
    for obj, msg in cases:
        with pytest.raises(SkewbenchError, match=f"^{re.escape(msg)}$"):
            I.parse_job_graphs(obj, source="F")


def test_load_job_graphs(tmp_path):
    p = tmp_path / "g.json"
    p.write_text(json.dumps(GOOD))
    assert I.load_job_graphs(p)[0].name == "toy"
    p.write_text("{")
    with pytest.raises(SkewbenchError, match="not valid JSON"):
        I.load_job_graphs(p)


def _same(a: Job, b: Job) -> None:
    assert a.name == b.name and a.groups == b.groups and a.meta == b.meta
    for attr in ("tasks", "cost", "src", "dst", "rate", "capacity"):
        assert getattr(a, attr).tolist() == getattr(b, attr).tolist(), attr
    assert (a.task_cost is None) == (b.task_cost is None)
    if a.task_cost is not None:
        assert a.task_cost.tolist() == b.task_cost.tolist()


def test_round_trip():
    jobs = (I.example2() + I.priority() + I.random_graphs(count=20, seed=9) + I.stock()[:2] + I.twitter_e8()
            + I.parse_job_graphs(GOOD))
    to = I.to_json(jobs)
    assert json.loads(json.dumps(to, allow_nan=False)) == to
    back = I.parse_job_graphs(to)
    assert len(back) == len(jobs)
    for a, b in zip(jobs, back):
        _same(a, b)
    assert to["instances"][-2]["nodes"] == [{"capacity": 400.0, "count": 100}]
    measured = I.parse_job_graphs({**GOOD, "groups": [{"name": "v1", "tasks": 2, "task_costs": [1, 3]},
                                                      *GOOD["groups"][1:]]})
    _same(measured[0], I.parse_job_graphs(I.to_json(measured))[0])
    with pytest.raises(SkewbenchError, match="per-link rates"):
        I.to_json(I.from_grouping(WT, SWT, 2, 3, name="g"))


def test_every_generated_meta_is_plain_json():
    for job in I.pipeline(noise=0.05) + I.asymmetry() + I.example2():
        _plain_json(job)
        assert math.isfinite(job.total_cost)
