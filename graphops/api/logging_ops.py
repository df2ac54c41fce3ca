"""TF1's printing wrappers: tf.Print (an identity of `input_` that prints `data` to stderr
each time it runs) and tf.print (StringFormat + PrintV2: in a graph it returns the
printing op, to be run or used as a control dependency; eagerly it prints at once)."""

import os
import pprint
import random
import sys

import numpy as np

from graphops.api import raw_ops
from graphops.api.tensor_args import graph_of, is_symbolic
from graphops.building.values import is_device_array

_STREAMS = {id(sys.stdout): "stdout", id(sys.stderr): "stderr"}


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """`input_`, printing `message` and the first `summarize` (3) entries of each tensor
    in `data` to stderr when run, the first `first_n` times (-1: always)."""
    return raw_ops.Print(input=input_, data=list(data),
                         message="" if message is None else message,
                         first_n=-1 if first_n is None else first_n,
                         summarize=3 if summarize is None else summarize, name=name)


def _tensor_test(eager):
    """What tf.print formats as a tensor: graph tensors, and eagerly arrays too (they are
    what eager ops return); in a graph an array is a Python value, as in TF."""
    def is_tensor(value):
        return is_symbolic(value) or (eager and (isinstance(value, np.ndarray)
                                                 or is_device_array(value)))
    return is_tensor


def _stream_name(output_stream):
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    stream = _STREAMS.get(id(output_stream))
    if stream is None:
        raise ValueError(f"Unsupported output stream, logging level, or file.{output_stream}. "
                         "Supported streams are sys.stdout, sys.stderr, tf.logging.info, "
                         "tf.logging.warning, tf.logging.error. File needs to be in the form "
                         "of 'file://<filepath>'.")
    return stream


def _substitute(value, is_tensor, replace):
    """`value` with each tensor in it (lists, tuples, dicts by sorted key: TF's nest order)
    replaced by `replace(tensor)`."""
    if is_tensor(value):
        return replace(value)
    if isinstance(value, dict):
        return type(value)((k, _substitute(value[k], is_tensor, replace)) for k in sorted(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, is_tensor, replace) for v in value)
    return value


def _template(inputs, sep, is_tensor):
    """TF's template and tensors: each input pretty-printed (strings as they are) with its
    tensors replaced by a placeholder that no other text contains."""
    free = " ".join(pprint.pformat(_substitute(x, is_tensor, lambda t: "")) for x in inputs)
    placeholder, digits = "{}", random.Random(5)       # TF's seeded suffix digits
    while placeholder in free:
        placeholder += str(digits.randint(0, 9))
    tensors, parts = [], []
    for value in inputs:
        marked = _substitute(value, is_tensor, lambda t: tensors.append(t) or placeholder)
        parts.append(marked if isinstance(value, str) else pprint.pformat(marked))
    template = sep.join(parts).replace(f"'{placeholder}'", placeholder)
    return template, placeholder, tensors


def print(*inputs, output_stream=sys.stderr, summarize=3, sep=" ", end=os.linesep,  # noqa: A001
          name=None):
    """tf.print: formats `inputs` (tensors as numpy-like summaries with `summarize` entries
    at each end of each dimension, other values as Python prints them) joined by `sep`,
    followed by `end`; returns the PrintV2 op in a graph."""
    stream = _stream_name(output_stream)
    template, placeholder, tensors = _template(inputs, sep,
                                               _tensor_test(graph_of(inputs) is None))
    formatted = raw_ops.StringFormat(inputs=tensors, template=template,
                                     placeholder=placeholder, summarize=summarize,
                                     name=None if name is None else name + "_format")
    return raw_ops.PrintV2(input=formatted, output_stream=stream, end=end, name=name)
