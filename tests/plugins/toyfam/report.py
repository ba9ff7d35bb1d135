"""Toy report: one bar chart of the largest share per strategy and bin count."""

from skewbench.present.plotting import figure, frame, save

NOTE = "max share: the largest bin's share of the tuples."


def figures(summary, series, out_dir, **options):
    df = frame(summary)
    fig = figure()
    ax = fig.add_subplot()
    labels = [f"{r.strategy} n={r.workers}" for r in df.itertuples()]
    ax.bar(range(len(df)), df["max_share"])
    ax.set_xticks(range(len(df)), labels)
    ax.set_ylabel("max share")
    return [save(fig, out_dir, "max_share.png")]
