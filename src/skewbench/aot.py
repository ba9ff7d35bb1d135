"""Build the ahead-of-time kernels (:mod:`skewbench.jit`): ``python -m skewbench.aot``.

Runs small workloads through the command line in this process (dataset generation, then the
replays each family lists in its ``cli.AOT_REPLAYS``), records the argument types of every kernel called
from Python, compiles those signatures with numba's ``pycc`` into ``skewbench/_kernels*.so`` and
writes ``skewbench/_kernels.json`` (the signatures, the numba and numpy versions, and a digest of
the kernels' sources: a build that no longer matches them is ignored).  ``make install`` runs
it; it takes 30-60 s and needs a C compiler.  Calls with other argument types still work,
through numba.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

from skewbench import jit

HERE = Path(__file__).parent


def workloads(tmp: Path) -> list[list[str]]:
    """The command lines whose kernel calls are compiled ahead of time: two generated streams,
    then each family's ``cli.AOT_REPLAYS`` (optional) over all of its strategies."""
    from skewbench import registry
    from skewbench.families import families

    data = {"zipf": str(tmp / "zipf"), "costs": str(tmp / "costs")}
    out = [
        ["datasets", "generate", "zipf", "--alpha", "1.2", "--keys", "2000", "--tuples", "30000", "--seed", "1",
         "--out", data["zipf"]],
        ["datasets", "generate", "zipf", "--alpha", "1.0", "--keys", "500", "--tuples", "20000", "--seed", "2",
         "--cost", "levels:64:1:64", "--arrivals", "poisson", "--rate", "5000", "--out", data["costs"]],
    ]
    for name, family in families().items():
        for i, (dataset, args) in enumerate(family.attr("cli", "AOT_REPLAYS", ())):
            out.append(["replay", name, "--dataset", data[dataset], "--strategies", ",".join(registry.names(name)),
                        *args, "--out", str(tmp / f"{name}-{i}")])
    return out


def record(tmp: Path, log: Callable[[str], None]) -> dict[str, dict[tuple[str, ...], tuple]]:
    """Run the workloads with recording on; the argument types of every kernel call."""
    from skewbench.cli import main

    jit._RECORD = {}
    try:
        for args in workloads(tmp):
            log("  skewbench " + " ".join(a for a in args if not a.startswith(str(tmp))))
            with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                main(args, standalone_mode=False)
        return jit._RECORD
    finally:
        jit._RECORD = None


def build(out_dir: Path = HERE, log: Callable[[str], None] = print) -> int:
    """Record, compile and install the kernels; the number of signatures compiled."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="skewbench-aot-") as tmp:
        log("recording the kernels' argument types:")
        records = record(Path(tmp), log)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pycc is "pending deprecation" in numba 0.57+
            from numba.pycc import CC
        build_dir = Path(tmp) / "build"
        build_dir.mkdir()
        cc = CC(jit.AOT_MODULE.rpartition(".")[2])
        cc.output_dir = str(build_dir)
        cc.verbose = False
        cc.target_cpu = "host"  # generic x86-64 code ran 7-12% slower than numba's; the table records the CPU
        table: dict[str, list[dict]] = {}
        count = 0
        for key in sorted(records):
            kernel = jit._KERNELS[key]
            disp = kernel.dispatcher
            for keys, types in sorted(records[key].items()):
                disp.compile(types)
                sig = disp.overloads[types].signature
                name = f"k{count}_{kernel.__name__.strip('_')}"
                cc.export(name, sig)(kernel.py_func)
                table.setdefault(key, []).append({"args": list(keys), "name": name})
                count += 1
        log(f"compiling {count} signatures of {len(table)} kernels ahead of time ...")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc.compile()
        built = list(build_dir.glob(f"{cc.name}*"))
        if len(built) != 1:
            raise RuntimeError(f"pycc produced {built}")
        modules = sorted({k.py_func.__module__ for k in jit._KERNELS.values()} | {jit.__name__})
        meta = {"versions": jit._versions(), "cpu": jit.cpu_id(), "modules": modules,
                "digest": jit.sources_digest(modules), "kernels": table}
        jit.TABLE_FILE.unlink(missing_ok=True)  # never a table beside another build's module
        for old in out_dir.glob(f"{cc.name}*.so"):
            old.unlink()
        shutil.move(str(built[0]), out_dir / built[0].name)
        tmp_table = jit.TABLE_FILE.with_suffix(".json.tmp")
        tmp_table.write_text(json.dumps(meta, indent=1, sort_keys=True))
        tmp_table.replace(jit.TABLE_FILE)
    log(f"ahead-of-time kernels: {count} signatures of {len(table)} kernels in {time.perf_counter() - t0:.0f} s")
    return count


if __name__ == "__main__":
    try:
        build()
    except Exception as e:  # noqa: BLE001 - a failed build leaves numba's JIT in charge
        print(f"skewbench.aot: the ahead-of-time build failed ({type(e).__name__}: {e}); kernels will be "
              "compiled just in time by numba instead (correct, about 1 s slower per process)", file=sys.stderr)
        sys.exit(1)
