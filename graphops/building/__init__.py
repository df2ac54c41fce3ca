"""Building graphs: Tensor and Operation, Graph with its name/device/control scopes, value
conversion, the op builder (TF's `_apply_op_helper`, or an eager run outside any graph),
gp.constant / gp.placeholder and the C++-style Scope. Imports runtime."""
