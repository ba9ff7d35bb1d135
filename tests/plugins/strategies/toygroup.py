"""A toy grouping strategy, added to skewbench by this one module and one entry-point row
(``toystrategies-0.1.dist-info/entry_points.txt``): docs/extending.md's example of a grouping
strategy from outside the project.  Each key goes to one worker, chosen by a seeded
multiplicative hash of the key and a ``salt``: key grouping with another hash."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from skewbench.grouping.base import Batch, Strategy, check_number

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class ToyGrouping(Strategy):
    name = "toy-group"
    description = "toy key grouping: a seeded multiplicative hash of the key and a salt"
    defaults: ClassVar[dict[str, Any]] = {"salt": 0}
    param_docs = {"salt": "An integer mixed into every key's hash (default 0); another salt, another mapping."}
    relaxation = "whole"

    def _setup(self) -> None:
        check_number("salt", self.params["salt"], 0, None, integer=True)
        self._mix = np.uint64((int(self.seed) * 1_000_003 + int(self.params["salt"])) % (1 << 63))

    def route(self, batch: Batch) -> np.ndarray:
        h = (batch.key.astype(np.uint64) ^ self._mix) * _GOLDEN
        return ((h >> np.uint64(33)) % np.uint64(self.workers)).astype(np.int64)
