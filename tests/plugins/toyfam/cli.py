"""``skewbench replay toy``."""

import click

from skewbench import clikit
from skewbench import replay as shared
from toyfam import DEFAULT_STRATEGIES


@click.command("toy")
@clikit.replay_options("toy", ",".join(DEFAULT_STRATEGIES))
@click.option("--workers", default="2,4", show_default=True, help="Bin counts.")
def command(dataset, strategies, seeds, seed_base, param_items, out, overwrite, engine, partitions, as_json,
            workers):
    """Place DATASET's tuples into bins with the toy strategies."""
    from skewbench.datasets.contract import open_dataset
    from toyfam.engine import make, replay

    cells = shared.grid("toy", clikit.name_list("strategies", strategies),
                        {"workers": clikit.int_list("workers", workers)},
                        list(range(seed_base, seed_base + seeds)), clikit.strategy_params(param_items))
    for c in cells:
        make(c)
    executor = shared.executor_for(engine, partitions)
    shared.replay_to_dir("toy", dataset, cells, out, lambda scratch: replay(str(dataset), cells, executor),
                         overwrite=overwrite, engine_name=engine)
    ds = open_dataset(dataset)
    clikit.print_results(out, ds.name, ds.meta["fingerprint"], as_json, "toy")
