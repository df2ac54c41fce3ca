"""Hostile mutations of valid conv configurations: a typed error or the correct result.

Every example starts from a random *valid* configuration of one of the 13 conv ops
(consistent shapes, strides, dilations and padding) and applies one hostile mutation: a
zero, negative or huge stride or dilation, attr lists of the wrong length, a sizes vector
with negative, huge, zero or wrongly typed values or the wrong length or rank, mismatched
channels, an out_backprop of the wrong spatial size, bad explicit paddings, empty dims,
NaN/Inf data, wrong ranks, mixed dtypes. Each case runs three ways: eagerly; in a graph
whose sizes vector is a Const and whose other inputs are placeholders of known shape (the
shape function sees everything); and in a graph of unknown-shape placeholders (only the
kernel sees the values). Each run must end in the outcome the mutation calls for: the slow
reference's result (tests/reference_*.py), or one of the typed graphops errors listed for it
(an InternalError is a bug, never an acceptable answer) -- and NumPy may not warn.
"""

import math
import os
import traceback
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

import graphops as gp
from graphops.registry import errors
from graphops.registry.conv_shapes import CONV_OPS, format_dims
from graphops.registry.op_registry import get_op_def
from tests.reference_conv import (conv_backprop_filter_ref, conv_backprop_input_ref,
                                  conv_forward_ref)
from tests.reference_depthwise import (depthwise_backprop_filter_ref,
                                       depthwise_backprop_input_ref, depthwise_forward_ref)
from tests.paths import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

IAE, RE = errors.InvalidArgumentError, errors.ResourceExhaustedError
BUDGET = 64 * 2**20          # the memory budget while these tests run
HUGE = 2**20                 # pads or windows beyond this may be refused for memory
ODD_INTS = [0, -1, -2, -(2**31), 2, 3, 2**31, 2**62]
RTOL = {"float32": 1e-4, "float64": 1e-10, "int32": 0}
# GRAPHOPS_FUZZ_EXAMPLES=500 explores with fresh random examples; by default the examples
# are fixed (derandomized), so a failure in CI reproduces.
EXPLORE = int(os.environ.get("GRAPHOPS_FUZZ_EXAMPLES", 0))
EXAMPLES = EXPLORE or 10


@pytest.fixture(autouse=True, scope="module")
def small_memory_budget():
    with gp.config.memory_budget(BUDGET):
        yield


# ----------------------------------------------------------------------------- geometry


@dataclass(frozen=True)
class Geometry:
    """A conv configuration reduced to its spatial numbers (valid unless mutated)."""

    op: str
    channels_last: bool
    padding: str
    spatial: tuple
    kernel: tuple
    strides: tuple
    dilations: tuple
    explicit: tuple          # (before, after) per spatial dim, read when padding is EXPLICIT
    batch: int
    channels: int
    out_channels: int        # dense: the filter's output channels; depthwise: the multiplier

    @property
    def info(self):
        return CONV_OPS[self.op]

    @property
    def rank(self):
        return self.info.num_spatial + 2

    @property
    def feature(self):
        return -1 if self.channels_last else 1

    def effective(self):
        return [(k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations)]

    def pads(self):
        if self.padding == "EXPLICIT":
            return self.explicit
        if self.padding == "VALID":
            return ((0, 0),) * len(self.spatial)
        pads = []
        for n, s, e in zip(self.spatial, self.strides, self.effective()):
            total = max(0, (-(-n // s) - 1) * s + e - n)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)

    def fits(self):
        """False when a padded input is shorter than the dilated filter (no valid window)."""
        return all(n + b + a >= e for n, (b, a), e in zip(self.spatial, self.pads(),
                                                          self.effective()))

    def out_spatial(self):
        return [(n + b + a - e) // s + 1 for n, (b, a), e, s
                in zip(self.spatial, self.pads(), self.effective(), self.strides)]

    def activation(self, spatial, channels):
        if self.channels_last:
            return (self.batch, *spatial, channels)
        return (self.batch, channels, *spatial)

    def shapes(self):
        """(input, filter, out_backprop) shapes."""
        c, o = self.channels, self.out_channels
        out_ch = c * o if self.info.depthwise else o
        return (self.activation(self.spatial, c), (*self.kernel, c, o),
                self.activation(self.out_spatial(), out_ch))

    def full(self, values):
        return [1, *values, 1] if self.channels_last else [1, 1, *values]

    def attrs(self):
        attrs = {"strides": self.full(self.strides), "dilations": self.full(self.dilations),
                 "padding": self.padding}
        if self.info.has_data_format:
            fmt = "NHWC" if self.channels_last else "NCHW"
            attrs["data_format"] = fmt if self.rank == 4 else fmt.replace("H", "DH")
        if self.padding == "EXPLICIT":
            pairs = [(0, 0), *self.explicit, (0, 0)] if self.channels_last else \
                [(0, 0), (0, 0), *self.explicit]
            attrs["explicit_paddings"] = [p for pair in pairs for p in pair]
        return attrs

    def reference(self, x, w, dy):
        args = (self.strides, self.dilations, self.pads(), self.channels_last)
        kind, dense = self.info.kind, not self.info.depthwise
        with np.errstate(all="ignore"):
            if kind == "forward":
                return (conv_forward_ref if dense else depthwise_forward_ref)(x, w, *args)
            if kind == "input":
                return (conv_backprop_input_ref if dense else depthwise_backprop_input_ref)(
                    dy, w, x.shape, *args)
            return (conv_backprop_filter_ref if dense else depthwise_backprop_filter_ref)(
                x, dy, w.shape, *args)


@dataclass
class Case:
    """The arrays of a valid configuration, in the op's input order, and their geometry."""

    geometry: Geometry
    x: np.ndarray
    w: np.ndarray
    dy: np.ndarray
    sizes_dtype: type

    def inputs(self, x=None, w=None, dy=None, sizes=None):
        x, w, dy = (self.x if x is None else x), (self.w if w is None else w), \
            (self.dy if dy is None else dy)
        info = self.geometry.info
        arrays = [x, w] if info.kind == "forward" else [x, w, dy]
        if info.sizes_input >= 0:
            arrays[info.sizes_input] = (np.array(arrays[info.sizes_input].shape,
                                                 self.sizes_dtype) if sizes is None else sizes)
        return arrays

    @property
    def carrier(self):
        """The input NaN/Inf may sit in without meeting padding zeros: the math must then
        match the reference exactly (0 * inf in padding is an artefact of zero-padding)."""
        return {"forward": "x", "input": "dy", "filter": "x"}[self.geometry.info.kind]

    @property
    def sizes_name(self):
        return {"input": "x", "filter": "w"}[self.geometry.info.kind]


@st.composite
def cases(draw, op):
    info = CONV_OPS[op]
    n = info.num_spatial
    padding = draw(st.sampled_from(["VALID", "SAME"] + ["EXPLICIT"] * info.has_explicit))
    kernel = tuple(draw(st.integers(1, 3 if n == 2 else 2)) for _ in range(n))
    dilations = tuple(draw(st.integers(1, 2)) for _ in range(n))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(n))
    explicit = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(n))
    spatial = []
    for k, d, (b, a) in zip(kernel, dilations, explicit):
        pads = b + a if padding == "EXPLICIT" else 0
        low = 1 if padding == "SAME" else max(1, (k - 1) * d + 1 - pads)
        spatial.append(draw(st.integers(low, low + (3 if n == 2 else 2))))
    geometry = Geometry(op, draw(st.booleans()) if info.has_data_format else True, padding,
                        tuple(spatial), kernel, strides, dilations, explicit,
                        draw(st.integers(1, 2)), draw(st.integers(2, 3)), draw(st.integers(1, 3)))
    dtype = draw(st.sampled_from([np.float32, np.float32, np.float64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x, w, dy = (rng.standard_normal(s).astype(dtype) for s in geometry.shapes())
    sizes_dtype = draw(st.sampled_from([np.int32, np.int64])) \
        if op == "Conv3DBackpropInputV2" else np.int32
    return Case(geometry, x, w, dy, sizes_dtype)


# ----------------------------------------------------------------------------- outcomes


@dataclass
class Expect:
    """What a call may end in: the reference result and/or some typed errors."""

    result: object = None        # the reference result (None: no result is right)
    errors: tuple = ()           # typed errors that are acceptable answers
    zeros_ok: bool = False       # an all-zero result is right (an input has an empty dim)
    nan_exact: bool = True       # NaN/Inf positions must match the reference exactly


def geometry_outcome(draw, case, geometry):
    """(inputs, outcome) of the case's arrays run under (mutated) `geometry`'s attrs.

    Half of the time a gradient op gets an out_backprop resized to fit the new geometry.
    """
    dy = case.dy
    if geometry.info.kind != "forward" and geometry.fits() and draw(st.booleans()):
        shape = geometry.shapes()[2]
        if math.prod(shape) <= 4096:
            dy = np.random.default_rng(1).standard_normal(shape).astype(dy.dtype)
    inputs = case.inputs(dy=dy)
    if not geometry.fits():
        return inputs, Expect(errors=(IAE,), zeros_ok=True)
    huge = any(v > HUGE for v in (*geometry.effective(), *sum(geometry.pads(), ())))
    out = geometry.out_spatial()
    if geometry.info.kind == "forward":
        out_ch = case.w.shape[-1] * (case.x.shape[geometry.feature]
                                     if geometry.info.depthwise else 1)
        if math.prod(out) * case.x.shape[0] * out_ch * case.x.itemsize > BUDGET:
            return inputs, Expect(errors=(RE, IAE))
    elif list(out) != [dy.shape[d] for d in _spatial_positions(geometry)]:
        return inputs, Expect(errors=(IAE,))
    return inputs, Expect(result=geometry.reference(case.x, case.w, dy), errors=(RE,) * huge)


# ----------------------------------------------------------------------------- mutations


def _spatial_positions(g):
    return format_dims(g.attrs().get("data_format", "NDHWC"), g.rank)[2]


def mutate_window(draw, case):
    """A stride or dilation entry set to an odd value, spatial or batch/channel."""
    g = case.geometry
    attr = draw(st.sampled_from(["strides", "dilations"]))
    position = draw(st.integers(0, g.rank - 1))
    value = draw(st.sampled_from(ODD_INTS))
    attrs = g.attrs()
    attrs[attr] = list(attrs[attr])
    attrs[attr][position] = value
    spatial = _spatial_positions(g)
    if position not in spatial:       # batch or channel: must be 1
        return case.inputs(), attrs, Expect(errors=(IAE, errors.UnimplementedError))
    if value <= 0:
        return case.inputs(), attrs, Expect(errors=(IAE,))
    i = spatial.index(position)
    values = list(getattr(g, attr))
    values[i] = value
    inputs, expect = geometry_outcome(draw, case, replace(g, **{attr: tuple(values)}))
    return inputs, attrs, expect


def mutate_attr_length(draw, case):
    g = case.geometry
    attr = draw(st.sampled_from(["strides", "dilations"]))
    length = draw(st.sampled_from([n for n in (0, 1, 3, 4, 5, 6, 8) if n != g.rank]))
    attrs = g.attrs()
    attrs[attr] = [1] * length
    return case.inputs(), attrs, Expect(errors=(IAE, ValueError))


def mutate_sizes(draw, case):
    """The sizes vector (input_sizes/filter_sizes) made hostile."""
    g = case.geometry
    sizes = case.inputs()[g.info.sizes_input]
    kind = draw(st.sampled_from(["negative", "huge", "length", "dtype", "rank2", "hw"]))
    if kind == "hw" and g.op != "Conv2DBackpropInput":
        kind = "length"
    attrs = g.attrs()
    if kind in ("negative", "huge"):
        sizes = sizes.copy()
        big = 2**62 if sizes.dtype == np.int64 else 2**31 - 1
        sizes[draw(st.integers(0, len(sizes) - 1))] = draw(st.sampled_from(
            [-1, -2, -(2**31)] if kind == "negative" else [big, big // 2 + 1]))
        return case.inputs(sizes=sizes), attrs, Expect(errors=(IAE, RE))
    if kind == "length":
        length = draw(st.sampled_from([n for n in (0, 1, 3, 5, 6) if n != g.rank]))
        sizes = np.resize(sizes, length)
        return case.inputs(sizes=sizes), attrs, Expect(errors=(IAE,))
    if kind == "hw":          # Conv2DBackpropInput's [height, width] form: valid
        return case.inputs(sizes=np.array(g.spatial, np.int32)), attrs, \
            Expect(result=g.reference(case.x, case.w, case.dy))
    if kind == "rank2":
        return case.inputs(sizes=sizes.reshape(1, -1)), attrs, Expect(errors=(IAE,))
    dtype = draw(st.sampled_from([np.float32, np.int64, np.int32, np.uint8]))
    valid = dtype == np.int32 or (dtype == np.int64 and g.op == "Conv3DBackpropInputV2")
    expect = Expect(result=g.reference(case.x, case.w, case.dy)) if valid else \
        Expect(errors=(TypeError, IAE))
    return case.inputs(sizes=sizes.astype(dtype)), attrs, expect


def _resized(array, axis, size):
    shape = list(array.shape)
    shape[axis] = size
    return np.random.default_rng(0).standard_normal(shape).astype(array.dtype)


def mutate_channels(draw, case):
    """One channel count made inconsistent with the others."""
    g = case.geometry
    f = g.feature
    targets = ["w_in"] if g.info.kind == "forward" else ["x", "w_in", "w_out", "dy"]
    target = draw(st.sampled_from(targets))
    if target == "x":
        new = dict(x=_resized(case.x, f, g.channels + 1))
    elif target == "w_in":
        new = dict(w=_resized(case.w, -2, g.channels + 1))
    elif target == "w_out":
        new = dict(w=_resized(case.w, -1, g.out_channels + 1))
    else:
        new = dict(dy=_resized(case.dy, f, case.dy.shape[f] + 1))
    return case.inputs(**new), g.attrs(), Expect(errors=(IAE,))


def mutate_out_backprop(draw, case):
    """out_backprop one or two positions too long in one spatial dim."""
    g = case.geometry
    axis = draw(st.sampled_from(_spatial_positions(g)))
    dy = _resized(case.dy, axis, case.dy.shape[axis] + draw(st.integers(1, 2)))
    return case.inputs(dy=dy), g.attrs(), Expect(errors=(IAE,))


def mutate_explicit(draw, case):
    """explicit_paddings negative, huge, of the wrong length, on batch/channel, or misplaced."""
    g = case.geometry
    kind = draw(st.sampled_from(["negative", "length", "batch_channel", "not_explicit",
                                 "values"]))
    attrs = g.attrs()
    if kind == "not_explicit":
        attrs["padding"] = draw(st.sampled_from(["SAME", "VALID"]))
        attrs["explicit_paddings"] = [0, 0] + [1] * (2 * g.rank - 4) + [0, 0]
        return case.inputs(), attrs, Expect(errors=(IAE,))
    attrs["padding"] = "EXPLICIT"
    if kind == "length":
        n = draw(st.sampled_from([m for m in (0, 2, 4, 6, 10) if m != 2 * g.rank]))
        attrs["explicit_paddings"] = [0] * n
        return case.inputs(), attrs, Expect(errors=(IAE,))
    pads = [(0, 0)] * g.rank
    spatial = _spatial_positions(g)
    if kind == "negative":
        value = draw(st.sampled_from([-1, -(2**31)]))
        pads[draw(st.sampled_from(spatial))] = (value, 0) if draw(st.booleans()) else (0, value)
    if kind == "batch_channel":
        where = draw(st.sampled_from([p for p in range(g.rank) if p not in spatial]))
        pads[where] = (draw(st.sampled_from([1, 2**40])), 0)
    if kind in ("negative", "batch_channel"):
        attrs["explicit_paddings"] = [p for pair in pads for p in pair]
        return case.inputs(), attrs, Expect(errors=(IAE,))
    explicit = tuple((draw(st.sampled_from([0, 1, 3, 0, 2**40, 2**62])),
                      draw(st.sampled_from([0, 2, 1, 2**40]))) for _ in spatial)
    for p, pair in zip(spatial, explicit):
        pads[p] = pair
    attrs["explicit_paddings"] = [p for pair in pads for p in pair]
    inputs, expect = geometry_outcome(draw, case, replace(g, padding="EXPLICIT",
                                                          explicit=explicit))
    return inputs, attrs, expect


def mutate_empty(draw, case):
    """One dim of one input (or of the sizes vector) set to zero."""
    g = case.geometry
    inputs = case.inputs()
    i = draw(st.integers(0, len(inputs) - 1))
    if i == g.info.sizes_input:
        sizes = inputs[i].copy()
        sizes[draw(st.integers(0, len(sizes) - 1))] = 0
        inputs[i] = sizes
    else:
        shape = list(inputs[i].shape)
        shape[draw(st.integers(0, len(shape) - 1))] = 0
        inputs[i] = np.zeros(shape, inputs[i].dtype)
    return inputs, g.attrs(), Expect(errors=(IAE,), zeros_ok=True)


def mutate_nonfinite(draw, case):
    """NaN and +-Inf in one data input: IEEE results, never an error or a warning."""
    g = case.geometry
    names = ["x", "w", "dy"] if g.info.kind != "forward" else ["x", "w"]
    if g.info.sizes_input >= 0:
        names.remove(case.sizes_name)
    name = draw(st.sampled_from(names))
    array = getattr(case, name).copy()
    flat = array.reshape(-1)
    for _ in range(draw(st.integers(1, 3))):
        flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from(
            [np.nan, np.inf, -np.inf]))
    expected = g.reference(*(array if n == name else getattr(case, n) for n in ("x", "w", "dy")))
    return (case.inputs(**{name: array}), g.attrs(),
            Expect(result=expected, nan_exact=name == case.carrier))


def mutate_rank(draw, case):
    """One data input with a dim too many or too few."""
    g = case.geometry
    inputs = case.inputs()
    i = draw(st.sampled_from([j for j in range(len(inputs)) if j != g.info.sizes_input]))
    a = inputs[i]
    inputs[i] = a[..., None] if draw(st.booleans()) else a.reshape(a.shape[:-2] + (-1,))
    return inputs, g.attrs(), Expect(errors=(IAE,))


def mutate_dtype(draw, case):
    """Mixed float types, or integer data where the op may or may not allow int32."""
    g = case.geometry
    inputs = case.inputs()
    data = [j for j in range(len(inputs)) if j != g.info.sizes_input]
    if draw(st.booleans()):
        j = draw(st.sampled_from(data))
        other = np.float64 if inputs[j].dtype == np.float32 else np.float32
        inputs[j] = inputs[j].astype(other)
        return inputs, g.attrs(), Expect(errors=(TypeError, IAE))
    ints = {name: np.round(getattr(case, name) * 2).astype(np.int32) for name in ("x", "w", "dy")}
    allowed = "int32" in [t.name for t in get_op_def(g.op).attr_def("T").allowed_values]
    inputs = case.inputs(**ints)
    if not allowed:
        return inputs, g.attrs(), Expect(errors=(TypeError, IAE, errors.NotFoundError))
    return inputs, g.attrs(), Expect(result=g.reference(ints["x"], ints["w"], ints["dy"]))


MUTATIONS = {
    "window": mutate_window, "attr_length": mutate_attr_length, "sizes": mutate_sizes,
    "channels": mutate_channels, "out_backprop": mutate_out_backprop,
    "explicit": mutate_explicit, "empty": mutate_empty, "nonfinite": mutate_nonfinite,
    "rank": mutate_rank, "dtype": mutate_dtype,
}


def applicable(op):
    info = CONV_OPS[op]
    names = ["window", "attr_length", "channels", "empty", "nonfinite", "rank", "dtype"]
    names += ["sizes"] * (info.sizes_input >= 0)
    names += ["out_backprop"] * (info.kind != "forward")
    names += ["explicit"] * info.has_explicit
    return names


# ----------------------------------------------------------------------------- running

_LIBRARY = tuple(os.path.join(ROOT, d)
                 + os.sep for d in ("graphops", "registry"))


def _raised_by_graphops(exc):
    """True when graphops itself raised `exc` (a TypeError/ValueError while building)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(_LIBRARY)


def op_kwargs(op, arrays):
    return dict(zip((a.name for a in get_op_def(op).input_arg), arrays))


def run_eager(op, inputs, attrs):
    return None, getattr(gp.raw_ops, op)(**op_kwargs(op, inputs), **attrs)


def run_graph(op, inputs, attrs, known):
    """(static shape, value): sizes as a Const when `known`, else only placeholders."""
    sizes = CONV_OPS[op].sizes_input
    with gp.Graph().as_default() as g:
        tensors = [gp.constant(a) if known and i == sizes else
                   gp.placeholder(a.dtype, a.shape if known else None)
                   for i, a in enumerate(inputs)]
        out = getattr(gp.raw_ops, op)(**op_kwargs(op, tensors), **attrs)
        feeds = {t: a for t, a in zip(tensors, inputs) if t.op.type == "Placeholder"}
    with gp.Session(graph=g) as sess:
        return out.shape, sess.run(out, feeds)


def check(expect, call, op, inputs):
    """Runs `call` (warnings are errors) and checks its outcome against `expect`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            static, got = call()
    except Exception as exc:  # noqa: BLE001 - every failure is classified
        allowed = isinstance(exc, expect.errors) and not isinstance(exc, errors.InternalError)
        if allowed and (isinstance(exc, errors.OpError) or _raised_by_graphops(exc)):
            return type(exc).__name__
        raise AssertionError(f"{op}: unexpected {type(exc).__name__}: {exc}\n"
                             f"{''.join(traceback.format_tb(exc.__traceback__)[-3:])}") from exc
    sizes = CONV_OPS[op].sizes_input
    dtype = next(a.dtype for i, a in enumerate(inputs) if i != sizes)
    assert isinstance(got, np.ndarray) and got.dtype == dtype, (op, type(got), dtype)
    if static is not None and static.rank is not None:
        assert static.is_compatible_with(gp.TensorShape(list(got.shape))), (static, got.shape)
    if expect.zeros_ok and not np.any(got):
        return "zeros"
    assert expect.result is not None, f"{op}: expected one of {expect.errors}, got a result"
    compare(got, expect.result, expect.nan_exact)
    return "result"


def compare(got, expected, nan_exact):
    """`got` equals the float64 reference: NaN/Inf where it has them, values within tol."""
    assert got.shape == expected.shape, (got.shape, expected.shape)
    tol = RTOL[got.dtype.name]
    got = got.astype(np.float64)
    bad = ~np.isfinite(expected)
    if nan_exact:
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_array_equal(got[np.isinf(expected)], expected[np.isinf(expected)])
    else:      # 0 * inf in zero padding may add NaNs; the reference's NaNs stay NaN
        assert np.all(~np.isfinite(got[bad])), "a NaN/Inf of the reference vanished"
        bad |= ~np.isfinite(got)
    finite = expected[~bad]
    np.testing.assert_allclose(got[~bad], finite, rtol=0,
                               atol=tol * max(1.0, np.abs(finite).max(initial=0)))


# Known defects, reported to the kernel's owner: remove an entry once it is fixed.
KNOWN = {}    # (op, mutation) -> reason, for defects not fixed yet


@pytest.mark.parametrize("op, mutation", [
    pytest.param(op, m, marks=[pytest.mark.xfail(reason=KNOWN[op, m], strict=False)]
                 if (op, m) in KNOWN else [])
    for op in sorted(CONV_OPS) for m in applicable(op)])
def test_hostile_mutation_gives_typed_error_or_correct_result(op, mutation):
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not EXPLORE,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        case = data.draw(cases(op))
        inputs, attrs, expect = MUTATIONS[mutation](data.draw, case)
        event(check(expect, lambda: run_eager(op, inputs, attrs), op, inputs))
        check(expect, lambda: run_graph(op, inputs, attrs, known=True), op, inputs)
        check(expect, lambda: run_graph(op, inputs, attrs, known=False), op, inputs)

    run()
