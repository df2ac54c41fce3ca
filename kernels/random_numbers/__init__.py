"""Philox4x32-10 and TF's distributions over it, bit for bit as TF's CPU kernels (with the
glibc math the float normals need)."""
