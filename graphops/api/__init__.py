"""What users call to build graphs: raw_ops, the Scope API op classes (gp.ops), TF's nn and
math wrappers, docstrings made from OpDefs, and Tensor's Python operators."""

from graphops.api import tensor_operators  # noqa: F401  (installs + - * / @ on Tensor)
