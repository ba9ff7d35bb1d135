"""Build the ahead-of-time kernels (:mod:`skewbench.jit`): ``python -m skewbench.aot``.

Runs small workloads through the command line in a child process (dataset generation, the
replays each family lists in its ``cli.AOT_REPLAYS``, then ``skewbench advise``), records the
argument types of every kernel called from Python, compiles those signatures with numba's
``pycc`` into one extension module per source module of kernels,
``skewbench/_kernels_<module>*.so``, and writes ``skewbench/_kernels.json`` (the signatures, the
numba and numpy versions, and a digest of the kernels' sources: a build that no longer matches
them is ignored).  ``make install`` runs it; it takes about a minute on two cores and needs a C
compiler.  Calls with other argument types still work, through numba.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

from skewbench import jit

HERE = Path(__file__).parent


def workloads(tmp: Path) -> list[list[str]]:
    """The command lines whose kernel calls are compiled ahead of time: two generated streams and
    a small trace of numeric keys (whose key values strategies may hash), then each family's
    ``cli.AOT_REPLAYS`` (optional) over all of its strategies, then ``skewbench advise``."""
    import numpy as np

    from skewbench import registry
    from skewbench.families import families

    data = {"zipf": str(tmp / "zipf"), "costs": str(tmp / "costs"), "numeric": str(tmp / "numeric")}
    keys = np.random.default_rng(3).integers(-2**40, 2**40, 300)
    (tmp / "numeric.csv").write_text("key\n" + "".join(f"{k}\n" for k in keys[np.arange(5000) % 300]))
    out = [
        ["datasets", "generate", "zipf", "--alpha", "1.2", "--keys", "2000", "--tuples", "30000", "--seed", "1",
         "--out", data["zipf"]],
        ["datasets", "generate", "zipf", "--alpha", "1.0", "--keys", "500", "--tuples", "20000", "--seed", "2",
         "--cost", "levels:64:1:64", "--arrivals", "poisson", "--rate", "5000", "--out", data["costs"]],
        ["datasets", "ingest", "csv", str(tmp / "numeric.csv"), "--key-column", "key", "--out", data["numeric"]],
    ]
    for name, family in families().items():
        for i, (dataset, args) in enumerate(family.attr("cli", "AOT_REPLAYS", ())):
            out.append(["replay", name, "--dataset", data[dataset], "--strategies", ",".join(registry.names(name)),
                        *args, "--out", str(tmp / f"{name}-{i}")])
    return out + advise_workloads(tmp, keys)


def advise_workloads(tmp: Path, numbers: Any) -> list[list[str]]:
    """``skewbench advise`` on integer keys (hashed as longs and as text), text keys (a stream
    and key,count pairs) and a dataset: every kernel call it makes."""
    words = tmp / "words.txt"
    words.write_text("".join(f"key-{k % 97}-é\n" for k in numbers.tolist()))
    (tmp / "pairs.csv").write_text("".join(f"w{i},{i % 7}\n" for i in range(300)))
    return [
        ["advise", str(tmp / "numeric.csv"), "--workers", "5,50,100", "--flink-max-parallelism", "1000"],
        ["advise", str(tmp / "numeric.csv"), "--workers", "5", "--key-format", "string", "--alternatives", "none"],
        ["advise", str(words), "--workers", "3,40", "--json"],
        ["advise", str(tmp / "pairs.csv"), "--workers", "7"],
        ["advise", str(tmp / "zipf"), "--workers", "6"],
    ]


def _kernel_named(key: str) -> jit.Kernel:
    """The kernel declared as ``key`` (module.qualname), importing its module."""
    import importlib

    module, _, name = key.rpartition(".")
    kernel = getattr(importlib.import_module(module), name)
    if not isinstance(kernel, jit.Kernel):
        raise RuntimeError(f"{key} is not a kernel")
    return kernel


def record(tmp: Path, log: Callable[[str], None]) -> dict[str, dict[tuple[str, ...], tuple]]:
    """Run the workloads with recording on; the argument types of every kernel call."""
    from skewbench.cli import main

    with jit.recording() as calls:
        for args in workloads(tmp):
            log("  skewbench " + " ".join(a for a in args if not a.startswith(str(tmp))))
            with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                main(args, standalone_mode=False)
    return calls


@contextlib.contextmanager
def _kernel_runtimes() -> Iterator[None]:
    """Compile the kernels declared without numba's runtime (``_nrt=False``) without it in the
    ahead-of-time module too.  pycc compiles a whole module with one setting (the runtime on);
    with it, the head-aware routers' reference counting made them 1.4x slower (D-C 0.50 against
    0.36 s per 4 M tuples, W-C 0.57 against 0.39 s).
    pycc passes its flags to ``compile_extra`` once per exported function: those of such a
    kernel get the runtime off."""
    from numba.pycc import compiler

    plain = {k.py_func for k in jit.KERNELS.values() if not k.targetoptions.get("_nrt", True)}
    original = compiler.compile_extra

    def compile_extra(typingctx, targetctx, func, args, return_type, flags, *rest, **kw):  # type: ignore[no-untyped-def]
        if func in plain:
            flags = flags.copy()
            flags.nrt = False
        return original(typingctx, targetctx, func, args, return_type, flags, *rest, **kw)

    compiler.compile_extra = compile_extra
    try:
        yield
    finally:
        compiler.compile_extra = original


def record_signatures(out: Path) -> None:
    """Record in this process and pickle to ``out`` what :func:`build` compiles in other
    processes: ``signatures`` {kernel: [(argument keys, numba signature)]} and ``modules``, the
    source modules of every kernel declared (their digest marks the build)."""
    with tempfile.TemporaryDirectory(prefix="skewbench-aot-") as tmp:
        records = record(Path(tmp), print)
        sigs = {}
        for key, calls in records.items():
            disp = jit.KERNELS[key].dispatcher
            sigs[key] = []
            for keys, types in sorted(calls.items()):
                disp.compile(types)
                sigs[key].append((keys, disp.overloads[types].signature))
    modules = sorted({k.py_func.__module__ for k in jit.KERNELS.values()} | {jit.__name__})
    with open(out, "wb") as f:
        pickle.dump({"signatures": sigs, "modules": modules}, f)


def _exports(signatures: dict[str, list]) -> dict[str, list[tuple[str, str, list[str], object]]]:
    """Extension module -> [(export name, kernel, argument keys, signature)], in a fixed order."""
    out: dict[str, list] = {}
    count = 0
    for key in sorted(signatures):
        module = jit.aot_module(key.rpartition(".")[0])
        for keys, sig in signatures[key]:
            out.setdefault(module, []).append((f"k{count}_{key.rpartition('.')[2].strip('_')}", key, list(keys), sig))
            count += 1
    return out


def compile_module(recorded: Path, module: str, build_dir: Path) -> None:
    """Compile the extension module ``module`` of the recorded signatures into ``build_dir``, in
    a process that has compiled nothing else: compiled with other modules' kernels in one
    process, OSG's kernel (which inlines helpers) failed pycc's type inference (numba 0.68)."""
    with open(recorded, "rb") as f:
        exports = _exports(pickle.load(f)["signatures"])[module]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc is "pending deprecation" in numba 0.57+
        from numba.pycc import CC
    jit.teach_numba()
    cc = CC(module.rpartition(".")[2])
    cc.output_dir = str(build_dir)
    cc.verbose = False
    cc.target_cpu = "host"  # generic x86-64 code ran 7-12% slower than numba's; the table records the CPU
    for name, key, _, sig in exports:
        cc.export(name, sig)(_kernel_named(key).py_func)
    with warnings.catch_warnings(), _kernel_runtimes():
        warnings.simplefilter("ignore")
        cc.compile()


def _child(args: list[str]) -> subprocess.CompletedProcess:
    """``python -m skewbench.aot ARGS`` in a child process, its output captured."""
    return subprocess.run([sys.executable, "-m", "skewbench.aot", *args], text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)


def build(out_dir: Path = HERE, log: Callable[[str], None] = print) -> int:
    """Record, compile and install the kernels; the number of signatures compiled.  Recording
    runs in a child process (it compiles the kernels with numba), then each extension module is
    compiled in a child of its own, as many at a time as there are processors."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="skewbench-aot-") as tmp:
        log("recording the kernels' argument types:")
        recorded = Path(tmp) / "signatures.pkl"
        proc = _child(["--record", str(recorded)])
        for line in proc.stdout.splitlines():
            log(line)
        if proc.returncode != 0:
            raise RuntimeError(f"recording failed (exit {proc.returncode})")
        with open(recorded, "rb") as f:
            records = pickle.load(f)
        exports = _exports(records["signatures"])
        count = sum(len(v) for v in exports.values())
        build_dir = Path(tmp) / "build"
        build_dir.mkdir()
        log(f"compiling {count} signatures of {len(records['signatures'])} kernels ahead of time into "
            f"{len(exports)} modules ...")
        with ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
            done = dict(zip(exports, pool.map(lambda m: _child(["--compile", str(recorded), m, str(build_dir)]),
                                              exports)))
        failed = [f"{m}: {(p.stdout.strip().splitlines() or [str(p.returncode)])[-1]}"
                  for m, p in done.items() if p.returncode != 0]
        if failed:
            raise RuntimeError("pycc failed for " + "; ".join(failed))
        built = []
        for module in exports:
            found = list(build_dir.glob(f"{module.rpartition('.')[2]}.*"))
            if len(found) != 1:
                raise RuntimeError(f"pycc produced {found} for {module}")
            built.append(found[0])
        table = {}
        for entries in exports.values():
            for name, key, keys, _ in entries:
                table.setdefault(key, []).append({"args": keys, "name": name})
        modules = records["modules"]
        meta = {"versions": jit.versions(), "cpu": jit.cpu_id(), "modules": modules,
                "digest": jit.sources_digest(modules), "kernels": table}
        jit.TABLE_FILE.unlink(missing_ok=True)  # never a table beside another build's modules
        for old in out_dir.glob(f"{jit.AOT_PREFIX}*.so"):
            old.unlink()
        for b in built:
            shutil.move(str(b), out_dir / b.name)
        tmp_table = jit.TABLE_FILE.with_suffix(".json.tmp")
        tmp_table.write_text(json.dumps(meta, indent=1, sort_keys=True))
        tmp_table.replace(jit.TABLE_FILE)
    log(f"ahead-of-time kernels: {count} signatures of {len(table)} kernels in {time.perf_counter() - t0:.0f} s")
    return count


if __name__ == "__main__":
    if sys.argv[1:2] == ["--record"]:  # the build's children (see build)
        record_signatures(Path(sys.argv[2]))
        sys.exit(0)
    if sys.argv[1:2] == ["--compile"]:
        compile_module(Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]))
        sys.exit(0)
    try:
        build()
    except Exception as e:  # noqa: BLE001 - a failed build leaves numba's JIT in charge
        print(f"skewbench.aot: the ahead-of-time build failed ({type(e).__name__}: {e}); kernels will be "
              "compiled just in time by numba instead (correct, about 1 s slower per process)", file=sys.stderr)
        sys.exit(1)
