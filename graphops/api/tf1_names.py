"""TF1 names graphops lacks: the AttributeError that says so and points at raw_ops.

`tf1_api_names.txt` (written from TensorFlow by docs/make_tf1_names.py) lists every public
name of `tf.compat.v1`, dotted (`nn.ctc_loss`, `train.Saver`). A namespace's module
`__getattr__` raises `missing_tf1_attribute(namespace, name)`: for a name TF1 has, the
message says graphops does not implement it yet; for any other name it is Python's own.
"""

import functools
import pathlib

_NAMES_FILE = pathlib.Path(__file__).with_name("tf1_api_names.txt")


@functools.cache
def tf1_names():
    """Every dotted TF1 name of the file, and each namespace above them ("nn", "layers")."""
    names = set()
    for line in _NAMES_FILE.read_text().splitlines():
        if line and not line.startswith("#"):
            parts = line.split(".")
            names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(names)


def missing_tf1_attribute(namespace, name):
    """The AttributeError for `gp.<namespace>.<name>` ("" namespace: `gp.<name>`)."""
    module = f"graphops.{namespace}" if namespace else "graphops"
    message = f"module {module!r} has no attribute {name!r}"
    dotted = f"{namespace}.{name}" if namespace else name
    if dotted in tf1_names():
        message += (f". tf.compat.v1.{dotted} is part of TensorFlow's TF1 API but graphops does "
                    "not implement it yet (see docs/tf1-compat.md); every registered op is "
                    "available as gp.raw_ops.<OpName>.")
    return AttributeError(message)
