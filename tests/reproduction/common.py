"""What the reproduction tests share."""

from __future__ import annotations

import functools
import json
import os


def record(name: str, **values) -> None:
    """Print a measured target's numbers as a ``REPRO {json}`` line (visible with ``-s``) and append
    it to ``$SKEWBENCH_REPRO_LOG`` when set; REPRODUCTION.md copies them."""
    line = json.dumps({"test": name, **values}, default=float)
    print("REPRO " + line)
    path = os.environ.get("SKEWBENCH_REPRO_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def rounds_to(x: float, value: float, step: float) -> bool:
    """``x`` equals ``value`` as REPRODUCTION.md writes it (rounded to a multiple of ``step``)."""
    return abs(x - value) <= step / 2 + 1e-9


#: the E5 random graph set of allocation.spec.md (2000 graphs, seed 0)
E5_COUNT = 2000


@functools.lru_cache(maxsize=None)
def e5_reference(eta: float) -> tuple[list, "np.ndarray", "np.ndarray"]:
    """The E5 graphs, each one's proven optimum (OPT, method F2; nan when not proven) and whether it
    was proven: solved once per test session and shared by the allocation and practice checks."""
    import numpy as np

    from skewbench.allocation import instances, opt

    jobs = instances.random_graphs(count=E5_COUNT, eta=eta, seed=0)
    sols = [opt.solve(job, method="f2") for job in jobs]
    proven = np.array([o.status == "optimal" for o in sols])
    opt_gain = np.array([float(o.gain) if o.status == "optimal" else np.nan for o in sols])
    return jobs, opt_gain, proven
