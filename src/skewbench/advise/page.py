"""``skewbench advise --html FILE``: one self-contained HTML page (inline CSS and SVG, nothing
fetched) with the table, a bar chart per engine and parallelism (the workers' loads from the
busiest to the idlest, the mean as a dashed line), what to change with the full rules, and, with
``--rate`` and ``--cost``, the capacity curves (every partitioner's capacity against its workers,
log-log, with the rate, the hottest key's limit and the skew ceilings) and the workers each needs.
Written atomically: a temporary file beside FILE renamed over it, so FILE is the whole page
or untouched."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from skewbench import __version__
from skewbench.advise.core import Advice
from skewbench.advise.render import rows_by, setting
from skewbench.errors import SkewbenchError

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em auto; max-width: 1250px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc;
padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .88em; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: left; } th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } tr.section td { background: #fafafa; font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: .8em; }
figure.engine-chart { margin: 0; border: 1px solid #eee; padding: .4em; width: 270px; }
figcaption { color: #444; font-size: .82em; margin-top: .3em; } .rule { color: #555; font-size: .88em; }
ul.advice li { margin: .4em 0; } p.note { color: #666; font-size: .85em; }
"""
W, H, PAD, TOP = 262, 150, 4, 16  # TOP: room above the bars for the mean's label
COLOURS = {"kafka": "#4e79a7", "flink": "#e15759", "spark-hash": "#59a14f", "spark-sql": "#b07aa1"}


def _e(x: Any) -> str:
    return html.escape(str(x))


def _chart(row: dict[str, Any]) -> str:
    """An SVG of the row's worker loads, busiest first, with the mean dashed."""
    loads = sorted(row["worker_loads"], reverse=True)
    n = len(loads)
    top = max(max(loads), row["load_mean"]) or 1.0
    y = lambda v: H - PAD - (H - PAD - TOP) * v / top  # noqa: E731
    colour = COLOURS.get(row["partitioner"], "#777")
    step = (W - 2 * PAD) / n
    if n <= 400:
        shapes = "".join(f'<rect class="bar" x="{PAD + i * step:.2f}" y="{y(v):.2f}" width="{max(step - 0.5, 0.3):.2f}" '
                         f'height="{H - PAD - y(v):.2f}" fill="{colour}"><title>{v:,} tuples</title></rect>'
                         for i, v in enumerate(loads))
    else:  # too many workers for a bar each: the same profile as one filled outline
        pts = " ".join(f"{PAD + i * step:.2f},{y(v):.2f} {PAD + (i + 1) * step:.2f},{y(v):.2f}" for i, v in enumerate(loads))
        shapes = f'<polygon class="profile" points="{PAD},{H - PAD} {pts} {W - PAD},{H - PAD}" fill="{colour}"/>'
    mean = y(row["load_mean"])
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
            f'aria-label="{_e(row["partitioner"])} worker loads, busiest to idlest">{shapes}'
            f'<line class="mean" x1="{PAD}" x2="{W - PAD}" y1="{mean:.2f}" y2="{mean:.2f}" stroke="#222" '
            f'stroke-dasharray="4 3"/><text x="{W - PAD}" y="{TOP - 4}" font-size="10" text-anchor="end">- - mean '
            f'{row["load_mean"]:,.0f} tuples</text></svg>')


def _figure(row: dict[str, Any]) -> str:
    hot = ", ".join(f"{_e(repr(h['key']))} {h['share_of_worker']:.1%}" for h in row["hottest_keys"])
    return (f'<figure class="engine-chart" data-partitioner="{_e(row["partitioner"])}" data-workers="{row["workers"]}" '
            f'data-setting="{_e(row.get("setting", ""))}">{_chart(row)}<figcaption><b>{_e(row["partitioner"])}</b> '
            f'{_e(row["label"])}: busiest/mean <b>{row["busiest_over_mean"]:.2f}</b> (worker {row["busiest_worker"]}: '
            f'{row["load_max"]:,} tuples; {row["idle_workers"]} idle). Its hottest keys: {hot}.</figcaption></figure>')


def _table(a: Advice) -> str:
    ps = a.workers
    head = "".join(f"<th>p = {p}</th>" for p in ps)
    out = [f"<table class='summary'><tr><th>partitioner</th><th>setting</th>{head}<th>cost at p = {ps[-1]}</th></tr>"]
    titles = {"engine": "engine defaults, as the engines compute them", "alternative": "alternatives on the same keys",
              "bound": "the floor: best balance with every key whole (offline)"}
    for kind, title in titles.items():
        if not any(r["kind"] == kind for r in a.rows):
            continue
        out.append(f"<tr class='section'><td colspan='{len(ps) + 3}'>{title}</td></tr>")
        for (name, how), at in rows_by(a, kind).items():
            last = at[ps[-1]]
            cost = last.get("cost") or (f"floor {last['floor_over_mean']:.2f} ({last['basis']})" if kind == "bound" else "")
            label = setting(name, how, at, ps) if kind == "engine" else last["label"]
            cells = "".join(f"<td class='num'>{at[p]['busiest_over_mean']:.2f}</td>" for p in ps)
            out.append(f"<tr data-partitioner='{_e(name)}'><td>{_e(name)}</td><td>{_e(label)}</td>{cells}"
                       f"<td>{_e(cost)}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


CW, CH, CL, CB, CT, CR = 640, 340, 62, 34, 12, 120  # the capacity chart: size and margins (left, bottom, top, right)
CURVE_COLOURS = ("#f28e2b", "#76b7b2", "#edc948", "#9c755f", "#bab0ac", "#ff9da7", "#8cd17d")


def _capacity_chart(sz: dict[str, Any]) -> str:
    """An SVG of every partitioner's capacity against its workers (log-log), the rate and the
    hottest key's limit as dashed lines, each ceiling a ring on its curve."""
    import math

    ns = sz["workers"]
    pts = {r["partitioner"]: [(n, c) for n, c in zip(ns, r["capacity"]) if c is not None and math.isfinite(c) and c > 0]
           for r in sz["rows"]}
    ys = [c for p in pts.values() for _, c in p] + [sz["rate"], sz["key_limit"]]
    lo, hi = math.log10(min(ys)) - 0.05, math.log10(max(ys)) + 0.05
    x0, x1 = math.log10(ns[0]), math.log10(ns[-1]) if ns[-1] > ns[0] else math.log10(ns[0]) + 1
    X = lambda n: CL + (CW - CL - CR) * (math.log10(n) - x0) / (x1 - x0)  # noqa: E731
    Y = lambda c: CT + (CH - CT - CB) * (hi - math.log10(c)) / (hi - lo)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{CW}" height="{CH}" viewBox="0 0 {CW} {CH}" role="img" '
           'aria-label="capacity against workers" class="capacity-chart">',
           f'<rect x="{CL}" y="{CT}" width="{CW - CL - CR}" height="{CH - CT - CB}" fill="none" stroke="#ccc"/>']
    for n in ns:
        if n & (n - 1) == 0 and (n == 1 or math.log2(n) % 2 == 0 or n == ns[-1]):
            out.append(f'<text x="{X(n):.1f}" y="{CH - CB + 14}" font-size="10" text-anchor="middle">{n}</text>')
    for e in range(math.ceil(lo), math.floor(hi) + 1):
        out.append(f'<line x1="{CL}" x2="{CW - CR}" y1="{Y(10 ** e):.1f}" y2="{Y(10 ** e):.1f}" stroke="#eee"/>'
                   f'<text x="{CL - 4}" y="{Y(10 ** e) + 3:.1f}" font-size="10" text-anchor="end">{10 ** e:,.0f}</text>')
    out.append(f'<text x="{(CL + CW - CR) / 2:.0f}" y="{CH - 4}" font-size="11" text-anchor="middle">workers</text>'
               f'<text x="12" y="{(CT + CH - CB) / 2:.0f}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 12 {(CT + CH - CB) / 2:.0f})">capacity (tuples/s)</text>')
    for label, value, colour in (("your rate", sz["rate"], "#222"), ("hottest key's limit", sz["key_limit"], "#999")):
        out.append(f'<line class="level" x1="{CL}" x2="{CW - CR}" y1="{Y(value):.1f}" y2="{Y(value):.1f}" '
                   f'stroke="{colour}" stroke-dasharray="5 3"><title>{_e(label)}: {value:,.0f} tuples/s</title></line>'
                   f'<text x="{CL + 4}" y="{Y(value) - 3:.1f}" font-size="10" fill="{colour}">{_e(label)}</text>')
    for i, r in enumerate(sz["rows"]):
        name, p = r["partitioner"], pts[r["partitioner"]]
        if not p:
            continue
        colour = COLOURS.get(name, CURVE_COLOURS[i % len(CURVE_COLOURS)])
        dash = ' stroke-dasharray="2 2"' if r["kind"] == "alternative" else ""
        line = " ".join(f"{X(n):.1f},{Y(c):.1f}" for n, c in p)
        out.append(f'<polyline class="curve" data-partitioner="{_e(name)}" points="{line}" fill="none" '
                   f'stroke="{colour}" stroke-width="1.6"{dash}><title>{_e(name)}</title></polyline>')
        if r["ceiling_workers"] is not None:
            out.append(f'<circle class="ceiling" data-partitioner="{_e(name)}" cx="{X(r["ceiling_workers"]):.1f}" '
                       f'cy="{Y(r["ceiling_capacity"]):.1f}" r="4" fill="none" stroke="{colour}" stroke-width="1.5">'
                       f'<title>{_e(name)}: skew ceiling at {r["ceiling_workers"]} workers, '
                       f'{r["ceiling_capacity"]:,.0f} tuples/s</title></circle>')
        out.append(f'<text x="{X(p[-1][0]) + 4:.1f}" y="{Y(p[-1][1]) + 3:.1f}" font-size="9" fill="{colour}">'
                   f'{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _sizing(sz: dict[str, Any]) -> str:
    """The section "How many workers": the capacity chart and a row per partitioner."""
    rows = []
    for r in sz["rows"]:
        need = r["workers_needed"] if r["workers_needed"] is not None else f"never: {r['why_not']}"
        ceil = "still growing" if r["ceiling_workers"] is None else \
            f"{r['ceiling_workers']} ({r['ceiling_capacity']:,.0f}/s)"
        auto = "" if r["autoscaler_settles_at"] is None else \
            f"{r['autoscaler_settles_at']} (by the average: {r['autoscaler_settles_at_avg']})"
        rows.append(f"<tr data-partitioner='{_e(r['partitioner'])}'><td>{_e(r['partitioner'])}</td>"
                    f"<td>{_e(need)}</td><td>{_e(ceil)}</td><td>{_e(auto)}</td></tr>")
    return (f"<h2 id='sizing'>How many workers at {sz['rate']:,.0f} tuples/s and {sz['cost_ms']:g} ms a tuple</h2>"
            f"<p class='note'>Capacity: the largest rate at which the busiest worker keeps up. A ring marks the skew "
            f"ceiling (capacity grows by less than 5% per doubling from there on); dotted curves are the "
            f"alternatives. Flink's autoscaler starts from {sz['current']} subtasks (max parallelism "
            f"{sz['max_parallelism']}).</p>" + _capacity_chart(sz)
            + "<table class='sizing'><tr><th>partitioner</th><th>workers needed</th><th>skew ceiling</th>"
              "<th>Flink's autoscaler settles at</th></tr>" + "".join(rows) + "</table>")


def _advice_item(x: dict[str, Any]) -> str:
    where = "" if x["workers"] is None else f" at p = {x['workers']}"
    return (f"<li><b>{_e(x['engine'])}{where}</b>: {_e(x['change'])}: {_e(x['effect'])}."
            f"<div class='rule'>Rule: {_e(x['rule'])}</div></li>")


def render_page(a: Advice) -> str:
    k = a.keys
    hot = k["hottest"]
    body = [f"<h1>skewbench advise</h1><p>{k['tuples']:,} tuples, {k['distinct']:,} distinct keys from "
            f"<code>{_e(k['source'])}</code> ({_e(k['format'])}), hashed as "
            f"{'Java longs' if k['key_format'] == 'long' else 'text (Java Strings, UTF-8 bytes)'}. Hottest key "
            f"<code>{_e(repr(hot['key']))}</code>: {hot['share']:.1%} of the tuples.</p>",
            "<h2 id='table'>Busiest worker over mean</h2>", _table(a), "<h2 id='advice'>What to change</h2>"]
    if a.advice:
        body.append("<ul class='advice'>" + "".join(_advice_item(x) for x in a.advice) + "</ul>")
    else:
        body.append("<p>Nothing found that beats the defaults by 1% on these keys.</p>")
    if a.sizing is not None:
        body.append(_sizing(a.sizing))
    for p in a.workers:
        rows = [r for r in a.rows if r["kind"] == "engine" and r["workers"] == p]
        body.append(f"<h2 id='p{p}'>Engine defaults at p = {p}: workers from the busiest to the idlest</h2>"
                    f"<div class='charts'>{''.join(_figure(r) for r in rows)}</div>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>skewbench advise</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body)
            + f"\n<p class='note'>skewbench {_e(__version__)}</p></body></html>\n")


def write_page(a: Advice, out: str | os.PathLike) -> Path:
    """Write the page to ``out`` atomically (the whole page or nothing)."""
    path = Path(out)
    if path.is_dir():
        raise SkewbenchError(f"--html {path} is a directory: name a file")
    text = render_page(a)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
