"""Op definitions, one module per op family (the names of kernels/ops and
graphops/autodiff/rules): every module of this package registers its ops on import."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
