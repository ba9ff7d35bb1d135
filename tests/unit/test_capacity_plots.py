"""The capacity curves' helpers (skewbench.present.plotting: capacity_curves, draw_capacity, draw_demand) on
hand-made summaries: each strategy's first setting read, its ceiling ringed, the linear ideal n times one
worker's capacity, the hottest key's limit a horizontal line, a rate never reached drawn on the top row and
named; and the overview's line of skew ceilings (ceiling_line): the strategies whose ceiling lies below the
night's largest n, in one line, folded when there are many."""

from __future__ import annotations

import re

import pandas as pd
from skewbench.present.overview import CEILINGS_INLINE, ceiling_line, ceilings
from skewbench.present.plotting import (Curve, capacity_curves, draw_capacity, draw_demand, figure, has_curves,
                                        key_limits, one_worker)

GRID = [1, 2, 4, 8, 16, 32, 64]


def cell(strategy, workers, sources, curve, ceiling=None, key_limit=None, demand=(8, 0), seed=0):
    return {"strategy": strategy, "workers": workers, "sources": sources, "seed": seed, "params": "{}",
            "scaling_workers": GRID, "scaling_capacity": curve,
            "ceiling_workers": ceiling[0] if ceiling else None, "ceiling_capacity": ceiling[1] if ceiling else None,
            "key_limit": key_limit, "demand_rates": [5000.0, 40000.0], "demand": list(demand)}


def linear(one=1000.0):
    return [one * n for n in GRID]


def flat(top, at=8, one=1000.0):
    return [min(one * n, top) for n in GRID]


def summary(*rows):
    return pd.DataFrame(rows)


def test_each_strategys_first_setting_its_ceiling_key_limit_and_demand():
    s = summary(cell("kg", 8, 5, flat(3000.0, one=999.0)),  # a later setting: more sources
                cell("kg", 32, 2, flat(2400.0), (4, 2400.0), 2450.0, (0, 0)),
                cell("kg", 8, 2, flat(2400.0), (4, 2400.0), 2450.0, (0, 0)),
                cell("sg", 8, 2, linear(), demand=(8, 64)))
    curves = capacity_curves(s, ("workers", "sources"))
    assert [c.label for c in curves] == ["kg", "sg"]
    kg, sg = curves
    assert kg.capacity == flat(2400.0) and kg.workers == GRID and kg.setting == "sources=2, seed=0"
    assert kg.ceiling == (4, 2400.0) and kg.key_limit == 2450.0 and kg.demand == [0, 0]
    assert sg.ceiling is None and sg.key_limit is None and (sg.rates, sg.demand) == ([5000.0, 40000.0], [8, 64])
    # a family's results without curves (or with empty ones): none
    assert not has_curves(s.drop(columns=["scaling_capacity"]))
    assert capacity_curves(s.assign(scaling_workers=[[]] * 4, scaling_capacity=[[]] * 4), ("workers",)) == []


def test_the_capacity_panel_rings_each_ceiling_and_draws_the_ideal_and_the_key_limit():
    curves = [Curve("kg", GRID, flat(2400.0), (4, 2400.0), 2450.0), Curve("sg", GRID, linear()),
              Curve("pkg", GRID, flat(4700.0), (8, 4700.0))]
    ax = figure().add_subplot()
    handles = draw_capacity(ax, curves, {"kg": ("C0", "o"), "sg": ("C1", "o"), "pkg": ("C2", "s")}, largest=32)
    assert list(handles)[:3] == ["kg", "sg", "pkg"]
    rings = [tuple(o) for c in ax.collections for o in c.get_offsets()]
    assert rings == [(4, 2400.0), (8, 4700.0)]
    lines = {tuple(ln.get_xdata()): ln for ln in ax.lines}
    ideal = [ln for ln in ax.lines if ln.get_zorder() == 5]
    assert len(ideal) == 1 and list(ideal[0].get_ydata()) == [one_worker(curves) * n for n in GRID]
    assert one_worker(curves) == 1000.0
    limit = [ln for ln in ax.lines if list(ln.get_ydata()) == [2450.0, 2450.0]]
    assert len(limit) == 1 and "hottest key's limit" in handles
    largest = [ln for ln in ax.lines if list(ln.get_xdata()) == [32, 32]]
    assert len(largest) == 1 and "largest n replayed (32)" in handles
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log") and lines


def test_equal_key_limits_are_one_line():
    curves = [Curve("kg", GRID, flat(2400.0), None, 2450.0), Curve("flink", GRID, flat(2300.0), None,
                                                                   2450.0 * (1 + 1e-12))]
    assert list(key_limits(curves).values()) == [["kg", "flink"]]


def test_the_demand_panel_draws_a_rate_never_reached_on_the_top_row_and_names_it():
    curves = [Curve("kg", GRID, flat(2400.0), rates=[5000.0, 40000.0], demand=[0, 0]),
              Curve("sg", GRID, linear(), rates=[5000.0, 40000.0], demand=[8, 64]),
              Curve("pkg", GRID, flat(9000.0), rates=[5000.0, 40000.0], demand=[8, 0])]
    ax = figure().add_subplot()
    note = draw_demand(ax, curves, {})
    assert note == ("never reached with up to 64 workers: kg (5,000 and 40,000 tuples/s), pkg (40,000 tuples/s)")
    top = ax.get_yticks()[-1]
    assert ax.get_yticklabels()[-1].get_text() == "none" and top > max(GRID)
    missed = sorted(round(float(y)) for c in ax.collections for _, y in c.get_offsets())
    assert missed == [round(top)] * 3
    strategies = [ln for ln in ax.lines if list(ln.get_xdata()) != [0, 1]]  # not the row's separator
    assert sorted(y for ln in strategies for y in ln.get_ydata()) == [8, 8, 64]
    assert draw_demand(figure().add_subplot(), curves[1:2], {}) == ""


def night(datasets):
    return [(ds, summary(*rows)) for ds, rows in datasets.items()]


def test_the_ceiling_line_names_the_ceilings_below_the_nights_largest_n_with_their_numbers():
    tables = night({"z16": [cell("kg", 5, 2, flat(2212.45), (16, 2212.45), 2276.2),
                            cell("kg", 64, 2, flat(2212.45), (16, 2212.45), 2276.2),
                            cell("sg", 5, 2, linear()),
                            cell("pkg", 5, 2, flat(4485.0), (64, 4485.0))],   # at the largest n: not below it
                    "z10": [cell("pkg", 5, 2, flat(18958.5), (32, 18958.5)), cell("kg", 5, 2, linear())]})
    largest, hits = ceilings("grouping", tables)
    assert largest == 64 and [(ds, c.label) for ds, c in hits] == [("z16", "kg"), ("z10", "pkg")]
    line = ceiling_line("grouping", tables)
    text = re.sub(r"<[^>]+>", "", line)
    assert line.startswith('<p class="ceilings"')
    assert text == ("skew ceilings below n=64, the night's largest (each strategy's first setting): "
                    "kg at n=16 on z16 (2,212 tuples/s; the hottest key&#x27;s limit 2,276); "
                    "pkg at n=32 on z10 (18,958 tuples/s)")
    assert 'href="#how-many-workers-grouping"' in line


def test_many_ceilings_fold_under_a_count_per_strategy_and_none_below_no_line():
    names = [f"z{i}" for i in range(CEILINGS_INLINE + 1)]
    tables = night({ds: [cell("kg", 5, 2, flat(2000.0 + i), (4, 2000.0 + i), 2100.0), cell("kg", 64, 2, linear())]
                    for i, ds in enumerate(names)})
    line = ceiling_line("grouping", tables)
    assert line.startswith('<details class="ceilings"')
    summary_text = re.sub(r"<[^>]+>", "", line.split("</summary>")[0])
    assert summary_text.endswith(f"kg on {len(names)} of {len(names)} datasets")
    assert all(f"at n=4 on {ds} ({2000 + i:,} tuples/s" in line for i, ds in enumerate(names))
    # no ceiling below the largest n: no line
    flat_only = night({"z": [cell("kg", 4, 2, flat(2000.0), (4, 2000.0), 2100.0)]})
    assert ceiling_line("grouping", flat_only) == ""
    assert ceiling_line("grouping", night({"z": [cell("sg", 64, 2, linear())]})) == ""
