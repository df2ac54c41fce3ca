"""Batched matrix product kernels (BatchMatMulV2/V3, Einsum) for the CPU and the GPU, written
once against `ctx.xp`. float16/bfloat16 multiply in float32 and are rounded once; integer
products wrap. Einsum, the ellipsis dims broadcast beforehand and its labels renamed to
letters, runs as TF's kernel runs it where it can: two operands as one batched matrix product
(their axes transposed into batch, free and contracted groups); other equations (a label
repeated in a term, or summed within one operand) run `xp.einsum`, with path optimisation on
NumPy. Cross: the cross products of 3-vectors (integers wrap)."""

import math
import string

import numpy as np

from graphops.kernels.support.kernel_util import DEVICES, computable_types
from graphops.kernels.support.parallelism import matmul
from graphops.kernels.ops.math import HALF_TYPES, broadcast_shape, float32_if_half
from graphops.registry import dtypes
from graphops.registry.errors import FailedPreconditionError, InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.op_defs.linalg import parse_einsum, split_ellipsis
from graphops.registry.tensor_shape import shape_str


def _adjoint(xp, m):
    m = xp.swapaxes(m, -1, -2)
    return xp.conj(m) if m.dtype.kind == "c" else m


def matmul_batch_shape(x, y):
    """The broadcast batch dims of two stacks of matrices, checked as TF's batched MatMul
    and MatrixTriangularSolve check them."""
    for i, m in enumerate((x, y)):
        if m.ndim < 2:
            raise InvalidArgumentError(f"In[{i}] ndims must be >= 2: {m.ndim}")
    batch = broadcast_shape(x.shape[:-2], y.shape[:-2])
    if batch is None:
        raise InvalidArgumentError("In[0] and In[1] must have compatible batch dimensions: "
                                   f"{shape_str(x.shape)} vs. {shape_str(y.shape)}")
    return batch


def _cast(m, dtype):
    """`m` as `dtype` the way Cast does it: complex to real keeps the real part."""
    if m.dtype.kind == "c" and dtype.kind != "c":
        m = m.real
    return m.astype(dtype, copy=False)


class BatchMatMulOp(OpKernel):
    """x @ y over broadcast batch dims; adj_x / adj_y take conjugate transposes first. Both
    operands are computed in the output type (float32 for half types). The checks run once
    per (shapes, memory budget) in a row."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._adj_x, self._adj_y = ctx.get_attr("adj_x"), ctx.get_attr("adj_y")
        self.matmul = (self._adj_x, self._adj_y)      # for real matrices: transposes
        dtype = ctx.output_dtypes[0]
        self._compute_dtype = np.dtype(np.float32 if dtype in (dtypes.float16, dtypes.bfloat16)
                                       else dtype.np_dtype)
        self._out_dtype = dtype.np_dtype

    def compute(self, ctx):
        x, y = ctx.inputs
        xp = ctx.xp
        self.checked_once((x.shape, y.shape),
                          lambda: self._check(ctx, x, y))
        compute_dtype = self._compute_dtype
        if x.dtype != compute_dtype:
            x = _cast(x, compute_dtype)
        if y.dtype != compute_dtype:
            y = _cast(y, compute_dtype)
        if self._adj_x:
            x = _adjoint(xp, x)
        if self._adj_y:
            y = _adjoint(xp, y)
        z = matmul(xp, x, y)
        ctx.set_output(0, z if z.dtype == self._out_dtype else z.astype(self._out_dtype))

    def prepare(self, ctx):
        """The product itself, for real operands of the output type."""
        x, y = ctx.inputs
        self._check(ctx, x, y)
        if ctx.xp is not np or not x.dtype == y.dtype == self._out_dtype or x.dtype.kind == "c":
            return None
        adj_x, adj_y = self._adj_x, self._adj_y
        if adj_x or adj_y:
            return lambda inputs: [matmul(np, _adjoint(np, inputs[0]) if adj_x else inputs[0],
                                          _adjoint(np, inputs[1]) if adj_y else inputs[1])]
        return lambda inputs: [matmul(np, *inputs)]

    def _check(self, ctx, x, y):
        batch = matmul_batch_shape(x, y)
        rows, inner_x = x.shape[-2:][::-1] if self._adj_x else x.shape[-2:]
        inner_y, cols = y.shape[-2:][::-1] if self._adj_y else y.shape[-2:]
        if inner_x != inner_y:
            raise InvalidArgumentError(
                f"Matrix size-incompatible: In[0]: {shape_str(x.shape)}, In[1]: "
                f"{shape_str(y.shape)}")
        ctx.check_allocation(list(batch) + [rows, cols], self._out_dtype)


register_kernel("BatchMatMulV2", DEVICES,
                type_constraints={"T": computable_types("BatchMatMulV2")})(BatchMatMulOp)
register_kernel("BatchMatMulV3", DEVICES, type_constraints={
    attr: computable_types("BatchMatMulV3", attr) for attr in ("Ta", "Tb", "Tout")})(
    type("BatchMatMulV3Op", (BatchMatMulOp,), {}))


# ----------------------------------------------------------------------------- Einsum

_LETTERS = string.ascii_letters
_EINSUM_TYPES = [t for t in dtypes.type_set("numbertype") if not t.is_quantized]


@register_kernel("Einsum", DEVICES, type_constraints={"T": _EINSUM_TYPES})
class EinsumOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        inputs, output = parse_einsum(ctx.get_attr("equation"), len(ctx.input_dtypes))
        labels = sorted(set("".join(inputs + [output]).replace(".", "")))
        if len(labels) > len(_LETTERS) // 2:
            raise InvalidArgumentError(f"Einsum equation has more than {len(_LETTERS) // 2} "
                                       f"labels: {ctx.get_attr('equation')}")
        self._letter = dict(zip(labels, _LETTERS))    # the rest name broadcast dims
        self._input_parts = [split_ellipsis(s) for s in inputs]
        self._output_parts = split_ellipsis(output)
        # the einsum terms' letters before and after the broadcast dims' letters
        self._input_letters = [(self._letters(before), self._letters(after))
                               for before, after, _ in self._input_parts]
        self._output_letters = (self._letters(self._output_parts[0]),
                                self._letters(self._output_parts[1]))

    def _letters(self, labels):
        return "".join(self._letter[c] for c in labels)

    def compute(self, ctx):
        xp, dtype, operands = ctx.xp, ctx.output_dtype(0), list(ctx.inputs)
        broadcasts, subscripts, matmul, diagonal = self.checked_once(
            tuple(x.shape for x in operands), lambda: self._plan(ctx, operands))
        for i, broadcast in enumerate(broadcasts):
            x = operands[i]
            if broadcast is not None:        # this operand's batch dims broadcast in place
                x = xp.broadcast_to(x.reshape(broadcast[0]), broadcast[1])
            operands[i] = float32_if_half(x, dtype)
        if matmul is not None:
            result = _as_matmul(xp, matmul, *operands)
        else:
            kwargs = {"optimize": True} if xp is np else {}
            result = xp.einsum(subscripts, *operands, **kwargs)
        if diagonal is not None:            # repeated output labels: a diagonal embedding
            result = _embed_diagonal(xp, result, *diagonal)
        ctx.set_output(0, result.astype(dtype.np_dtype, copy=False))

    def prepare(self, ctx):
        """The batched product itself (`_as_matmul`), for two host operands of the output
        type (no half type) whose ellipsis dims, if any, are already the broadcast ones,
        and that need no diagonal."""
        operands, dtype = list(ctx.inputs), ctx.output_dtype(0)
        broadcasts, _, plan, diagonal = self._plan(ctx, operands)
        if (ctx.xp is not np or plan is None or diagonal is not None or dtype in HALF_TYPES
                or any(b is not None and not b[0] == b[1] == x.shape
                       for b, x in zip(broadcasts, operands))
                or any(x.dtype != dtype.np_dtype for x in operands)):
            return None
        return lambda inputs: [_as_matmul(np, plan, *inputs)]

    def _plan(self, ctx, operands):
        """What a run on operands of these shapes does, checked as TF checks them: per
        operand, the (reshaped, broadcast) shapes of its ellipsis dims or None; the einsum
        subscripts; the batched product (`_matmul_plan`) or None; the diagonal embedding's
        (labels, output labels, shape) or None."""
        dims, batch = {}, []
        for i, (x, (before, after, has_ellipsis)) in enumerate(zip(operands,
                                                                   self._input_parts)):
            named = len(before) + len(after)
            if (x.ndim < named) if has_ellipsis else (x.ndim != named):
                raise InvalidArgumentError(
                    f"Expected input {i} to have rank {named} but got: {x.ndim}")
            axes = list(enumerate(before)) + [(x.ndim - len(after) + k, label)
                                              for k, label in enumerate(after)]
            for axis, label in axes:
                if dims.setdefault(label, x.shape[axis]) != x.shape[axis]:
                    raise InvalidArgumentError(
                        f"Expected dimension {dims[label]} at axis {axis} of the input shaped "
                        f"{shape_str(x.shape)} but got dimension {x.shape[axis]}")
            if has_ellipsis:
                batch = broadcast_shape(batch, x.shape[len(before):x.ndim - len(after)])
                if batch is None:
                    raise InvalidArgumentError(
                        f"Invalid broadcasting dimensions: {shape_str(operands[0].shape)} vs. "
                        f"{shape_str(operands[1].shape)}")
        out_ellipsis = self._output_parts[2]
        if batch and not out_ellipsis:
            raise InvalidArgumentError(
                f"Output contains {len(batch)} broadcasting dimension(s) but no ellipsis (...) "
                "was found in the output subscripts.")
        batch_letters = _LETTERS[len(_LETTERS) // 2:][:len(batch)]
        terms, broadcasts = [], []
        for x, (before, after, has_ellipsis), (head, tail) in zip(
                operands, self._input_parts, self._input_letters):
            broadcast = None
            if has_ellipsis:
                rank = x.ndim - len(before) - len(after)
                shape = x.shape[:len(before)] + (1,) * (len(batch) - rank) + \
                    x.shape[len(before):]
                broadcast = (shape, shape[:len(before)] + tuple(batch) +
                             shape[len(before) + len(batch):])
            broadcasts.append(broadcast)
            terms.append(head + (batch_letters if has_ellipsis else "") + tail)
        head, tail = self._output_letters
        out_labels = head + (batch_letters if out_ellipsis else "") + tail
        letter_dims = {self._letter[c]: d for c, d in dims.items()}
        letter_dims.update(zip(batch_letters, batch))
        shape = [letter_dims[c] for c in out_labels]
        ctx.check_allocation(shape, ctx.output_dtype(0).np_dtype)
        unique = "".join(dict.fromkeys(out_labels))
        matmul = _matmul_plan(*terms, unique, letter_dims) if len(terms) == 2 else None
        diagonal = (unique, out_labels, shape) if unique != out_labels else None
        return broadcasts, f"{','.join(terms)}->{unique}", matmul, diagonal


def _matmul_plan(a, b, output, letter_dims):
    """How the einsum `a,b->output` is one batched matrix product, as TF's Einsum kernel
    computes it: (a's axes in the order batch, a's free, contracted; a as [stack, rows,
    inner]; b's axes in the order batch, contracted, b's free; b as [stack, inner, cols];
    the product's shape; its axes in the output's order, or None where they are in it).
    None where a label repeats within a term or the output, or appears in one term only
    and not in the output (a sum within one operand)."""
    if len(set(a)) != len(a) or len(set(b)) != len(b) or len(set(output)) != len(output):
        return None
    if any(c not in b and c not in output for c in a) or \
            any(c not in a and c not in output for c in b):
        return None
    batch = [c for c in output if c in a and c in b]
    a_free = [c for c in output if c in a and c not in b]
    b_free = [c for c in output if c in b and c not in a]
    contracted = [c for c in a if c in b and c not in output]
    stack, rows, inner, cols = (math.prod(letter_dims[c] for c in labels)
                                for labels in (batch, a_free, contracted, b_free))
    product = batch + a_free + b_free
    to_output = [product.index(c) for c in output]
    return ([a.index(c) for c in batch + a_free + contracted], (stack, rows, inner),
            [b.index(c) for c in batch + contracted + b_free], (stack, inner, cols),
            [letter_dims[c] for c in product],
            None if to_output == sorted(to_output) else to_output)


def _as_matmul(xp, plan, x, y):
    """The einsum of `x` and `y` by its `_matmul_plan`: both transposed and reshaped to
    stacks of matrices, multiplied, and the product's axes put in the output's order."""
    order_x, stack_x, order_y, stack_y, shape, to_output = plan
    product = matmul(xp, x.transpose(order_x).reshape(stack_x),
                     y.transpose(order_y).reshape(stack_y)).reshape(shape)
    return product if to_output is None else xp.ascontiguousarray(product.transpose(to_output))


def _embed_diagonal(xp, values, unique, labels, shape):
    """A zero tensor of `shape` (axes named by `labels`, some repeated) whose entries with
    equal indices along equally named axes hold `values` (axes named by `unique`)."""
    out = xp.zeros(shape, values.dtype)
    index = {}
    for k, label in enumerate(unique):
        index[label] = xp.arange(values.shape[k]).reshape(
            [1] * k + [-1] + [1] * (len(unique) - k - 1))
    out[tuple(index[label] for label in labels)] = values
    return out


@register_kernel("Cross", DEVICES, type_constraints={"T": computable_types("Cross")})
class CrossOp(OpKernel):
    """a x b along the last dim, with TF's checks (FailedPrecondition for a last dim
    other than 3)."""

    def compute(self, ctx):
        a, b = ctx.inputs
        if a.shape != b.shape:
            raise InvalidArgumentError(f"Both inputs must be of same shape: "
                                       f"{shape_str(a.shape)} vs. {shape_str(b.shape)}")
        if a.ndim < 1:
            raise InvalidArgumentError(f"Input must be at least 1D{shape_str(a.shape)}")
        if a.shape[-1] != 3:
            raise FailedPreconditionError("Cross-products are only defined for 3-element "
                                          "vectors.")
        x, y = (m.astype(np.float32) if m.dtype == dtypes.bfloat16.np_dtype else m
                for m in (a, b))
        with np.errstate(over="ignore"):
            out = ctx.xp.stack([x[..., 1] * y[..., 2] - x[..., 2] * y[..., 1],
                                x[..., 2] * y[..., 0] - x[..., 0] * y[..., 2],
                                x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]], axis=-1)
        ctx.set_output(0, out.astype(a.dtype, copy=False))
