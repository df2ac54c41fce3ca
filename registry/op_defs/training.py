"""Optimizer update ops on resource variables (TF's training_ops.cc, resource forms)."""

from graphops.registry.op_registry import register_op


def _scalars_and_handles(handles, scalars):
    """Shape fn: `handles` inputs are resource scalars, `scalars` inputs must be rank 0."""
    def shape_fn(c):
        for i in handles + scalars:
            c.with_rank(c.input(i), 0)
    return shape_fn


register_op("ResourceApplyGradientDescent") \
    .input("var: resource") \
    .input("alpha: T") \
    .input("delta: T") \
    .attr("T: numbertype") \
    .attr("use_locking: bool = false") \
    .set_is_stateful() \
    .set_shape_fn(_scalars_and_handles([0], [1])) \
    .doc("Update '*var' by subtracting 'alpha' * 'delta' from it.")

register_op("ResourceApplyMomentum") \
    .input("var: resource") \
    .input("accum: resource") \
    .input("lr: T") \
    .input("grad: T") \
    .input("momentum: T") \
    .attr("T: numbertype") \
    .attr("use_locking: bool = false") \
    .attr("use_nesterov: bool = false") \
    .set_is_stateful() \
    .set_shape_fn(_scalars_and_handles([0, 1], [2, 4])) \
    .doc("accum = accum * momentum + grad; var -= lr * accum (Nesterov: "
         "var -= lr * grad + lr * momentum * accum).")

register_op("ResourceApplyAdam") \
    .input("var: resource") \
    .input("m: resource") \
    .input("v: resource") \
    .input("beta1_power: T") \
    .input("beta2_power: T") \
    .input("lr: T") \
    .input("beta1: T") \
    .input("beta2: T") \
    .input("epsilon: T") \
    .input("grad: T") \
    .attr("T: numbertype") \
    .attr("use_locking: bool = false") \
    .attr("use_nesterov: bool = false") \
    .set_is_stateful() \
    .set_shape_fn(_scalars_and_handles([0, 1, 2], [3, 4, 5, 6, 7, 8])) \
    .doc("Update '*var' according to the Adam algorithm.")

register_op("ResourceApplyRMSProp") \
    .input("var: resource") \
    .input("ms: resource") \
    .input("mom: resource") \
    .input("lr: T") \
    .input("rho: T") \
    .input("momentum: T") \
    .input("epsilon: T") \
    .input("grad: T") \
    .attr("T: numbertype") \
    .attr("use_locking: bool = false") \
    .set_is_stateful() \
    .set_shape_fn(_scalars_and_handles([0, 1, 2], [3, 4, 5, 6])) \
    .doc("Update '*var' according to the RMSProp algorithm.")

register_op("ResourceApplyCenteredRMSProp") \
    .input("var: resource") \
    .input("mg: resource") \
    .input("ms: resource") \
    .input("mom: resource") \
    .input("lr: T") \
    .input("rho: T") \
    .input("momentum: T") \
    .input("epsilon: T") \
    .input("grad: T") \
    .attr("T: numbertype") \
    .attr("use_locking: bool = false") \
    .set_is_stateful() \
    .set_shape_fn(_scalars_and_handles([0, 1, 2, 3], [4, 5, 6, 7])) \
    .doc("Update '*var' according to the centered RMSProp algorithm.")

register_op("ResourceApplyAdagrad") \
    .input("var: resource") \
    .input("accum: resource") \
    .input("lr: T") \
    .input("grad: T") \
    .attr("T: numbertype") \
    .attr("use_locking: bool = false") \
    .attr("update_slots: bool = true") \
    .set_is_stateful() \
    .set_shape_fn(_scalars_and_handles([0, 1], [2])) \
    .doc("Update '*var' according to the adagrad scheme.")

register_op("ResourceApplyAdagradV2") \
    .input("var: resource") \
    .input("accum: resource") \
    .input("lr: T") \
    .input("epsilon: T") \
    .input("grad: T") \
    .attr("T: numbertype") \
    .attr("use_locking: bool = false") \
    .attr("update_slots: bool = true") \
    .set_is_stateful() \
    .set_shape_fn(_scalars_and_handles([0, 1], [2, 3])) \
    .doc("Update '*var' according to the adagrad scheme (epsilon added to the root).")
