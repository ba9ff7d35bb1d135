"""Simulated against measured: the figures and the page of live runs (``live.html``).

A live run (:mod:`skewbench.live`) executes a dataset's stream on an engine with each strategy's
own decisions and sets each measurement beside the simulator's prediction.  This module draws
them: per dataset, one figure per engine and metric, one point per strategy (its routed run, and
the engine's own routing where it has one) at (predicted, measured), the line y = x through them,
each point labelled with its strategy.  The metrics are the throughput and the p99 latency; an
engine that runs a batch stage (Spark: every tuple is there when the stage starts, so there is no
per-tuple latency) shows its stage's makespan instead of the latency.

Three callers, in three layers above this one: the live DAG's report step writes a run's page
(:func:`write_page`) and logs it to MLflow; the site (:mod:`skewbench.present.site`) shows the live runs
read back from MLflow with the same figures (:func:`run_sections`); the nightly's overview links
to the latest live page of the night's datasets (:func:`live_links`).

A row is a dict with at least ``engine``, ``strategy``, ``routing`` (``routed`` or ``native``)
and the measured and predicted columns of :data:`METRICS`.  Figures are PNG images inlined in
the page (tens of kilobytes each); no data is embedded beyond the table of the rows shown.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from skewbench.present.plotting import colors, figure, fmt_number

#: the live runs' experiment: ``skewbench-live`` (:func:`skewbench.tracking.experiment_name`)
EXPERIMENT = "live"
#: the page a live run logs to its MLflow parent run
PAGE = "live.html"
#: tags of a live parent run: its datasets' fingerprints (comma separated, in its datasets' order)
#: and the page's artifact name once logged
FINGERPRINTS_TAG, DATASETS_TAG, PAGE_TAG = "skewbench.dataset_fingerprints", "skewbench.datasets", "skewbench.live_page"
#: the tag of a live child run naming the simulated (nightly) run of the same dataset and
#: strategy, and the tag of that simulated run naming the live run back (MLflow UI URLs)
SIMULATED_TAG, LIVE_TAG = "skewbench.simulated_run", "skewbench.live_run"
#: a live parent run's metric per (dataset, engine, metric): Kendall's tau of measured vs predicted
TAU_PREFIX = "kendall_tau"

#: metric -> (measured column, predicted column, axis label)
METRICS = {"throughput": ("throughput_measured", "throughput_predicted", "throughput (tuples/s)"),
           "latency_p99": ("latency_p99_measured_ms", "latency_p99_predicted_ms", "p99 latency (ms)"),
           "makespan": ("makespan_measured_s", "makespan_predicted_s", "makespan (s)")}
#: the agreement's name of each metric (:func:`skewbench.live.compare.agreement`)
AGREEMENT_NAMES = {"throughput": "throughput", "latency_p99": "latency_p99_ms", "makespan": "makespan_s"}
#: both axes logarithmic when the positive values span more than this ratio
LOG_SPAN = 30.0


def tau_metric(dataset: str, engine: str, metric: str) -> str:
    """The MLflow metric key of a rank agreement on a live parent run."""
    return f"{TAU_PREFIX}/{dataset}/{engine}/{metric}"


def _value(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def engine_metrics(rows: Sequence[Mapping[str, Any]], engine: str) -> list[str]:
    """The metrics drawn for an engine: throughput, and the p99 latency where the engine measured
    one, else the makespan (a batch stage's)."""
    mine = [r for r in rows if r.get("engine") == engine]
    has_latency = any(_value(r.get(METRICS["latency_p99"][0])) is not None for r in mine)
    return ["throughput", "latency_p99" if has_latency else "makespan"]


def point_label(row: Mapping[str, Any]) -> str:
    return str(row["strategy"]) + (" (native)" if row.get("routing") == "native" else "")


def _strategy_colours(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """A colour per strategy, in the strategy tables' order (stable across pages and runs)."""
    from skewbench import families, registry

    order: list[str] = []
    for fam in families.families():  # every registered family's table, in registration order
        order += registry.names(fam)
    names = sorted({str(r["strategy"]) for r in rows},
                   key=lambda s: (order.index(s) if s in order else len(order), s))
    return {s: c for s, (c, _) in colors(names).items()}


def figure_png(rows: Sequence[Mapping[str, Any]], engine: str, metric: str, title: str,
               tau: float | None = None) -> bytes | None:
    """Measured (y) against predicted (x) of ``metric`` on ``engine``: a point per row (a circle
    for a routed run, a square for the engine's own routing), labelled, with y = x drawn; None
    when no row has both values."""
    m_col, p_col, label = METRICS[metric]
    pts = [(point_label(r), str(r["strategy"]), r.get("routing"), _value(r.get(p_col)), _value(r.get(m_col)))
           for r in rows if r.get("engine") == engine]
    pts = [p for p in pts if p[3] is not None and p[4] is not None]
    if not pts:
        return None
    colour = _strategy_colours(rows)
    vals = [v for p in pts for v in p[3:]]
    pos = [v for v in vals if v > 0]
    log = len(pos) == len(vals) and max(pos) / min(pos) > LOG_SPAN
    lo, hi = min(vals), max(vals)
    if log:
        lo, hi = lo / 1.25, hi * 1.25
    else:
        pad = 0.08 * (hi - lo) if hi > lo else 0.1 * max(abs(hi), 1e-9)
        lo, hi = max(0.0, lo - pad) if lo >= 0 else lo - pad, hi + pad
    fig = figure(figsize=(5.4, 4.6))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([lo, hi], [lo, hi], linestyle="--", color="0.45", linewidth=1, zorder=1)
    for lab, strategy, routing, x, y in pts:
        ax.scatter([x], [y], color=colour.get(strategy, "C7"), marker="s" if routing == "native" else "o",
                   s=38, zorder=3, edgecolors="black" if routing == "native" else "none", linewidths=0.6)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    _label_points(ax, [(p[0], p[3], p[4]) for p in pts])
    ax.set_xlabel(f"predicted {label}" + (" (log)" if log else ""), fontsize=8)
    ax.set_ylabel(f"measured {label}" + (" (log)" if log else ""), fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.set_title(title + (f"\nKendall tau of the routed strategies: {tau:.2f}" if tau is not None else ""),
                 fontsize=9)
    return _small_png(fig)


def _small_png(fig) -> bytes:
    """The figure as a PNG of 128 colours (a few kilobytes, a third of the full-colour file; Pillow
    is matplotlib's own dependency)."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    img.save(out, format="PNG", optimize=True)
    return out.getvalue()


#: where a point's label may go, in points from it (right above, right below, left above, left
#: below); "w" stands for the label's width
_SPOTS = ((5, 4, 0), (5, -11, 0), (-5, 4, -1), (-5, -11, -1))


def _label_points(ax, pts: Sequence[tuple[str, float, float]]) -> None:
    """Label each point at the first of :data:`_SPOTS` where its text overlaps no label placed
    before it nor another point (an estimate of the text's box: 7-point text), else right above."""
    scale = ax.figure.dpi / 72.0
    xy = [tuple(ax.transData.transform((x, y))) for _, x, y in pts]
    placed: list[tuple[float, float, float, float]] = []
    for (lab, x, y), (px, py) in zip(pts, xy):
        w, h = 4.1 * len(lab) * scale, 8.0 * scale
        best = None
        for dx, dy, left in _SPOTS:
            x0 = px + dx * scale + left * w
            y0 = py + dy * scale
            box = (x0, y0, x0 + w, y0 + h)
            hits = any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed) or \
                any(box[0] - 3 < qx < box[2] + 3 and box[1] - 3 < qy < box[3] + 3 for qx, qy in xy if (qx, qy) != (px, py))
            if not hits:
                best = (dx, dy, left, box)
                break
        dx, dy, left, box = best or (_SPOTS[0] + ((px + 5 * scale, py + 4 * scale, px + 5 * scale + w, py + 12 * scale),))
        placed.append(box)
        ax.annotate(lab, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=7,
                    ha="right" if left else "left")


# --------------------------------------------------------------------------------------------
# the page

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 1.5em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.8em; }
h3 { font-size: 1.05em; margin-top: 1.2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .85em; }
th, td { border: 1px solid #ddd; padding: .2em .5em; } th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure.live { display: inline-block; vertical-align: top; margin: .5em 1% .5em 0; width: 48%; }
figure.live img { border: 1px solid #eee; max-width: 100%; }
figcaption, p.note { color: #666; font-size: .85em; } nav a { margin-right: .8em; }
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _anchor(text: str) -> str:
    return "live-" + "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")


def _img(png: bytes, alt: str, caption: str) -> str:
    b64 = base64.b64encode(png).decode("ascii")
    return (f'<figure class="live"><img alt="{_esc(alt)}" src="data:image/png;base64,{b64}">'
            f"<figcaption>{_esc(caption)}</figcaption></figure>")


def _num(v: Any) -> str:
    f = _value(v)
    return "–" if f is None else fmt_number(f)


def _tau(run: Mapping[str, Any], engine: str, metric: str) -> float | None:
    name = AGREEMENT_NAMES[metric]
    for a in run.get("agreement") or ():
        if a.get("engine") == engine and a.get("metric") == name:
            return _value(a.get("kendall_tau"))
    return None


def _rows_table(rows: Sequence[Mapping[str, Any]], links: Mapping[str, str]) -> str:
    """One line per row: measured, predicted and their ratio per metric, records per worker,
    and, with ``links``, the simulated run of its strategy (an MLflow URL)."""
    heads = ["engine", "strategy", "thr. measured", "thr. predicted", "ratio", "p99 measured (ms)",
             "p99 predicted (ms)", "ratio", "makespan ratio", "dropped", "records per worker"]
    if links:
        heads.append("simulated run")
    out = ["<table><thead><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in heads) + "</tr></thead><tbody>"]
    for r in rows:
        records = r.get("subtask_records")
        if isinstance(records, str):
            try:
                records = json.loads(records)
            except ValueError:
                pass
        cells = [_esc(r.get("engine")), _esc(point_label(r))]
        cells += [f'<td class="num">{_num(r.get(c))}</td>' for c in (
            "throughput_measured", "throughput_predicted", "throughput_ratio", "latency_p99_measured_ms",
            "latency_p99_predicted_ms", "latency_p99_ratio", "makespan_ratio", "dropped")]
        cells.append(_esc(records if records is not None else "–"))
        if links:
            url = links.get(str(r["strategy"]))
            cells.append(f'<a href="{_esc(url)}">MLflow</a>' if url else "–")
        out.append("<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def run_sections(run: Mapping[str, Any], heading: str = "h2", links: bool = True) -> list[str]:
    """The HTML of one dataset's live run: its stream and calibration in a line, a figure per
    engine and metric, the rows' table.  ``run`` holds ``dataset``, ``rows``, and optionally
    ``agreement``, ``overheads``, ``stream``, ``retry`` (a retried run's note), ``anchor``,
    ``simulated`` (strategy -> MLflow URL of its simulated run, shown when ``links``) and ``title``."""
    dataset = str(run.get("dataset", "?"))
    rows = list(run.get("rows") or [])
    anchor = run.get("anchor") or _anchor(dataset)
    out = [f'<{heading} id="{_esc(anchor)}">{_esc(run.get("title") or dataset)}</{heading}>']
    s = run.get("stream") or {}
    if s:
        rate = _value(s.get("rate"))
        out.append(f'<p class="note">{_esc(s.get("tuples", "?"))} tuples of {_esc(dataset)} on '
                   f'{_esc(s.get("workers", "?"))} workers, {"all due at once (saturated)" if not rate else f"{rate:g} tuples/s"}, '
                   f'work per tuple {_esc(s.get("cost_model", "?"))} ({_esc(s.get("work", "?"))}).</p>')
    for engine, o in (run.get("overheads") or {}).items():
        out.append(f'<p class="note">{_esc(engine)}: per-tuple overhead {_num(o.get("overhead_ms"))} ms, transport '
                   f'{_num(o.get("transport_ms"))} ms, measured once by the calibration phase.</p>')
    if run.get("retry"):
        out.append(f'<p class="note"><b>Retried: attempt {_esc(run["retry"])}</b></p>')
    for engine in dict.fromkeys(str(r["engine"]) for r in rows):
        for metric in engine_metrics(rows, engine):
            label = METRICS[metric][2]
            png = figure_png(rows, engine, metric, f"{dataset}: {engine}, {label}", _tau(run, engine, metric))
            if png is None:
                out.append(f'<p class="note">{_esc(engine)}: no {_esc(label)} to plot.</p>')
                continue
            note = " (a batch stage has no per-tuple latency)" if metric == "makespan" else ""
            out.append(_img(png, f"{dataset} {engine} {metric}",
                            f"{engine}: measured against predicted {label}{note}; dashed: y = x (as predicted), "
                            "above it: more than predicted; squares: the engine's own routing"))
    out.append(_rows_table(rows, (run.get("simulated") or {}) if links else {}))
    return out


def page_html(title: str, runs: Sequence[Mapping[str, Any]], intro: str = "", links: bool = True) -> str:
    """The whole page: a heading, ``intro`` (HTML), a contents line, :func:`run_sections` per run."""
    nav = " ".join(f'<a href="#{_esc(r.get("anchor") or _anchor(str(r.get("dataset", "?"))))}">'
                   f'{_esc(r.get("title") or r.get("dataset", "?"))}</a>' for r in runs)
    body = [f"<h1>{_esc(title)}</h1>", intro, f"<nav>{nav}</nav>" if runs else "<p>No live runs.</p>"]
    for run in runs:
        body += run_sections(run, links=links)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>'
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


INTRO = ("<p>Each point is a strategy executed on a real engine with its own decisions: its measured value "
         "(y) against what the simulator predicts for the same stream, rate, costs and parallelism (x), "
         "with the engine's per-tuple overhead measured once per run by a calibration phase, never fitted per "
         "strategy. On the dashed line y = x the prediction is exact; the order of the points along it is what "
         "the rank agreement (Kendall tau) measures.</p>")


def write_page(runs: Sequence[Mapping[str, Any]], out_path: str | os.PathLike, title: str) -> Path:
    """Write the page of ``runs`` (one per dataset, see :func:`run_sections`) to ``out_path``,
    atomically (a reader never sees half a page)."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page_html(title, runs, INTRO), encoding="utf-8")
    os.replace(tmp, out)
    return out


# --------------------------------------------------------------------------------------------
# the latest live page of a dataset, for the nightly's overview


def live_links(tracking_uri: str, ui_base: str, fingerprints: Iterable[str]) -> list[dict[str, Any]]:
    """Per dataset fingerprint, the latest finished live run that executed it and logged its page:
    ``{"fingerprint", "dataset", "run_id", "night", "engines", "url"}`` with ``url`` the MLflow UI
    page of its ``live.html``.  Fingerprints without a live run are left out; [] without any."""
    from skewbench.tracking import PARENT_TAG, night_of, overview_url, search_runs

    out = []
    for fp in dict.fromkeys(fingerprints):
        if not fp or "'" in fp or "\\" in fp or "%" in fp:
            continue
        runs = [r for r in search_runs(tracking_uri, EXPERIMENT,
                                       f"tags.`{FINGERPRINTS_TAG}` LIKE '%{fp}%' and attributes.status = 'FINISHED'")
                if PARENT_TAG not in r.data.tags and r.data.tags.get(PAGE_TAG)]
        if not runs:
            continue
        best = max(runs, key=lambda r: (night_of(r.data.tags, r.info.start_time)[0], r.info.start_time))
        t = best.data.tags
        names = dict(zip(t.get(FINGERPRINTS_TAG, "").split(","), t.get(DATASETS_TAG, "").split(",")))
        out.append({"fingerprint": fp, "dataset": names.get(fp, fp[:12]), "run_id": best.info.run_id,
                    "night": night_of(t, best.info.start_time)[1], "engines": t.get("skewbench.engines", ""),
                    "url": overview_url(ui_base, best.info.experiment_id, best.info.run_id, t[PAGE_TAG])})
    return out
