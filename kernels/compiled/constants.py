"""Machine constants the compiled loops and their callers share. Plain Python, no numba: the
callers import it without loading numba."""

LANES = 16              # float32 values per vector register (AVX-512; two AVX2 halves)
CACHE_LINE_BYTES = 64   # a vector load or store across two cache lines costs two
