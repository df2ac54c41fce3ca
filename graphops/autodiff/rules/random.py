"""Random ops have no gradient. TF declares NotDifferentiable for the float-valued ones
(random_ops.py, stateless_random_ops.py); the integer and seed-scrambling ops, which TF
leaves undeclared, are declared here too: their inputs are integers."""

from graphops.autodiff.gradients import NotDifferentiable

for _op in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt",
            "StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
            "StatelessRandomUniformInt", "StatelessRandomUniformV2", "StatelessRandomNormalV2",
            "StatelessTruncatedNormalV2", "StatelessRandomUniformIntV2",
            "StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg",
            "StatelessRandomGetAlg"):
    NotDifferentiable(_op)
