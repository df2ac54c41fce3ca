"""Optimizer updates as single fused passes (numba), in place over flat arrays.

Each loop does per element exactly the float operations, in the same order and the same
dtype, as the NumPy expressions in `training_kernels` (numba does not contract them into
FMAs without fastmath), so both give identical bits. Scalars come in already in the
variable's dtype.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True, nogil=True)
def gradient_descent(var, alpha, delta):
    for i in prange(var.size):
        var[i] -= alpha * delta[i]


@njit(cache=True, parallel=True, nogil=True)
def momentum(var, accum, lr, grad, momentum, use_nesterov):
    for i in prange(var.size):
        a = accum[i] * momentum + grad[i]
        accum[i] = a
        if use_nesterov:
            var[i] -= grad[i] * lr + a * momentum * lr
        else:
            var[i] -= lr * a


@njit(cache=True, parallel=True, nogil=True)
def adam(var, m, v, grad, lr_t, beta1, one_minus_beta1, one_minus_beta2, epsilon,
         use_nesterov):
    for i in prange(var.size):
        g = grad[i]
        m_i = m[i] + (g - m[i]) * one_minus_beta1
        v_i = v[i] + (g * g - v[i]) * one_minus_beta2
        m[i] = m_i
        v[i] = v_i
        if use_nesterov:
            var[i] -= (g * one_minus_beta1 + beta1 * m_i) * lr_t / (np.sqrt(v_i) + epsilon)
        else:
            var[i] -= m_i * lr_t / (np.sqrt(v_i) + epsilon)
