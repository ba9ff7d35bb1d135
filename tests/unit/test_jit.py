"""skewbench.jit: the type keys that decide when ahead-of-time code may run, and the rules that
keep a stale build from running."""

from __future__ import annotations

import json
import pickle

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench import jit
from skewbench.hashing import mix64, mix64_py

DTYPES = [np.int64, np.int32, np.uint64, np.uint8, np.float64, np.float32, np.bool_, np.int8]


@st.composite
def values(draw):
    kind = draw(st.sampled_from(["array", "int", "float", "bool", "npscalar"]))
    if kind == "int":
        return draw(st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(2**63, 2**64 - 1)))
    if kind == "float":
        return draw(st.floats(allow_nan=True))
    if kind == "bool":
        return draw(st.booleans())
    if kind == "npscalar":
        return np.dtype(draw(st.sampled_from([np.int64, np.uint64, np.float64, np.int32]))).type(draw(st.integers(0, 100)))
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    a = np.zeros(shape, dtype=dtype)
    layout = draw(st.sampled_from(["C", "F", "strided"]))
    if layout == "F":
        a = np.asfortranarray(a)
    elif layout == "strided":
        a = np.zeros(tuple(2 * x for x in shape), dtype=dtype)[tuple(slice(None, None, 2) for _ in shape)]
    if draw(st.booleans()):
        a.flags.writeable = False
    return a


@settings(max_examples=300)
@given(values(), values())
def test_equal_keys_exactly_when_numba_types_are_equal(a, b):
    """The compiled wrappers do not check array types: a call may only reach them when its
    arguments have the recorded numba types, so key equality must be numba type equality."""
    ka, kb = jit.arg_key(a), jit.arg_key(b)
    assert ka is not None and kb is not None
    assert (ka == kb) == (numba.typeof(a) == numba.typeof(b)), (ka, kb, numba.typeof(a), numba.typeof(b))


def test_unsupported_values_have_no_key():
    assert jit.arg_key(None) is None
    assert jit.arg_key((1, 2)) is None
    assert jit.arg_key(2**64) is None
    assert jit.arg_key("x") is None


def test_a_kernel_pickles_by_name():
    assert pickle.loads(pickle.dumps(mix64)) is mix64
    assert int(mix64(np.uint64(1))) == mix64_py(1)


@pytest.mark.skipif(not jit.TABLE_FILE.exists(), reason="no ahead-of-time build (python -m skewbench.aot)")
@pytest.mark.parametrize("field,value", [("digest", "0" * 64), ("cpu", "another-cpu"),
                                         ("versions", {"numba": "0.1", "numpy": "1.0"})])
def test_a_build_that_does_not_match_is_not_used(tmp_path, monkeypatch, field, value):
    meta = json.loads(jit.TABLE_FILE.read_text())
    assert jit.versions() == meta["versions"]
    meta[field] = value
    fake = tmp_path / "_kernels.json"
    fake.write_text(json.dumps(meta))
    monkeypatch.setattr(jit, "TABLE_FILE", fake)
    monkeypatch.setattr(jit, "_AOT", None)
    assert jit._load_aot() == {}
    assert "does not match" in jit.aot_status()


@jit.njit(inline="always")
def _triple_inline(a, i):
    return a[i] * 3


@jit.njit
def _sum_of_triples(a):
    s = 0
    for i in range(a.shape[0]):
        s += _triple_inline(a, i)
    return s


def test_a_kernel_declared_inline_always_is_inlined_by_numba():
    """numba inlines a callee declared ``inline="always"`` in its own IR (before typing), which
    the head-aware routers rely on for speed; without the option visible on the Kernel, numba
    compiled a call instead and D-C routed 1.5x slower.  Inlined, the helper leaves no symbol
    in the caller's LLVM module."""
    a = np.arange(5, dtype=np.int64)
    disp = _sum_of_triples.dispatcher
    assert disp(a) == 30
    llvm = disp.inspect_llvm(disp.signatures[0])
    assert "_triple_inline" not in llvm


def test_recording_keeps_the_numba_types_of_each_call_while_it_lasts():
    """What ``python -m skewbench.aot`` compiles: each kernel call's argument keys and numba
    types, once per distinct keys, and nothing after the recording ends."""
    key = f"{mix64.__module__}.{mix64.__qualname__}"
    assert jit.KERNELS[key] is mix64
    with jit.recording() as calls:
        mix64(np.uint64(3))
        mix64(np.uint64(4))
    assert calls[key] == {("u8",): (numba.uint64,)}
    mix64(5)
    assert list(calls[key]) == [("u8",)]
