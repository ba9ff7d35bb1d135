""":func:`skewbench.registry.check_number`, the one parameter check of every family (grouping's
strategies call it directly, :meth:`skewbench.registry.ParamStrategy._number` with infinities
allowed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import check_number as grouping_check
from skewbench.registry import ParamStrategy, check_number


def test_grouping_uses_the_registrys_check():
    assert grouping_check is check_number


@pytest.mark.parametrize("value", [0, 3, 2.5, np.int64(4), np.float32(0.5), np.float64(7.0), 10**18])
def test_numbers_in_range_pass(value):
    check_number("x", value, low=0, high=10**18)


@pytest.mark.parametrize("value,low,high,integer,low_open,message", [
    (True, 0, None, False, False, r"^x must be a number in \[0, inf\], got True$"),
    ("3", 0, None, False, False, r"^x must be a number in \[0, inf\], got '3'$"),
    (None, 0, None, False, False, r"^x must be a number in \[0, inf\], got None$"),
    (math.nan, 0, None, False, False, r"^x must be a number in \[0, inf\], got nan$"),
    (math.inf, 0, None, False, False, r"^x must be a number in \[0, inf\], got inf$"),
    (2.5, 1, 9, True, False, r"^x must be an integer in \[1, 9\], got 2\.5$"),
    (0, 0, None, False, True, r"^x must be a number in \(0, inf\], got 0$"),
    (10, None, 9, False, False, r"^x must be a number in \[-inf, 9\], got 10$"),
])
def test_the_rest_are_refused_with_one_message(value, low, high, integer, low_open, message):
    with pytest.raises(SkewbenchError, match=message):
        check_number("x", value, low, high, integer=integer, low_open=low_open)


def test_infinities_only_when_allowed():
    check_number("x", math.inf, low=0, finite=False)
    check_number("x", -math.inf, high=0, finite=False)
    with pytest.raises(SkewbenchError, match=r"^x must be a number in \[0, inf\], got nan$"):
        check_number("x", math.nan, low=0, finite=False)
    with pytest.raises(SkewbenchError, match=r"^x must be an integer in \[0, inf\], got inf$"):
        check_number("x", math.inf, low=0, integer=True, finite=False)


class _Toy(ParamStrategy):
    name = "toy"
    defaults = {"rate": 1.0, "count": 2}

    def _check(self) -> None:
        self._number("rate", 0, open_lo=True)
        self._number("count", 1, 100, integer=True)


def test_param_strategies_name_the_parameter_and_allow_infinity():
    assert _Toy(rate=math.inf).params == {"rate": math.inf, "count": 2}
    with pytest.raises(SkewbenchError, match=r"^toy: parameter rate must be a number in \(0, inf\], got 0$"):
        _Toy(rate=0)
    with pytest.raises(SkewbenchError, match=r"^toy: parameter count must be an integer in \[1, 100\], got 1\.5$"):
        _Toy(count=1.5)
