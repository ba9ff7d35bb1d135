"""The toy family's strategies: a rule from keys to bins."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from skewbench.errors import SkewbenchError


class Rule:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}
    param_docs: ClassVar[dict[str, str]] = {}

    def __init__(self, workers: int, seed: int = 0, **params: Any):
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise SkewbenchError(f"{self.name}: unknown parameter(s) {sorted(unknown)}")
        if workers < 1:
            raise SkewbenchError(f"{self.name}: workers must be >= 1")
        self.workers, self.seed = int(workers), int(seed)
        self.params = {**self.defaults, **params}

    def assign(self, keys: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class Modulo(Rule):
    name = "modulo"
    description = "key plus an offset, modulo the number of bins"
    defaults = {"offset": 0}
    param_docs = {"offset": "An integer added to every key before taking it modulo the bins (default 0)."}

    def assign(self, keys: np.ndarray) -> np.ndarray:
        return (keys + int(self.params["offset"])) % self.workers


class Hashed(Rule):
    name = "hashed"
    description = "a seeded multiplicative hash of the key"
    defaults: dict[str, Any] = {}

    def assign(self, keys: np.ndarray) -> np.ndarray:
        h = (keys.astype(np.uint64) + np.uint64(self.seed)) * np.uint64(0x9E3779B97F4A7C15)
        return ((h >> np.uint64(33)) % np.uint64(self.workers)).astype(np.int64)
