"""The simulated GPU (graphops.testing.simulated_gpu) keeps CuPy 14's rules where they differ from
NumPy's and GPU kernels could depend on the difference. Each test names the CuPy source
that decides the rule; NumPy computes every value, so results are compared with NumPy's."""

import re

import numpy as np
import pytest

from graphops.testing.simulated_gpu import _METHODS, SimArray, xp


def dev(values, dtype=np.float32):
    return xp.asarray(np.asarray(values, dtype))


# ----------------------------------------------------------------------------- keywords

def test_ufuncs_take_only_out_dtype_and_casting():
    """cupy/_core/_kernel.pyx ufunc.__call__ pops out, dtype, casting, then
    `raise TypeError('Wrong arguments %s' % kwargs)`."""
    a, b = dev([1, 2, 3]), dev([4, 5, 6])
    out = xp.empty(3, np.float64)
    xp.add(a, b, out=out, dtype=np.float64, casting="same_kind")
    assert out.get().tolist() == [5.0, 7.0, 9.0]
    for bad in ({"where": xp.asarray(np.array([True, False, True]))}, {"order": "C"},
                {"subok": True}, {"signature": None}):
        with pytest.raises(TypeError, match=r"cupy\.add"):
            xp.add(a, b, **bad)
        with pytest.raises(TypeError, match=r"cupy\.add"):
            np.add(a, b, **bad)                     # the NumPy-function route, same rule
    with pytest.raises(TypeError):
        xp.exp(a, b, out, out)                      # 1 input + 1 output at most


def test_einsum_takes_only_dtype_and_optimize():
    """cupy/linalg/_einsum.py pops dtype and optimize, then 'Did not understand the
    following kwargs' (no out=, order=, casting=)."""
    a = dev(np.arange(6).reshape(2, 3))
    want = np.einsum("ij,ij->i", a.get(), a.get())
    for ok in ({}, {"optimize": False}, {"optimize": "greedy"}, {"dtype": np.float64}):
        assert np.allclose(xp.einsum("ij,ij->i", a, a, **ok).get(), want)
    for bad in ({"out": xp.empty(2, np.float32)}, {"casting": "safe"}, {"order": "K"}):
        with pytest.raises(TypeError, match="einsum"):
            xp.einsum("ij,ij->i", a, a, **bad)


@pytest.mark.parametrize("method, kwargs", [
    ("sum", {"where": True}), ("sum", {"initial": 0}), ("max", {"initial": 0}),
    ("min", {"where": True}), ("any", {"where": True}), ("all", {"where": True}),
    ("mean", {"where": True}), ("argsort", {"order": None}), ("take", {"mode": "raise"}),
])
def test_array_methods_have_cupys_narrower_signatures(method, kwargs):
    """cupy.ndarray methods (cupy/_core/core.pyx) have no where/initial/order/mode."""
    a = dev([[1, 2], [3, 4]])
    args = (xp.asarray(np.array([0])),) if method == "take" else ()
    getattr(a, method)(*args)                       # the call itself is fine
    with pytest.raises(TypeError, match=f"cupy.ndarray.{method}"):
        getattr(a, method)(*args, **kwargs)


def test_sum_with_empty_axis_tuple_and_dtype():
    """_reduction.pyx _get_axis: axis=() reduces nothing; dtype sets the accumulator."""
    a = dev([[100, 100], [100, 28]], np.int8)
    assert a.sum(axis=(), dtype=np.int8).get().tolist() == [[100, 100], [100, 28]]
    assert xp.sum(a, axis=(0, 1), dtype=np.int8).get() == np.int8(72)   # wraps in int8


def test_method_table_matches_cupy():
    """The table of method signatures is CuPy's, as cupy.ndarray's docstrings state them."""
    cupy = pytest.importorskip("cupy")
    for name, signature in _METHODS.items():
        first = getattr(cupy.ndarray, name).__doc__.splitlines()[0]
        params = re.match(r"_ndarray_base\.\w+\(self(?:, )?(.*)\)", first).group(1)
        ours = ", ".join(str(p) for p in signature.parameters.values()).replace('"', "'")
        theirs = re.sub(r"\b(?:int|Py_ssize_t|_ndarray_base) ", "", params)
        assert ours == theirs, name


# ----------------------------------------------------------------------------- indexing

def test_integer_index_arrays_wrap_around():
    """_routines_indexing.pyx: the take kernel reads `indices % index_range` and the
    scatter kernels write `indices % adim`: out-of-range indices wrap, never raise."""
    a = dev([10, 11, 12, 13])
    idx = xp.asarray(np.array([5, -1, -6, 2]))
    assert a[idx].get().tolist() == [11, 13, 12, 12]
    a[idx[:2]] = dev([0, 0])
    assert a.get().tolist() == [10, 0, 12, 0]
    m = dev(np.zeros((2, 3)))
    rows, labels = xp.arange(2), xp.asarray(np.array([4, -1]))
    m[rows, labels] -= 1                           # the sparse softmax backprop pattern
    assert m.get().tolist() == [[0, -1, 0], [0, 0, -1]]
    b = dev(np.arange(12).reshape(3, 4))
    assert b[..., xp.asarray(np.array([7]))].get().ravel().tolist() == [3, 7, 11]
    assert b[None, 1:, [4]].get().ravel().tolist() == [4, 8]


def test_scalar_indices_and_masks_are_not_wrapped():
    """_simple_getitem raises IndexError for an out-of-range int; masks select."""
    a = dev([1, 2, 3])
    with pytest.raises(IndexError):
        a[3]
    assert a[xp.asarray(np.array([True, False, True]))].get().tolist() == [1, 3]


# ----------------------------------------------------------------------------- reshape

def test_impossible_reshape_is_value_error():
    """_routines_manipulation.pyx: 'cannot reshape array of size 6 into shape (4,)'."""
    a = dev(np.zeros((2, 3)))
    with pytest.raises(ValueError):
        a.reshape(4)
    with pytest.raises(ValueError):
        xp.reshape(a, (4,))


def test_empty_reshape_to_overflowing_dims_is_no_value_error():
    """CuPy reshapes a 0-element array to (2**62, 4, 0) without error (its size is 0);
    NumPy raises ValueError. Kernels must check such shapes themselves."""
    e = dev(np.zeros((0, 3)))
    for reshape in (lambda: e.reshape(2**62, 4, 0), lambda: xp.reshape(e, (2**62, 4, 0)),
                    lambda: np.reshape(e, (2**62, 4, 0))):
        with pytest.raises(RuntimeError, match="CuPy would reshape this empty array"):
            reshape()
    assert e.reshape(0, 5, 0).shape == (0, 5, 0)


# ----------------------------------------------------------------------------- views, out=

def test_matmul_out_may_be_any_view_of_a_same_kind_dtype():
    """_routines_linalg.pyx matmul: a C-contiguous out of the result dtype is written
    directly, any other out through a temporary and elementwise_copy; the gufunc wrapper
    checks out's dtype with casting='same_kind'. Shapes must match (ndim > 2)."""
    a, b = dev(np.arange(6).reshape(3, 2)), dev(np.arange(8).reshape(2, 4))
    want = a.get() @ b.get()
    base = xp.zeros((3, 8), np.float32)
    xp.matmul(a, b, out=base[:, ::2])              # strided out, written into `base`
    assert np.array_equal(base.get()[:, ::2], want) and not base.get()[:, 1::2].any()
    wide = xp.zeros((3, 4), np.float64)
    xp.matmul(a, b, out=wide)
    assert np.array_equal(wide.get(), want)
    with pytest.raises(TypeError):
        xp.matmul(a, b, out=xp.zeros((3, 4), np.int32))
    w3 = xp.swapaxes(dev(np.arange(24).reshape(3, 4, 2)), 1, 2)     # [3, 2, 4] view
    prods = xp.empty((3, 3, 4), np.float32)
    xp.matmul(a, w3, out=prods)                    # 2-D against 3-D, broadcast
    assert np.array_equal(prods.get(), a.get() @ w3.get())
    with pytest.raises(ValueError):
        xp.matmul(a, w3, out=xp.empty((3, 12), np.float32))


def test_copyto_casts_same_kind_from_overlapping_windows():
    """cupy/_manipulation/basic.py copyto: numpy.can_cast(src, dst, 'same_kind'), then
    elementwise_copy reads the (overlapping) source by its strides."""
    x = dev(np.arange(10))
    win = xp.lib.stride_tricks.as_strided(x[1:], (3, 4), (8, 4))      # rows overlap
    dst = xp.zeros((3, 8), np.float16)
    xp.copyto(dst[:, ::2], win)
    assert dst.get()[:, ::2].tolist() == [[1, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7, 8]]
    ints = xp.zeros(3, np.int32)
    xp.copyto(ints, dev([1, 2, 3], np.int64))
    assert ints.get().tolist() == [1, 2, 3]
    with pytest.raises(TypeError):
        xp.copyto(ints, dev([1.5, 2, 3]))


def test_as_strided_has_no_writeable_and_keeps_the_view_offset():
    """cupy/lib/stride_tricks.py: ndarray(shape, dtype, memptr=x.data, strides)."""
    x = dev(np.arange(8))
    assert xp.lib.stride_tricks.as_strided(x[3:], (2,), (8,)).get().tolist() == [3, 5]
    with pytest.raises(TypeError):
        xp.lib.stride_tricks.as_strided(x, (2,), (8,), writeable=False)


def test_in_place_ops_on_slices_write_into_the_base():
    """Basic indexing returns views (_simple_getitem); ufuncs write out= in place."""
    a = dev(np.zeros((2, 6)))
    t = a[:, 1::2]
    t += 1
    xp.add(t, dev([1, 2, 3]), out=t)
    assert a.get().tolist() == [[0, 2, 0, 3, 0, 4]] * 2


# ----------------------------------------------------------------------------- arithmetic

def test_floor_division_and_remainder_of_negative_ints_floor():
    """carray.cuh _floor_divide: q - ((x < 0) != (y < 0) && q * y != x); remainder is
    x - floor_divide(x, y) * y."""
    x, y = dev([-7, 7, -7, 7], np.int64), dev([2, -2, -2, 2], np.int64)
    assert (x // y).get().tolist() == [-4, -4, 3, 3]
    assert (x % y).get().tolist() == [1, -1, -1, 1]


def test_maximum_propagates_nan_and_argmax_picks_the_first():
    """misc.py maximum: isnan(in0) | isnan(in1) ? NAN; _routines_statistics.pyx
    my_argmax_float: equal values keep the lower index, NaN wins."""
    a = dev([1.0, np.nan, 3.0, 3.0, np.nan])
    assert np.isnan(xp.maximum(a, dev(0.0)).get()[[1, 4]]).all()
    assert int(xp.argmax(a)) == 1
    assert int(xp.argmax(dev([2, 5, 5], np.int8))) == 1


def test_results_stay_on_the_device():
    a = dev([1, 2])
    for value in (a.sum(), a[0], xp.argmax(a), a.max(axis=0)):
        assert type(value) is SimArray and value.shape == ()
    assert bool(a.sum() == 3)
