"""The convolution math behind the conv kernels: dense (GEMM, direct, Winograd, few-channel
loops), depthwise, layouts and strided-gradient phases, on NumPy and CuPy arrays."""
