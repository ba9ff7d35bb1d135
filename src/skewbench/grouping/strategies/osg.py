"""Online Shuffle Grouping (OSG) and its Full Knowledge baselines.

Implements Rivetti, Anceaume, Busnel, Querzoni, Sericola, "Online Scheduling for Shuffle Grouping
in Distributed Stream Processing Systems" (Middleware 2016) following ``osg.spec.md`` (cited as
"spec"; A1-A20 are the entries of its section 6, S1-S3 and Algorithm I its section 2).

Model (spec 1, 2, 4.8)
----------------------
One scheduler routes every tuple of the stream (``single_source``) to ``k`` instances.  Every
instance is a FIFO queue without preemption, so the finishing time of a tuple is known the moment
it is assigned: ``e_t = max(a_t, free[op]) + x_t`` with ``x_t = cost_t * factors[p, op]`` (the
:class:`~skewbench.grouping.base.WorkerModel` period ``p`` of stream index ``seq``).  The kernel is
the discrete-event single-pass design of spec 4.8:

1. before tuple ``t`` (arrival ``a_t = ts[t]``), every pending control message with timestamp
   ``<= a_t`` is delivered to the scheduler (S1 for sketches, S2 for sync replies) in
   ``(timestamp, creation order)`` order; a message timestamped exactly ``a_t`` is delivered
   before the tuple (spec 4.8 choice);
2. the scheduler picks the instance (S3);
3. the instance executes the tuple *eagerly* (Algorithm I): it updates ``C_act``, its Count-Min
   pair ``(F, W)``, answers a piggy-backed sync request and runs its stability check.  Every
   message it emits carries the timestamp ``e_t + latency`` and goes into a binary heap (kept in
   preallocated arrays); shipped matrices are **copied** into a payload pool at that moment.

All state (sketches ``float64[k, r, c]``, snapshots, phases, counters, ``C_act``, the scheduler's
vectors and stored matrices, the pending-message heap, the payload pool, the free-at times) lives
in numpy arrays owned by the strategy object, so :meth:`route` can be called batch after batch and
gives exactly the assignments of one call on the whole stream.  The arrays form one
:class:`OSGState` record (each field documented there), which the kernel takes as a single
argument.  The heap, the payload pool and the shipment log grow on demand: the kernel stops
before a tuple when it lacks room, Python doubles the arrays and the kernel resumes at that
tuple.  Cost per tuple: ``O(k + r)`` (stability checks cost ``O(r c)`` once every ``N``
executions of an instance).

Hashing (spec 2.1.1)
--------------------
``h_i(x) = ((a_i * (x mod p) + b_i) mod p) mod c`` with ``p = 2^31 - 1`` in int64; ``a_i`` in
``[1, p-1]`` and ``b_i`` in ``[0, p-1]`` are drawn by ``numpy.random.default_rng(seed mod 2^64)``:
first ``a = rng.integers(1, p, size=r)``, then ``b = rng.integers(0, p, size=r)``
(:func:`draw_hash`).  The same functions serve the scheduler and every instance; the strategy's
``seed`` is the hash seed (A14).  Keys are the dataset's dense ids (``x mod p`` keeps the product
in int64 for any id).  Test hooks: :meth:`OSG.set_hash` (e.g. ``a = 1, b = 0`` gives
``h(v) = v mod c``, injective when ``c >= n``) and :meth:`OSG.set_hash_table` (an explicit
``[r, n]`` table, e.g. a truly random hash for Theorem 4.3).

Strategies
----------
``osg``
    The full OSG.  Parameters (all with defaults, spec 2.5):

    * ``window`` ``N = 1024``: executions between two stability checks of an instance.
    * ``mu`` ``μ = 0.05``: stability tolerance on the drift ``η``.  Any non-NaN float:
      ``inf`` ships at every check after the snapshot (exactly ``2N, 4N, ...``), a negative
      value never ships (OSG then stays round robin for the whole stream).
    * ``rows`` ``r = 4`` (``δ = 0.1``, A2; see :func:`cm_rows`).
    * ``cols`` ``c = 54`` (A3: a parameter of its own).
    * ``eps`` ``None``: when given, ``c = cm_columns(eps) = max(1, floor(e/eps))`` (``c = 1``
      for ``eps >= 1``, as the paper's text says); giving both ``cols`` and ``eps`` is an error.
    * ``latency`` ``d = 0.0`` ms: control-message latency (A17).
    * ``variant`` ``"wl"`` (default; OSG-WL of spec 2.7, the recommended headline, A8) or
      ``"literal"`` (accumulated work ``Ĉ`` of Listing 3.2).
    * ``empty_cells`` ``"exclude"`` (default, A5) or ``"include"`` (ablation).
    * ``stale_replies`` ``False`` (A7 flag, see below).
    * ``resync_start`` ``"restart"`` (default, A15: the ``i``-th tuple of every SEND_ALL phase
      goes to instance ``i``) or ``"continue"`` (the SEND_ALL carriers go where round robin would
      send them, see "Resync start" below).

``fk``
    Full Knowledge (spec 2.6, A9).  A plain ``fk`` is the primary FK of spec 2.6 / A9: FK-ideal
    with the literal accumulated-work rule.  ``variant``: ``"ideal"`` (default, FK-ideal: the
    greedy rule with true costs from the first tuple; no sketches, no messages) or ``"osg"``
    (FK-osg: the full OSG state machine with default sketch parameters and exact estimates
    ``ŵ_{t,op} = x_{t,op}``; class :class:`FullKnowledgeOSG` exposes it with any OSG
    parameters).  ``semantics``: ``"literal"`` (default; ``argmin`` of accumulated true work,
    Listing 3.2 / spec 2.6) or ``"wl"`` (``argmin max(free_o, a)``, least-work-left JSQ, FK-WL,
    spec 2.7 item 5).  ``resync_start`` (``"restart"`` default, or ``"continue"``) is passed to
    FK-osg and ignored by FK-ideal.  With identical costs and lowest-index ties, FK-ideal
    literal is round robin ``t mod k`` exactly (spec 7.9).

Resync start and uniform costs
------------------------------
The scheduler keeps ``rr_ptr``, the number of tuples it has scheduled so far, i.e. the
(0-based) stream position of the tuple being scheduled; it advances by one on *every* tuple, in
every mode.  It is this count, not ``Batch.seq``; the two agree whenever the scheduler routes the
whole stream from its first tuple (``single_source``), which is how round robin ``t mod k`` is
meant.  ROUND_ROBIN (which only ever runs at the start of the stream) sends tuple ``t`` to
``rr_ptr mod k = t mod k``.  In SEND_ALL:

* ``resync_start="restart"`` (default; spec S3.2 and A15, as in the paper): the ``i``-th carrier
  of the phase goes to instance ``i`` (``i = 0, 1, ...``, restarting at 0 on every epoch);
* ``resync_start="continue"``: the carrier goes to ``rr_ptr mod k``, i.e. exactly where plain
  round robin ``t mod k`` would have sent it.  The ``k`` carriers of a phase are ``k``
  consecutive tuples, so they still reach every instance once (and WAIT_ALL still begins after
  the ``k``-th), and a later epoch continues the same rotation, since ``rr_ptr`` also advanced
  through WAIT_ALL and RUN.  Nothing else changes.

Why the option: with identical costs the estimates are exact (every ratio ``W/F`` equals the
cost), and with deterministic arrivals ``a_t = t τ`` at provisioning ``P >= 100%`` round robin
sends each tuple to the one instance that is already idle.  OSG-WL with ``"continue"`` then
reproduces round robin tuple for tuple (assignments and completion times; its carriers hit the
idle instance, so ``E`` equals the true free-at times as soon as the carriers have been sent, and
``argmin max(E, a)`` picks the idle instance), which is the limiting case "uniform costs make
OSG equal RR" (spec 7.9, T14).  This holds while that idle instance is the *only* idle one,
i.e. ``(k-1) τ < w`` or ``100 <= P < 100 k / (k-1)`` (e.g. ``P < 150%`` at ``k = 3``, ``< 125%``
at ``k = 5``); with two or more idle instances OSG-WL's lowest-index tie rule (spec 2.7 item 2)
picks another idle instance than RR, so assignments differ, and later ``"continue"`` carriers can
then land on an instance that is still busy.  With ``"restart"`` every SEND_ALL phase shifts the
rotation (carrier 0 goes to instance 0, which may be busy); above 100% the shift drains, but at
critical load (``P = 100%``) the lost slack is never recovered and the latency keeps growing:
``Λ = L_RR / L_OSG`` falls well below 1 (OSG-WL, ``k = 5``, ``N = 1024``, cost 2 ms: ``≈ 0.79``
after 30,000 tuples, ``≈ 0.52`` after 100,000).

The literal variant does *not* reproduce round robin with ``"continue"``: leaving ROUND_ROBIN
sets ``Ĉ = 0`` (A18), the ``k`` carriers then make every ``Ĉ`` equal, so the ``k`` tuples after
the first SEND_ALL phase go to instances ``0, 1, ..., k-1`` (lowest index on ties) instead of
continuing the rotation (unless the phase began at a multiple of ``k``).  Once the first epoch's
corrections make ``Ĉ`` the true accumulated work, ``argmin Ĉ`` with lowest-index ties is round
robin again (as FK-ideal literal), so exactly those ``k`` tuples differ; at ``P = 100%`` that
one-off shift never drains either.

Instance, Algorithm I (spec 2.2)
--------------------------------
On executing tuple ``t`` (item ``v``, true time ``x``, finishing at ``e``): ``C_act += x``;
``F[i, h_i(v)] += 1`` and ``W[i, h_i(v)] += x`` for every row; if ``t`` carries a request
``(epoch, value)`` the reply ``(epoch, Δ)`` is emitted with ``Δ = C_act - value`` (literal; the
carrier is already in ``C_act``, A7) or ``Δ = e - value`` (WL: the carrier's true finishing time,
spec 2.7 item 4); then ``cnt += 1`` and at ``cnt = N``: ``cnt = 0`` and START takes the snapshot
``S = R(F, W)`` and becomes STABILIZING (transition A), STABILIZING computes ``η`` and either
re-snapshots (``η > μ``, B) or ships a copy of ``(F, W)``, zeroes them and returns to START
(``η <= μ``, C).  The reply is emitted before the shipment when both happen on one tuple
(spec 2.2 item 5).  ``R = W/F`` with ``R = 0`` on empty cells; ``η = Σ|S - R| / Σ S`` where the
numerator runs over cells with ``S > 0`` (A5 "exclude") or over all cells ("include"), and
``Σ S = 0`` counts as not stable (spec 2.1.4).  Cells are summed in row-major order.

Scheduler, S1-S3 (spec 2.3)
---------------------------
Modes ``ROUND_ROBIN = 0``, ``SEND_ALL = 1``, ``WAIT_ALL = 2``, ``RUN = 3``.

* S1 (sketches from ``op``): store them (a newer pair replaces the older); in ROUND_ROBIN, once
  every instance has a pair, set ``Ĉ = 0`` (literal, A18) or ``E = now`` (WL, spec 2.7 item 1;
  ``now`` is the message's timestamp, which is equivalent to the next arrival since every use is
  ``max(E, a)``) and START_EPOCH; in any other mode START_EPOCH (an epoch in SEND_ALL or
  WAIT_ALL is abandoned and counted).  START_EPOCH: ``epoch += 1``, ``send_idx = 0``, replies
  cleared, SEND_ALL.
* S2 (reply ``(e, Δ)`` from ``op``): dropped if ``e != epoch`` (unless ``stale_replies``);
  accepted also in SEND_ALL (spec choice); in WAIT_ALL with all ``k`` replies every ``Ĉ[o]``
  gets its ``Δ_o`` and the scheduler enters RUN.
* S3 (tuple): ``rr_ptr`` (the tuple's stream position) advances on every tuple; ROUND_ROBIN
  sends to ``rr_ptr mod k``; SEND_ALL sends the ``i``-th tuple of the epoch to instance ``i``
  (restarting at 0 every epoch, A15; ``rr_ptr mod k`` with ``resync_start="continue"``), adds
  the estimate and attaches the request with the value *after* the update; WAIT_ALL and RUN pick ``argmin Ĉ`` (literal) or
  ``argmin max(E, a)`` (WL), lowest index on ties (A11), the current tuple's estimate not
  compared, then ``Ĉ[op] += ŵ`` or ``E[op] = max(E[op], a) + ŵ``.
* Estimate (spec 2.1.3): the row with the smallest count ``F[i, h_i(v)]`` (lowest row on ties),
  ``ŵ = W/F`` there; when that count is 0 the instance-wide mean of row 0,
  ``Σ_j W[0, j] / Σ_j F[0, j]`` (A6).
* ``stale_replies = True`` (A7 option): a reply of an old epoch is applied at once
  (``Ĉ[op] += Δ``) when no correction has been applied to ``op`` since its request was sent; an
  epoch's correction is then ``Δ_o`` minus the corrections applied to ``o`` after its request
  (with the flag off that is always 0, so the plain rule of S2 results).

Choices taken from the spec
---------------------------
Body of the spec:

* 2.1.1: Carter-Wegman ``((a x + b) mod p) mod c``, ``p = 2^31 - 1``, int64; one draw of
  ``(a, b)`` per hash seed.  The hash is computed per tuple (``O(r)``) instead of a precomputed
  ``H[i, v]`` table: key ids need not be bounded.
* 2.1.3: lowest row on count ties; count 0 -> the A6 mean.  The ratio matrix is not
  precomputed at delivery (the ``O(r)`` lookup is as cheap); results are identical.
* 2.1.4: ``R = 0`` on empty cells; A5 numerator; ``Σ S = 0`` is "not stable".
* 2.2 item 5: the reply goes out before the matrices when both happen on one tuple.
* 2.3 S2: replies of the current epoch are accepted in SEND_ALL too.  S3: lowest index on
  ties; the current tuple's estimate is not compared.
* 2.7: OSG-WL as listed above; ``E = now`` on leaving ROUND_ROBIN; replies ``f_carrier - E``.
* 4.8: eager execution at assignment time, messages stamped ``e + d``, delivery of everything
  ``<= a_t`` before tuple ``t`` in ``(timestamp, creation order)`` order (assignment order; reply
  before shipment for one tuple); the scheduler's clock is the arrival time ``ts`` (assumed
  non-decreasing, as :class:`~skewbench.grouping.base.Batch` promises).

Section 6:

* A1 (cost scale), A10 (arrival process, empirical ``W̄``), A13 (gain), A14 (stream/hash seeds),
  A19 (grids) and A20 (real data): the experiment driver's business; this module uses the costs
  and arrival times it is given (ms) and the strategy ``seed`` as the hash seed.
* A2: ``rows`` default 4 = ``ceil(log2(1/0.1))`` (:func:`cm_rows`).
* A3: ``cols`` is its own parameter, default 54; ``eps`` -> :func:`cm_columns`.
* A4: ``μ = 0.05`` kept; the first shipment needs ``2N`` executions; ``run_index`` logged.
* A5: ``empty_cells = "exclude"`` by default, ``"include"`` as the ablation.
* A6: unseen key (count 0) -> instance-wide mean of row 0 of the stored matrices.
* A7: request value after the carrier's update; reply measured after the carrier (``C_act``
  including it, or its finishing time under WL); corrections applied together at epoch end;
  stale replies dropped and counted (``stale_replies_dropped``); abandoned epochs counted; the
  optional ``stale_replies`` flag (off by default) as described above.
* A8: both semantics, ``variant = "wl"`` the default (headline), ``"literal"`` the ablation;
  :meth:`describe_params` records which one ran.
* A9: FK-ideal with the literal rule is ``fk``'s default (``semantics = "literal"``), FK-WL its
  ``semantics = "wl"``, FK-osg its ``variant = "osg"``.
* A11: lowest index for rows and instances.
* A12: the estimator uses ``F[i, h_i(v)]`` and ``c`` columns (nothing else to do in code).
* A15: SEND_ALL restarts at instance 0 in every epoch (``resync_start = "restart"``, the
  default); ``"continue"`` is the option described under "Resync start".
* A16: worker speed periods (``WorkerModel.breaks``) are decided by stream index.
* A17: ``latency = 0`` by default, any ``d >= 0`` allowed.
* A18: ``Ĉ`` untouched during ROUND_ROBIN and set to 0 when leaving it (``E = now`` under WL).

Counting: ``shipments`` and ``replies`` count messages *sent* (every assigned tuple is executed
eagerly, so messages still pending at the end of the stream are included);
``control_messages = shipments + replies`` (requests are piggy-backed, spec 2.4).

Summary (numbers only): ``run_index`` and ``send_all_index`` (``seq`` of the tuple before which
RUN / SEND_ALL was first entered, -1 if never), ``shipments``, ``replies``, ``control_messages``,
``shipments_delivered``, ``epochs_started``, ``epochs_completed``, ``epochs_abandoned``,
``stale_replies_dropped``, ``stale_replies_applied``, ``mode`` and ``est_error``: the final
``mean_op |Ĉ[op] - C_op|`` (literal) or ``mean_op |E[op] - free_op|`` (WL), NaN while the
scheduler has never left ROUND_ROBIN.  :meth:`window_stats`: ``mode`` and cumulative
``shipments``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import Batch, Strategy, WorkerModel, check_number
from skewbench.grouping.strategies.osg_kernel import (
    FI_CACT, FI_CHAT, FI_FREE, FI_MEAN, F_SCALE, II_CNT, II_EXEC, II_HAVE, II_PHASE, I_WL, L_EXEC, L_OP,
    L_SEQ, MODE_NAMES, OSGState, PRIME, ROUND_ROBIN, RUN, SEND_ALL, SI_LEN, SK_F, SK_S, SK_SF, SK_SW, SK_W,
    S_EABAN, S_EDONE, S_EPOCH, S_ESTART, S_HN, S_LOGN, S_MODE, S_NEED, S_PFN, S_REPL, S_RR, S_RUNIDX,
    S_SAIDX, S_SAPP, S_SDELIV, S_SDROP, S_SEND, S_SHIP, WAIT_ALL,
    estimate_many, fk_ideal_kernel, osg_kernel,
)

__all__ = ["OSG", "FK", "FullKnowledgeOSG", "OSGState", "cm_columns", "cm_rows", "draw_hash",
           "PRIME", "ROUND_ROBIN", "SEND_ALL", "WAIT_ALL", "RUN", "MODE_NAMES"]


# --------------------------------------------------------------------------------------------
# public helpers

def cm_rows(delta: float) -> int:
    """Count-Min rows ``r = ceil(log2(1/δ))`` (A2: base 2; ``δ = 0.1 -> 4``, ``0.25 -> 2``)."""
    check_number("delta", delta, 0.0, 1.0, low_open=True)
    if delta >= 1.0:
        return 1
    return max(1, math.ceil(math.log2(1.0 / float(delta)) - 1e-12))


def cm_columns(eps: float) -> int:
    """Count-Min columns ``c = max(1, floor(e/ε))`` (A3; ``0.05 -> 54``, ``0.001 -> 2718``) and
    ``c = 1`` for ``ε >= 1`` (the paper: "a single entry per row" at ``ε = 1.0``)."""
    check_number("eps", eps, 0.0, None, low_open=True)
    if eps >= 1.0:
        return 1
    return max(1, math.floor(math.e / float(eps)))


def draw_hash(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The Carter-Wegman parameters ``(a, b)`` (int64[rows] each) of hash seed ``seed``."""
    rng = np.random.default_rng(int(seed) % (1 << 64))
    a = rng.integers(1, PRIME, size=rows, dtype=np.int64)
    b = rng.integers(0, PRIME, size=rows, dtype=np.int64)
    return a, b


# --------------------------------------------------------------------------------------------
# strategies

def _batch_arrays(batch: Batch):
    return (np.ascontiguousarray(batch.seq, dtype=np.int64),
            np.ascontiguousarray(batch.key, dtype=np.int64),
            np.ascontiguousarray(batch.ts, dtype=np.float64),
            np.ascontiguousarray(batch.cost, dtype=np.float64))


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SkewbenchError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, "
                             f"got {value!r}")


def _worker_arrays(wm: WorkerModel, workers: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    breaks = np.ascontiguousarray(wm.breaks, dtype=np.int64)
    factors = np.ascontiguousarray(wm.factors, dtype=np.float64)
    if factors.ndim != 2 or factors.shape[1] != workers or factors.shape[0] != breaks.shape[0]:
        raise SkewbenchError(f"{name}: the worker model needs factors of shape (periods, {workers})")
    if breaks.shape[0] == 0 or breaks[0] != 0 or np.any(np.diff(breaks) <= 0) or np.any(factors <= 0):
        raise SkewbenchError(f"{name}: worker model periods must start at 0 and increase, "
                             "with factors > 0")
    return breaks, factors


class OSG(Strategy):
    """Online Shuffle Grouping (see the module docstring)."""

    route_cost = 1.3
    name = "osg"
    description = ("Online Shuffle Grouping: Count-Min execution-time estimates, greedy "
                   "least-estimated-work scheduler with epoch resynchronisation")
    defaults = {"window": 1024, "mu": 0.05, "rows": 4, "cols": 54, "eps": None, "latency": 0.0,
                "variant": "wl", "empty_cells": "exclude", "stale_replies": False,
                "resync_start": "restart"}
    param_docs = {
        "window": ("N, the number of tuples an instance executes between two of its stability "
                   "checks, an integer >= 1; the default 1024 is the paper's (spec 2.5), and "
                   "an instance's first shipment needs at least 2N executions (spec A4)."),
        "mu": ("Tolerance on the relative drift η between an instance's snapshot and its "
               "current Count-Min ratios at or below which a check ships the sketches to the "
               "scheduler, any number but NaN: the default 0.05 is the paper's (spec 2.5, A4), "
               "inf ships at every check after a snapshot and a negative value never ships, "
               "so the scheduler stays in round robin."),
        "rows": ("r, the number of Count-Min rows (one hash function each) of every sketch, an "
                 "integer from 1 to 64; the default 4 is ceil(log2(1/δ)) for the paper's "
                 "δ = 0.1 (spec 2.5, A2)."),
        "cols": ("c, the number of Count-Min columns per row, an integer >= 1 that cannot be "
                 "given together with eps; the default 54 matches the paper's ε = 0.05 "
                 "(spec A3)."),
        "eps": ("Count-Min accuracy ε > 0 from which the columns are derived as "
                "c = max(1, floor(e/ε)), c = 1 for ε >= 1, for the ε sweep; the default None "
                "keeps cols (spec A3, Fig. 10 of spec 4.5)."),
        "latency": ("Delay in ms between the end of the tuple whose execution emits a control "
                    "message (sketch shipment or sync reply) and the delivery of that message "
                    "to the scheduler, a number >= 0; the default 0.0 means instantaneous "
                    "(spec A17)."),
        "variant": ("The scheduler's greedy rule: 'wl' (default, OSG-WL of spec 2.7, the "
                    "headline per A8) sends a tuple to the earliest estimated free-at time "
                    "max(E, a), 'literal' to the least estimated accumulated work Ĉ of "
                    "Listing 3.2 (spec 2.3, the ablation)."),
        "empty_cells": ("Which Count-Min cells enter the numerator of the drift η: 'exclude' "
                        "(default, spec A5) skips the cells empty in the snapshot, 'include' "
                        "takes them all (the ablation, which makes skewed streams look less "
                        "stable)."),
        "stale_replies": ("Whether a sync reply of an abandoned epoch is still applied when no "
                          "correction reached its instance after its request was sent, true or "
                          "false; the default False drops and counts every such reply "
                          "(spec A7)."),
        "resync_start": ("Where the k carriers of a SEND_ALL phase go: 'restart' (default, spec "
                         "S3 and A15) sends the i-th carrier of every epoch to instance i, "
                         "'continue' sends it where round robin t mod k would (module "
                         "docstring, \"Resync start\")."),
    }
    exercise = [{"window": 64}, {"window": 32, "mu": float("inf"), "latency": 3.0, "variant": "literal"}]
    bench_target = 50
    engine_case = (5, 1, {"window": 64})
    single_source = True
    uses_costs = True
    seeded = True
    #: estimates are the true costs (FK-osg)
    _exact = False

    def __init__(self, workers: int, sources: int = 1, seed: int = 0,
                 worker_model: WorkerModel | None = None, **params: Any):
        self._given = set(params)
        super().__init__(workers, sources, seed, worker_model, **params)

    # -- setup ---------------------------------------------------------------------------
    def _setup(self) -> None:
        p = self.params
        nm = self.name
        check_number(f"{nm}: window", p["window"], 1, None, integer=True)
        mu = p["mu"]
        if (not isinstance(mu, (int, float, np.integer, np.floating)) or isinstance(mu, bool)
                or math.isnan(float(mu))):
            raise SkewbenchError(f"{nm}: mu must be a number (inf allowed), got {mu!r}")
        check_number(f"{nm}: rows", p["rows"], 1, 64, integer=True)
        if p["eps"] is not None:
            if "cols" in self._given:
                raise SkewbenchError(f"{nm}: give cols or eps, not both")
            check_number(f"{nm}: eps", p["eps"], 0.0, None, low_open=True)
            cols = cm_columns(p["eps"])
        else:
            check_number(f"{nm}: cols", p["cols"], 1, None, integer=True)
            cols = int(p["cols"])
        check_number(f"{nm}: latency", p["latency"], 0.0, None)
        _check_choice(f"{nm}: variant", p["variant"], ("wl", "literal"))
        _check_choice(f"{nm}: empty_cells", p["empty_cells"], ("exclude", "include"))
        _check_choice(f"{nm}: resync_start", p["resync_start"], ("restart", "continue"))
        if not isinstance(p["stale_replies"], (bool, np.bool_)):
            raise SkewbenchError(f"{nm}: stale_replies must be true or false, "
                                 f"got {p['stale_replies']!r}")
        k, r, c = self.workers, int(p["rows"]), cols
        if k * r * c > 50_000_000:
            raise SkewbenchError(f"{nm}: workers*rows*cols = {k * r * c} is too large")
        self.rows, self.cols, self.window = r, c, int(p["window"])
        breaks, factors = _worker_arrays(self.worker_model, k, nm)
        a, b = draw_hash(self.seed, r)
        si = np.zeros(SI_LEN, dtype=np.int64)
        si[S_RUNIDX] = -1
        si[S_SAIDX] = -1
        hcap = 4 * k + 16
        pcap = 2 * k + 2
        si[S_PFN] = pcap
        self._st = OSGState(
            ip=np.array([k, r, c, self.window, p["variant"] == "wl", self._exact,
                         p["empty_cells"] == "include", bool(p["stale_replies"]),
                         p["resync_start"] == "continue"], dtype=np.int64),
            sf=np.array([float(mu), float(p["latency"]), 1.0]),
            hp=np.stack([a, b]),
            table=np.zeros((r, 0), dtype=np.int64),
            breaks=breaks,
            factors=factors,
            si=si,
            ii=np.zeros((6, k), dtype=np.int64),
            fi=np.zeros((7, k)),
            sk=np.zeros((5, k, r, c)),
            hf=np.zeros((3, hcap)),
            hi=np.zeros((6, hcap), dtype=np.int64),
            pool=np.zeros((pcap, 2, r, c)),
            pool_free=np.arange(pcap, dtype=np.int64),
            lg=np.zeros((3, 4 * k + 16), dtype=np.int64),
            lg_t=np.zeros(4 * k + 16),
            cols=np.zeros(r, dtype=np.int64),
        )
        #: mode (0..3) under which each tuple of the last batch was scheduled
        self.last_modes = np.zeros(0, dtype=np.int8)

    # -- test hooks ----------------------------------------------------------------------
    def set_hash(self, a, b) -> None:
        """Replace the Carter-Wegman parameters (test hook; call before routing)."""
        a = np.asarray(a, dtype=np.int64).reshape(-1)
        b = np.asarray(b, dtype=np.int64).reshape(-1)
        if a.shape != (self.rows,) or b.shape != (self.rows,):
            raise SkewbenchError(f"set_hash needs {self.rows} values of a and of b")
        if np.any(a < 1) or np.any(a >= PRIME) or np.any(b < 0) or np.any(b >= PRIME):
            raise SkewbenchError("set_hash: a must be in [1, p-1] and b in [0, p-1]")
        self._st = self._st._replace(hp=np.stack([a, b]))

    def set_hash_table(self, table) -> None:
        """Use an explicit hash table ``H[i, key]`` (test hook, e.g. a truly random hash); keys
        must then lie in ``[0, H.shape[1])``."""
        table = np.ascontiguousarray(table, dtype=np.int64)
        if table.ndim != 2 or table.shape[0] != self.rows or table.shape[1] < 1:
            raise SkewbenchError(f"set_hash_table needs an int array of shape ({self.rows}, n)")
        if np.any(table < 0) or np.any(table >= self.cols):
            raise SkewbenchError(f"set_hash_table: columns must lie in [0, {self.cols})")
        self._st = self._st._replace(table=table)

    def set_estimate_scale(self, scale: float) -> None:
        """Multiply every estimate by ``scale`` (test hook for spec 7.11's biased estimates)."""
        check_number("scale", scale, 0.0, None, low_open=True)
        self._st.sf[F_SCALE] = float(scale)

    # -- routing -------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        """Double the buffers named by the kernel's request ``need`` (bits 1 heap, 2 payload
        pool, 4 shipment log), keeping their contents."""
        st = self._st
        new: dict[str, np.ndarray] = {}
        if need & 1:
            cap = st.hf.shape[1] * 2
            hf = np.zeros((3, cap))
            hi = np.zeros((6, cap), dtype=np.int64)
            hn = st.si[S_HN]
            hf[:, :hn] = st.hf[:, :hn]
            hi[:, :hn] = st.hi[:, :hn]
            new.update(hf=hf, hi=hi)
        if need & 2:
            old = st.pool.shape[0]
            pool = np.zeros((2 * old,) + st.pool.shape[1:])
            pool[:old] = st.pool
            nf = st.si[S_PFN]
            free = np.empty(2 * old, dtype=np.int64)
            free[:nf] = st.pool_free[:nf]
            free[nf:nf + old] = np.arange(old, 2 * old)
            st.si[S_PFN] = nf + old
            new.update(pool=pool, pool_free=free)
        if need & 4:
            cap = st.lg_t.shape[0] * 2
            ln = st.si[S_LOGN]
            lg = np.zeros((3, cap), dtype=np.int64)
            lg_t = np.zeros(cap)
            lg[:, :ln] = st.lg[:, :ln]
            lg_t[:ln] = st.lg_t[:ln]
            new.update(lg=lg, lg_t=lg_t)
        self._st = st._replace(**new)

    def route(self, batch: Batch) -> np.ndarray:
        seq, key, ts, cost = _batch_arrays(batch)
        n = len(seq)
        out = np.empty(n, dtype=np.int64)
        modes = np.empty(n, dtype=np.int8)
        pos = 0
        while pos < n:
            pos = osg_kernel(seq, key, ts, cost, out, modes, pos, self._st)
            if pos < n:
                si = self._st.si
                need = int(si[S_NEED])
                si[S_NEED] = 0
                self._grow(need)
        self.last_modes = modes
        return out

    # -- reporting -----------------------------------------------------------------------
    @property
    def state(self) -> OSGState:
        """The kernel's state record (live arrays, not copies; see :class:`OSGState`)."""
        return self._st

    @property
    def mode(self) -> int:
        return int(self._st.si[S_MODE])

    def _est_error(self) -> float:
        st = self._st
        if st.si[S_ESTART] == 0:
            return float("nan")
        truth = st.fi[FI_FREE] if st.ip[I_WL] else st.fi[FI_CACT]
        return float(np.mean(np.abs(st.fi[FI_CHAT] - truth)))

    def summary(self) -> dict[str, float]:
        si = self._st.si
        return {
            "run_index": int(si[S_RUNIDX]),
            "send_all_index": int(si[S_SAIDX]),
            "shipments": int(si[S_SHIP]),
            "replies": int(si[S_REPL]),
            "control_messages": int(si[S_SHIP] + si[S_REPL]),
            "shipments_delivered": int(si[S_SDELIV]),
            "epochs_started": int(si[S_ESTART]),
            "epochs_completed": int(si[S_EDONE]),
            "epochs_abandoned": int(si[S_EABAN]),
            "stale_replies_dropped": int(si[S_SDROP]),
            "stale_replies_applied": int(si[S_SAPP]),
            "mode": int(si[S_MODE]),
            "est_error": self._est_error(),
        }

    def window_stats(self) -> dict[str, float]:
        si = self._st.si
        return {"mode": float(si[S_MODE]), "shipments": float(si[S_SHIP])}

    def describe_params(self) -> dict[str, Any]:
        d = dict(self.params)
        d["cols"] = self.cols
        d["rows"] = self.rows
        return d

    # -- diagnostics ---------------------------------------------------------------------
    def hash_columns(self, keys) -> np.ndarray:
        """``h_i(key)`` for every row ``i`` and key: int64[r, len(keys)]."""
        keys = np.asarray(keys, dtype=np.int64)
        table, hp = self._st.table, self._st.hp
        if table.shape[1] > 0:
            return table[:, keys]
        x = keys % PRIME
        return ((hp[0][:, None] * x[None, :] + hp[1][:, None]) % PRIME) % self.cols

    def estimates(self, keys, op: int, source: str = "store") -> np.ndarray:
        """Spec 2.1.3 for ``keys`` on instance ``op``'s pair: the scheduler's stored pair
        (``source="store"``, falls back on the A6 mean) or the instance's live sketches
        (``"live"``)."""
        cols = np.ascontiguousarray(self.hash_columns(keys))
        sk = self._st.sk
        if source == "store":
            Fm, Wm, mean = sk[SK_SF, op], sk[SK_SW, op], self._st.fi[FI_MEAN, op]
        elif source == "live":
            Fm, Wm = sk[SK_F, op], sk[SK_W, op]
            sf = Fm[0].sum()
            mean = Wm[0].sum() / sf if sf > 0 else 0.0
        else:
            raise SkewbenchError("source must be 'store' or 'live'")
        return estimate_many(np.ascontiguousarray(Fm), np.ascontiguousarray(Wm), float(mean), cols)

    def debug_state(self) -> dict[str, Any]:
        """Copies of the whole state (for tests and debugging)."""
        st = self._st
        si, ii, fi, sk = st.si, st.ii, st.fi, st.sk
        ln = int(si[S_LOGN])
        return {
            "mode": int(si[S_MODE]), "epoch": int(si[S_EPOCH]), "send_idx": int(si[S_SEND]),
            "rr_ptr": int(si[S_RR]), "pending_messages": int(si[S_HN]),
            "C_hat": fi[FI_CHAT].copy(), "C_act": fi[FI_CACT].copy(), "free": fi[FI_FREE].copy(),
            "store_mean": fi[FI_MEAN].copy(), "have": ii[II_HAVE].astype(bool),
            "phase": ii[II_PHASE].copy(), "cnt": ii[II_CNT].copy(),
            "executed": ii[II_EXEC].copy(),
            "F": sk[SK_F].copy(), "W": sk[SK_W].copy(), "S": sk[SK_S].copy(),
            "store_F": sk[SK_SF].copy(), "store_W": sk[SK_SW].copy(),
            "ship_op": st.lg[L_OP, :ln].copy(), "ship_executed": st.lg[L_EXEC, :ln].copy(),
            "ship_seq": st.lg[L_SEQ, :ln].copy(), "ship_time": st.lg_t[:ln].copy(),
            "hash_a": st.hp[0].copy(), "hash_b": st.hp[1].copy(),
        }


class FullKnowledgeOSG(OSG):
    """FK-osg (spec 2.6): the full OSG state machine with exact estimates ``ŵ = x_{t,op}``.

    Not in the strategy table under its own name: ``fk`` with ``variant="osg"`` runs it with the
    default sketch parameters; this class takes every OSG parameter (``variant`` is the
    semantics) and inherits OSG's ``defaults`` and ``param_docs``."""

    name = "fk-osg"
    description = "FK-osg: OSG's state machine with exact execution times"
    _exact = True


class FK(Strategy):
    """Full Knowledge baselines FK-ideal and FK-osg (see the module docstring)."""

    name = "fk"
    description = "Full Knowledge: the greedy scheduler fed with true execution times"
    defaults = {"variant": "ideal", "semantics": "literal", "resync_start": "restart"}
    param_docs = {
        "variant": ("Which Full Knowledge baseline runs (spec 2.6, A9): 'ideal' (default, "
                    "FK-ideal) applies the greedy rule with the true execution times from the "
                    "first tuple, without sketches or messages, while 'osg' (FK-osg) runs OSG's "
                    "whole state machine with default sketch parameters and exact estimates."),
        "semantics": ("The greedy rule fed with the true execution times: 'literal' (default, "
                      "spec 2.6) picks the least accumulated work, 'wl' the earliest free-at "
                      "time max(free, a), i.e. least-work-left JSQ (FK-WL, spec 2.7 item 5); "
                      "FK-osg passes it on as OSG's variant."),
        "resync_start": ("SEND_ALL carrier order of FK-osg, 'restart' (default, spec A15) or "
                         "'continue' as for osg, ignored by FK-ideal, which has no epochs."),
    }
    exercise = [{"variant": "osg"}, {"semantics": "wl"}]
    bench_target = 50
    engine_case = (5, 1, {})
    single_source = True
    uses_costs = True
    seeded = True  # FK-osg depends on the hash seed; an FK-ideal instance sets False

    def _setup(self) -> None:
        p = self.params
        _check_choice("fk: variant", p["variant"], ("ideal", "osg"))
        _check_choice("fk: semantics", p["semantics"], ("wl", "literal"))
        _check_choice("fk: resync_start", p["resync_start"], ("restart", "continue"))
        self._wl = p["semantics"] == "wl"
        self._engine: OSG | None = None
        if p["variant"] == "osg":
            self._engine = FullKnowledgeOSG(self.workers, 1, self.seed, self.worker_model,
                                            variant=p["semantics"],
                                            resync_start=p["resync_start"])
            return
        self.seeded = False
        self._breaks, self._factors = _worker_arrays(self.worker_model, self.workers, self.name)
        self._st = np.zeros(1, dtype=np.int64)
        self._chat = np.zeros(self.workers)
        self._free = np.zeros(self.workers)

    def route(self, batch: Batch) -> np.ndarray:
        if self._engine is not None:
            return self._engine.route(batch)
        seq, _, ts, cost = _batch_arrays(batch)
        out = np.empty(len(seq), dtype=np.int64)
        fk_ideal_kernel(seq, ts, cost, out, self.workers, self._wl, self._breaks, self._factors,
                         self._st, self._chat, self._free)
        return out

    @property
    def engine(self) -> OSG | None:
        """The FK-osg engine (``None`` for FK-ideal)."""
        return self._engine

    def summary(self) -> dict[str, float]:
        if self._engine is not None:
            return self._engine.summary()
        return {"run_index": 0, "send_all_index": -1, "shipments": 0, "replies": 0,
                "control_messages": 0, "shipments_delivered": 0, "epochs_started": 0,
                "epochs_completed": 0, "epochs_abandoned": 0, "stale_replies_dropped": 0,
                "stale_replies_applied": 0, "mode": RUN, "est_error": 0.0}

    def window_stats(self) -> dict[str, float]:
        if self._engine is not None:
            return self._engine.window_stats()
        return {"mode": float(RUN), "shipments": 0.0}

    def debug_state(self) -> dict[str, Any]:
        if self._engine is not None:
            return self._engine.debug_state()
        return {"C_hat": self._chat.copy(), "free": self._free.copy(), "C_act": self._chat.copy()}
