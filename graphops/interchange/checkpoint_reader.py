"""Reading checkpoints without a graph (TF's checkpoint_utils): `load_checkpoint` gives a
reader of a V2 checkpoint's tensors, names, shapes and dtypes. The bundle code (and
protobuf) loads when a reader is first made."""

import importlib
import os

from graphops.interchange import checkpoint_state


class CheckpointReader:
    """The tensors of the checkpoint at `prefix` (TF's CheckpointReader)."""

    def __init__(self, prefix):
        bundle = importlib.import_module("graphops.interchange.tensor_bundle")
        self._bundle = bundle.BundleReader(os.fspath(prefix))

    def get_tensor(self, tensor_str):
        """The tensor as a NumPy array (strings as bytes); NotFoundError if missing."""
        return self._bundle.read(tensor_str)

    def has_tensor(self, tensor_str):
        return tensor_str in self._bundle

    def get_variable_to_shape_map(self):
        """{name: shape as a list of ints}."""
        return {name: self._bundle.shape(name) for name in self._bundle.entries}

    def get_variable_to_dtype_map(self):
        """{name: gp DType}."""
        return {name: self._bundle.dtype(name) for name in self._bundle.entries}

    def debug_string(self):
        """One line "name (dtype) [shape]" per tensor, as bytes (TF's debug_string)."""
        lines = [f"{name} ({self._bundle.dtype(name).short_name}) {self._bundle.shape(name)}\n"
                 for name in sorted(self._bundle.entries)]
        return "".join(lines).encode()


def NewCheckpointReader(filepattern):  # noqa: N802 (TF's name)
    """A CheckpointReader of the checkpoint prefix `filepattern`."""
    return CheckpointReader(filepattern)


def _checkpoint_prefix(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        path = checkpoint_state.latest_checkpoint(path)
        if path is None:
            raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {os.fspath(ckpt_dir_or_file)}")
    return path


def load_checkpoint(ckpt_dir_or_file):
    """A reader of the checkpoint `ckpt_dir_or_file` (a prefix, or a directory: its latest
    checkpoint)."""
    return CheckpointReader(_checkpoint_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of the checkpoint's tensors, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def load_variable(ckpt_dir_or_file, name):
    """The value of tensor `name` (a trailing ":0" is dropped) in the checkpoint."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
