"""Kernel classes: every module of this package registers its kernels on import, except the
compiled loops (`loops_*`, numba), which `kernels.compiled.loops` imports on first use."""

import importlib
import pkgutil

import registry  # noqa: F401  (op definitions first)

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("loops_"):
        importlib.import_module(f"{__name__}.{_module.name}")
