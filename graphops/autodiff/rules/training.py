"""The optimizer update ops have no gradient (they update variables in place)."""

from graphops.autodiff.gradients import NotDifferentiable

for _op in ("ResourceApplyRMSProp", "ResourceApplyCenteredRMSProp", "ResourceApplyAdagrad",
            "ResourceApplyAdagradV2"):
    NotDifferentiable(_op)
