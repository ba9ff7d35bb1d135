"""Per-strategy settings live on the strategy; the lists that name strategies are derived (issue 34).

Each strategy class states what tools need of it (``exercise``, ``bench_target``,
``bench_variants``, ``engine_case``, ``aot_params``: :class:`skewbench.grouping.base.Strategy`),
and the lists are read off the registry with :func:`skewbench.registry.per_strategy`: the
conformance test's parameter sets, the engine test's cases, the kernel benchmark's rows and
targets, the ahead-of-time build's replays.  Checked here:

- for the built-in strategies the derived lists hold what the central lists held before the
  settings moved onto the classes (the ``OLD_*`` literals below are those lists, as they were);
- a strategy installed from outside (an entry point of a distribution on ``sys.path``, in this
  process) with these settings appears in every derived list, with nothing else edited.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from skewbench import registry
from skewbench.grouping import cli as grouping_cli

REPO = Path(__file__).resolve().parents[2]

OLD_EXERCISE = {
    "grouping": {
        "osg": [{"window": 64}, {"window": 32, "mu": float("inf"), "latency": 3.0, "variant": "literal"}],
        "fk": [{"variant": "osg"}, {"semantics": "wl"}],
        "dc": [{"refresh": 1}, {"mode": "authors", "warmup": 50, "capacity": 8}],
        "wc": [{"capacity": 4, "theta": 0.01}],
        "rr": [{"theta": 0.02, "warmup": 10}],
        "fixed-d": [{"d": 5, "refresh": 1}],
        "dkg": [{"learn": 300}, {"learn": 40, "theta": 0.05, "mu": 1, "ef": 1.0}],
        "cm": [{"window": 64}],
        "am": [{"window": 64}],
        "cam": [{"window": 64}],
        "chwbl": [{"accounting": "window", "window": 50}, {"accounting": "key", "window": 200},
                  {"factor": 100, "vnodes": 3}],
        "salt": [{"merge_window": 500, "draw": "rr", "place": "offset", "theta": 0.02},
                 {"selector": "all", "salts": 3, "draw": "hashed", "merge_window": 64}],
        "flink": [{"api": "pyflink"}, {"api": "pyflink", "key_format": "string", "max_parallelism": 1000}],
    },
    "shedding": {
        "las": [{"window": 64, "warm": False}, {"window": 128, "literal_sync": True, "goal": "max"}],
        "sm": [{"goal": "max"}],
        "fk": [{"goal": "max"}],
        **{n: [{"precheck": 37.0}, {"mode": "paper", "threshold_g": 5}]
           for n in ("shedpart", "shedpart-ee", "shedpart-pkg", "shedpart-shuffle")},
    },
    "allocation": {
        "td": [{"k0": "push", "second": "first", "retry": True}], "storm": [{"kuse": "all"}],
        "flink-fg": [{"mode": "spread"}], "k8s-least": [{"order": "random"}],
        "heron-ffd": [{"padding": 10.0, "max_instances": 3}],
    },
}
OLD_ENGINE_CASES = [
    ("kg", 5, 3, {}), ("sg", 4, 3, {}), ("pkg", 7, 2, {}), ("wc", 6, 3, {}), ("dc", 10, 2, {"refresh": 1}),
    ("rr", 5, 1, {}), ("fixed-d", 8, 3, {"d": 3}), ("osg", 5, 1, {"window": 64}), ("fk", 5, 1, {}),
    ("kafka", 5, 3, {}), ("flink", 7, 2, {"key_format": "string"}), ("spark-hash", 5, 2, {}),
    ("spark-sql", 6, 3, {}), ("chwbl", 6, 3, {}), ("local-global", 5, 2, {"batch": 50}),
    ("salt", 6, 3, {"merge_window": 500}), ("dkg", 5, 2, {"learn": 300}), ("cm", 5, 3, {"window": 200}),
    ("am", 6, 2, {"window": 200}), ("cam", 5, 3, {"window": 200})]
#: (issue 42 added each replay's capacity sweep arguments: none on the largest, a small sweep, and
#: a sweep with a latency objective, whose queues run at a steady rate)
OLD_AOT_REPLAYS = (
    ("zipf", ("--workers", "5,50", "--sources", "1,5", "--scaling", "none", "--param", "dkg.learn=500", "--param", "cm.window=500",
              "--param", "am.window=500", "--param", "cam.window=500", "--param", "salt.merge_window=1000",
              "--param", "chwbl.accounting=request,window,key")),
    ("numeric", ("--workers", "5", "--sources", "2", "--metrics", "balance", "--scaling", "1,8",
                 "--param", "flink.key_format=long,string",
                 "--param", "kafka.key_format=long,string", "--param", "spark-hash.key_format=long,string",
                 "--param", "spark-sql.key_format=long,string")),
    ("costs", ("--workers", "5", "--sources", "1", "--provisioning", "100", "--scaling", "2", "--rates", "100",
               "--objective-ms", "50")),
    ("costs", ("--workers", "5", "--sources", "2", "--window", "0.5s",
               "--worker-speed", "0:1.1,1,1,1,0.9;5000:0.9,1,1,1,1.1")),
)
OLD_TARGETS = {"kg": 3, "sg": 3, "pkg": 10, "dc": 20, "wc": 20, "rr": 20, "fixed-d": 20, "osg": 50, "fk": 50,
               "kafka": 2, "flink": 2, "spark-hash": 2, "spark-sql": 2, "chwbl": 10, "local-global": 20, "salt": 20,
               "dkg": 20, "cm": 20, "am": 20, "cam": 20}
OLD_KERNEL_ROWS = [(name, name, {}) for name in ("kg", "sg", "pkg", "dc", "wc", "rr", "osg", "fk", "kafka", "flink",
                                                 "spark-hash", "spark-sql")] \
    + [(f"{name} (string)", name, {"key_format": "string"}) for name in ("kafka", "flink", "spark-hash", "spark-sql")] \
    + [(name, name, {}) for name in ("chwbl", "local-global", "salt", "dkg", "cm", "am", "cam")]
OLD_SHED_TARGETS = {"las": 20, "bl": 20, "sm": 20, "fk": 20, "shedpart": 50, "fld": 50}


def _load(path: Path, as_name: str) -> ModuleType:
    """A module that is not a package's (a benchmark script, another test module), by its path."""
    spec = importlib.util.spec_from_file_location(as_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[as_name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[as_name]
    return module


@pytest.fixture(scope="module")
def bench():
    return _load(REPO / "benchmarks" / "bench_grouping.py", "bench_grouping_settings_check")


def _by_replay(replays: tuple) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """Each replay as (dataset, its arguments but ``--param``, its ``--param`` settings sorted):
    the order of the settings changes nothing the build records."""
    out = []
    for dataset, args in replays:
        params = [args[i + 1] for i, a in enumerate(args) if a == "--param"]
        rest = tuple(a for i, a in enumerate(args) if a != "--param" and (i == 0 or args[i - 1] != "--param"))
        out.append((dataset, rest, sorted(params)))
    return out


def _exercised(family: str) -> dict[str, list[dict[str, Any]]]:
    return {name: sets for name, sets in registry.per_strategy(family, "exercise", []).items() if sets}


# --------------------------------------------------------------------------------------------
# the built-in strategies: the derived lists are the old ones

def test_grouping_exercise_sets_are_the_old_table():
    assert _exercised("grouping") == OLD_EXERCISE["grouping"]


@pytest.mark.parametrize("family", ["shedding", "allocation"])
def test_other_families_exercise_sets_are_the_old_tables(family):
    assert _exercised(family) == OLD_EXERCISE[family]


def test_engine_cases_are_the_old_ones():
    engine_test = _load(REPO / "tests" / "integration" / "test_engine.py", "test_engine_settings_check")
    assert sorted(engine_test.CASES) == sorted(OLD_ENGINE_CASES)
    assert [c[0] for c in engine_test.CASES] == registry.names("grouping")


def test_aot_replays_are_the_old_ones():
    got = grouping_cli.AOT_REPLAYS
    assert got == grouping_cli.aot_replays()
    assert _by_replay(got) == _by_replay(OLD_AOT_REPLAYS)


def test_kernel_rows_and_targets_are_the_old_ones(bench):
    rows = bench.kernel_rows()
    assert len({label for label, *_ in rows}) == len(rows)
    old = {label: (name, params, None if params else OLD_TARGETS[name]) for label, name, params in OLD_KERNEL_ROWS}
    assert {label: (name, params, target) for label, name, params, target in rows} == old
    # the rows of a strategy follow each other, in the registry's order
    assert list(dict.fromkeys(name for _, name, _, _ in rows)) == [n for n in registry.names("grouping") if n != "fixed-d"]
    # fixed-d had a target but no row: it has neither now
    assert registry.get("grouping", "fixed-d").bench_target is None


def test_shedding_targets_are_the_old_ones(bench):
    assert bench.shed_targets() == OLD_SHED_TARGETS


# --------------------------------------------------------------------------------------------
# a strategy from outside: in every derived list, with nothing else edited

OUTSIDE = '''
"""Key grouping shifted by a constant, with every per-strategy setting: an outside strategy."""
from skewbench.grouping.strategies.dchoices import KG
from skewbench.grouping.strategies.osg import OSG


class SettingsKG(KG):
    name = "settings-kg"
    description = "key grouping, then SHIFT workers further (modulo n)"
    defaults = {"shift": 0}
    param_docs = {"shift": "How many workers to move every tuple by, an integer (default 0)."}
    exercise = [{"shift": 1}]
    bench_target = 4
    bench_variants = {"shifted": {"shift": 2}}
    engine_case = (6, 4, {"shift": 1})
    aot_params = {"zipf": ("shift=0,1",), "costs": ("shift=2",)}

    def route(self, batch):
        return (super().route(batch) + int(self.params["shift"])) % self.workers


class SettingsOSG(OSG):
    name = "settings-osg"
    description = "OSG under another name: a single scheduler whose engine case names three sources"
    exercise = []
    bench_target = None
    engine_case = (5, 3, {})
'''


@pytest.fixture
def outside_strategy(tmp_path):
    """``settings-kg`` and ``settings-osg`` (a single scheduler) registered through the
    ``skewbench.strategies`` entry point group of a distribution found on ``sys.path`` (as an
    installed package's would be), for one test."""
    (tmp_path / "settingskg.py").write_text(OUTSIDE)
    info = tmp_path / "settingskg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: settingskg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[skewbench.strategies]\ngrouping.settings-kg = settingskg:SettingsKG\n"
                                         "grouping.settings-osg = settingskg:SettingsOSG\n")
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    registry.refresh()
    try:
        assert registry.names("grouping")[-2:] == ["settings-kg", "settings-osg"]
        yield
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("settingskg", None)
        importlib.invalidate_caches()
        registry.refresh()
    assert not {"settings-kg", "settings-osg"} & set(registry.names("grouping"))


def test_an_outside_strategy_is_in_every_derived_list(outside_strategy, bench):
    conformance = _load(REPO / "tests" / "integration" / "test_conformance.py", "test_conformance_settings_check")
    assert conformance.param_sets("grouping", "settings-kg") == [{}, {"shift": 1}]
    assert conformance.param_sets("grouping", "settings-osg") == [{}]
    engine_test = _load(REPO / "tests" / "integration" / "test_engine.py", "test_engine_settings_check")
    # a single scheduler runs its case with one source
    assert engine_test.CASES[-2:] == [("settings-kg", 6, 4, {"shift": 1}), ("settings-osg", 5, 1, {})]
    assert bench.kernel_rows()[-2:] == [("settings-kg", "settings-kg", {}, 4),
                                        ("settings-kg (shifted)", "settings-kg", {"shift": 2}, None)]
    added = {"zipf": ["settings-kg.shift=0,1"], "costs": ["settings-kg.shift=2"]}
    replays = grouping_cli.AOT_REPLAYS
    assert len(replays) == len(grouping_cli.AOT_BASE)
    for (dataset, args), (base_dataset, base_args) in zip(replays, grouping_cli.AOT_BASE):
        assert dataset == base_dataset and args[:len(base_args)] == base_args
        params = [args[i + 1] for i, a in enumerate(args) if a == "--param"]
        assert [p for p in params if p.startswith("settings-")] == added.get(dataset, []), dataset
        assert params[len(params) - len(added.get(dataset, [])):] == added.get(dataset, []), dataset
