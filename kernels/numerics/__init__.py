"""Array math shared by kernels that is neither convolution nor random numbers: the error
function, pooling windows."""
