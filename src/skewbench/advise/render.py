"""``skewbench advise`` on a terminal: one screen (about 40 lines at three parallelisms).

A table of busiest worker over mean, one column per parallelism: the engines' defaults, the
alternatives (with their cost at the largest parallelism), the whole-key floor; then the
busiest worker's hottest key under each engine, and what to change, each suggestion with the
short form of its rule (the full rules are in ``--json`` and ``--html``).
"""

from __future__ import annotations

import textwrap
from typing import Any

from skewbench.advise.core import Advice

NAME, LABEL, CELL = 16, 30, 8


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _row_line(name: str, label: str, values: list[str], tail: str = "") -> str:
    label = _clip(label, LABEL - 1)
    return f"  {name:<{NAME}}{label:<{LABEL}}" + "".join(f"{v:>{CELL}}" for v in values) + (f"   {tail}" if tail else "")


def _ratio(r: dict[str, Any] | None) -> str:
    return "-" if r is None else f"{r['busiest_over_mean']:.2f}"


def setting(name: str, setting: str, at: dict[int, dict[str, Any]], ps: list[int]) -> str:
    """An engine row's setting across the parallelisms (``partitions = p``, ``max parallelism 128,256``)."""
    if name == "flink":
        return ("max parallelism " + ",".join(dict.fromkeys(str(at[p]["max_parallelism"]) for p in ps))
                + (" (yours)" if setting == "yours" else ""))
    return str(at[ps[0]]["label"]).replace(f"= {ps[0]}", "= p").replace(f"({ps[0]})", "(p)")


def rows_by(a: Advice, kind: str) -> dict[tuple[str, str], dict[int, dict[str, Any]]]:
    """Rows of ``kind`` by (partitioner, setting), then by parallelism, in first-seen order."""
    out: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in a.rows:
        if r["kind"] == kind:
            out.setdefault((r["partitioner"], r.get("setting", "")), {})[r["workers"]] = r
    return out


def _table(a: Advice) -> list[str]:
    ps = a.workers
    out = [f"{'busiest worker / mean':<{NAME + LABEL + 2}}" + "".join(f"{'p=' + str(p):>{CELL}}" for p in ps)
           + f"   cost at p={ps[-1]}", "engine defaults, as the engines compute them"]
    for (name, how), at in rows_by(a, "engine").items():
        out.append(_row_line(name, setting(name, how, at, ps), [_ratio(at.get(p)) for p in ps]))
    alts = rows_by(a, "alternative")
    if alts:
        first = next(iter(next(iter(alts.values())).values()))
        out.append(f"alternatives, replayed on the same keys ({first['sources']} sources; "
                   f"{a.keys['alternatives_stream']})")
        for (name, _), at in alts.items():
            out.append(_row_line(name, at[ps[0]]["label"], [_ratio(at.get(p)) for p in ps], at[ps[-1]]["cost"]))
    for (name, _), at in rows_by(a, "bound").items():
        last = at[ps[-1]]
        out.append("the floor: the best balance with every key whole (offline)")
        out.append(_row_line(name, "LPT's assignment", [_ratio(at.get(p)) for p in ps],
                             f"floor {last['floor_over_mean']:.2f} ({last['basis']})"))
    return out


def _hottest(a: Advice) -> list[str]:
    ps = a.workers
    width = max(10, min(24, (100 - NAME) // len(ps) - 6))
    out = ["busiest worker's hottest key (its share of that worker's load)"]
    for (name, setting), at in rows_by(a, "engine").items():
        cells = []
        for p in ps:
            hot = at[p]["hottest_keys"]
            key = _clip(repr(hot[0]["key"]), width) if hot else "-"
            cells.append(f"{key} {hot[0]['share_of_worker']:.1%}" if hot else "-")
        tag = name + (" (yours)" if setting == "yours" else "")
        out.append(f"  {tag:<{NAME + 8}}" + "".join(f"{c:<{width + 6}}" for c in cells).rstrip())
    return out


def _advice(a: Advice, width: int) -> list[str]:
    rules: list[str] = []

    def ref(item: dict[str, Any]) -> str:
        if item["rule_short"] not in rules:
            rules.append(item["rule_short"])
        return f"[{rules.index(item['rule_short']) + 1}]"

    items: list[str] = []
    hot = [x for x in a.advice if x["engine"] == "any"]
    for x in a.advice:
        if x["engine"] == "any":
            continue
        where = f"at p = {x['workers']}" if x["workers"] is not None else "for all"
        items.append(f"{x['engine']} {where}: {x['change']}; {x['effect']} {ref(x)}")
    if hot:
        last = hot[-1]
        floors = ", ".join(f"{x['floor_over_mean']:.2f}" for x in hot)
        text = (f"hot key {last['hot_key']!r} ({last['hot_key_share']:.1%} of the tuples) is above 1/p at p = "
                f"{', '.join(str(x['workers']) for x in hot)}: no keyed partitioner goes below busiest/mean {floors}")
        if last["options"]:
            text += f". Split it; at p = {last['workers']}: " + "; ".join(
                f"{o['partitioner']} {o['busiest_over_mean']:.2f} ({o['cost']})" for o in last["options"])
        items.append(f"{text} {ref(last)}")
    if not items:
        return ["what to change: nothing found that beats the defaults by 1% on these keys"]
    out = ["what to change"]
    for it in items:
        out += textwrap.wrap(it, width, initial_indent="  - ", subsequent_indent="    ")
    out += textwrap.wrap("rules: " + " ".join(f"[{i}] {r}." for i, r in enumerate(rules, 1)), width,
                         subsequent_indent="    ")
    return out


def _workers(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _sizing(a: Advice, width: int) -> list[str]:
    """Per partitioner: the workers it needs at the rate, its skew ceiling, where Flink's
    autoscaler settles (by the busiest subtask, its default; by their average)."""
    s = a.sizing
    if s is None:
        return []
    out = [f"workers needed for {s['rate']:,g} tuples/s at {s['cost_ms']:g} ms a tuple (on n = 1, 2, 4, ..., 1024 "
           f"and yours); Flink's autoscaler from {s['current']} (max parallelism {s['max_parallelism']})",
           f"  {'':<{NAME}}{'needed':>8}{'ceiling':>10}{'cap. there':>12}{'autoscaler':>12}{'(by avg)':>10}   why not"]
    for r in s["rows"]:
        cap = "-" if r["ceiling_capacity"] is None else f"{r['ceiling_capacity']:,.0f}"
        auto = "-" if r["autoscaler"] is None else (_workers(r["autoscaler_settles_at"]) if r["autoscaler_settles_at"]
                                                    is not None else "cycles")
        avg = "-" if r["autoscaler"] is None else (_workers(r["autoscaler_settles_at_avg"])
                                                   if r["autoscaler_settles_at_avg"] is not None else "cycles")
        line = (f"  {r['partitioner']:<{NAME}}{_workers(r['workers_needed']):>8}{_workers(r['ceiling_workers']):>10}"
                f"{cap:>12}{auto:>12}{avg:>10}")
        out.append(line + (f"   {r['why_not']}" if r["why_not"] else ""))
    out += textwrap.wrap(f"ceiling: the workers from which on capacity grows less than 5% per doubling; no partitioner that keeps "
                         f"a key whole passes {s['key_limit']:,.0f} tuples/s (the hottest key on one worker)", width,
                         subsequent_indent="  ")
    return out


def render(a: Advice, width: int = 110) -> str:
    """The console text of an :class:`Advice`."""
    k = a.keys
    how = ("integer keys, hashed as Java longs (--key-format string: as text)" if k["key_format"] == "long"
           else "keys hashed as text (Java Strings, UTF-8 bytes)")
    hot = k["hottest"]
    head = (f"skewbench advise: {k['tuples']:,} tuples, {k['distinct']:,} distinct keys from {k['source']}; {how}. "
            f"Hottest key {_clip(repr(hot['key']), 40)}: {hot['share']:.1%} of the tuples = "
            + " / ".join(f"{hot['share'] * p:.2f}x" for p in a.workers)
            + f" a worker's mean at p = {' / '.join(map(str, a.workers))}")
    lines = textwrap.wrap(head, width, subsequent_indent="  ") + [""]
    lines += _table(a) + [""] + _hottest(a) + [""] + _advice(a, width)
    if a.sizing is not None:
        lines += [""] + _sizing(a, width)
    return "\n".join(lines)
