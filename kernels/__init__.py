"""Kernel classes, registered for "CPU" (NumPy) and "GPU" (CuPy). Imports registry only.

Rooms: ``ops/`` the kernel classes, one module per op family (the names of
``registry/op_defs/`` and ``graphops/autodiff/rules/``), registered on import;
``conv_algorithms/`` the convolution math they call; ``random_numbers/`` Philox and TF's
distributions over it; ``numerics/`` other shared array math; ``compiled/`` every numba
loop, imported on first use; ``support/`` what kernel modules share (devices, dtypes,
thread counts).
"""

from graphops.kernels import ops  # noqa: F401  (registers every family's kernels)
