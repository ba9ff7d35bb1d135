"""How many of a property test's examples reach its assertions.

A hypothesis test that returns early for the examples it cannot judge (too few nodes, nothing to
fuse, a placement that backtracked) passes for those examples without asserting anything: if the
strategies drift so that most examples take the early return, the test still passes, and checks
almost nothing.  :class:`Reach` counts them.  The test's examples run inside it, each calls
:meth:`Reach.tried` first and :meth:`Reach.reached` where its assertions begin, and after the run
:meth:`Reach.check` fails when the share of examples that reached the assertions is below the
test's stated minimum (or none did)::

    def test_something():
        reach = Reach("something")

        @settings(max_examples=100)
        @given(...)
        def examples(x):
            reach.tried()
            if cannot_judge(x):
                return
            reach.reached()
            assert ...

        examples()
        reach.check(0.5)

The share is of the examples hypothesis generated in the run (derandomised in CI, so the count is
the same on every machine); a failing example is shrunk before any count is checked.
"""

from __future__ import annotations


class Reach:
    """Counts of a hypothesis test's examples: tried, and reaching each named branch's assertions."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tries = 0
        self.hits: dict[str, int] = {}

    def tried(self) -> None:
        self.tries += 1

    def reached(self, branch: str = "assertions") -> None:
        self.hits[branch] = self.hits.get(branch, 0) + 1

    def check(self, share: float, branch: str = "assertions") -> int:
        """Fail unless at least ``share`` of the tried examples (and at least one) reached ``branch``;
        return how many did."""
        got = self.hits.get(branch, 0)
        if self.tries == 0 or got < max(1, share * self.tries):
            raise AssertionError(f"{self.name}: {got} of {self.tries} examples reached its {branch}, "
                                 f"fewer than the {share:.0%} it needs to check anything")
        return got
