"""Machine constants the compiled loops and their callers share. Plain Python, no numba: the
callers import it without loading numba."""

LANES = 16              # float32 values per vector register (AVX-512; two AVX2 halves)
CACHE_LINE_BYTES = 64   # a vector load or store across two cache lines costs two

# The fused elementwise program's instructions (``fused_elementwise``), by the name a
# kernel declares (``OpKernel.elementwise``): unary ones first, then binary.
FUSED_UNARY = ("neg", "abs", "square", "sqrt", "rsqrt", "reciprocal", "exp", "log", "tanh",
               "sigmoid", "relu", "relu6")
FUSED_BINARY = ("add", "sub", "mul", "div", "max", "min", "squared_difference")
FUSED_OPCODES = {name: code for code, name in enumerate(FUSED_UNARY + FUSED_BINARY)}
FUSED_BLOCK = 1024                     # elements a fused program runs on at a time
FUSED_MAX_INPUTS, FUSED_MAX_OUTPUTS = 8, 4
