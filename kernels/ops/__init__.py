"""Kernel classes, one module per op family; importing this package registers them all."""

import importlib
import pkgutil

import graphops.registry  # noqa: F401  (op definitions first)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
