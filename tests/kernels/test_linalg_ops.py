"""BatchMatMulV2/V3 and Einsum: values against explicit loops, broadcasting, adjoints,
static shapes, TF's error messages (build time and run time), gradients (numeric checks
and the op types TF's rules build) and the GPU kernels against the CPU ones."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphops as gp
from graphops.registry.kernel_registry import registered_kernels
from tests.gpu_compare import compare, gpu_types, values
from tests.op_runners import gradient_error_and_types, invalid

R = gp.raw_ops
SETTINGS = settings(max_examples=20, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def reference_batch_matmul(x, y, adj_x, adj_y):
    """Broadcast batch loop, then a triple loop per matrix."""
    if adj_x:
        x = np.conj(np.swapaxes(x, -1, -2))
    if adj_y:
        y = np.conj(np.swapaxes(y, -1, -2))
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    xb = np.broadcast_to(x, batch + x.shape[-2:])
    yb = np.broadcast_to(y, batch + y.shape[-2:])
    rows, inner, cols = x.shape[-2], x.shape[-1], y.shape[-1]
    out = np.zeros(batch + (rows, cols), np.result_type(x, y))
    for b in itertools.product(*[range(d) for d in batch]):
        for i, j in itertools.product(range(rows), range(cols)):
            out[b + (i, j)] = sum(xb[b + (i, k)] * yb[b + (k, j)] for k in range(inner))
    return out


@given(data=st.data())
@SETTINGS
def test_batch_matmul_matches_loops(run, data):
    rank = data.draw(st.integers(0, 2))
    batch_x = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    batch_y = [data.draw(st.sampled_from([1, d])) for d in batch_x]
    batch_y = batch_y[data.draw(st.integers(0, rank)):]
    rows, inner, cols = (data.draw(st.integers(0, 3)) for _ in range(3))
    adj_x, adj_y = data.draw(st.booleans()), data.draw(st.booleans())
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.complex64, np.int32]))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x = values(rng, dtype, tuple(batch_x) + ((inner, rows) if adj_x else (rows, inner)))
    y = values(rng, dtype, tuple(batch_y) + ((cols, inner) if adj_y else (inner, cols)))
    got = run("BatchMatMulV2", x=x, y=y, adj_x=adj_x, adj_y=adj_y)
    want = reference_batch_matmul(x, y, adj_x, adj_y)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_half_types_and_v3_output_types(run):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 2, 3)), rng.standard_normal((3, 4))
    got = run("BatchMatMulV2", x=x.astype(np.float16), y=y.astype(np.float16))
    want = reference_batch_matmul(x.astype(np.float16).astype(np.float32),
                                  y.astype(np.float16).astype(np.float32), False, False)
    np.testing.assert_array_equal(got, want.astype(np.float16))
    a = np.full((1, 3), 100, np.int8)
    b = np.full((3, 1), 100, np.uint8)
    got = run("BatchMatMulV3", x=a, y=b, Tout=gp.int32)
    assert got.dtype == np.int32 and got[0, 0] == 30000


def test_batch_matmul_errors(run):
    with invalid("In[0] ndims must be >= 2: 1"):
        run("BatchMatMulV2", x=np.ones(3, np.float32), y=np.ones((3, 2), np.float32))
    with invalid("In[0] and In[1] must have compatible batch dimensions: [2,2,3] vs. [4,3,7]"):
        run("BatchMatMulV2", x=np.ones((2, 2, 3)), y=np.ones((4, 3, 7)))
    with invalid("Matrix size-incompatible: In[0]: [2,3], In[1]: [4,7]"):
        run("BatchMatMulV2", x=np.ones((2, 3)), y=np.ones((4, 7)), adj_y=True)


def test_batch_matmul_static_shapes():
    with gp.Graph().as_default():
        def ph(shape):
            return gp.placeholder(gp.float32, shape)
        assert R.BatchMatMulV2(x=ph([5, 1, 2, 3]), y=ph([4, 3, 7])).shape.as_list() == [5, 4, 2, 7]
        assert R.BatchMatMulV2(x=ph([None, 2, 3]), y=ph([4, 3, 7])).shape.as_list() == [4, 2, 7]
        assert R.BatchMatMulV2(x=ph(None), y=ph([3, 7])).shape.rank is None
        assert R.BatchMatMulV2(x=ph([3, 2]), y=ph([4, 3]), adj_x=True,
                               adj_y=True).shape.as_list() == [2, 4]
        with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
            R.BatchMatMulV2(x=ph([2, 3]), y=ph([4, 7]))
        with pytest.raises(ValueError, match="Shape must be at least rank 2 but is rank 1"):
            R.BatchMatMulV2(x=ph([2, 3]), y=ph([3]))


# ----------------------------------------------------------------------------- Einsum

def reference_einsum(equation, *operands):
    """Sum over every assignment of the labels (the ellipsis as explicit broadcast labels)."""
    inputs, output = equation.split("->")
    inputs = inputs.split(",")
    batch = np.broadcast_shapes(*[x.shape[s.find("..."):x.ndim - (len(s) - s.find("...") - 3)]
                                  for s, x in zip(inputs, operands) if "..." in s])
    spelled = "ABCDEFGH"[:len(batch)]
    sizes = dict(zip(spelled, batch))
    expanded = []
    for s, x in zip(inputs, operands):
        if "..." in s:
            before, after = s.split("...")
            n = x.ndim - len(before) - len(after)
            x = x.reshape(x.shape[:len(before)] + (1,) * (len(batch) - n) + x.shape[len(before):])
            s = before + spelled + after
        expanded.append((s, x))
        for label, dim in zip(s, x.shape):
            if sizes.get(label, 1) == 1:         # a 1 broadcasts against any dim, 0 too
                sizes[label] = dim
    output = output.replace("...", spelled)
    labels = sorted(sizes)
    out = np.zeros([sizes[c] for c in output], np.result_type(*operands))
    for assignment in itertools.product(*[range(sizes[c]) for c in labels]):
        at = dict(zip(labels, assignment))
        term = 1
        for s, x in expanded:
            term = term * x[tuple(at[c] if x.shape[i] > 1 else 0 for i, c in enumerate(s))]
        out[tuple(at[c] for c in output)] += term
    return out


EQUATIONS = {   # equation: operand shapes
    "abc,cd->abd": [(2, 3, 4), (4, 5)],
    "...ij,...jk->...ik": [(3, 1, 2, 3), (2, 3, 4)],
    "...ij,jk->...ik": [(2, 2, 3), (3, 2)],
    "abcd,cde->abe": [(2, 1, 3, 2), (3, 2, 4)],
    "bqhd,bkhd->bhqk": [(2, 3, 2, 4), (2, 5, 2, 4)],
    "bhqk,bkhd->bqhd": [(2, 2, 3, 5), (2, 5, 2, 4)],
    "ij->ji": [(2, 3)],
    "ij->": [(2, 3)],
    "abc->ac": [(2, 3, 4)],
    "ii->i": [(3, 3)],
    "i,i->": [(4,), (4,)],
    "i,j->ij": [(3,), (2,)],
    "...c,c->...": [(2, 3, 4), (4,)],
    "ab,bc->c": [(2, 3), (3, 4)],
}


@pytest.mark.parametrize("equation", sorted(EQUATIONS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32, np.complex64])
def test_einsum_matches_loops(run, equation, dtype):
    rng = np.random.default_rng(1)
    operands = [values(rng, dtype, shape) for shape in EQUATIONS[equation]]
    got = run("Einsum", inputs=operands, equation=equation)
    wide = [x.astype(np.float32) if dtype == np.float16 else x for x in operands]
    want = reference_einsum(equation, *wide)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 2e-3 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got, want.astype(dtype), rtol=tol, atol=tol)


@st.composite
def two_operand_equations(draw):
    """A two-operand equation whose labels fall in every group a batched product has
    (batch, each side's free, contracted), each term's labels shuffled, the output's too;
    sometimes an ellipsis broadcasting one side's batch dims; dims 0-3."""
    groups = {name: draw(st.integers(0, 2)) for name in ("batch", "a", "contracted", "b")}
    labels = iter("pqrstuvw")
    named = {name: [next(labels) for _ in range(n)] for name, n in groups.items()}
    dims = {c: draw(st.integers(0, 3)) for c in "pqrstuvw"}
    a = draw(st.permutations(named["batch"] + named["a"] + named["contracted"]))
    b = draw(st.permutations(named["batch"] + named["contracted"] + named["b"]))
    out = draw(st.permutations(named["batch"] + named["a"] + named["b"]))
    shapes = [[dims[c] for c in a], [dims[c] for c in b]]
    if draw(st.booleans()):
        ellipsis = draw(st.lists(st.integers(1, 3), max_size=2))
        shapes[0] = ellipsis + shapes[0]
        shapes[1] = [draw(st.sampled_from([1, d])) for d in ellipsis] + shapes[1]
        a, b, out = ["..."] + list(a), ["..."] + list(b), ["..."] + list(out)
    return f"{''.join(a)},{''.join(b)}->{''.join(out)}", shapes


@SETTINGS
@given(case=two_operand_equations(), dtype=st.sampled_from([np.float32, np.int32]))
def test_two_operand_einsums_as_batched_products_match_loops(run, case, dtype):
    equation, shapes = case
    rng = np.random.default_rng(2)
    operands = [values(rng, dtype, tuple(shape)) for shape in shapes]
    got = run("Einsum", inputs=operands, equation=equation)
    want = reference_einsum(equation, *operands)
    assert got.dtype == dtype and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-5, atol=1e-5)


def test_einsum_repeated_output_labels_embed_a_diagonal(run):
    got = run("Einsum", inputs=[np.array([1.0, 2.0, 3.0])], equation="i->ii")
    np.testing.assert_array_equal(got, np.diag([1.0, 2.0, 3.0]))


def test_einsum_static_shapes_and_build_time_errors():
    def shape(equation, *shapes):
        with gp.Graph().as_default():
            phs = [gp.placeholder(gp.float32, s) for s in shapes]
            return R.Einsum(inputs=phs, equation=equation).shape

    assert shape("abc,cd->abd", [2, 3, 4], [4, 5]).as_list() == [2, 3, 5]
    assert shape("...ij,...jk->...ik", [7, 1, 2, 3], [5, 3, 4]).as_list() == [7, 5, 2, 4]
    assert shape("...ij,...jk->...ik", [None, 2, 3], [5, 3, 4]).as_list() == [5, 2, 4]
    assert shape("...ij,...jk->...ik", None, [5, 3, 4]).rank is None
    assert shape("ij,jk->ik", [2, None], [None, 4]).as_list() == [2, 4]
    assert shape("ij->", [2, 3]).as_list() == []
    errors = [
        (("ij,jk", [2, 3], [3, 4]), "Expecting exactly one '->' in einsum equation: ij,jk"),
        (("ij,jk,kl->il", [2, 3], [3, 4], [4, 5]),
         "Expecting 1 or 2 input subscripts in equation 'ij,jk,kl->il' but got: 3"),
        (("ij,jk->ik", [2, 3]), "Expected 2 inputs for equation ij,jk->ik but got: 1"),
        (("ij->ik", [2, 3]), "Einsum output subscripts for equation 'ij->ik' has label 'k' "
                             "which is not present in the input subscripts"),
        (("...i...->i", [2, 3]), "Expected at most one ellipsis (...), but found 6 periods (.) "
                                 "in the input subscript: ...i..."),
        (("ij,jk->ik", [2, 3], [4, 5]), "Dimensions must be equal, but are 3 and 4"),
        (("ij,jk->ik", [2, 3, 4], [3, 5]),
         "Shape must be rank 2 but is rank 3\n\t for 0th input and equation: ij,jk->ik"),
        (("...ij,jk->ik", [7, 2, 3], [3, 4]),
         "Shape must be at most rank 0 but is rank 1\n\t for einsum equation '...ij,jk->ik' "
         "without ellipsis (...) in the output subscripts where input(s) have non-empty "
         "broadcasting shape"),
    ]
    for args, message in errors:
        with pytest.raises(ValueError) as info:
            shape(*args)
        assert message in str(info.value)


def test_einsum_run_time_errors(run):
    z = np.zeros
    cases = [
        ("ij,jk->ik", [z((2, 3)), z((4, 5))],
         "Expected dimension 3 at axis 0 of the input shaped [4,5] but got dimension 4"),
        ("ij,jk->ik", [z((2, 3, 4)), z((3, 5))], "Expected input 0 to have rank 2 but got: 3"),
        ("...ij,...jk->...ik", [z((2, 2, 3)), z((5, 3, 4))],
         "Invalid broadcasting dimensions: [2,2,3] vs. [5,3,4]"),
        ("...ij,jk->ik", [z((7, 2, 3)), z((3, 4))],
         "Output contains 1 broadcasting dimension(s) but no ellipsis (...) was found in the "
         "output subscripts."),
        ("ii->i", [z((2, 3))],
         "Expected dimension 2 at axis 1 of the input shaped [2,3] but got dimension 3"),
    ]
    for equation, operands, message in cases:
        with invalid(message):
            run("Einsum", inputs=operands, equation=equation)


# ----------------------------------------------------------------------------- gradients

GRADIENT_CASES = {   # name: (build, shapes, op types the gradient must contain)
    "BatchMatMulV2": (lambda x, y: R.BatchMatMulV2(x=x, y=y), [(2, 3), (3, 4)], {"MatMul"}),
    "BatchMatMulV2 broadcast": (lambda x, y: R.BatchMatMulV2(x=x, y=y),
                                [(2, 1, 2, 3), (3, 3, 4)], {"BatchMatMulV2", "Sum"}),
    "BatchMatMulV2 adjoints": (lambda x, y: R.BatchMatMulV2(x=x, y=y, adj_x=True, adj_y=True),
                               [(2, 3, 2), (2, 4, 3)], {"BatchMatMulV2"}),
    "BatchMatMulV2 adj_x": (lambda x, y: R.BatchMatMulV2(x=x, y=y, adj_x=True),
                            [(3, 2), (1, 3, 4)], {"BatchMatMulV2"}),
    "BatchMatMulV3": (lambda x, y: R.BatchMatMulV3(x=x, y=y, Tout=gp.float64, adj_y=True),
                      [(2, 2, 3), (4, 3)], {"BatchMatMulV2"}),
    "Einsum matmul": (lambda x, y: R.Einsum(inputs=[x, y], equation="abc,cd->abd"),
                      [(2, 3, 4), (4, 5)], {"Einsum"}),
    "Einsum ellipsis": (lambda x, y: R.Einsum(inputs=[x, y], equation="...ij,...jk->...ik"),
                        [(3, 1, 2, 3), (2, 3, 4)], {"Einsum"}),
    "Einsum attention": (lambda x, y: R.Einsum(inputs=[x, y], equation="bqhd,bkhd->bhqk"),
                         [(2, 3, 2, 2), (2, 2, 2, 2)], {"Einsum"}),
    "Einsum transpose": (lambda x: R.Einsum(inputs=[x], equation="abc->cab"), [(2, 3, 4)],
                         {"Einsum"}),
    "Einsum trace": (lambda x: R.Einsum(inputs=[x], equation="ii->i"), [(3, 3)], {"Einsum"}),
    "Einsum sum": (lambda x: R.Einsum(inputs=[x], equation="abc->ac"), [(2, 3, 4)],
                   {"BroadcastTo"}),
    "Einsum reduce and transpose": (lambda x: R.Einsum(inputs=[x], equation="abc->ca"),
                                    [(2, 3, 4)], {"BroadcastTo", "Einsum"}),
    "Einsum reduced operand label": (lambda x, y: R.Einsum(inputs=[x, y], equation="ab,bc->c"),
                                     [(2, 3), (3, 4)], {"BroadcastTo", "Einsum"}),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown shapes"])
def test_gradients_match_numeric_jacobians_and_build_tfs_ops(name, static):
    build, shapes, op_types = GRADIENT_CASES[name]
    for op_type in op_types | {"BroadcastTo", "StridedSlice"}:
        if not registered_kernels(op_type):       # array ops of another family
            pytest.skip(f"{op_type} has no kernel yet")
    rng = np.random.default_rng(3)
    inputs = [rng.uniform(-1, 1, shape) for shape in shapes]
    error, types = gradient_error_and_types(build, inputs, static)
    assert error < 1e-6
    if static:
        assert op_types <= types


# ----------------------------------------------------------------------------- GPU

@pytest.mark.parametrize("adj", [(False, False), (True, True)])
def test_batch_matmul_gpu_matches_cpu(gpu, adj):
    for dtype in gpu_types("BatchMatMulV2"):
        rng = np.random.default_rng(0)
        x = values(rng, dtype, (2, 1, 3, 2) if adj[0] else (2, 1, 2, 3))
        y = values(rng, dtype, (3, 4, 3) if adj[1] else (3, 3, 4))
        compare("BatchMatMulV2", {"x": x, "y": y}, adj_x=adj[0], adj_y=adj[1])
    compare("BatchMatMulV3", {"x": np.ones((2, 3), np.int8), "y": np.ones((3, 4), np.uint8)},
            Tout=gp.int32)


@pytest.mark.parametrize("equation", ["abc,cd->abd", "...ij,...jk->...ik", "ii->i", "i->ii",
                                      "abc->ca"])
def test_einsum_gpu_matches_cpu(gpu, equation):
    shapes = {"abc,cd->abd": [(2, 3, 4), (4, 5)], "...ij,...jk->...ik": [(3, 1, 2, 3), (2, 3, 4)],
              "ii->i": [(3, 3)], "i->ii": [(3,)], "abc->ca": [(2, 3, 4)]}[equation]
    for dtype in gpu_types("Einsum"):
        rng = np.random.default_rng(0)
        compare("Einsum", {"inputs": [values(rng, dtype, s) for s in shapes]}, equation=equation)
