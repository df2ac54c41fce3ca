"""Compiled loops of the dense conv ops (numba): the input gradient's scatter-add (col2im).

Operands are channels-last with three spatial dims (lower ranks get leading size-1 dims).
"""

from numba import njit


@njit(cache=True, nogil=True)
def add_taps(prods, dx, first, strides, dilations, before, tap_first):
    """dx[n, p, c] += prods[b, q, t, c] for a block of output positions, p = o*s + k*d - before
    with image n = first[0] + b, output position o = first[1:] + q, kernel offset
    k = tap_first + t; positions outside dx are skipped. prods is
    ``[B, Q1, Q2, Q3, T1, T2, T3, C]``, dx ``[N, I1, I2, I3, C]``; each element's sum runs in
    order of the block's rows, then kernel offsets."""
    nb, n1, n2, n3, k1, k2, k3, channels = prods.shape
    size1, size2, size3 = dx.shape[1], dx.shape[2], dx.shape[3]
    for b in range(nb):
        n = first[0] + b
        for q1 in range(n1):
            for q2 in range(n2):
                for q3 in range(n3):
                    for t1 in range(k1):
                        p1 = (first[1] + q1) * strides[0] + (tap_first[0] + t1) * dilations[0] \
                            - before[0]
                        if p1 < 0 or p1 >= size1:
                            continue
                        for t2 in range(k2):
                            p2 = (first[2] + q2) * strides[1] \
                                + (tap_first[1] + t2) * dilations[1] - before[1]
                            if p2 < 0 or p2 >= size2:
                                continue
                            for t3 in range(k3):
                                p3 = (first[3] + q3) * strides[2] \
                                    + (tap_first[2] + t3) * dilations[2] - before[2]
                                if p3 < 0 or p3 >= size3:
                                    continue
                                for c in range(channels):
                                    dx[n, p1, p2, p3, c] += prods[b, q1, q2, q3, t1, t2, t3, c]
