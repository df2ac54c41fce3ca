"""TF1's session configuration messages: `gp.ConfigProto` and `gp.GPUOptions`, with the
fields TF1 programs set. graphops reads allow_soft_placement, log_device_placement and
intra_op_parallelism_threads; the others are kept, so programs that set them run."""


class _Message:
    """A protobuf-like message: known fields with defaults, set by keyword or attribute."""

    _fields = {}

    def __init__(self, **fields):
        for name, default in self._fields.items():
            object.__setattr__(self, name, default() if callable(default) else default)
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self._fields:
            raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
        object.__setattr__(self, name, value)

    def __repr__(self):
        changed = {n: getattr(self, n) for n, d in self._fields.items()
                   if not callable(d) and getattr(self, n) != d}
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in changed.items())})"


class GPUOptions(_Message):
    """tf.compat.v1.GPUOptions (accepted; graphops leaves GPU memory to CuPy's pool)."""

    _fields = {"allow_growth": False, "per_process_gpu_memory_fraction": 0.0,
               "visible_device_list": "", "force_gpu_compatible": False}


class ConfigProto(_Message):
    """tf.compat.v1.ConfigProto. `intra_op_parallelism_threads` (0: every core) sets the
    process's intra-op thread count when a Session is created with it, as
    `gp.config.set_intra_op_parallelism_threads` does."""

    _fields = {"allow_soft_placement": False, "log_device_placement": False,
               "intra_op_parallelism_threads": 0, "inter_op_parallelism_threads": 0,
               "use_per_session_threads": False, "device_count": dict,
               "gpu_options": GPUOptions, "operation_timeout_in_ms": 0,
               "isolate_session_state": False}
