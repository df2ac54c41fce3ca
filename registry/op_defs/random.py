"""Random op definitions (TF's random_ops.cc, stateless_random_ops.cc and
stateless_random_ops_v2.cc): the stateful Philox ops seeded by (seed, seed2) attrs, the
stateless ops seeded by a [2] seed tensor (V1) or by a key/counter/alg triple (V2), and the
ops that turn a seed into a key and counter."""

from graphops.registry.errors import InvalidArgumentError
from graphops.registry.op_defs.array import shape_from_shape_tensor
from graphops.registry.op_registry import register_op
from graphops.registry.shape_inference import with_value
from graphops.registry.tensor_shape import TensorShape

RNG_KEY_SIZE = 1             # uint64 words of a V2 key
RNG_MAX_COUNTER_SIZE = 2     # uint64 words of a V2 counter (Philox)
_FLOATS = "{half, bfloat16, float, double}"


def _random_shape(c):
    c.set_output(0, shape_from_shape_tensor(c, 0))


def _scalar_bounds(c, first):
    """RandomUniformInt's check of minval/maxval (inputs `first`, `first + 1`)."""
    for name, i in (("minval", first), ("maxval", first + 1)):
        shape = c.input(i)
        if shape.rank is not None and shape.rank != 0:
            raise InvalidArgumentError(
                f"{name} must be a scalar; got a tensor of shape {shape.debug_string()}")


def _uniform_int_shape(c):
    _scalar_bounds(c, 1)
    _random_shape(c)


def _seed_pair(c, i):
    """A V1 seed input: a vector of 2."""
    with_value(c.with_rank(c.input(i), 1)[0], 2)


def _stateless_shape(c):
    _seed_pair(c, 1)
    _random_shape(c)


def _stateless_int_shape(c):
    _scalar_bounds(c, 2)
    _stateless_shape(c)


def _stateless_v2_shape(c):
    """StatelessShapeV2: key and counter vectors, a scalar alg, a key of RNG_KEY_SIZE."""
    key = c.with_rank(c.input(1), 1)
    c.with_rank(c.input(2), 1)
    c.with_rank(c.input(3), 0)
    with_value(key[0], RNG_KEY_SIZE)
    _random_shape(c)


def _stateless_int_v2_shape(c):
    _scalar_bounds(c, 4)
    _stateless_v2_shape(c)


def _key_counter_shape(c):
    _seed_pair(c, 0)
    c.set_output(0, TensorShape([RNG_KEY_SIZE]))
    c.set_output(1, TensorShape([RNG_MAX_COUNTER_SIZE]))


def _key_counter_alg_shape(c):
    _key_counter_shape(c)
    c.set_output(2, TensorShape([]))


# ------------------------------------------------------------- stateful (seed, seed2)

for _name, _summary in (
        ("RandomUniform", "Outputs random values from a uniform distribution in [0, 1)."),
        ("RandomStandardNormal", "Outputs random values from a normal distribution."),
        ("TruncatedNormal", "Outputs random values from a truncated normal distribution: "
                            "values more than 2 standard deviations from 0 are redrawn.")):
    register_op(_name) \
        .input("shape: T") \
        .output("output: dtype") \
        .attr("seed: int = 0") \
        .attr("seed2: int = 0") \
        .attr(f"dtype: {_FLOATS}") \
        .attr("T: {int32, int64}") \
        .set_is_stateful() \
        .set_shape_fn(_random_shape) \
        .doc(f"{_summary}\n\nseed, seed2: the Philox stream; both 0 means a random stream.")

register_op("RandomUniformInt") \
    .input("shape: T") \
    .input("minval: Tout") \
    .input("maxval: Tout") \
    .output("output: Tout") \
    .attr("seed: int = 0") \
    .attr("seed2: int = 0") \
    .attr("Tout: {int32, int64}") \
    .attr("T: {int32, int64}") \
    .set_is_stateful() \
    .set_shape_fn(_uniform_int_shape) \
    .doc("Outputs random integers from a uniform distribution in [minval, maxval).")

# ------------------------------------------------------------------- stateless, V1

for _name, _summary in (
        ("StatelessRandomUniform", "Deterministic uniform values in [0, 1) from a seed."),
        ("StatelessRandomNormal", "Deterministic normal values from a seed."),
        ("StatelessTruncatedNormal", "Deterministic truncated normal values from a seed.")):
    register_op(_name) \
        .input("shape: T") \
        .input("seed: Tseed") \
        .output("output: dtype") \
        .attr(f"dtype: {_FLOATS} = DT_FLOAT") \
        .attr("T: {int32, int64} = DT_INT32") \
        .attr("Tseed: {int32, int64} = DT_INT64") \
        .set_shape_fn(_stateless_shape) \
        .doc(_summary)

register_op("StatelessRandomUniformInt") \
    .input("shape: T") \
    .input("seed: Tseed") \
    .input("minval: dtype") \
    .input("maxval: dtype") \
    .output("output: dtype") \
    .attr("dtype: {int32, int64}") \
    .attr("T: {int32, int64}") \
    .attr("Tseed: {int32, int64} = DT_INT64") \
    .set_shape_fn(_stateless_int_shape) \
    .doc("Deterministic integers in [minval, maxval) from a seed.")

# ------------------------------------------------------------------- stateless, V2

for _name, _summary in (
        ("StatelessRandomUniformV2", "Uniform values in [0, 1) from a key and counter."),
        ("StatelessRandomNormalV2", "Normal values from a key and counter."),
        ("StatelessTruncatedNormalV2", "Truncated normal values from a key and counter.")):
    register_op(_name) \
        .input("shape: Tshape") \
        .input("key: uint64") \
        .input("counter: uint64") \
        .input("alg: int32") \
        .output("output: dtype") \
        .attr(f"dtype: {_FLOATS} = DT_FLOAT") \
        .attr("Tshape: {int32, int64} = DT_INT32") \
        .set_shape_fn(_stateless_v2_shape) \
        .doc(_summary)

register_op("StatelessRandomUniformIntV2") \
    .input("shape: Tshape") \
    .input("key: uint64") \
    .input("counter: uint64") \
    .input("alg: int32") \
    .input("minval: dtype") \
    .input("maxval: dtype") \
    .output("output: dtype") \
    .attr("dtype: {int32, int64, uint32, uint64}") \
    .attr("Tshape: {int32, int64} = DT_INT32") \
    .set_shape_fn(_stateless_int_v2_shape) \
    .doc("Integers in [minval, maxval) from a key and counter.")

register_op("StatelessRandomGetKeyCounter") \
    .input("seed: Tseed") \
    .output("key: uint64") \
    .output("counter: uint64") \
    .attr("Tseed: {int32, int64} = DT_INT64") \
    .set_shape_fn(_key_counter_shape) \
    .doc("Scrambles a [2] seed into the key and counter of the Philox algorithm.")

register_op("StatelessRandomGetKeyCounterAlg") \
    .input("seed: Tseed") \
    .output("key: uint64") \
    .output("counter: uint64") \
    .output("alg: int32") \
    .attr("Tseed: {int32, int64} = DT_INT64") \
    .set_shape_fn(_key_counter_alg_shape) \
    .doc("Scrambles a [2] seed into a key and counter, and picks the algorithm (Philox).")

register_op("StatelessRandomGetAlg") \
    .output("alg: int32") \
    .set_is_stateful() \
    .set_shape_fn(lambda c: c.set_output(0, TensorShape([]))) \
    .doc("The counter-based algorithm the device picks (Philox, 1).")
