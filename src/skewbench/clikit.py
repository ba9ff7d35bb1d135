"""Pieces every command line of skewbench shares: the error-handling group, progress bars, JSON
output, list and parameter parsing, and the options every family's replay command takes.

A family's ``cli`` module builds its ``command`` with :func:`replay_options` (dataset, out,
strategies, seeds, parameters, engine, JSON) plus options of its own; ``skewbench replay
<family>`` and ``spark_jobs/replay.py <family>`` find it through the families registry.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import click

from skewbench.errors import SkewbenchError, ValidationFailed, short_message, shown


@contextmanager
def bar(total: int | None, desc: str, unit: str = "tuples") -> Iterator[Any]:
    """A progress bar on standard error (shown on terminals only); yields an ``update(n)``."""
    from tqdm import tqdm

    b = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, disable=None,
             leave=False, dynamic_ncols=True)
    try:
        yield b.update
    finally:
        b.close()


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=None, default=str))


class Group(click.Group):
    """Turns :class:`SkewbenchError` into one line on stderr and exit status 2 (validation
    failures: exit 1)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationFailed as e:
            click.echo(f"validation failed: {short_message(str(e))}", err=True)
            ctx.exit(1)
        except SkewbenchError as e:  # one line, long values cut (a 100 KB --param gives a short line)
            click.echo(f"error: {short_message(str(e))}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt:
            click.echo("interrupted; nothing was left half-written", err=True)
            ctx.exit(130)


def _number_list(name: str, text: str, kind: Callable[[str], Any], what: str) -> list:
    """The comma-separated values of option ``--name``, each read with ``kind`` (``what`` names
    them in the error)."""
    try:
        vals = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SkewbenchError(f"--{name} takes comma-separated {what}, got '{text}'") from None
    if not vals:
        raise SkewbenchError(f"--{name} needs at least one value")
    return vals


def int_list(name: str, text: str) -> list[int]:
    return _number_list(name, text, int, "integers")


def float_list(name: str, text: str) -> list[float]:
    return _number_list(name, text, float, "numbers")


def name_list(name: str, text: str) -> list[str]:
    vals = [s.strip() for s in text.split(",") if s.strip()]
    if not vals:
        raise SkewbenchError(f"--{name} needs at least one name")
    return vals


def param_value(text: str) -> Any:
    t = text.strip()
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(t.lower(), t)


def strategy_params(items: tuple[str, ...]) -> dict[str, dict[str, list[Any]]]:
    """``STRATEGY.PARAM=V1[,V2...]`` items as ``{strategy: {param: [values]}}``."""
    out: dict[str, dict[str, list[Any]]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        strat, dot, param = name.partition(".")
        if not eq or not dot or not values:
            raise SkewbenchError(f"--param takes STRATEGY.PARAM=V1[,V2...], got {shown(item)}")
        out.setdefault(strat.strip(), {})[param.strip()] = [param_value(v) for v in values.split(",")]
    return out


def _seeds(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """``--seeds``: at most a grid's cells (refused before a list of that many seeds is made)."""
    from skewbench.replay import MAX_CELLS

    if value > MAX_CELLS:
        raise SkewbenchError(f"--seeds {value:,} makes a grid of at least {value:,} cells; at most {MAX_CELLS:,}")
    return value


def replay_options(family: str, default_strategies: str) -> Any:
    """The options every ``skewbench replay <family>`` command takes (see ``--help``)."""
    def deco(f: Any) -> Any:
        opts = [
            click.option("--dataset", "dataset", type=click.Path(), required=True, help="Dataset directory."),
            click.option("--strategies", default=default_strategies, show_default=True,
                         help=f"Comma-separated strategy names (see `skewbench strategies --family {family}`)."),
            click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True, callback=_seeds,
                         help="Replay each cell with this many independent hash seeds (a grid holds at most "
                              "10,000 cells)."),
            click.option("--seed-base", type=click.IntRange(min=0), default=0, show_default=True,
                         help="First hash seed (seeds are BASE..BASE+K-1)."),
            click.option("--param", "param_items", multiple=True, metavar="STRATEGY.PARAM=V1[,V2]",
                         help="A strategy parameter (several values add a grid axis); repeatable."),
            click.option("--out", "out", type=click.Path(file_okay=False), required=True, help="Results directory."),
            click.option("--overwrite", is_flag=True, help="Replace existing results at --out."),
            click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
                         help="local: in this process; spark: tasks on Spark (SKEWBENCH_SPARK_MASTER). "
                              "Same results."),
            click.option("--partitions", type=click.IntRange(min=1), default=None,
                         help="Spark tasks per stage (default: twice the default parallelism). "
                              "Results do not depend on it."),
            click.option("--json", "as_json", is_flag=True, help="Print the summary rows as one JSON object."),
        ]
        for o in reversed(opts):
            f = o(f)
        return f
    return deco


def print_results(out: str, dataset: str, fingerprint: str, as_json: bool, family: str) -> None:
    """After a replay: the summary rows as JSON, or a table of the family's headline metrics."""
    from skewbench.results import read_results, schema

    _, summary, _ = read_results(out)
    rows = summary.to_pylist()
    if as_json:
        echo_json({"dataset": dataset, "fingerprint": fingerprint, "out": str(out), "summary": rows})
        return
    s = schema(family)
    coords = list(s.coordinates)
    heads = s.headline
    click.echo(" ".join([f"{'strategy':16s}", *[f"{c[:8]:>8s}" for c in coords], f"{'seed':>4s}",
                         *[f"{(m.label or m.name)[:12]:>12s}" for m in heads]]))
    for r in rows:
        cells = [f"{r['strategy']:16s}", *[f"{r[c]:8d}" for c in coords], f"{r['seed']:4d}"]
        for m in heads:
            v = r[m.name]
            if v is None:  # a metric that does not apply to this row's strategy
                cells.append(f"{'-':>12s}")
            else:
                cells.append(f"{v:12.3e}" if m.fmt == "g" else f"{v:12.{int(m.fmt[1:] or 3)}f}")
        click.echo(" ".join(cells))
    click.echo(f"results in {out} (summary.parquet, series.parquet)")
