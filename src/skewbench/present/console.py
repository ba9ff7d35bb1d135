"""The console of a pipeline run (``make run``): one updating progress line while the run goes,
then a compact summary (task states as counts, the failed tasks named, the "what to pick" lines,
where the overview and the full summary are).  Pure text functions, tested without a terminal;
no family is named here (the picks come from :mod:`skewbench.present.picks`).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import IO, Iterable, Mapping, Sequence

from skewbench.present.picks import Pick

#: the summary's states, in the order shown (others follow by name)
STATE_ORDER = ("success", "failed", "upstream_failed", "skipped", "running", "queued", "up_for_retry", "None")


def _elapsed(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s} s"


def short_task(name: str, width: int = 18) -> str:
    """A task's name shortened for the progress line: ``grouping.replay[3]`` stays,
    ``allocation.log_to_mlflow`` becomes ``allocation.log_to…``."""
    return name if len(name) <= width else name[:width - 1] + "…"


def progress_line(done: int, total: int | None, running: Sequence[str], elapsed: float, width: int = 80) -> str:
    """One progress line of at most ``width`` characters: a bar over the tasks (when the total
    is known), done/total, the elapsed time and the running tasks, shortened to fit."""
    head = f"{done}/{total} tasks" if total else f"{done} tasks done"
    tail = f" {_elapsed(elapsed)}"
    bar = ""
    if total:
        frac = min(max(done / total, 0.0), 1.0)
        n = max(10, min(30, width // 4))
        filled = int(round(frac * n))
        bar = "[" + "#" * filled + "-" * (n - filled) + f"] {frac * 100:3.0f}% "
    line = f"{bar}{head}{tail}"
    if running:
        room = width - len(line) - len(" | ")
        names: list[str] = []
        for r in running:
            rest = len(running) - len(names) - 1
            cand = ", ".join([*names, short_task(r)]) + (f" +{rest}" if rest else "")
            if len(cand) > room:
                break
            names.append(short_task(r))
        rest = len(running) - len(names)
        if names:
            line += " | " + ", ".join(names) + (f" +{rest}" if rest else "")
        else:
            line += f" | {rest} running"
    return line[:width]


class Progress:
    """The progress display: on a terminal one line rewritten in place (``\\r``); otherwise a
    line each time another tenth of the tasks is done (and at the end)."""

    def __init__(self, stream: IO[str], total: int | None = None, width: int | None = None,
                 tty: bool | None = None, clock=time.monotonic) -> None:
        self.stream, self.total, self.clock = stream, total, clock
        self.tty = stream.isatty() if tty is None else tty
        self.width = width or (shutil.get_terminal_size((100, 24)).columns if self.tty else 100)
        self.t0 = clock()
        self.last_tenth = -1
        self.last_done = -1
        self.last_len = 0
        self.lines = 0  # lines written (a terminal's in-place line counts once)

    def update(self, done: int, running: Sequence[str] = (), total: int | None = None) -> None:
        if total is not None:
            self.total = total
        if self.total is not None and done > self.total:
            self.total = done
        line = progress_line(done, self.total, list(running), self.clock() - self.t0, self.width - 1)
        if self.tty:
            pad = " " * max(0, self.last_len - len(line))
            self.stream.write("\r" + line + pad)
            self.stream.flush()
            if self.lines == 0:
                self.lines = 1
            self.last_len = len(line)
            return
        tenth = int(10 * done / self.total) if self.total else done // 10
        if tenth > self.last_tenth:
            self.last_tenth = tenth
            self.last_done = done
            self.stream.write(line + "\n")
            self.stream.flush()
            self.lines += 1

    def finish(self, done: int, total: int | None = None) -> None:
        """The final state; then a new line on a terminal (elsewhere the last line is written
        unless it already was)."""
        if total is not None:
            self.total = total
        if not self.tty and self.last_done == done:
            return
        if not self.tty:
            self.last_tenth = -1
        self.update(done, ())
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _task_key(name: str) -> tuple[str, int]:
    """``grouping.replay[10]`` -> ("grouping.replay", 10): map indexes in number order."""
    task, _, idx = name.partition("[")
    return task, int(idx.rstrip("]")) if idx.rstrip("]").isdigit() else -1


def state_lines(states: Mapping[str, str], show_failed: int = 8) -> list[str]:
    """Task states as counts, then the failed tasks named (at most ``show_failed``, then a count)."""
    counts = Counter(str(s) for s in states.values())
    order = [s for s in STATE_ORDER if s in counts] + sorted(s for s in counts if s not in STATE_ORDER)
    lines = [f"tasks: {len(states)} (" + ", ".join(f"{counts[s]} {s}" for s in order) + ")"]
    failed = sorted((t for t, s in states.items() if str(s) == "failed"), key=_task_key)
    if failed:
        shown = failed[:show_failed]
        more = f" and {len(failed) - len(shown)} more" if len(failed) > len(shown) else ""
        lines.append("failed: " + ", ".join(shown) + more)
    return lines


def _coords(picks: Sequence[Pick]) -> str:
    """``n=5,10`` for picks at one coordinate, else ``n=5 s=1,n=5 s=3``."""
    texts = [p.coords_text() for p in picks]
    keys = {t.split("=", 1)[0] for t in texts}
    if len(keys) == 1 and all(t.count("=") == 1 for t in texts):
        return f"{keys.pop()}=" + ",".join(t.split("=", 1)[1] for t in texts)
    return ",".join(texts)


def pick_lines(picks: Sequence[Pick]) -> list[str]:
    """The "what to pick" lines: per family and rule, the rule once (with the kind of operator it
    answers for and its constraint), then one line per dataset.
    A dataset's picks at several coordinate values share its line: the strategy at each (merged
    when the same), the numbers of the last (largest) value."""
    lines: list[str] = []
    by_rule: dict[tuple[str, str, str, str], list[Pick]] = {}
    for p in picks:
        by_rule.setdefault((p.family, p.rule.metric, p.rule.kind, p.rule.text), []).append(p)
    for (family, *_), group in by_rule.items():
        lines.append(f"{family}: {group[0].rule_text()}")  # the rule with its kind and its constraint
        by_ds: dict[str, list[Pick]] = {}
        for p in group:
            by_ds.setdefault(p.dataset, []).append(p)
        for ds, ps in by_ds.items():
            last = ps[-1]
            if len(ps) == 1:
                lines.append("  " + last.line(rule=False, where=" ".join(x for x in (ds, last.coords_text()) if x)))
                continue
            runs: list[tuple[str, list[Pick]]] = []
            for p in ps:
                name = p.strategy or "none"
                if runs and runs[-1][0] == name:
                    runs[-1][1].append(p)
                else:
                    runs.append((name, [p]))
            at = "; ".join(f"{name} at {_coords(g)}" for name, g in runs)
            lines.append(f"  {ds}: {at} | at {last.coords_text()}: "
                         + last.line(rule=False, where="").split(": ", 1)[1])
    return lines


#: the summary columns of a capacity sweep (a family whose schema has them)
CEILING_COLUMNS = ("ceiling_workers", "ceiling_capacity", "scaling_workers")


def ceiling_lines(results_dirs: Sequence[str | os.PathLike]) -> list[str]:
    """The skew ceilings of the night, a line per dataset: each strategy's ceiling (the n from
    which on its capacity grows by less than 5% per doubling) and its capacity there, or that it
    still grows at the sweep's largest n; the first setting of each strategy (sources, seed)."""
    from skewbench.results import read_results

    lines = []
    for path in results_dirs:
        manifest, summary, _ = read_results(path)
        if not set(CEILING_COLUMNS) <= set(summary.column_names):
            continue
        seen: dict[str, str] = {}
        top = 0
        for r in summary.select(["strategy", *CEILING_COLUMNS]).to_pylist():
            if r["strategy"] in seen or not r["scaling_workers"]:
                continue
            top = max(top, max(r["scaling_workers"]))
            seen[r["strategy"]] = ("grows" if r["ceiling_workers"] is None else
                                   f"n={r['ceiling_workers']} ({r['ceiling_capacity']:,.0f}/s)")
        if not seen:
            continue
        capped = [f"{k} {v}" for k, v in seen.items() if v != "grows"]
        grows = [k for k, v in seen.items() if v == "grows"]
        name = (manifest.get("dataset") or {}).get("name") or Path(path).name
        lines.append(f"  {name}: " + "; ".join(capped + ([f"{', '.join(grows)} still growing at n={top}"]
                                                        if grows else [])))
    return ["skew ceilings (capacity +<5% per doubling from there on):", *lines] if lines else []


#: the slowest steps the summary names
SLOWEST = 5


def slowest_lines(seconds: Mapping[str, float], wall: float, top: int = SLOWEST) -> list[str]:
    """Where the run's time went: its ``top`` slowest tasks with their share of the wall time (the
    tasks ran one after another, so the shares add up to the time they took), slowest first."""
    if not seconds or wall <= 0:
        return []
    worst = sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    shown = sum(s for _, s in worst)
    return [f"slowest steps ({shown:.0f} s of {wall:.0f} s, {shown / wall:.0%}): "
            + ", ".join(f"{short_task(k, 40)} {v:.0f} s ({v / wall:.0%})" for k, v in worst)]


def summary_text(run_id: str, state: str, seconds: float, states: Mapping[str, str], picks: Sequence[Pick],
                 summary_md: str | os.PathLike | None = None, overview: str | os.PathLike | None = None,
                 extra: Iterable[str] = (), ceilings: Sequence[str] = (), slowest: Sequence[str] = ()) -> str:
    """The console's summary after a run: under 60 lines for a nightly of a few datasets
    (``ceilings``: :func:`ceiling_lines`; ``slowest``: :func:`slowest_lines`)."""
    lines = [f"skewbench_nightly {run_id}: {state} in {_elapsed(seconds)}", *state_lines(states), *slowest]
    if picks:
        lines += ["", "what to pick:", *pick_lines(picks)]
    if ceilings:
        lines += ["", *ceilings]
    lines.append("")
    if overview is not None and os.path.exists(overview):
        lines.append(f"overview: {overview}")
    if summary_md is not None:
        lines.append(f"full tables: {summary_md}")
    lines += list(extra)
    return "\n".join(lines)
