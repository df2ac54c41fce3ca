"""Kernel classes: every module of this package registers its kernels on import."""

import importlib
import pkgutil

import registry  # noqa: F401  (op definitions first)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
