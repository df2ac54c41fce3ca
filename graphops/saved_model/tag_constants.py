"""TF's standard SavedModel tags: which MetaGraphDef of a SavedModel a loader asks for."""

SERVING = "serve"
TRAINING = "train"
EVAL = "eval"
GPU = "gpu"
TPU = "tpu"
