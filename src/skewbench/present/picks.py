"""What to pick: one strategy per dataset and family (and per value of the coordinates a rule
names), computed from a results directory's summary by the rules its family declares.

A family declares ``PICK_RULES`` (a tuple of :class:`Rule`) in its ``report`` module.  For one
rule and one summary (one dataset):

* the cells are grouped by the rule's ``per`` coordinates (e.g. ``("workers",)``: a pick per
  worker count); a pick is made within each group, and the group's values are the pick's
  ``coords`` (and its MLflow tag);
* within a group, a strategy's *configuration* is its parameters and the values of the
  coordinates the rule does not name (e.g. grouping's ``sources``); the metric, the constraint
  columns and the costs are averaged over seeds per configuration (:func:`_seed_means`).  A
  configuration that fails a ``where`` constraint (or lacks the constrained value) is not
  eligible; a strategy's value is that of its best eligible configuration (the note names the
  configuration when the strategy ran several);
* a strategy whose metric is missing (NaN) is not eligible, and the note says so; the rule's
  ``exclude`` strategies (offline references such as an oracle or the exact optimum) are never
  picked;
* a rule may answer for one kind of operator (``kind``, e.g. "keyed aggregation"): then only the
  strategies it names in ``only`` are candidates (those that can run that kind of operator), and the
  pick's line says which kind it answers; a rule without ``only`` takes every strategy;
* a constraint's bound is a number, or the name of a column of the same configuration (e.g. the
  cell's own error budget);
* the pick is the best value by ``goal``; values within a relative 1e-9 of it are ties (listed in
  :attr:`Pick.ties`); among ties, those with the least ``tiebreak`` columns (in order) remain, then
  the baseline is preferred, then the first by name;
* the baseline (the engine default) is compared with the pick: its value is that of its best
  eligible configuration, or of its best configuration at all when none meets the constraints
  (the note then says so); when the baseline is best or tied-best the pick is the baseline;
  when it did not run, its value and costs are None.

When no strategy meets the constraints, the pick has no strategy and names the *nearest* candidate
(:attr:`Pick.nearest`): the one whose constrained values miss their bounds by the least (relative
excess summed over the constraints), with its metric and constrained values, so a "no pick" still
says how far the best candidate was.  Every rule is printed with its constraint
(:meth:`Pick.rule_text`).

A rule applies to the cells that report its metric: a group in which no cell reports it (e.g.
the shedding family's operator rule on its partition cells) gets no pick.  When no cell of the
summary reports the metric of any of the family's rules, :func:`picks_for` returns one pick
per rule with no strategy and a note.

This module names no family: it asks :mod:`skewbench.families` for the rules and
:mod:`skewbench.results` for the coordinates and labels.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from skewbench import families as _families
from skewbench.errors import SkewbenchError

#: relative tolerance under which two values are tied
TIE_RTOL = 1e-9
_OPS = {"<=": lambda a, b: a <= b + TIE_RTOL * abs(b),
        ">=": lambda a, b: a >= b - TIE_RTOL * abs(b),
        "<": lambda a, b: a < b,
        ">": lambda a, b: a > b}


@dataclass(frozen=True)
class Rule:
    """How a family picks a strategy (declared in ``<family>/report.py`` as ``PICK_RULES``)."""

    metric: str             # summary column to optimise (mean over seeds of one strategy's cells)
    goal: str               # "min" or "max"
    per: tuple[str, ...]    # coordinates one pick is made for, e.g. ("workers",)
    # constraints: (column, "<=" | ">=" | "<" | ">", a number or another column of the same configuration)
    where: tuple[tuple[str, str, float | str], ...] = ()
    baseline: str | None = None    # the strategy the pick is compared with (the engine default)
    costs: tuple[str, ...] = ()    # columns shown beside: the pick's vs the baseline's
    text: str = ""          # the rule in words, printed beside the pick
    exclude: tuple[str, ...] = ()  # strategies never picked (offline references: an oracle, the optimum)
    kind: str = ""          # the kind of operator the rule answers for, e.g. "keyed aggregation"
    only: tuple[str, ...] = ()     # the candidates (the strategies that can run that kind); () = all
    among: str = ""         # the candidates in words, printed in the constraint
    tiebreak: tuple[str, ...] = ()  # columns (least first) that decide among ties of the metric

    def __post_init__(self) -> None:
        if self.goal not in ("min", "max"):
            raise SkewbenchError(f"pick rule on {self.metric}: goal must be 'min' or 'max', not {self.goal!r}")
        for c in self.where:
            if len(c) != 3 or c[1] not in _OPS or not isinstance(c[2], (int, float, str)) or isinstance(c[2], bool):
                raise SkewbenchError(f"pick rule on {self.metric}: bad constraint {c!r} "
                                     f"(column, one of {', '.join(_OPS)}, a number or a column)")
        if self.only and self.baseline is not None and self.baseline not in self.only:
            raise SkewbenchError(f"pick rule on {self.metric}: the baseline {self.baseline} is not among its "
                                 f"candidates {', '.join(self.only)}")

    def columns(self) -> list[str]:
        """Every summary column the rule reads."""
        bounds = [b for _, _, b in self.where if isinstance(b, str)]
        return list(dict.fromkeys([self.metric, *(c for c, _, _ in self.where), *bounds, *self.costs,
                                   *self.tiebreak]))

    def constraint_text(self, labels: dict[str, str] | None = None) -> str:
        """The constraints in words, e.g. ``replication <= 2; among the strategies that route by key``."""
        parts = [_where_text(self, labels or {})] if self.where else []
        if self.among:
            parts.append(f"among {self.among}")
        elif self.only:
            parts.append(f"among {', '.join(self.only)}")
        if self.exclude:
            parts.append(f"never {', '.join(self.exclude)}")
        return "; ".join(parts) or "none"

    def describe(self, labels: dict[str, str] | None = None) -> str:
        """The rule as printed: its kind, its words and its constraint."""
        head = f"{self.kind}: " if self.kind else ""
        return f"{head}{self.text or self.metric} (constraint: {self.constraint_text(labels)})"


def _num(v: float | None) -> str:
    """3 significant digits, plain up to 1e5, scientific below 1e-3."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.2e}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


@dataclass(frozen=True)
class Pick:
    """One rule's pick for one dataset of one family at one value of the rule's coordinates."""

    family: str
    dataset: str
    coords: dict[str, int]
    rule: Rule
    strategy: str | None            # None when no strategy qualifies or the metric is missing
    value: float | None
    baseline_value: float | None
    costs: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    ties: tuple[str, ...] = ()      # other strategies equal to the pick's value
    note: str = ""
    #: on a "no pick", the candidate nearest to the constraints: (strategy, {column: value}) with its metric
    #: and constrained values; None otherwise
    nearest: tuple[str, dict[str, float | None]] | None = None

    def rule_text(self) -> str:
        """The rule as printed beside the pick, with its kind and constraint."""
        return self.rule.describe(_labels(self.family))

    def metric_label(self) -> str:
        """The rule's metric as the family labels it (e.g. ``imbalance``, ``latency mean (ms)``)."""
        return _labels(self.family).get(self.rule.metric, self.rule.metric)

    def coords_text(self, sep: str = " ", eq: str = "=") -> str:
        abbr = _abbreviations(self.family)
        return sep.join(f"{abbr.get(k, k)}{eq}{_coord(v)}" for k, v in self.coords.items())

    def line(self, rule: bool = True, where: str | None = None) -> str:
        """One console line, e.g. ``grouping zipf-1.0 n=50: pick dc (imbalance 1.02e-04 vs flink
        0.257; replication 1.49 vs 1) -- rule: ...``; without the rule when ``rule`` is False, and
        with ``where`` instead of the family, dataset and coordinates when given."""
        if where is None:
            where = " ".join(x for x in (self.family, self.dataset, self.coords_text()) if x)
        if self.rule.kind:
            where = f"{where} ({self.rule.kind})" if where else f"({self.rule.kind})"
        label = _labels(self.family)
        m = label.get(self.rule.metric, self.rule.metric)
        if self.strategy is None:
            shown = []
            if self.baseline_value is not None and self.rule.baseline:
                shown.append(f"{m}: {self.rule.baseline} {_num(self.baseline_value)}")
            if self.nearest is not None:
                name, values = self.nearest
                nums = ", ".join(f"{label.get(c, c)} {_num(v)}" for c, v in values.items())
                shown.append(f"nearest: {name} {nums}")
            head = "no pick" + (f" ({'; '.join(shown)})" if shown else "")
        else:
            parts = [f"{m} {_num(self.value)}"]
            if self.rule.baseline and self.rule.baseline != self.strategy:
                parts[0] += f" vs {self.rule.baseline} {_num(self.baseline_value)}"
            for c, (mine, base) in self.costs.items():
                text = f"{label.get(c, c)} {_num(mine)}"
                if self.rule.baseline and self.rule.baseline != self.strategy:
                    text += f" vs {_num(base)}"
                parts.append(text)
            head = f"pick {self.strategy} ({'; '.join(parts)})"
            if self.ties:
                head += f", tied with {', '.join(self.ties)}"
        out = f"{where}: {head}"
        if self.note:
            out += f" [{self.note}]"
        if rule:
            out += f" -- rule: {self.rule_text()}"
        return out

    def change(self) -> str:
        """The pick's metric against the baseline's in short (:func:`change_text`, e.g. ``−38%``);
        "" when there is no pick, no baseline value, or the pick is the baseline itself."""
        if self.strategy is None or not self.rule.baseline or self.strategy == self.rule.baseline:
            return ""
        return change_text(self.value, self.baseline_value)

    def tag(self) -> tuple[str, str]:
        """The MLflow tag of the pick: ``("skewbench.pick.<dataset>.<coords, e.g. n50>[.<kind's first word>]",
        strategy or "none")``."""
        key = f"skewbench.pick.{_tag_part(self.dataset)}"
        coords = self.coords_text(sep=".", eq="")
        if coords:
            key += f".{_tag_part(coords)}"
        if self.rule.kind:
            key += f".{_tag_part(self.rule.kind.split()[0])}"
        return key, self.strategy or "none"

    def as_dict(self) -> dict[str, Any]:
        return {"family": self.family, "dataset": self.dataset, "coords": dict(self.coords),
                "strategy": self.strategy, "value": self.value, "baseline": self.rule.baseline,
                "baseline_value": self.baseline_value, "costs": {k: list(v) for k, v in self.costs.items()},
                "ties": list(self.ties), "note": self.note, "rule": self.rule_text(), "kind": self.rule.kind,
                "constraint": self.rule.constraint_text(_labels(self.family)), "metric": self.rule.metric,
                "goal": self.rule.goal, "nearest": list(self.nearest) if self.nearest else None, "line": self.line()}


#: from this factor on a change is written as a factor (×3.2, ÷40) rather than a percentage
FACTOR_FROM = 2.0
_MINUS = "\u2212"


def _factor(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else (f"{x:.0f}" if x >= 10 else f"{x:.1f}")


def change_text(value: float | None, base: float | None) -> str:
    """The change from ``base`` to ``value`` in a few characters: a percentage (``−38%``, ``+12%``,
    ``±0%``) up to a factor of :data:`FACTOR_FROM` either way, a factor beyond (``÷2,600`` for a
    value 2,600 times smaller, ``×3.2``), ``−100%`` down to 0; the difference (``Δ −0.05``) when
    either is not positive; "" when either is missing."""
    if value is None or base is None or not (math.isfinite(value) and math.isfinite(base)):
        return ""
    value, base = float(value), float(base)
    if base <= 0 or value < 0:
        d = value - base
        return "Δ ±0" if d == 0 else f"Δ {'+' if d > 0 else _MINUS}{_num(abs(d))}"
    if value == 0:
        return f"{_MINUS}100%"
    r = value / base
    if r >= FACTOR_FROM:
        return f"×{_factor(r)}"
    if r <= 1 / FACTOR_FROM:
        return f"÷{_factor(1 / r)}"
    pct = (r - 1) * 100
    shown = f"{abs(pct):.0f}" if abs(pct) >= 1 else f"{abs(pct):.1f}".rstrip("0").rstrip(".")
    if shown == "0":
        return "±0%"
    return f"{'+' if pct > 0 else _MINUS}{shown}%"


def _tag_part(text: str) -> str:
    # MLflow tag keys: alphanumerics, underscores, dashes, periods, spaces and slashes
    return re.sub(r"[^A-Za-z0-9_.\-/ ]+", "_", str(text)).strip("_") or "dataset"


def _coord(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _abbreviations(family: str) -> dict[str, str]:
    """Coordinate -> its short name in the family's run names (``n={workers}``: workers -> n)."""
    try:
        from skewbench.results import schema

        run_name = schema(family).run_name
    except (SkewbenchError, ImportError, AttributeError):
        return {}
    return {col: short for short, col in re.findall(r"(\w+)=\{(\w+)\}", run_name or "")}


def _labels(family: str) -> dict[str, str]:
    """Summary column -> its short label (the metric's ``label``, else its name, with its unit)."""
    try:
        from skewbench.results import schema

        metrics = schema(family).table_metrics("summary")
    except (SkewbenchError, ImportError, AttributeError):
        return {}
    out = {}
    for m in metrics:
        label = m.label or m.name
        out[m.name] = label if not m.unit or label.split()[-1] == m.unit else f"{label} ({m.unit})"
    return out


def _coordinates(family: str, summary: pd.DataFrame) -> tuple[str, ...]:
    try:
        from skewbench.results import schema

        coords = schema(family).coordinates
    except SkewbenchError:
        coords = ()
    return tuple(c for c in coords if c in summary.columns)


# --------------------------------------------------------------------------------------------


def _seed_means(summary: pd.DataFrame, rule: Rule, others: Sequence[str]) -> pd.DataFrame:
    """One row per (strategy, configuration, *rule.per): the mean over seeds of the metric, the
    constraint columns and the costs (a column absent from the summary is NaN).  The
    configuration is the strategy's parameters (JSON) and the coordinates in ``others``; its
    ``config`` column is that, as text."""
    df = summary.copy()
    columns = rule.columns()
    for c in columns:
        df[c] = pd.to_numeric(df[c], errors="coerce") if c in df.columns else float("nan")
    df["_params"] = df["params"].astype(str) if "params" in df.columns else ""
    keys = ["strategy", "_params", *others, *rule.per]
    out = df.groupby(keys, sort=False, dropna=False)[columns].mean().reset_index()
    out["config"] = [_config_text(r, others) for _, r in out.iterrows()]
    return out


def _config_text(row: pd.Series, others: Sequence[str]) -> str:
    parts = [f"{c}={_coord(row[c])}" for c in others]
    try:
        params = json.loads(row["_params"]) if row["_params"] else {}
    except ValueError:
        params = {}
    if isinstance(params, dict):
        parts += [f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(params.items())]
    return ", ".join(parts)


def _distinguishing(configs: list[str], chosen: str) -> str:
    """The parts of ``chosen`` that tell it apart from the strategy's other configurations."""
    split = [c.split(", ") for c in configs]
    common = set.intersection(*(set(s) for s in split)) if split else set()
    return ", ".join(p for p in chosen.split(", ") if p not in common)


def _tied(a: float, b: float) -> bool:
    return abs(a - b) <= TIE_RTOL * max(abs(a), abs(b)) or a == b


def _bound(row: pd.Series, bound: float | str) -> float:
    """A constraint's bound for one configuration: the number, or the row's value of the named column."""
    if isinstance(bound, str):
        v = row[bound]
        return float("nan") if pd.isna(v) else float(v)
    return float(bound)


def _meets(row: pd.Series, rule: Rule) -> bool:
    for col, op, bound in rule.where:
        v, b = row[col], _bound(row, bound)
        if pd.isna(v) or math.isnan(b) or not _OPS[op](float(v), b):
            return False
    return True


def _excess(row: pd.Series, rule: Rule) -> float:
    """How far a configuration misses the constraints: the relative excess over each bound, summed
    (0 when it meets them all; inf when a value is missing)."""
    total = 0.0
    for col, op, bound in rule.where:
        v, b = row[col], _bound(row, bound)
        if pd.isna(v) or math.isnan(b):
            return math.inf
        gap = float(v) - b if op in ("<=", "<") else b - float(v)
        if not _OPS[op](float(v), b):
            total += max(gap, 0.0) / max(abs(b), 1e-12) + (1e-12 if gap == 0 else 0.0)
    return total


def _where_text(rule: Rule, labels: dict[str, str]) -> str:
    def shown(b: float | str) -> str:
        return f"the cell's {labels.get(b, b)}" if isinstance(b, str) else f"{b:g}"
    return " and ".join(f"{labels.get(c, c)} {op} {shown(bound)}" for c, op, bound in rule.where)


def _nearest(candidates: pd.DataFrame, rule: Rule) -> tuple[str, dict[str, float | None]] | None:
    """The configuration nearest to meeting the constraints (least :func:`_excess`, then the best
    metric, then the first by name): its strategy, metric and constrained values."""
    if candidates.empty or not rule.where:
        return None
    rows = [(r["strategy"], _excess(r, rule), r) for _, r in candidates.iterrows()]
    rows = [x for x in rows if math.isfinite(x[1])]
    if not rows:
        return None
    sign = 1.0 if rule.goal == "min" else -1.0
    name, _, row = min(rows, key=lambda x: (x[1], sign * float(x[2][rule.metric]), x[0]))
    cols = [rule.metric, *(c for c, _, _ in rule.where)]
    return str(name), {c: _opt(row[c]) for c in dict.fromkeys(cols)}


def _best(rows: pd.DataFrame, rule: Rule) -> pd.Series:
    """The row of the best metric value (first on ties, in row order)."""
    order = rows[rule.metric].to_numpy(dtype=float)
    i = int(order.argmin() if rule.goal == "min" else order.argmax())
    return rows.iloc[i]


def _opt(x: Any) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def _why_none(has: pd.DataFrame, allowed: pd.DataFrame, rule: Rule, labels: dict[str, str]) -> str:
    """Why a cell has no pick: no row reports the metric, no allowed strategy ran, none meets the
    constraints, or the only eligible ones are excluded (the first that holds)."""
    if has.empty:
        return f"no strategy reports {labels.get(rule.metric, rule.metric)}"
    if allowed.empty:
        return f"no candidate ran ({rule.constraint_text(labels)})"
    if rule.where:
        return f"no strategy meets {_where_text(rule, labels)}"
    return "no eligible strategy (" + ", ".join(rule.exclude) + " excluded)"


def _pick_group(family: str, dataset: str, coords: dict[str, Any], rule: Rule, g: pd.DataFrame,
                labels: dict[str, str]) -> Pick:
    metric = labels.get(rule.metric, rule.metric)
    notes: list[str] = []
    strategies = list(dict.fromkeys(g["strategy"]))
    if len(strategies) == 1:
        notes.append("only one strategy ran")
    missing = [s for s in strategies if g.loc[g["strategy"] == s, rule.metric].isna().all()]
    if missing:
        notes.append(f"no {metric} for {', '.join(missing)}")
    has = g[g[rule.metric].notna()]
    eligible = has[[_meets(r, rule) for _, r in has.iterrows()]] if rule.where else has
    allowed = has[~has["strategy"].isin(rule.exclude)]
    if rule.only:
        allowed = allowed[allowed["strategy"].isin(rule.only)]
        other = [s for s in strategies if s not in rule.only]
        if other:
            notes.append(f"not for a {rule.kind or 'this operator'}: {', '.join(other)}")
    candidates = eligible[eligible.index.isin(allowed.index)]
    # a strategy's value: its best eligible configuration
    best_of: dict[str, pd.Series] = {s: _best(rows, rule) for s, rows in candidates.groupby("strategy", sort=False)}

    base_row: pd.Series | None = None
    base = rule.baseline
    if base is not None:
        b_all = has[has["strategy"] == base]
        b_ok = eligible[eligible["strategy"] == base]
        if base not in strategies:
            notes.append(f"the baseline {base} did not run")
        elif b_all.empty:  # named in "no <metric> for ...": its costs are still shown
            base_row = g[g["strategy"] == base].iloc[0]
        elif not b_ok.empty:
            base_row = _best(b_ok, rule)
        else:
            base_row = _best(b_all, rule)
            notes.append(f"the baseline {base} does not meet {_where_text(rule, labels)}")

    base_value = _opt(base_row[rule.metric]) if base_row is not None else None
    if not best_of:
        notes.append(_why_none(has, allowed, rule, labels))
        return Pick(family, dataset, coords, rule, None, None, base_value,
                    {c: (None, _opt(base_row[c]) if base_row is not None else None) for c in rule.costs},
                    (), "; ".join(dict.fromkeys(notes)), _nearest(allowed, rule))

    values = {s: float(r[rule.metric]) for s, r in best_of.items()}
    top = (min if rule.goal == "min" else max)(values.values())
    tied = sorted(s for s, v in values.items() if _tied(v, top))
    chosen = _break_tie(tied, best_of, rule)
    row = best_of[chosen]
    ties = tuple(s for s in tied if s != chosen)
    if chosen == base:
        notes.append(f"the baseline {base} is already best" + (" (tied)" if ties else ""))
    configs = list(dict.fromkeys(candidates.loc[candidates["strategy"] == chosen, "config"]))
    if len(configs) > 1:
        notes.append(f"{chosen} at {_distinguishing(configs, str(row['config']))}")
    costs = {c: (_opt(row[c]), _opt(base_row[c]) if base_row is not None else None) for c in rule.costs}
    return Pick(family, dataset, coords, rule, chosen, float(row[rule.metric]), base_value, costs, ties,
                "; ".join(dict.fromkeys(notes)))


def _break_tie(tied: list[str], best_of: dict[str, pd.Series], rule: Rule) -> str:
    """Among strategies tied on the metric: those with the least tiebreak columns (in order; a
    missing value counts last), then the baseline, then the first by name."""
    left = list(tied)
    for col in rule.tiebreak:
        vals = {s: (math.inf if pd.isna(best_of[s][col]) else float(best_of[s][col])) for s in left}
        low = min(vals.values())
        left = [s for s in left if vals[s] == low or (math.isfinite(low) and _tied(vals[s], low))]
    return rule.baseline if rule.baseline in left else left[0]


def _rules(family: str) -> tuple[Rule, ...]:
    return tuple(_families.get(family).attr("report", "PICK_RULES", ()))


def picks_for(summary: pd.DataFrame, family: str, dataset: str, rules: Sequence[Rule] | None = None) -> list[Pick]:
    """The picks of one dataset's summary by ``rules`` (default: the family's ``PICK_RULES``):
    one per rule and value of its ``per`` coordinates, in the coordinates' order."""
    rules = _rules(family) if rules is None else tuple(rules)
    if summary is None or len(summary) == 0 or not rules:
        return []
    if "dataset" in summary.columns and summary["dataset"].notna().any() and summary["dataset"].nunique() > 1:
        summary = summary[summary["dataset"] == dataset]
    coordinates = _coordinates(family, summary)
    labels = _labels(family)
    out: list[Pick] = []
    for rule in rules:
        missing = [c for c in rule.per if c not in summary.columns]
        if missing:
            raise SkewbenchError(f"pick rule on {rule.metric}: the summary has no column {', '.join(missing)}")
        others = [c for c in coordinates if c not in rule.per]
        means = _seed_means(summary, rule, others)
        groups = means.groupby(list(rule.per), sort=True) if rule.per else [((), means)]
        for key, g in groups:
            if g[rule.metric].isna().all():
                continue  # the rule does not apply to these cells
            key = key if isinstance(key, tuple) else (key,)
            coords = {c: _coord(v.item() if hasattr(v, "item") else v) for c, v in zip(rule.per, key)}
            out.append(_pick_group(family, dataset, coords, rule, g, labels))
    if not out:  # nothing reports any rule's metric: say so once per rule
        for rule in rules:
            m = labels.get(rule.metric, rule.metric)
            out.append(Pick(family, dataset, {}, rule, None, None, None, {c: (None, None) for c in rule.costs},
                            (), f"no strategy reports {m}"))
    return out


def night_picks(results_dirs: Sequence[str | os.PathLike]) -> list[Pick]:
    """The picks of every results directory (family and dataset from its manifest), in the
    order given.  A directory without results is skipped."""
    from skewbench.datasets.contract import read_parquet
    from skewbench.results import MANIFEST

    out: list[Pick] = []
    for d in results_dirs:
        p = Path(d)
        try:
            manifest = json.loads((p / MANIFEST).read_text())
            summary = read_parquet(p / "summary.parquet", verify=False).to_pandas()
        except (OSError, ValueError):
            continue
        family = manifest.get("family")
        if not family:
            continue
        ds = (manifest.get("dataset") or {}).get("name")
        if not ds and "dataset" in summary.columns and summary["dataset"].notna().any():
            ds = str(summary["dataset"].dropna().iloc[0])
        out += picks_for(summary, family, ds or p.parent.name)
    return out
