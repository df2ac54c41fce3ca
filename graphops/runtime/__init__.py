"""Running kernels on devices: the device table and transfers, placement, the kernel-call path
shared by graph and eager execution, execution plans, eager execution and `gp.config`.
Imports registry and kernels only: nothing here knows about Graph, Tensor or Session."""
