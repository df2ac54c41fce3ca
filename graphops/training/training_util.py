"""TF1's global step: a scalar int64 variable "global_step" in the GLOBAL_STEP collection
(`gp.train.get_or_create_global_step`, `get_global_step`, `create_global_step`,
`global_step`, `assert_global_step`)."""

from graphops.api.init_ops import Zeros
from graphops.training.variable_scope import get_variable
from graphops.training.variables import Variable
from graphops.building.graph import get_default_graph
from graphops.building.graph_collections import GraphKeys
from graphops.building.tensor import Tensor
from graphops.registry import dtypes


def global_step(sess, global_step_tensor):
    """The global step's current value as a Python int."""
    return int(sess.run(global_step_tensor))


def assert_global_step(tensor):
    """TypeError unless `tensor` is a scalar integer Variable or Tensor."""
    if not isinstance(tensor, (Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {tensor}.')
    if not tensor.dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {tensor.dtype!r}')
    if tensor.shape.rank != 0 and tensor.shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {tensor.shape}')


def get_global_step(graph=None):
    """The graph's global step (from the GLOBAL_STEP collection, else the tensor
    "global_step:0"), or None."""
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        return None                     # TF logs "Multiple tensors in global_step collection."
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    assert_global_step(step)
    return step


def create_global_step(graph=None):
    """A new global step variable (int64 zeros, not trainable); ValueError if one exists."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64,
                            initializer=Zeros(), trainable=False,
                            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The global step, created when the graph has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    return create_global_step(graph) if step is None else step
