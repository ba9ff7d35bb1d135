"""skewbench.dagrun's pure part: the critical path of a run's task instances, against every path
enumerated by hand on small graphs and a brute force on random ones; and its refusals."""

from __future__ import annotations

import itertools
import random

import pytest

from skewbench import dagrun
from skewbench.errors import SkewbenchError


def brute_force(seconds: dict[str, float], upstream: dict[str, list[str]]) -> float:
    """Every chain of instances, each the next's upstream, enumerated; the longest's seconds."""
    tasks: dict[str, list[str]] = {}
    for n in seconds:
        tasks.setdefault(n.split("[")[0], []).append(n)
    best = 0.0
    for k in range(1, len(seconds) + 1):
        for chain in itertools.permutations(seconds, k):
            if all(b.split("[")[0] in [d for d in upstream if a.split("[")[0] in upstream[d]]
                   for a, b in zip(chain, chain[1:])):
                best = max(best, sum(seconds[n] for n in chain))
    return best


def test_a_nightly_shaped_graph_by_hand():
    # check -> prepare[0], prepare[1] -> plan -> replay[0] -> validate[0..1] -> log; check -> site
    seconds = {"check": 1.0, "prepare[0]": 5.0, "prepare[1]": 9.0, "plan": 1.0, "replay[0]": 20.0,
               "validate[0]": 4.0, "validate[1]": 6.0, "log": 3.0, "site": 50.0}
    upstream = {"prepare": ["check"], "plan": ["prepare"], "replay": ["plan"], "validate": ["replay", "plan"],
                "log": ["validate"], "site": ["check"]}
    total, path = dagrun.critical_path(seconds, upstream)
    assert (total, path) == (51.0, ["check", "site"])
    seconds["site"] = 2.0
    total, path = dagrun.critical_path(seconds, upstream)
    # check 1 + prepare[1] 9 + plan 1 + replay 20 + validate[1] 6 + log 3
    assert (total, path) == (40.0, ["check", "prepare[1]", "plan", "replay[0]", "validate[1]", "log"])
    assert dagrun.critical_path({}, upstream) == (0.0, [])


def test_the_critical_path_is_the_longest_chain_on_random_graphs():
    rng = random.Random(7)
    for _ in range(60):
        n = rng.randint(1, 6)
        names = [f"t{i}" for i in range(n)]
        upstream = {t: [u for u in names[:i] if rng.random() < 0.5] for i, t in enumerate(names)}
        seconds = {}
        for t in names:
            if rng.random() < 0.3:
                seconds.update({f"{t}[{j}]": float(rng.randint(0, 9)) for j in range(rng.randint(1, 2))})
            else:
                seconds[t] = float(rng.randint(0, 9))
        total, path = dagrun.critical_path(seconds, upstream)
        assert total == brute_force(seconds, upstream), (seconds, upstream)
        assert total == sum(seconds[p] for p in path)


def test_a_cycle_is_refused():
    with pytest.raises(SkewbenchError, match=r"^the task graph has a cycle through a$"):
        dagrun.critical_path({"a": 1.0, "b": 1.0}, {"a": ["b"], "b": ["a"]})


@pytest.mark.parametrize("value", [0, -2, 1.5, True, "2"])
def test_a_bad_parallelism_is_refused(value):
    with pytest.raises(SkewbenchError, match=rf"^the parallelism of a run is a positive integer, got {value!r}$"):
        dagrun.prepare(value)
