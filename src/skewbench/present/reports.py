"""Reports of replay results (the results contract, :mod:`skewbench.results`), for any family.

* :func:`summary_table` / :func:`render_markdown_summary`: one row per dataset, strategy label
  and coordinates, the mean over seeds of the family's headline metrics (its METRICS marked
  ``headline``), as a frame or as Markdown text for a terminal;
* :func:`render_report`: a self-contained HTML report of several results directories (context
  header, a summary table and the family's figures for each, images inlined as base64); the
  figures come from the family's ``report`` module (``figures(summary, series, out_dir, **opts)``);
* :func:`trend_section`: the report's "Trend vs previous night" (each cell against the previous
  night's same cell, :mod:`skewbench.trend`);
* :func:`results_names`: a unique, path-safe name per results directory (plots and MLflow
  artifacts go under it).

Strategies are labelled by name plus the parameters that vary between their cells
(:func:`skewbench.present.plotting.with_labels`).
"""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
import pyarrow as pa

from skewbench import __version__
from skewbench import families as _families
from skewbench.errors import SkewbenchError
from skewbench.present.plotting import TableLike, fmt_number, frame, with_labels
from skewbench.results import load_results, results_names, schema

__all__ = ["load_results", "render_markdown_summary", "render_report", "results_names", "summary_table",
           "trend_section"]


# --------------------------------------------------------------------------------------------
# tables

def _table_columns(family: str) -> list[tuple[str, str, str]]:
    """(column, header, format) of the family's headline metrics."""
    return [(m.name, m.header, m.fmt) for m in schema(family).headline]


def summary_table(summary: TableLike, family: str) -> pd.DataFrame:
    """One row per dataset, strategy label and coordinates: the mean over seeds of the family's
    headline metrics (unformatted), with the number of seeds."""
    coords = list(schema(family).coordinates)
    df = with_labels(frame(summary), coords)
    df["_order"] = pd.factorize(df["label"])[0]
    cols = [c for c, _, _ in _table_columns(family) if c in df.columns]
    g = df.groupby(["dataset", "_order", "label", *coords], sort=True)
    out = g[cols].mean()
    out.insert(0, "seeds", g["seed"].nunique())
    return out.reset_index().drop(columns="_order")


def _formatted_rows(table: pd.DataFrame, family: str) -> tuple[list[str], list[list[str]]]:
    coords = list(schema(family).coordinates)
    columns = _table_columns(family)
    headers = ["strategy", *coords, "seeds"] + [h for c, h, _ in columns if c in table.columns]
    rows = []
    for _, r in table.iterrows():
        rows.append([str(r["label"]), *[str(int(r[c])) for c in coords], str(int(r["seeds"]))]
                    + [fmt_number(r[c], kind) for c, _, kind in columns if c in table.columns])
    return headers, rows


def _text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    numeric = [i >= 1 for i in range(len(headers))]

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if num else c.ljust(w)
                                 for c, w, num in zip(cells, widths, numeric)) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


# --------------------------------------------------------------------------------------------
# reports over results directories


def render_markdown_summary(results: Sequence[str | os.PathLike] | str | os.PathLike | TableLike,
                            family: str | None = None) -> str:
    """The summary tables (mean over seeds) as Markdown text, one per results directory (or of
    one summary table of ``family``)."""
    if isinstance(results, (pa.Table, pd.DataFrame)):
        if family is None:
            raise SkewbenchError("render_markdown_summary: a summary table needs its family")
        blocks = [({"family": family, "_table_only": True}, frame(results))]
    else:
        blocks = [(m, s.to_pandas()) for _, m, s, _ in load_results(results)]
    out = []
    for m, summary in blocks:
        fam = str(m.get("family"))
        if not m.get("_table_only"):
            d = m.get("dataset") or {}
            out.append(f"### {d.get('name', '?')} ({m.get('family', '?')}, "
                       f"fingerprint {str(d.get('fingerprint', '?'))[:12]}, {d.get('tuples', '?')} tuples)")
        if summary.empty:
            out.append("(no cells)")
        else:
            out.append(_text_table(*_formatted_rows(summary_table(summary, fam), fam)))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 14em; }
code { font-size: .95em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
p.note { color: #666; font-size: .85em; }
"""


def _kv_table(items: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td><code>{html.escape(str(v))}</code></td></tr>"
                   for k, v in items)
    return f'<table class="kv">{rows}</table>'


def _html_table(headers: list[str], rows: list[list[str]], numeric_from: int | None = 1) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f'<td{" class=num" if numeric_from is not None and i >= numeric_from else ""}>{html.escape(c)}</td>'
        for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'
            f"</figure>")


_TREND_ITEMS = 8


def _change_text(name: str, old: Any, new: Any) -> str:
    """``name: old → new`` (6 significant digits, or all of them when those look the same)."""
    def show(x: Any) -> str:
        if x is None:
            return "–"
        return f"{float(x):.6g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)

    a, b = show(old), show(new)
    if a == b and isinstance(old, (int, float)) and isinstance(new, (int, float)):
        a, b = repr(float(old)), repr(float(new))
    return f"{name}: {a} → {b}"


def trend_section(verdicts: Sequence[Mapping[str, Any]]) -> str:
    """The report's "Trend vs previous night" section (HTML) from each cell's verdict
    (:func:`skewbench.tracking.trend`): a table of the changed cells, or "no change in N cells"."""
    from skewbench.trend import CHANGED, NEW, SAME, describe, summarize

    parts = ["<h2>Trend vs previous night</h2>"]
    if not verdicts:
        return parts[0] + "<p>No cells.</p>"
    counts = summarize(verdicts)
    changed = [v for v in verdicts if v.get("status") == CHANGED]
    if not changed:
        text = describe(counts)
        return parts[0] + f"<p>{html.escape(text[:1].upper() + text[1:])}.</p>"
    line = (f"{counts[CHANGED]} changed, {counts[SAME]} no change, {counts[NEW]} new "
            f"(no previous night) of {len(verdicts)} cells")
    parts.append(f"<p>{html.escape(line)}. Timing metrics are not compared; every other metric must match "
                 "the previous night's within its tolerance.</p>")
    rows = []
    for v in changed:
        items = [_change_text(*m) for m in v.get("metrics") or []]
        more = len(items) - _TREND_ITEMS
        metrics = "; ".join(items[:_TREND_ITEMS]) + (f"; and {more} more" if more > 0 else "")
        params = "; ".join(_change_text(*p) for p in v.get("params") or [])
        rows.append([str(v.get("dataset", "")), str(v.get("cell", "")), metrics or "–", params or "–",
                     str(v.get("previous_run") or "")])
    parts.append(_html_table(["dataset", "cell", "metrics (previous → now)", "params (previous → now)",
                              "previous run"], rows, numeric_from=None))
    return "\n".join(parts)


def render_report(results_dirs: Sequence[str | os.PathLike], out_path: str | os.PathLike, title: str,
                  context: Mapping[str, Any] | None = None, *, plots_dir: str | os.PathLike | None = None,
                  trend: Sequence[Mapping[str, Any]] | None = None, **figure_options: Any) -> Path:
    """A self-contained HTML report of a run's results directories (datasets x families).

    ``context`` (run id, logical date, git commit, ...) is shown in the header with each
    dataset's fingerprint.  Figures are written under ``plots_dir/<name>/`` (see
    :func:`results_names`; default: a temporary directory, removed) and inlined as base64 PNG.
    Each family draws its own figures (its ``report.figures``, given ``figure_options``, e.g.
    a family's coordinate such as ``workers=``), may draw figures across its datasets
    (``report.combined_figures(tables, out_dir, **options)`` with ``tables`` a list of
    ``(dataset name, summary frame)``) and may add a ``NOTE`` under the datasets table.
    ``trend`` (each cell's verdict against the previous night, :func:`skewbench.tracking.trend`)
    adds the section "Trend vs previous night" (:func:`trend_section`) after the datasets table.
    """
    loaded = load_results(results_dirs)
    names = results_names([m for _, m, _, _ in loaded])
    out_path = Path(out_path)
    with tempfile.TemporaryDirectory(prefix="skewbench-report-") as tmp:
        plot_root = Path(plots_dir) if plots_dir is not None else Path(tmp)
        parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
                 f"<h1>{html.escape(title)}</h1>"]
        header = [(k, v) for k, v in (context or {}).items()]
        header.append(("skewbench", __version__))
        parts.append(_kv_table(header))
        ds_rows = []
        for (path, m, s, _), name in zip(loaded, names):
            d = m.get("dataset") or {}
            ds_rows.append([str(d.get("name", "?")), str(m.get("family", "?")), str(d.get("fingerprint", "?")),
                            str(d.get("tuples", "?")), str(s.num_rows), str(path)])
        parts.append("<h2>Datasets</h2>")
        parts.append(_html_table(["dataset", "family", "fingerprint", "tuples", "cells", "results"], ds_rows,
                                 numeric_from=None))
        for fam in dict.fromkeys(str(m.get("family")) for _, m, _, _ in loaded):
            note = _families.get(fam).attr("report", "NOTE", "") if fam in _families.families() else ""
            if note:
                parts.append(f'<p class="note">{html.escape(fam)}: {html.escape(note)}</p>')
        if trend is not None:
            parts.append(trend_section(trend))
        for (path, m, summary, series), name in zip(loaded, names):
            d = m.get("dataset") or {}
            family = m.get("family", "?")
            parts.append(f"<h2>{html.escape(str(d.get('name', '?')))} — {html.escape(str(family))}</h2>")
            cfg = {k: v for k, v in (m.get("config") or {}).items() if v is not None}
            parts.append(f'<p class="note">fingerprint <code>{html.escape(str(d.get("fingerprint", "?")))}</code>'
                         f', {html.escape(str(d.get("tuples", "?")))} tuples, engine '
                         f'{html.escape(str(m.get("engine", "?")))}, configuration '
                         f'<code>{html.escape(json.dumps(cfg, sort_keys=True, default=str))}</code></p>')
            sdf = summary.to_pandas()
            if sdf.empty:
                parts.append("<p>No cells.</p>")
                continue
            if family not in _families.families():
                parts.append(f"<p>No report layout for the family '{html.escape(str(family))}'.</p>")
                continue
            parts.append(_html_table(*_formatted_rows(summary_table(sdf, family), family)))
            figures = _families.get(family).attr("report", "figures")
            for p in figures(sdf, series, plot_root / name, **figure_options):
                parts.append(_img(p))
        # a family may also draw figures across its datasets (``report.combined_figures``)
        for fam in dict.fromkeys(str(m.get("family")) for _, m, _, _ in loaded):
            combined = _families.get(fam).attr("report", "combined_figures", None) \
                if fam in _families.families() else None
            if combined is None:
                continue
            tables = [(str((m.get("dataset") or {}).get("name", "?")), s.to_pandas())
                      for _, m, s, _ in loaded if m.get("family") == fam]
            paths = combined(tables, plot_root / f"{fam}-across-datasets", **figure_options)
            if paths:
                parts.append(f"<h2>{html.escape(fam)} — across datasets</h2>")
                parts.extend(_img(p) for p in paths)
        parts.append("</body></html>\n")
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = out_path.with_name(f".{out_path.name}.tmp")
        tmp_out.write_text("\n".join(parts), encoding="utf-8")
        os.replace(tmp_out, out_path)
    return out_path
