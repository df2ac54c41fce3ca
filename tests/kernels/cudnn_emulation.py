"""NVIDIA's cuDNN frontend (``import cudnn``), emulated on the CPU for ``cudnn_convs``'s tests.

The emulation keeps cuDNN's contract where the conv path could get it wrong: a graph's
tensors are (dims, strides) over raw memory, read and written through the device
pointers ``execute`` is given (here the NumPy arrays' addresses), so a wrong stride, dim
order or data type shows as a wrong result; ``validate`` checks the conv arithmetic
cuDNN checks (output sizes, channel groups); ``check_support`` takes only the layouts
cuDNN's engines take (fully packed NCHW or NHWC data, KCRS or KRSC filters). The sums are
a slow NumPy conv in cuDNN's own terms ([N, C, *S] data, [K, C/groups, *R] filters,
padding before and after), in float64, rounded once to the tensors' type.
"""

import ctypes
import enum
import itertools
import sys

import numpy as np
from numpy.lib.stride_tricks import as_strided

data_type = enum.Enum("data_type", "HALF FLOAT DOUBLE")
numerical_note = enum.Enum("numerical_note", "TENSOR_CORE DOWN_CONVERT_INPUTS "
                           "REDUCED_PRECISION_REDUCTION NONDETERMINISTIC")
behavior_note = enum.Enum("behavior_note", "RUNTIME_COMPILATION")
heur_mode = enum.Enum("heur_mode", "A B FALLBACK")
_NUMPY = {data_type.HALF: np.float16, data_type.FLOAT: np.float32,
          data_type.DOUBLE: np.float64}


class cudnnGraphNotSupportedError(Exception):
    """No engine takes the graph."""


def create_handle():
    return object()


def set_stream(handle, stream):
    assert isinstance(stream, int)


class tensor:
    def __init__(self, dim, stride, data_type):
        self.dim, self.stride, self.data_type, self.output = list(dim), list(stride), \
            data_type, False

    def set_output(self, output):
        self.output = output
        return self

    def set_data_type(self, kind):
        self.data_type = kind
        return self

    def set_dim(self, dim):
        self.dim = list(dim)
        return self

    def set_stride(self, stride):
        self.stride = list(stride)
        return self


class pygraph:
    """One conv graph: built as cuDNN's are, run on the CPU."""

    unsupported = ()       # data types whose graphs ``check_support`` refuses (a test sets it)
    unbuildable = {1}      # plans that fail to build
    wrong_plans = ()       # plans whose sums come out 1% high (a test sets it)
    failing_plans = ()     # plans that fail as they run (a test sets it)
    executions = []        # the plan of every run

    def __init__(self, io_data_type, intermediate_data_type, compute_data_type, handle):
        assert handle is not None
        self.handle = handle
        self.io = io_data_type
        self.compute = compute_data_type
        assert compute_data_type == (data_type.DOUBLE if io_data_type == data_type.DOUBLE
                                     else data_type.FLOAT), "float16 accumulates in float32"
        self.built = set()
        self.conv = None
        self.deselected = set()
        self.plans_created = False

    def tensor(self, name, dim, stride, data_type):
        return tensor(dim, stride, data_type)

    def _op(self, kind, a, b, pre_padding, post_padding, stride, dilation, compute_data_type):
        assert self.conv is None, "one conv per graph"
        assert compute_data_type == self.compute
        out = tensor([], [], self.io)
        self.conv = (kind, a, b, out, pre_padding, post_padding, stride, dilation)
        return out

    def conv_fprop(self, image, weight, **geometry):
        return self._op("fprop", image, weight, **geometry)

    def conv_dgrad(self, loss, filter, **geometry):
        return self._op("dgrad", loss, filter, **geometry)

    def conv_wgrad(self, image, loss, **geometry):
        return self._op("wgrad", image, loss, **geometry)

    def validate(self):
        x, w, y = self._roles()
        pre, post, stride, dilation = self.conv[4:]
        assert len(x.dim) in (4, 5) and len(x.dim) == len(w.dim) == len(y.dim)
        assert len(pre) == len(post) == len(stride) == len(dilation) == len(x.dim) - 2
        out = [(s + b + a - d * (k - 1) - 1) // st + 1 for s, k, b, a, st, d
               in zip(x.dim[2:], w.dim[2:], pre, post, stride, dilation)]
        if y.dim != [x.dim[0], w.dim[0], *out] or x.dim[1] % w.dim[1] or w.dim[0] % (
                x.dim[1] // w.dim[1]) or min(pre + post) < 0:
            raise RuntimeError(f"bad conv: x {x.dim} w {w.dim} y {y.dim}")

    def build_operation_graph(self):
        self.validate()

    def deselect_numeric_notes(self, notes):
        assert self.plans_created, "notes filter the plans created so far"
        self.deselected.update(notes)

    def deselect_behavior_notes(self, notes):
        assert self.plans_created, "notes filter the plans created so far"
        self.deselected.update(notes)

    def create_execution_plans(self, modes):
        assert modes
        self.plans_created = True

    def deselect_workspace_greater_than(self, limit):
        assert limit > 0

    def check_support(self):
        x, w, y = self._roles()
        assert {numerical_note.NONDETERMINISTIC, behavior_note.RUNTIME_COMPILATION,
                numerical_note.DOWN_CONVERT_INPUTS,
                numerical_note.REDUCED_PRECISION_REDUCTION} <= self.deselected
        assert (numerical_note.TENSOR_CORE in self.deselected) == (self.io == data_type.FLOAT)
        if (self.io in self.unsupported or not all(_packed(t, data=True) for t in (x, y))
                or not _packed(w, data=False)):
            raise cudnnGraphNotSupportedError("no engine")

    def get_execution_plan_count(self):
        return 3

    def build_plan_at_index(self, index):
        if index in self.unbuildable:
            raise RuntimeError(f"plan {index} does not build")
        self.built.add(index)

    def get_workspace_size_plan_at_index(self, index):
        return 64 * index

    def execute_plan_at_index(self, pack, workspace, index, handle=None):
        assert isinstance(workspace, int) and all(isinstance(p, int) for p in pack.values())
        assert index in self.built and handle is self.handle
        type(self).executions.append(index)
        if index in self.failing_plans:
            raise RuntimeError(f"plan {index} failed")
        kind, a, b, out = self.conv[:4]
        views = {id(t): _view(pack[t], t) for t in (a, b, out)}
        geometry = self.conv[4:]
        if kind == "fprop":
            result = _fprop(views[id(a)], views[id(b)], *geometry)
        elif kind == "dgrad":
            result = _dgrad(views[id(a)], views[id(b)], out.dim, *geometry)
        else:
            result = _wgrad(views[id(a)], views[id(b)], out.dim, *geometry)
        views[id(out)][...] = (result * (1.01 if index in self.wrong_plans else 1)).astype(
            _NUMPY[out.data_type])

    def _roles(self):
        """(x, w, y) of the conv, whichever of them it computes."""
        kind, a, b, out = self.conv[:4]
        return {"fprop": (a, b, out), "dgrad": (out, b, a), "wgrad": (a, out, b)}[kind]


def _packed(t, data):
    """Whether ``t``'s strides lay its [N, C, *S] (or [K, C, *R]) dims out packed, channels
    second (NCHW, KCRS) or last (NHWC, KRSC); size-1 dims may have any stride."""
    n, c, *spatial = range(len(t.dim))
    for order in ([n, c, *spatial], [n, *spatial, c]):
        expected = 1
        for axis in reversed(order):
            if t.dim[axis] != 1 and t.stride[axis] != expected:
                break
            expected *= t.dim[axis]
        else:
            return True
    return False


def _view(pointer, t):
    """The memory at ``pointer`` as ``t``'s dims and strides."""
    dtype = np.dtype(_NUMPY[t.data_type])
    extent = 1 + sum((d - 1) * s for d, s in zip(t.dim, t.stride))
    memory = (ctypes.c_char * (extent * dtype.itemsize)).from_address(pointer)
    flat = np.frombuffer(memory, dtype, count=extent)
    return as_strided(flat, t.dim, [s * dtype.itemsize for s in t.stride])


def _padded(x, pre, post):
    return np.pad(x.astype(np.float64), [(0, 0), (0, 0), *zip(pre, post)])


def _taps(w_dims, out_dims, stride, dilation):
    """(tap, slices of the padded input that tap reads for every output position)."""
    for tap in itertools.product(*(range(k) for k in w_dims[2:])):
        yield tap, (..., *(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s
                           in zip(tap, dilation, out_dims[2:], stride)))


def _grouped(a, groups):
    """[N, C, *S] data as [N, groups, C/groups, *S]."""
    return a.reshape(a.shape[0], groups, a.shape[1] // groups, *a.shape[2:])


def _grouped_filter(w, groups):
    """A [K, C/groups, *R] filter as [groups, K/groups, C/groups, *R], in float64."""
    return w.astype(np.float64).reshape(groups, w.shape[0] // groups, *w.shape[1:])


def _fprop(x, w, pre, post, stride, dilation):
    xp = _padded(x, pre, post)
    groups = x.shape[1] // w.shape[1]
    out = [(s - d * (k - 1) - 1) // st + 1 for s, k, st, d
           in zip(xp.shape[2:], w.shape[2:], stride, dilation)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    wg = _grouped_filter(w, groups)
    for tap, window in _taps(w.shape, y.shape, stride, dilation):
        products = np.einsum("ngc...,gkc->ngk...", _grouped(xp[window], groups),
                             wg[(..., *tap)])
        y += products.reshape(y.shape)
    return y


def _dgrad(dy, w, x_dims, pre, post, stride, dilation):
    groups = x_dims[1] // w.shape[1]
    dx = np.zeros((*x_dims[:2], *(s + b + a for s, b, a in zip(x_dims[2:], pre, post))))
    wg = _grouped_filter(w, groups)
    dyg = _grouped(dy.astype(np.float64), groups)
    for tap, window in _taps(w.shape, dy.shape, stride, dilation):
        products = np.einsum("ngk...,gkc->ngc...", dyg, wg[(..., *tap)])
        dx[window] += products.reshape(dx[window].shape)
    return dx[(..., *(slice(b, b + s) for s, b in zip(x_dims[2:], pre)))]


def _wgrad(x, dy, w_dims, pre, post, stride, dilation):
    xp = _padded(x, pre, post)
    groups = x.shape[1] // w_dims[1]
    dw = np.zeros(w_dims)
    dyg = _grouped(dy.astype(np.float64), groups)
    dyg = dyg.reshape(*dyg.shape[:3], -1)
    for tap, window in _taps(w_dims, dy.shape, stride, dilation):
        patches = _grouped(xp[window], groups)
        sums = np.einsum("ngkp,ngcp->gkc", dyg, patches.reshape(*patches.shape[:3], -1))
        dw[(..., *tap)] = sums.reshape(w_dims[:2])
    return dw


def install(monkeypatch, conv_module):
    """Make ``conv_module`` (``cudnn_convs``) run on this emulation: its session, an empty
    graph cache, and NumPy arrays' addresses as device pointers."""
    monkeypatch.setattr(pygraph, "executions", [])
    monkeypatch.setattr(pygraph, "wrong_plans", ())
    monkeypatch.setattr(pygraph, "failing_plans", ())
    monkeypatch.setattr(pygraph, "unsupported", ())
    monkeypatch.setitem(conv_module._state, "session", (sys.modules[__name__],
                                                        {0: create_handle()}))
    monkeypatch.setattr(conv_module, "_graphs", type(conv_module._graphs)())
    monkeypatch.setattr(conv_module, "device_pointer", lambda a: a.ctypes.data)
