"""The shared command-line option parsers (skewbench.clikit): comma-separated lists of numbers
and names, and the errors a wrong one gives."""

from __future__ import annotations

import pytest

from skewbench.clikit import float_list, int_list, name_list
from skewbench.errors import SkewbenchError


def test_lists_skip_empty_items():
    assert int_list("workers", "5, 10,,20") == [5, 10, 20]
    assert float_list("z", "0.5,1,1e-3") == [0.5, 1.0, 0.001]
    assert name_list("strategies", " kg , pkg,") == ["kg", "pkg"]


@pytest.mark.parametrize("parse,text,message", [
    (int_list, "5,x", "--opt takes comma-separated integers, got '5,x'"),
    (int_list, "1.5", "--opt takes comma-separated integers, got '1.5'"),
    (float_list, "0.5,abc", "--opt takes comma-separated numbers, got '0.5,abc'"),
    (int_list, " , ", "--opt needs at least one value"),
    (float_list, "", "--opt needs at least one value"),
    (name_list, ",", "--opt needs at least one name"),
])
def test_a_wrong_list_names_the_option(parse, text, message):
    with pytest.raises(SkewbenchError, match="^" + message.replace(".", r"\.") + "$"):
        parse("opt", text)
