"""Simulated against measured: the figures and the page of live runs (``live.html``).

A live run (:mod:`skewbench.live`) executes a dataset's stream on an engine with each strategy's
own decisions and sets each measurement beside the simulator's prediction.  This module draws
them: per dataset, one figure per engine and metric, one point per strategy (its routed run, and
the engine's own routing where it has one) at (predicted, measured), the line y = x through them,
each point labelled with its strategy: at the median over the run's repetitions, with a bar from
their minimum to their maximum, and the strategies whose ranges overlap (not separated by the
measurement) named beneath the figure.  The metrics are the throughput and the p99 latency; an
engine that runs a batch stage (Spark: every tuple is there when the stage starts, so there is no
per-tuple latency) shows its stage's makespan instead of the latency.  A row that carries its
per-second ``series`` (Flink's, in a run's ``live.json``; not the rows the site reads back from
MLflow) also gets a figure of its phase second by second (:func:`series_png`): each worker's
completed tuples, measured and predicted, and the sources' back-pressure as Flink reports it
beside the model's blocking.  The table gives each row's repetitions' range, the measurement
window, the calibrations before and after, the merge stage's records and the sources'
back-pressure measured and predicted.

Three callers, in three layers above this one: the live DAG's report step writes a run's page
(:func:`write_page`) and logs it to MLflow; the site (:mod:`skewbench.present.site`) shows the live runs
read back from MLflow with the same figures (:func:`run_sections`); the nightly's overview links
to the latest live page of the night's datasets (:func:`live_links`).

A row is a dict with at least ``engine``, ``strategy``, ``routing`` (``routed``: the replay's
decisions; ``engine``: the strategy's Java router in Flink's sources; ``native``: the engine's
own partitioner) and the measured and predicted columns of :data:`METRICS`.  Figures are PNG
images inlined in the page (tens of kilobytes each); no data is embedded beyond the table of the
rows shown.
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
#: a live parent run's metrics per (dataset, engine, metric): Kendall's tau-b of measured vs
#: predicted (the pairs the repetitions do not separate counted as ties), and of the medians alone
TAU_PREFIX, TAU_PLAIN_PREFIX = "kendall_tau", "kendall_tau_plain"
#: a live parent run's tag per (dataset, engine, metric): the pairs of strategies the repetitions
#: do not separate (JSON, ``[[a, b], ...]``)
NOT_SEPARATED_TAG = "skewbench.not_separated"

#: metric -> (measured column, predicted column, axis label)
METRICS = {"throughput": ("throughput_measured", "throughput_predicted", "throughput (tuples/s)"),
           "latency_p99": ("latency_p99_measured_ms", "latency_p99_predicted_ms", "p99 latency (ms)"),
           "makespan": ("makespan_measured_s", "makespan_predicted_s", "makespan (s)"),
           # the capacity search's (capacity_points): the largest rate sustained
           "capacity": ("capacity_measured", "capacity_predicted", "capacity (tuples/s)")}
#: the agreement's name of each metric (:func:`skewbench.live.compare.agreement`)
AGREEMENT_NAMES = {"throughput": "throughput", "latency_p99": "latency_p99_ms", "makespan": "makespan_s"}
#: both axes logarithmic when the positive values span more than this ratio
LOG_SPAN = 30.0


def tau_metric(dataset: str, engine: str, metric: str, prefix: str = TAU_PREFIX) -> str:
    """The MLflow metric key of a rank agreement on a live parent run (``prefix``: which one)."""
    return f"{prefix}/{dataset}/{engine}/{metric}"


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


def measured_range(row: Mapping[str, Any], metric: str) -> tuple[float, float] | None:
    """The repetitions' range of a metric's measurement (its ``_min`` and ``_max`` columns)."""
    col = METRICS[metric][0]
    lo, hi = _value(row.get(f"{col}_min")), _value(row.get(f"{col}_max"))
    return (lo, hi) if lo is not None and hi is not None else None


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
               tau: float | None = None, tau_plain: float | None = None) -> bytes | None:
    """:func:`measured_figure` as a small PNG; None when no row has both values."""
    fig = measured_figure(rows, engine, metric, title, tau, tau_plain)
    return None if fig is None else _small_png(fig)


def measured_figure(rows: Sequence[Mapping[str, Any]], engine: str, metric: str, title: str,
                    tau: float | None = None, tau_plain: float | None = None):
    """Measured (y) against predicted (x) of ``metric`` on ``engine``: a point per row at its
    median over the repetitions (a circle for a routed run, a square for the engine's own
    routing) with a vertical bar from the repetitions' minimum to their maximum, labelled, with
    y = x drawn (a matplotlib figure); None when no row has both values."""
    m_col, p_col, label = METRICS[metric]
    pts = [(point_label(r), str(r["strategy"]), r.get("routing"), _value(r.get(p_col)), _value(r.get(m_col)),
            measured_range(r, metric)) for r in rows if r.get("engine") == engine]
    pts = [p for p in pts if p[3] is not None and p[4] is not None]
    if not pts:
        return None
    colour = _strategy_colours(rows)
    vals = [v for p in pts for v in (p[3], p[4], *(p[5] or ()))]
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
    for lab, strategy, routing, x, y, spread in pts:
        c = colour.get(strategy, "C7")
        if spread is not None and spread[1] > spread[0]:
            ax.plot([x, x], [spread[0], spread[1]], color=c, linewidth=1.4, zorder=2, solid_capstyle="butt",
                    gid=f"range/{lab}")
            ax.scatter([x, x], list(spread), color=c, marker="_", s=30, zorder=2, linewidths=1.2)
        ax.scatter([x], [y], color=c, marker="s" if routing == "native" else "o",
                   s=38, zorder=3, edgecolors="black" if routing == "native" else "none", linewidths=0.6)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    _label_points(ax, [(p[0], p[3], p[4]) for p in pts])
    ax.set_xlabel(f"predicted {label}" + (" (log)" if log else ""), fontsize=8)
    ax.set_ylabel(f"measured {label}, median and range" + (" (log)" if log else ""), fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    taus = []
    if tau is not None:
        taus.append(f"Kendall tau of the routed strategies: {tau:.2f}")
    if tau_plain is not None:
        taus.append(f"(medians alone: {tau_plain:.2f})")
    ax.set_title(title + ("\n" + " ".join(taus) if taus else ""), fontsize=9)
    return fig


def series_png(row: Mapping[str, Any], title: str, repetition: int = 0) -> bytes | None:
    """:func:`series_figure` as a small PNG; None for a row without series."""
    fig = series_figure(row, title, repetition)
    return None if fig is None else _small_png(fig)


def series_figure(row: Mapping[str, Any], title: str, repetition: int = 0):
    """A phase second by second (one repetition of a Flink row, ``row["series"]``): above, each
    worker's completed tuples per second, measured (solid) and as the model has them (dashed),
    one colour per worker; below, the sources' time back-pressured per second as Flink reports it
    and blocked per second as measured from the records and as the model has it (summed over the
    sources); the measurement window shaded (a matplotlib figure: the workers' lines in the upper
    axes, the sources' in the lower).  None for a row without series."""
    series = row.get("series")
    if not isinstance(series, list) or not 0 <= repetition < len(series) or not isinstance(series[repetition], Mapping):
        return None
    s = series[repetition]
    eng, pred, fl = (s.get(k) if isinstance(s.get(k), Mapping) else {} for k in ("engine", "predicted", "flink"))
    measured_w, predicted_w = list(eng.get("worker_throughput") or []), list(pred.get("worker_throughput") or [])
    if not measured_w and not predicted_w:
        return None
    from matplotlib.lines import Line2D

    fig = figure(figsize=(5.4, 4.6))
    grid = fig.add_gridspec(2, 1, height_ratios=(2.0, 1.0))
    ax = fig.add_subplot(grid[0])
    bx = fig.add_subplot(grid[1], sharex=ax)
    window = row_window(row)
    for a in (ax, bx):
        if window is not None:
            a.axvspan(window[0], window[1], color="0.92", zorder=0, linewidth=0)
        a.tick_params(labelsize=7)
        a.grid(alpha=0.3)
    workers = max(len(measured_w), len(predicted_w))

    def per_second(vals) -> tuple[list[float], list[float]]:
        ys = [_value(v) for v in vals or ()]
        return [i + 0.5 for i, y in enumerate(ys) if y is not None], [y for y in ys if y is not None]

    for w in range(workers):
        c = f"C{w % 10}"
        if w < len(measured_w):
            ax.plot(*per_second(measured_w[w]), color=c, linewidth=1.0, gid=f"measured/{w}")
        if w < len(predicted_w):
            ax.plot(*per_second(predicted_w[w]), color=c, linewidth=1.0, linestyle="--", gid=f"predicted/{w}")
    handles = [Line2D([], [], color="0.2", linewidth=1.0, label="measured"),
               Line2D([], [], color="0.2", linewidth=1.0, linestyle="--", label="predicted")]
    if workers <= 10:
        handles += [Line2D([], [], color=f"C{w}", linewidth=2.0, label=f"worker {w}") for w in range(workers)]
    ax.legend(handles=handles, fontsize=6, ncol=6, loc="lower left", bbox_to_anchor=(0.0, 1.01), frameon=False,
              handlelength=1.8, columnspacing=1.0)
    ax.set_ylabel("tuples completed per second", fontsize=8)
    fig.suptitle(title, fontsize=9)
    t_s = [_value(t) for t in fl.get("source_t_s") or ()]
    bp = [_value(v) for v in fl.get("source_backpressured_ms_per_s") or ()]
    flink_pts = [(t, v) for t, v in zip(_midpoints(t_s), bp) if t is not None and v is not None]
    if flink_pts:
        bx.plot([t for t, _ in flink_pts], [v for _, v in flink_pts], color="C3", linewidth=1.2,
                label="back-pressured (Flink)", gid="sources/flink")
    if eng.get("source_blocked_ms"):
        bx.plot(*per_second(eng["source_blocked_ms"]), color="0.25", linewidth=1.0, linestyle=":",
                label="blocked (records)", gid="sources/measured")
    if pred.get("source_blocked_ms"):
        bx.plot(*per_second(pred["source_blocked_ms"]), color="C0", linewidth=1.0, linestyle="--",
                label="blocked (model)", gid="sources/predicted")
    if bx.get_legend_handles_labels()[0]:
        bx.legend(fontsize=6, loc="upper right", framealpha=0.8)
    bx.set_ylabel("sources, ms/s", fontsize=8)
    bx.set_xlabel("second of the phase" + ("; shaded: the measurement window" if window is not None else ""),
                  fontsize=8)
    return fig


def _midpoints(ends: Sequence[float | None]) -> list[float | None]:
    """The middle of each sampling interval, given when each ended (the first as long as the next)."""
    out: list[float | None] = []
    for i, t in enumerate(ends):
        if t is None:
            out.append(None)
            continue
        prev = ends[i - 1] if i > 0 else None
        nxt = ends[i + 1] if i + 1 < len(ends) else None
        dt = (t - prev) if prev is not None else (nxt - t) if nxt is not None else 1.0
        out.append(t - (dt if dt > 0 else 1.0) / 2.0)
    return out


def row_window(row: Mapping[str, Any]) -> tuple[float, float] | None:
    """The measurement window of a row (``window_s``; read back from MLflow: ``window_s.start``
    and ``window_s.end``), seconds from the phase's start."""
    w = row.get("window_s")
    if isinstance(w, (list, tuple)) and len(w) == 2:
        lo, hi = _value(w[0]), _value(w[1])
    else:
        lo, hi = _value(row.get("window_s.start")), _value(row.get("window_s.end"))
    return (lo, hi) if lo is not None and hi is not None else None


def calibration(row: Mapping[str, Any], which: str) -> dict[str, Any]:
    """A row's calibration ``which`` (``before`` or ``after``): its dict, else read back from
    MLflow (the tag ``skewbench.calibration_<which>`` as JSON, or the flattened metrics
    ``calibration_<which>.<key>``); {} when the row has none."""
    v = row.get(f"calibration_{which}")
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            v = None
    if isinstance(v, Mapping):
        return dict(v)
    prefix = f"calibration_{which}."
    return {k[len(prefix):]: x for k, x in row.items()
            if k.startswith(prefix) and "/" not in k and "." not in k[len(prefix):]}


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
span.range { color: #777; font-size: .85em; white-space: nowrap; }
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


def _agreement(run: Mapping[str, Any], engine: str, metric: str) -> Mapping[str, Any]:
    name = AGREEMENT_NAMES[metric]
    for a in run.get("agreement") or ():
        if a.get("engine") == engine and a.get("metric") == name:
            return a
    return {}


def _tau(run: Mapping[str, Any], engine: str, metric: str, key: str = "kendall_tau") -> float | None:
    return _value(_agreement(run, engine, metric).get(key))


def not_separated(run: Mapping[str, Any], engine: str, metric: str) -> list[tuple[str, str]]:
    """The pairs of strategies whose repetitions' ranges of ``metric`` overlap on ``engine``."""
    pairs = _agreement(run, engine, metric).get("not_separated") or []
    if isinstance(pairs, str):
        try:
            pairs = json.loads(pairs)
        except ValueError:
            pairs = []
    return [(str(p[0]), str(p[1])) for p in pairs if isinstance(p, (list, tuple)) and len(p) == 2]


def _with_range(row: Mapping[str, Any], col: str) -> str:
    """A measured median with its repetitions' range beneath it."""
    lo, hi = row.get(f"{col}_min"), row.get(f"{col}_max")
    text = _num(row.get(col))
    if _value(lo) is not None and _value(hi) is not None:
        text += f'<br><span class="range">{_num(lo)}–{_num(hi)}</span>'
    return text


def _pair(a: Any, b: Any) -> str:
    return "–" if _value(a) is None and _value(b) is None else f"{_num(a)} / {_num(b)}"


#: how a row's tuples were routed, as the console table (a suffix to the strategy) and the page's
#: table say it: ``routed``, the replay's decisions made before the run; ``engine``, the strategy's
#: Java router in Flink's sources; ``native``, the engine's own partitioner
ROUTING_LABELS = {"routed": " (offline)", "engine": " (engine)", "native": " (native)"}
ROUTING_TEXT = {"routed": "decided offline", "engine": "in the engine", "native": "the engine's own"}


def _router(row: Mapping[str, Any]) -> str:
    """The router's time a tuple in the sources and the share of a source's time it takes."""
    ns, share = _value(row.get("router_ns_per_tuple")), _value(row.get("router_source_share"))
    if ns is None:
        return "–"
    return f"{ns:,.0f}" + (f" ({share:.2%})" if share is not None else "")


def _rows_table(rows: Sequence[Mapping[str, Any]], links: Mapping[str, str]) -> str:
    """One line per row: measured (the median over the repetitions, their range beneath it),
    predicted and their ratio per metric, how many repetitions, the measurement window, the
    per-tuple overhead of the calibrations before and after the strategies, the merge stage's
    records, the sources' back-pressure measured (Flink's) and predicted, for a strategy routed by
    its Java router in Flink's sources the router's time a tuple and the share of a source's time
    it takes at the run's rate, records per worker,
    and, with ``links``, the simulated run of its strategy (an MLflow URL).  A numeric column no
    row has a value in (Spark's latency, Flink's makespan) is left out."""
    heads = ["thr. measured (range)", "thr. predicted", "ratio", "p99 measured (ms) (range)", "p99 predicted (ms)",
             "ratio", "makespan measured (s) (range)", "makespan predicted (s)", "makespan ratio", "runs", "window (s)",
             "overhead before / after (ms)", "merge records", "back-pressured measured / predicted (ms)", "dropped",
             "router ns a tuple (share of a source)"]
    table = []
    for r in rows:
        window = row_window(r)
        before, after = calibration(r, "before"), calibration(r, "after")
        table.append([_with_range(r, "throughput_measured"), _num(r.get("throughput_predicted")),
                      _num(r.get("throughput_ratio")), _with_range(r, "latency_p99_measured_ms"),
                      _num(r.get("latency_p99_predicted_ms")), _num(r.get("latency_p99_ratio")),
                      _with_range(r, "makespan_measured_s"), _num(r.get("makespan_predicted_s")),
                      _num(r.get("makespan_ratio")), _num(r.get("repeat")),
                      f"{window[0]:.1f}–{window[1]:.1f}" if window else "–",
                      _pair(before.get("overhead_ms", r.get("overhead_ms")), after.get("overhead_ms")),
                      _num(r.get("merge_records", r.get("merge_records_measured"))),
                      _pair(r.get("source_backpressured_ms"), r.get("source_backpressured_predicted_ms")),
                      _num(r.get("dropped")), _router(r)])
    keep = [i for i in range(len(heads)) if any(line[i] != "–" for line in table)]
    shown = ["engine", "strategy", "routing"] + [heads[i] for i in keep] + ["records per worker"]
    if links:
        shown.append("simulated run")
    out = ["<table><thead><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in shown) + "</tr></thead><tbody>"]
    for r, line in zip(rows, table):
        records = r.get("subtask_records")
        if isinstance(records, str):
            try:
                records = json.loads(records)
            except ValueError:
                pass
        routing = ROUTING_TEXT.get(str(r.get("routing")), str(r.get("routing") or "–"))
        cells = [f"<td>{_esc(r.get('engine'))}</td>", f"<td>{_esc(point_label(r))}</td>", f"<td>{_esc(routing)}</td>"]
        cells += [f'<td class="num">{line[i]}</td>' for i in keep]
        cells.append(f"<td>{_esc(records if records is not None else '–')}</td>")
        if links:
            url = links.get(str(r["strategy"]))
            cells.append(f'<td><a href="{_esc(url)}">MLflow</a></td>' if url else "<td>–</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _calibration_notes(run: Mapping[str, Any]) -> list[str]:
    """A line per engine: its calibrations before and after the strategies (``calibrations``),
    else the overheads of an older result (``overheads``: measured once)."""
    out = []
    for engine, c in (run.get("calibrations") or {}).items():
        parts = []
        for which in ("before", "after"):
            cal = (c or {}).get(which) or {}
            if not cal:
                continue
            text = f"{which} the strategies: per-tuple overhead {_num(cal.get('overhead_ms'))} ms"
            if _value(cal.get("transport_ms")) is not None:
                text += f", transport {_num(cal.get('transport_ms'))} ms"
            if _value(cal.get("capacity")) is not None:
                text += f", capacity {_num(cal.get('capacity'))} tuples/s"
            parts.append(text)
        if parts:
            out.append(f'<p class="note">{_esc(engine)}: calibration {_esc("; ".join(parts))} '
                       "(the model uses the one before).</p>")
    if not out:
        for engine, o in (run.get("overheads") or {}).items():
            out.append(f'<p class="note">{_esc(engine)}: per-tuple overhead {_num(o.get("overhead_ms"))} ms, transport '
                       f'{_num(o.get("transport_ms"))} ms, measured by the calibration phase.</p>')
    return out


def run_sections(run: Mapping[str, Any], heading: str = "h2", links: bool = True) -> list[str]:
    """The HTML of one dataset's live run: its stream and calibrations in a line each, a figure
    per engine and metric (each strategy's median and its repetitions' range; the strategies the
    repetitions do not separate named beneath it), a figure per second of each Flink strategy's
    phase (rows that carry their ``series``), the rows' table.  ``run`` holds ``dataset``,
    ``rows``, and optionally ``agreement``, ``calibrations`` (engine -> ``before``/``after``; an
    older result's ``overheads`` instead), ``stream``, ``retry`` (a retried run's note),
    ``anchor``, ``simulated`` (strategy -> MLflow URL of its simulated run, shown when ``links``)
    and ``title``."""
    dataset = str(run.get("dataset", "?"))
    rows = list(run.get("rows") or [])
    anchor = run.get("anchor") or _anchor(dataset)
    out = [f'<{heading} id="{_esc(anchor)}">{_esc(run.get("title") or dataset)}</{heading}>']
    s = run.get("stream") or {}
    if s:
        rate = _value(s.get("rate"))
        repeat = f", each phase run {_num(s['repeat'])} times" if _value(s.get("repeat")) else ""
        out.append(f'<p class="note">{_esc(s.get("tuples", "?"))} tuples of {_esc(dataset)} on '
                   f'{_esc(s.get("workers", "?"))} workers, {"all due at once (saturated)" if not rate else f"{rate:g} tuples/s"}, '
                   f'work per tuple {_esc(s.get("cost_model", "?"))} ({_esc(s.get("work", "?"))}){repeat}.</p>')
    out += _calibration_notes(run)
    if run.get("retry"):
        out.append(f'<p class="note"><b>Retried: attempt {_esc(run["retry"])}</b></p>')
    for engine in dict.fromkeys(str(r["engine"]) for r in rows):
        for metric in engine_metrics(rows, engine):
            label = METRICS[metric][2]
            png = figure_png(rows, engine, metric, f"{dataset}: {engine}, {label}", _tau(run, engine, metric),
                             _tau(run, engine, metric, "kendall_tau_plain"))
            if png is None:
                out.append(f'<p class="note">{_esc(engine)}: no {_esc(label)} to plot.</p>')
                continue
            note = " (a batch stage has no per-tuple latency)" if metric == "makespan" else ""
            apart = not_separated(run, engine, metric)
            tied = ("; not separated by the repetitions (their ranges overlap, a tie for the rank agreement): "
                    + ", ".join(f"{a} and {b}" for a, b in apart)) if apart else ""
            out.append(_img(png, f"{dataset} {engine} {metric}",
                            f"{engine}: measured against predicted {label}{note}; a point: the median over the "
                            "repetitions, its bar: their minimum to maximum; dashed: y = x (as predicted), above it: "
                            f"more than predicted; squares: the engine's own routing{tied}"))
        timed = [r for r in rows if r.get("engine") == engine and isinstance(r.get("series"), list) and r["series"]]
        if timed:
            out.append(f'<{_sub(heading)}>{_esc(engine)}: each phase second by second</{_sub(heading)}>')
        for r in timed:
            png = series_png(r, f"{dataset}: {engine}, {point_label(r)}")
            if png is None:
                continue
            out.append(_img(png, f"{dataset} {engine} {point_label(r)} per second",
                            f"{point_label(r)} on {engine}, repetition 1 of {len(r['series'])}: each worker's "
                            "completed tuples per second (solid: measured, dashed: predicted); beneath, the "
                            "sources' ms per second back-pressured as Flink reports it, blocked as the records "
                            "show and as the model has it"))
    out.append(_rows_table(rows, (run.get("simulated") or {}) if links else {}))
    if run.get("capacity"):
        out += capacity_sections(run["capacity"], dataset, _sub(heading))
    return out


def capacity_points(cap: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A capacity search's rows (``capacity.json``) as the figure's points: per strategy its
    predicted capacity and the searches' median, minimum and maximum."""
    return [{"engine": "flink", "strategy": r["strategy"], "routing": r.get("routing"),
             "capacity_predicted": r.get("predicted"), "capacity_measured": r.get("measured"),
             "capacity_measured_min": r.get("measured_min"), "capacity_measured_max": r.get("measured_max")}
            for r in cap.get("rows") or ()]


def capacity_sections(cap: Mapping[str, Any], dataset: str, heading: str = "h3") -> list[str]:
    """The capacity search of a dataset: a line on what was searched and the verdict, the figure
    (measured against predicted capacity, each strategy's median over the searches and their
    range), and a row per strategy."""
    tol = _value((cap.get("verdict") or {}).get("tolerance")) or 0.15
    rows = list(cap.get("rows") or ())
    out = [f'<{heading} id="{_esc(_anchor(dataset + " capacity"))}">{_esc(dataset)}: capacity on Flink, measured '
           f"against predicted</{heading}>"]
    v = cap.get("verdict") or {}
    verdict = ("every strategy within " if v.get("within") else "outside ") + f"{tol:.0%} of its prediction" + (
        "" if v.get("within") else ": " + ", ".join(map(str, v.get("outside") or ())))
    out.append(f'<p class="note">The largest rate each strategy\'s job sustains with {_esc(cap.get("workers", "?"))} '
               f"workers (the sources' lag growing by under {_esc(format(_value((cap.get('search') or {}).get('share')) or 0.01, '.0%'))} "
               f"of the rate after the warm-up), searched {_esc(cap.get('repeat', '?'))} times over rates "
               f"(a probe: {_esc(cap.get('duration_s', '?'))} s of stream at the predicted capacity), beside the capacity "
               f"its routing of the same tuples predicts with the calibrated overhead of "
               f"{_num(cap.get('overhead_ms'))} ms a record. Verdict: {_esc(verdict)}.</p>")
    png = figure_png(capacity_points(cap), "flink", "capacity", f"{dataset}: flink, capacity")
    if png is not None:
        out.append(_img(png, f"{dataset} flink capacity",
                        "flink: measured against predicted capacity; a point: the median over the searches, its bar: "
                        "their minimum to maximum; dashed: y = x (as predicted)"))
    heads = ["strategy", "tuples a probe", "predicted (tuples/s)", "measured (tuples/s)", "min–max", "ratio",
             f"within {tol:.0%}", "searches separated"]
    body = []
    for r in rows:
        rng = f"{_num(r.get('measured_min'))}–{_num(r.get('measured_max'))}"
        body.append("<tr>" + "".join([
            f"<td>{_esc(r['strategy'])}</td>", f'<td class="num">{_num(r.get("tuples"))}</td>',
            f'<td class="num">{_num(r.get("predicted"))}</td>', f'<td class="num">{_num(r.get("measured"))}</td>',
            f'<td class="num">{rng}</td>', f'<td class="num">{_num(r.get("ratio"))}</td>',
            f"<td>{'yes' if r.get('within') else 'no'}</td>", f"<td>{'yes' if r.get('separated') else 'no'}</td>"])
            + "</tr>")
    out.append("<table><thead><tr>" + "".join(f"<th>{_esc(h)}</th>" for h in heads) + "</tr></thead><tbody>"
               + "".join(body) + "</tbody></table>")
    return out


def _sub(heading: str) -> str:
    """The heading a level below ``heading`` (h2 -> h3)."""
    return f"h{min(6, int(heading[1:]) + 1)}" if heading[:1] == "h" and heading[1:].isdigit() else "h4"


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
         "(y; the median over the run's repetitions, its bar their minimum to maximum) against what the simulator "
         "predicts for the same stream, rate, costs and parallelism (x), with the engine's per-tuple overhead "
         "measured by a calibration phase before the strategies (and checked by one after them), never fitted per "
         "strategy. On the dashed line y = x the prediction is exact; the order of the points along it is what "
         "the rank agreement (Kendall tau) measures, two strategies whose repetitions overlap counting as a tie. "
         "On Flink, each phase is also shown second by second: every worker's completed tuples, and the sources' "
         "back-pressure, measured and predicted.</p>")


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
