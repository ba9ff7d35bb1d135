"""The monitor-and-reallocate loop of allocation.spec.md 2.8, simulated for E8 (spec section 4).

The job is given at the peak rate; at rate fraction r every group costs r P_g and every edge carries
r C_e (task counts fixed).  Every period Delta the master "measures" the total PC, the total IMC and
the input rate r.  Three allocations are tracked:

- *TD-static* and *STORM-static*: computed once from the first measurement after the warm-up and kept;
  their gain scales with r, and a rate above the measured one may overload nodes (reported, not hidden);
- *TD-RC*: TD rerun whenever a measurement differs from the one at the last reconfiguration by more
  than theta (relative) on any of the three quantities (A19).  A TD run that fails (even after the
  re-granularised retry) keeps the previous allocation and is flagged.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from skewbench.allocation.model import Job, evaluate
from skewbench.allocation.relax import with_retry
from skewbench.allocation.steps import Allocation
from skewbench.allocation.strategies.stormrr import storm_rr
from skewbench.allocation.strategies.td import td
from skewbench.errors import SkewbenchError


@dataclass(frozen=True)
class Period:
    """One monitoring period of the E8 time series."""

    t: float  # start of the period, s
    r: float  # input rate, fraction of the peak
    imc_total: float  # r * IMC_tot, MB/s
    phi_td_static: float
    phi_storm_static: float
    phi_td_rc: float
    reconfigure: bool  # TD-RC reallocated at this period (the initial allocation is not a trigger)
    local_fraction_td_rc: float
    local_fraction_td_static: float
    violations_td_static: int  # nodes over capacity under the static allocations at this rate
    violations_storm_static: int
    violations_td_rc: int
    td_rc_failed: bool  # a triggered TD run failed and the previous allocation was kept

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def scaled(job: Job, r: float) -> Job:
    """The job at rate fraction r: P_g(r) = r P_g, C_e(r) = r C_e (spec E8); capacities unchanged."""
    link = {e: np.asarray(m) * r for e, m in job.link_rate.items()} if job.link_rate else None
    return Job(name=job.name, groups=list(job.groups), tasks=job.tasks.copy(), cost=job.cost * r, src=job.src.copy(),
               dst=job.dst.copy(), rate=job.rate * r, capacity=job.capacity.copy(),
               task_cost=None if job.task_cost is None else job.task_cost * r, link_rate=link, meta=dict(job.meta))


def rate_at(schedule: Sequence[tuple[float, float, float]], t: float) -> float:
    """r(t) of a piecewise-constant schedule [(start_s, end_s, r), ...] (start inclusive, end exclusive)."""
    for a, b, r in schedule:
        if a <= t < b:
            return float(r)
    raise SkewbenchError(f"rate schedule does not cover t = {t} s")


def _changed(now: tuple[float, ...], ref: tuple[float, ...], theta: float) -> bool:
    for x, x0 in zip(now, ref):
        if x0 == 0:
            if x != 0:
                return True
        elif abs(x - x0) / abs(x0) > theta:
            return True
    return False


def _td(job: Job) -> Allocation:
    return with_retry(td, job)


def monitor(job: Job, schedule: Sequence[tuple[float, float, float]], *, period: float = 10.0, theta: float = 0.2,
            warmup_end: float = 0.0, confirm: int = 1) -> list[Period]:
    """Simulate spec 2.8 on ``job`` (uniform, at the peak rate) under ``schedule``.

    One :class:`Period` per period start t = warmup_end, warmup_end + period, ... before the schedule's end.
    The static allocations (TD and STORM-RR) and TD-RC's first allocation come from the measurement at
    ``warmup_end``.  ``confirm`` = how many consecutive periods must exceed theta before a trigger (1 = at once).
    """
    if not (period > 0 and math.isfinite(period)):
        raise SkewbenchError(f"monitor: period must be a number > 0 (s), got {period!r}")
    if not (theta >= 0 and math.isfinite(theta)):
        raise SkewbenchError(f"monitor: theta must be a number >= 0, got {theta!r}")
    if confirm < 1:
        raise SkewbenchError(f"monitor: confirm must be >= 1, got {confirm!r}")
    if not schedule:
        raise SkewbenchError("monitor: empty rate schedule")
    for a, b, r in schedule:
        if not (b > a and r >= 0):
            raise SkewbenchError(f"monitor: bad schedule entry ({a}, {b}, {r}); needs end > start and r >= 0")
    end = max(b for _, b, _ in schedule)
    base_pc, base_imc = job.total_cost, job.imc_total

    def measure(r: float) -> tuple[float, float, float]:
        return (r * base_pc, r * base_imc, r)

    r0 = rate_at(schedule, warmup_end)
    if r0 <= 0:
        raise SkewbenchError("monitor: the rate at the end of the warm-up must be > 0 (static allocations use it)")
    j0 = scaled(job, r0)
    td_static = _peak(_td(j0), job, r0)
    storm_static = _peak(storm_rr(j0), job, r0)
    rc = td_static
    ref = measure(r0)
    above = 0
    out: list[Period] = []
    step = 0
    while True:
        t = warmup_end + step * period
        if t >= end:
            break
        r = rate_at(schedule, t)
        reconf = failed = False
        if step > 0:
            now = measure(r)
            above = above + 1 if _changed(now, ref, theta) else 0
            if above >= confirm:
                jr = scaled(job, r)
                new = _td(jr)
                above = 0
                ref = now
                reconf = True
                if new.success and r > 0:
                    rc = _peak(new, job, r)
                elif new.success:
                    rc = (job, new.node)
                else:
                    failed = True
        ev_ts, ev_ss, ev_rc = (evaluate(scaled(pj, r), node) for pj, node in (td_static, storm_static, rc))
        out.append(Period(t=t, r=r, imc_total=r * base_imc, phi_td_static=ev_ts.gain, phi_storm_static=ev_ss.gain,
                          phi_td_rc=ev_rc.gain, reconfigure=reconf, local_fraction_td_rc=ev_rc.local_fraction,
                          local_fraction_td_static=ev_ts.local_fraction, violations_td_static=ev_ts.violations,
                          violations_storm_static=ev_ss.violations, violations_td_rc=ev_rc.violations,
                          td_rc_failed=failed))
        step += 1
    return out


def _peak(a: Allocation, job: Job, r: float) -> tuple[Job, np.ndarray]:
    """(the job an allocation refers to, expressed at the peak rate, its node array)."""
    return (job if a.job is None else scaled(a.job, 1.0 / r)), np.asarray(a.node, dtype=np.int64)
