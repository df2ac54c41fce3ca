"""Machine constants the compiled loops and their callers share. Plain Python, no numba: the
callers import it without loading numba."""

LANES = 16              # float32 values per vector register (AVX-512; two AVX2 halves)
CACHE_LINE_BYTES = 64   # a vector load or store across two cache lines costs two
DEPTHWISE_TAPS = 9      # filter taps a depthwise vector kernel's call holds (a 3x3 filter)

# The fused elementwise program's instructions (``fused_elementwise``), by the name a
# kernel declares (``OpKernel.elementwise``): unary ones first, then binary.
FUSED_UNARY = ("neg", "abs", "square", "sqrt", "rsqrt", "reciprocal", "exp", "log", "tanh",
               "sigmoid", "relu", "relu6")
FUSED_BINARY = ("add", "sub", "mul", "div", "max", "min", "squared_difference", "tanh_grad",
                "sigmoid_grad")
FUSED_SAME_SHAPE = ("tanh_grad", "sigmoid_grad")   # (y, dy): operands of one shape, unbroadcast
FUSED_OPCODES = {name: code for code, name in enumerate(FUSED_UNARY + FUSED_BINARY)}
FUSED_BLOCK = 1024                     # elements a fused program runs on at a time
FUSED_MAX_INPUTS, FUSED_MAX_OUTPUTS = 8, 4

# The loop machine (``loop_program``): an instruction is a row of LOOP_WIDTH int64 words,
# the first its kind; SCALAR instructions name one of LOOP_SCALAR_OPS, a kernel's
# ``scalar_op`` or integer ``elementwise`` declaration. A run answers DONE, MORE (its
# iterations ran out) or the row of an instruction that failed.
LOOP_WIDTH = 16
(LOOP_ELEMENTWISE, LOOP_MATMUL, LOOP_LIST_GET, LOOP_LIST_SET, LOOP_LIST_PUSH, LOOP_SCALAR,
 LOOP_COPY, LOOP_SUM_ROWS) = range(8)
LOOP_SCALAR_OPS = ("add", "sub", "mul", "max", "min", "less", "less_equal", "greater",
                   "greater_equal", "equal", "not_equal", "logical_and", "logical_or",
                   "logical_not", "neg", "copy")
LOOP_DONE, LOOP_MORE = -1, -2
