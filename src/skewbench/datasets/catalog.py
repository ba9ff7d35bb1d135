"""The dataset catalog: the named datasets a nightly run uses (``datasets/catalog.yaml``).

The file is YAML::

    version: 1
    datasets:
      - name: zipf-1.0                # unique; a synthetic entry
        sets: [default]               # which named sets include it (default, paper, ...)
        generator: zipf               # zipf | drifting
        keys: 10000
        tuples: 1000000
        alpha: 1.0                    # zipf only; drifting streams give it per phase
        seed: 1
        arrivals: {process: constant, rate: 1000}     # optional
        cost: {model: levels, levels: 64, low: 1, high: 64, noise: 0.0}   # optional
        phases: [...]                 # drifting only: tuples, alpha, permutation, rate_factor,
                                      # cost_factor, repeat (see skewbench.datasets.generators)
        matrix: {alpha: [0.5, 1.0]}   # optional: one dataset per combination; the name is a
                                      # template, e.g. "zf-z{alpha}"
      - name: slashdot                # a trace entry
        sets: [default]
        trace: slashdot               # an ingest format (skewbench.datasets.traces.FORMATS)
        inputs: ["{shared_data}/slashdot/soc-Slashdot0902.txt.gz"]
        key: source                   # optional, per format; csv: key_column, time_column, ...
        optional: true                # skip (with a note) when the input is absent
      - name: gcm-surrogate           # a workload entry: a family's own generator function
        sets: [default]
        workload: skewbench.shedding.workloads:gcm_surrogate    # "module:function"
        params: {hours: 24}           # the function's parameters (it checks them)
        seed: 1
        inputs: ["{shared_data}/google-cluster/task_event_1_10000.csv"]   # optional
        optional: true
        families: [shedding]          # optional, any entry: only these families replay it

A workload function is called as ``fn(out_dir, params=..., seed=..., inputs=[Path, ...],
name=..., overwrite=..., progress=..., extra_meta=...)``, writes the dataset with
:class:`skewbench.datasets.contract.DatasetWriter` and returns its metadata.
``{shared_data}`` is ``$SKEWBENCH_SHARED_DATA`` or, by default, ``../shared/data`` beside the
project.  Loading validates everything (unknown fields, bad values, duplicate names) and raises
:class:`~skewbench.errors.SkewbenchError` naming the entry and the field.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from skewbench.datasets.generators import StreamSpec
from skewbench.errors import SkewbenchError

#: what a dataset's name may be: it is a directory name under the data root
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")

SYNTHETIC_FIELDS = {"name", "description", "sets", "generator", "keys", "tuples", "alpha", "seed",
                    "arrivals", "cost", "phases", "matrix", "block_size", "families"}
TRACE_FIELDS = {"name", "description", "sets", "trace", "inputs", "key", "key_column", "time_column",
                "cost_column", "value_column", "time_unit", "max_malformed", "optional", "families"}
WORKLOAD_FIELDS = {"name", "description", "sets", "workload", "params", "seed", "inputs", "optional", "families"}
MATRIX_FIELDS = {"alpha", "keys", "tuples", "seed"}
#: a catalog's size at most: its file, and the datasets it names (a matrix's combinations counted)
MAX_CATALOG_BYTES = 16 << 20
MAX_ENTRIES = 10_000


#: how deep a catalog's YAML may nest (the catalog's own entries nest 5 deep)
MAX_DEPTH = 64


def _load_yaml(text: str) -> Any:
    """The YAML document, read by libyaml when it is there; refused (``ValueError`` naming the
    line) when it has aliases (``*name``: a few lines of them can stand for billions of values once
    a workload's parameters are compared or written as JSON) or nests deeper than
    :data:`MAX_DEPTH` (PyYAML recurses, and slows quadratically, with the depth)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    for ev in yaml.parse(text, Loader=loader):
        if isinstance(ev, yaml.AliasEvent):
            raise ValueError(f"line {ev.start_mark.line + 1}: aliases (*{ev.anchor}) are not allowed in a catalog")
        if isinstance(ev, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ValueError(f"line {ev.start_mark.line + 1}: nested more than {MAX_DEPTH} levels deep; at most "
                                 f"{MAX_DEPTH}")
        elif isinstance(ev, yaml.CollectionEndEvent):
            depth -= 1
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader


def default_catalog_path() -> Path:
    """``$SKEWBENCH_CATALOG``, else ``<project>/datasets/catalog.yaml`` (:mod:`skewbench.settings`)."""
    from skewbench.settings import settings

    return settings().catalog


def shared_data_dir() -> Path:
    """``$SKEWBENCH_SHARED_DATA``, else ``../shared/data`` beside the project."""
    from skewbench.settings import settings

    return settings().shared_data


@dataclass
class Entry:
    """One resolved catalog dataset."""

    name: str
    kind: str  # "synthetic", "trace" or "workload"
    sets: list[str]
    description: str = ""
    spec: StreamSpec | None = None  # synthetic
    trace: str | None = None  # trace format
    inputs: list[Path] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    optional: bool = False
    #: workload entries: "module:function", its parameters and seed
    workload: str | None = None
    seed: int = 0
    #: the families that replay this dataset (None: every family)
    families: list[str] | None = None

    @property
    def available(self) -> bool:
        return self.kind == "synthetic" or all(p.exists() for p in self.inputs)

    def params(self) -> dict[str, Any]:
        """What determines the dataset's content (compared to decide whether to regenerate)."""
        if self.spec is not None:
            return self.spec.to_dict()
        if self.workload is not None:
            return {"workload": self.workload, "params": self.options, "seed": self.seed,
                    "inputs": [str(p) for p in self.inputs]}
        return {"format": self.trace, "inputs": [str(p) for p in self.inputs], **self.options}

    def workload_function(self) -> Any:
        """The workload entry's generator function (imported by its dotted name)."""
        import importlib

        module, _, func = str(self.workload).partition(":")
        try:
            fn = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError) as e:
            raise SkewbenchError(f"dataset '{self.name}': workload '{self.workload}' cannot be loaded ({e})") from None
        if not callable(fn):
            raise SkewbenchError(f"dataset '{self.name}': workload '{self.workload}' is not a function")
        return fn

    def describe(self) -> str:
        if self.spec is not None:
            s = self.spec
            alphas = sorted({p.alpha for p in s.phases})
            a = ",".join(f"{x:g}" for x in alphas)
            return (f"{s.generator} alpha={a} keys={s.n_keys} tuples={s.tuples} seed={s.seed}"
                    + (f" cost={s.cost['model']}" if s.cost else ""))
        if self.workload is not None:
            args = " ".join(f"{k}={v}" for k, v in sorted(self.options.items()))
            return f"workload {self.workload.rpartition(':')[2]} {args} seed={self.seed}".replace("  ", " ")
        return f"trace {self.trace} " + " ".join(str(p) for p in self.inputs)


@dataclass
class Catalog:
    path: Path
    entries: list[Entry]

    def names(self) -> list[str]:
        return [e.name for e in self.entries]

    def sets(self) -> list[str]:
        return sorted({s for e in self.entries for s in e.sets})

    def select(self, names: list[str] | None = None, set_name: str | None = None) -> list[Entry]:
        """Entries by name (in the order given) or by set; unknown names are an error."""
        by_name = {e.name: e for e in self.entries}
        if names:
            unknown = [n for n in names if n not in by_name]
            if unknown:
                raise SkewbenchError(unknown_names_message("dataset", unknown, self.names(),
                                                           "`skewbench datasets catalog` lists them all"))
            return [by_name[n] for n in names]
        if set_name is None:
            return list(self.entries)
        if set_name not in self.sets():
            raise SkewbenchError(f"unknown dataset set '{set_name}' in {self.path}; known: {', '.join(self.sets())}")
        return [e for e in self.entries if set_name in e.sets]


def unknown_names_message(what: str, unknown: list[str], known: list[str], where: str) -> str:
    """One line for names not found: each with its closest known names, then where to see all
    (``unknown dataset 'zipf-1.2' (did you mean 'zipf-1.5', 'zipf-1.0'?); ...``)."""
    import difflib

    parts = []
    for n in unknown:
        close = difflib.get_close_matches(n, known, n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        parts.append(f"unknown {what} '{n}'{hint}")
    return f"{'; '.join(parts)}; {where} ({len(known)})"


def load_catalog(path: str | os.PathLike | None = None, shared_data: str | os.PathLike | None = None) -> Catalog:
    p = Path(path) if path is not None else default_catalog_path()
    if not p.exists():
        raise SkewbenchError(f"catalog {p} does not exist")
    if p.stat().st_size > MAX_CATALOG_BYTES:
        raise SkewbenchError(f"{p}: {p.stat().st_size:,} bytes; a catalog has at most {MAX_CATALOG_BYTES:,}")
    try:
        doc = _load_yaml(p.read_text())
    except yaml.YAMLError as e:
        raise SkewbenchError(f"{p}: not valid YAML: {str(e).splitlines()[0]}") from None
    except ValueError as e:
        raise SkewbenchError(f"{p}: {e}") from None
    return parse_catalog(doc, p, Path(shared_data) if shared_data else shared_data_dir())


def parse_catalog(doc: Any, path: Path, shared_data: Path) -> Catalog:
    if not isinstance(doc, Mapping):
        raise SkewbenchError(f"{path}: the catalog must be a mapping with 'version' and 'datasets'")
    extra = set(doc) - {"version", "datasets"}
    if extra:
        raise SkewbenchError(f"{path}: unknown top-level field(s) {sorted(extra)} (version, datasets)")
    if doc.get("version") != 1:
        raise SkewbenchError(f"{path}: version must be 1, got {doc.get('version')!r}")
    raw = doc.get("datasets")
    if not isinstance(raw, list) or not raw:
        raise SkewbenchError(f"{path}: 'datasets' must be a non-empty list")
    entries: list[Entry] = []
    for i, item in enumerate(raw):
        where = f"{path}: dataset #{i + 1}"
        if not isinstance(item, Mapping) or "name" not in item:
            raise SkewbenchError(f"{where}: each dataset is a mapping with a 'name'")
        where = f"{path}: dataset '{item['name']}'"
        try:
            entries.extend(_parse_entry(dict(item), shared_data, MAX_ENTRIES - len(entries)))
            if len(entries) > MAX_ENTRIES:
                raise SkewbenchError(f"the catalog names more than {MAX_ENTRIES:,} datasets; at most {MAX_ENTRIES:,}")
        except SkewbenchError as e:
            raise SkewbenchError(f"{where}: {e}") from None
        except (TypeError, ValueError, KeyError) as e:
            raise SkewbenchError(f"{where}: bad value ({e})") from None
    seen: set[str] = set()
    for e in entries:
        if not NAME.fullmatch(e.name):
            raise SkewbenchError(f"{path}: dataset name '{e.name}' is not a plain name (letters, digits, '.', '_', "
                                 "'+', '-', starting with a letter or digit): it names a directory under the data "
                                 "root, and may not leave it")
        if e.name in seen:
            raise SkewbenchError(f"{path}: duplicate dataset name '{e.name}'")
        seen.add(e.name)
    return Catalog(path, entries)


def _inputs(item: Mapping[str, Any], shared_data: Path, required: bool) -> list[Path]:
    inputs = item.get("inputs")
    if inputs is None and not required:
        return []
    if isinstance(inputs, str):
        inputs = [inputs]
    if not inputs or not all(isinstance(x, str) for x in inputs):
        raise SkewbenchError("'inputs' must be a path or a list of paths")
    return [Path(x.replace("{shared_data}", str(shared_data))).expanduser() for x in inputs]


def _families(item: Mapping[str, Any]) -> list[str] | None:
    fams = item.get("families")
    if fams is None:
        return None
    if not isinstance(fams, list) or not fams or not all(isinstance(f, str) and f for f in fams):
        raise SkewbenchError("'families' must be a non-empty list of family names")
    return list(fams)


def _parse_entry(item: dict[str, Any], shared_data: Path, room: int = MAX_ENTRIES) -> list[Entry]:
    sets = item.get("sets", [])
    if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
        raise SkewbenchError("'sets' must be a list of names")
    families = _families(item)
    if "workload" in item:
        extra = set(item) - WORKLOAD_FIELDS
        if extra:
            raise SkewbenchError(f"unknown field(s) {sorted(extra)} for a workload entry (allowed: "
                                 f"{sorted(WORKLOAD_FIELDS)})")
        wl = item["workload"]
        if not isinstance(wl, str) or not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", wl):
            raise SkewbenchError(f"'workload' must be 'package.module:function', got {wl!r}")
        params = item.get("params", {}) or {}
        if not isinstance(params, Mapping):
            raise SkewbenchError("'params' must be a mapping of the workload's parameters")
        seed = item.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise SkewbenchError(f"'seed' must be an integer >= 0, got {seed!r}")
        return [Entry(item["name"], "workload", sets, item.get("description", ""), inputs=_inputs(item, shared_data, False),
                      options=dict(params), optional=bool(item.get("optional", False)), workload=wl, seed=seed,
                      families=families)]
    if "trace" in item:
        extra = set(item) - TRACE_FIELDS
        if extra:
            raise SkewbenchError(f"unknown field(s) {sorted(extra)} for a trace entry (allowed: {sorted(TRACE_FIELDS)})")
        from skewbench.datasets.traces import FORMATS

        if item["trace"] not in FORMATS:
            raise SkewbenchError(f"unknown trace format '{item['trace']}' ({', '.join(FORMATS)})")
        paths = _inputs(item, shared_data, True)
        opts = {k: item[k] for k in ("key", "key_column", "time_column", "cost_column", "value_column",
                                     "time_unit", "max_malformed") if k in item}
        if "max_malformed" in opts and not 0 <= float(opts["max_malformed"]) <= 1:
            raise SkewbenchError(f"max_malformed must be a fraction in [0, 1], got {opts['max_malformed']}")
        return [Entry(item["name"], "trace", sets, item.get("description", ""), trace=item["trace"],
                      inputs=paths, options=opts, optional=bool(item.get("optional", False)), families=families)]
    extra = set(item) - SYNTHETIC_FIELDS
    if extra:
        raise SkewbenchError(f"unknown field(s) {sorted(extra)} (a synthetic entry takes {sorted(SYNTHETIC_FIELDS)}; "
                             "a trace entry needs 'trace')")
    if "generator" not in item:
        raise SkewbenchError("needs 'generator' (zipf, drifting), 'trace' or 'workload'")
    item.pop("families", None)
    matrix = item.pop("matrix", None) or {}
    if not isinstance(matrix, Mapping) or set(matrix) - MATRIX_FIELDS:
        raise SkewbenchError(f"'matrix' maps some of {sorted(MATRIX_FIELDS)} to lists of values")
    axes = sorted(matrix)
    if not all(isinstance(matrix[a], list) for a in axes):
        raise SkewbenchError(f"'matrix' maps some of {sorted(MATRIX_FIELDS)} to lists of values")
    combos = math.prod(len(matrix[a]) for a in axes)
    if combos > room:
        raise SkewbenchError(f"'matrix' makes {combos:,} datasets; a catalog names at most {MAX_ENTRIES:,}")
    out = []
    for combo in itertools.product(*(matrix[a] for a in axes)) if axes else [()]:
        one = {**item, **dict(zip(axes, combo))}
        name = str(item["name"]).format(**{a: v for a, v in zip(axes, combo)}) if axes else str(item["name"])
        if axes and name == item["name"]:
            raise SkewbenchError("a matrix entry's name must be a template, e.g. 'zf-z{alpha}'")
        out.append(Entry(name, "synthetic", sets, item.get("description", ""), spec=_synthetic_spec(one),
                         families=families))
    return out


def _synthetic_spec(item: Mapping[str, Any]) -> StreamSpec:
    for req in ("keys", "seed"):
        if req not in item:
            raise SkewbenchError(f"needs '{req}'")
    gen = item["generator"]
    if gen == "zipf":
        if "phases" in item:
            raise SkewbenchError("a zipf entry takes alpha and tuples, not phases (use generator: drifting)")
        for req in ("alpha", "tuples"):
            if req not in item:
                raise SkewbenchError(f"needs '{req}'")
        phases = [{"tuples": item["tuples"], "alpha": item["alpha"]}]
    elif gen == "drifting":
        phases = item.get("phases")
        if not isinstance(phases, list) or not phases:
            raise SkewbenchError("a drifting entry needs a list of 'phases'")
        bad = [set(p) - {"tuples", "alpha", "permutation", "rate_factor", "cost_factor", "repeat"}
               for p in phases if isinstance(p, Mapping)]
        if any(bad) or not all(isinstance(p, Mapping) for p in phases):
            raise SkewbenchError(f"unknown phase field(s) {sorted(set().union(*bad))} "
                                 "(tuples, alpha, permutation, rate_factor, cost_factor, repeat)")
        if "alpha" in item:
            phases = [{"alpha": item["alpha"], **p} for p in phases]
        if "tuples" in item:
            raise SkewbenchError("a drifting entry gives tuples per phase")
    else:
        raise SkewbenchError(f"unknown generator '{gen}' (zipf, drifting)")
    d = {"generator": gen, "n_keys": item["keys"], "seed": item["seed"], "phases": phases,
         "arrivals": item.get("arrivals"), "cost": item.get("cost")}
    if "block_size" in item:
        d["block_size"] = item["block_size"]
    for k, v in (("keys", item["keys"]), ("seed", item["seed"])):
        if not isinstance(v, int) or isinstance(v, bool):
            raise SkewbenchError(f"'{k}' must be an integer, got {v!r}")
    return StreamSpec.from_dict(d)


def same_params(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Compare parameter dicts as JSON (tuples vs lists, int vs float keys normalised)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
