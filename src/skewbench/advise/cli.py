"""``skewbench advise``: what each engine's default partitioner does with your keys, the
alternatives, and what to change (loaded by name from :mod:`skewbench.cli`, like the families'
commands).  Every option is checked here or by :func:`skewbench.advise.core.advise`, so that any
bad input is one line, ``error: ...``, and exit status 2."""

from __future__ import annotations

import click

from skewbench.advise.limits import HELP, MAX_FLINK_MAX_PARALLELISM, MAX_SOURCES, MAX_WORKERS
from skewbench.errors import SkewbenchError

def _int(option: str, text: str | None, low: int, high: int) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise SkewbenchError(f"{option} takes an integer, got {text!r}") from None
    if not low <= value <= high:
        raise SkewbenchError(f"{option} is an integer in [{low:,}, {high:,}], got {value:,}")
    return value


def _margin(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SkewbenchError(f"--margin takes a number, got {text!r}") from None
    if not 0 <= value < 100:
        raise SkewbenchError(f"--margin is a relative margin in [0, 100), got {text}")
    return value


def _float(option: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise SkewbenchError(f"{option} takes a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise SkewbenchError(f"{option} is a positive number, got {text}")
    return value


@click.command("advise", epilog=HELP)
@click.argument("keys", metavar="KEYS")
@click.option("--workers", default="8,32,100", show_default=True, metavar="P[,P...]",
              help="Comma-separated parallelisms p (subtasks, partitions, consumers, shuffle partitions).")
@click.option("--format", "fmt", default="auto", show_default=True, metavar="FORMAT",
              help="How to read KEYS: auto, lines (one key per line), csv (with a header), counts (key,count "
                   "pairs), parquet, dataset (a skewbench dataset directory).")
@click.option("--key-column", default=None, metavar="NAME", help="CSV/Parquet: the key column (default: key, or a Parquet "
              "file's only column).")
@click.option("--count-column", default=None, metavar="NAME", help="CSV/Parquet: a column of tuples per key (default: count, "
              "when present).")
@click.option("--key-format", default="auto", show_default=True, metavar="FORMAT",
              help="How the engines see a key: long (a Java long: integer keys only), string (its text, a Java "
                   "String), auto (long when every key is an integer).")
@click.option("--flink-max-parallelism", "flink_max_parallelism", default=None, metavar="P",
              help="Your job's Flink max parallelism, shown beside Flink's default (at least every p, at most "
                   "32768).")
@click.option("--alternatives", default="pkg,dc,wc,chwbl,salt,local-global", show_default=True, metavar="NAMES",
              help="Strategies replayed on the same keys (their default parameters), or 'none'.")
@click.option("--sources", default="5", show_default=True, metavar="S", help="Upstream instances feeding the alternatives.")
@click.option("--seed", default="0", show_default=True, metavar="N", help="Hash seed of the alternatives.")
@click.option("--rate", default=None, metavar="R", help="Your input rate, tuples per second: with --cost, the workers each "
              "partitioner needs for it, its skew ceiling and where Flink's autoscaler settles.")
@click.option("--cost", default=None, metavar="MS", help="What one tuple costs a worker, in ms (with --rate).")
@click.option("--current", default=None, metavar="P", help="Your job's parallelism now, where Flink's autoscaler starts "
              "(default: the smallest of --workers; with --rate).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout: keys, workers, rows (one per "
              "partitioner and parallelism: partitioner, workers, load_max, load_mean, busiest_over_mean, ...), "
              "advice, limits.")
@click.option("--html", "html_out", default=None, metavar="FILE",
              help="Also write a self-contained HTML page: the table, a bar chart per engine (workers busiest to "
                   "idlest), the advice with its rules.")
@click.option("--fail-over", default=None, metavar="X",
              help="A check for CI: exit 1 when an engine default's busiest worker is more than X times the mean at "
                   "any --workers (the failures, naming engine, parallelism and hottest key, on stderr).")
@click.option("--baseline", default=None, metavar="OLD_KEYS",
              help="A check for CI on a key change: exit 1 when an engine default spreads KEYS worse than OLD_KEYS "
                   "(read as KEYS is) by more than --margin.")
@click.option("--margin", default=None, metavar="M",
              help="With --baseline: how much worse the new busiest/mean may be, relative (default 0.1: 10%).")
def command(keys: str, workers: str, fmt: str, key_column: str | None, count_column: str | None, key_format: str,
            flink_max_parallelism: str | None, alternatives: str, sources: str, seed: str, rate: str | None,
            cost: str | None, current: str | None, as_json: bool, html_out: str | None, fail_over: str | None,
            baseline: str | None, margin: str | None) -> None:
    """What Kafka, Flink and Spark do by default with your KEYS at each parallelism, what the
    balancing strategies would do instead, and what to change.

    KEYS: a file of keys (one per line; a CSV or Parquet file with a key column; key,count
    pairs; gzip allowed), a skewbench dataset directory, or a catalog dataset's name. Per
    parallelism: each engine's default partitioner as the engine computes it (Kafka's
    partitioner with p partitions, Flink's keyBy with its default max parallelism and yours,
    Spark's HashPartitioner and SQL shuffle), busiest worker over mean and that worker's hottest
    keys; PKG, D-Choices, W-Choices, CHWBL, salting and local-global replayed on the same keys
    with their replication or merge cost; the best balance with every key whole (the floor no
    keyed partitioner beats). Then what to change (Flink's max parallelism, Kafka's partition
    count, two-phase or split options for a hot key), each with its effect and rule. With --rate
    and --cost: how many workers each partitioner needs for that rate (or why none suffices), where
    adding workers stops helping (its skew ceiling), and where Flink's autoscaler settles from
    --current.
    """
    from skewbench.advise.core import advise, parse_workers

    from skewbench.advise.check import DEFAULT_MARGIN, check

    ps = parse_workers(workers)
    limit = _float("--fail-over", fail_over)
    if limit is not None and limit < 1.0:
        raise SkewbenchError(f"--fail-over is a busiest/mean ratio >= 1 (1 is a perfect spread), got {fail_over}")
    if margin is not None and baseline is None:
        raise SkewbenchError("--margin needs --baseline")
    rel = DEFAULT_MARGIN if margin is None else _margin(margin)
    names = [] if alternatives.strip().lower() == "none" else [a.strip() for a in alternatives.split(",") if a.strip()]
    result = advise(keys, ps, fmt=fmt, key_column=key_column, count_column=count_column, key_format=key_format,
                    flink_max_parallelism=_int("--flink-max-parallelism", flink_max_parallelism, 1, MAX_FLINK_MAX_PARALLELISM),
                    alternatives=names, sources=_int("--sources", sources, 1, MAX_SOURCES),  # type: ignore[arg-type]
                    seed=_int("--seed", seed, 0, 2**63 - 1),  # type: ignore[arg-type]
                    rate=_float("--rate", rate), cost_ms=_float("--cost", cost),
                    current=_int("--current", current, 1, MAX_WORKERS))
    old = None
    if baseline is not None:
        old = advise(baseline, ps, fmt=fmt, key_column=key_column, count_column=count_column, key_format=key_format,
                     flink_max_parallelism=_int("--flink-max-parallelism", flink_max_parallelism, 1,
                                                MAX_FLINK_MAX_PARALLELISM), alternatives=[])
    verdict = check(result.rows, limit, old.rows if old is not None else None, rel) \
        if limit is not None or old is not None else None
    path = None
    if html_out:
        from skewbench.advise.page import write_page

        path = write_page(result, html_out)
    if as_json:
        from skewbench.clikit import echo_json

        echo_json({**result.to_dict(), **({"check": verdict} if verdict is not None else {})})
    else:
        from skewbench.advise.render import render

        click.echo(render(result))
    if path is not None:
        click.echo(f"page: {path}", err=True)
    if verdict is not None:
        for f in verdict["failures"]:
            click.echo(f"check failed: {f['reason']}", err=True)
        if not verdict["passed"]:
            raise SystemExit(1)
        click.echo("check passed: " + ", ".join(
            x for x in (f"every engine default within {limit:g}x the mean" if limit is not None else "",
                        f"none worse than the baseline by more than {rel:.0%}" if old is not None else "") if x),
            err=True)
