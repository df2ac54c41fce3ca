"""The "checkpoint" state file beside a Saver's checkpoints (a CheckpointState text proto),
and checkpoint prefixes on disk: `latest_checkpoint`, `get_checkpoint_state`,
`checkpoint_exists`, `remove_checkpoint` (TF's checkpoint_management)."""

import glob
import importlib
import os
import warnings

DEFAULT_STATE_FILENAME = "checkpoint"


def _state_proto():
    return importlib.import_module("graphops.interchange.proto.checkpoint_state_pb2")


def _state_path(save_dir, latest_filename):
    return os.path.join(save_dir, latest_filename or DEFAULT_STATE_FILENAME)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, save_relative_paths=False):
    """Writes the state file of `save_dir` (atomically): the newest checkpoint and the kept
    ones, oldest first; paths relative to `save_dir` where TF writes them so."""
    from google.protobuf import text_format

    from graphops.interchange.tensor_bundle import AtomicFile

    base = save_dir or os.curdir
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        model_checkpoint_path = _relative(model_checkpoint_path, base)
        paths = [_relative(p, base) for p in paths]
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if not os.path.isabs(base):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, base)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, base) for p in paths]
    state = _state_proto().CheckpointState(model_checkpoint_path=model_checkpoint_path,
                                           all_model_checkpoint_paths=paths)
    filename = _state_path(save_dir, latest_filename)
    if filename == state.model_checkpoint_path:
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           "checkpoint state.  Please use a different save path.")
    with AtomicFile(filename) as f:
        f.write(text_format.MessageToString(state).encode())


def _relative(path, save_dir):
    return os.path.relpath(path, save_dir) if os.path.isabs(path) else path


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState of `checkpoint_dir` with paths joined to it, or None when there is
    no state file (or it cannot be parsed: a warning says so)."""
    from google.protobuf import text_format

    checkpoint_dir = os.fspath(checkpoint_dir)
    filename = _state_path(checkpoint_dir, latest_filename)
    if not os.path.isfile(filename):
        return None
    state = _state_proto().CheckpointState()
    try:
        with open(filename) as f:
            text_format.Merge(f.read(), state)
    except (OSError, text_format.ParseError) as e:
        warnings.warn(f"{type(e).__name__}: {e}\n{filename}: Checkpoint ignored")
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    for i, path in enumerate(state.all_model_checkpoint_paths):
        if not os.path.isabs(path):
            state.all_model_checkpoint_paths[i] = os.path.join(checkpoint_dir, path)
    return state


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint named by the state file, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        warnings.warn(f"Couldn't match files for checkpoint {state.model_checkpoint_path}")
    return None


def checkpoint_exists(checkpoint_prefix):
    """Whether a V2 checkpoint (its .index) or a V1 file matches `checkpoint_prefix`."""
    prefix = os.fspath(checkpoint_prefix)
    return bool(glob.glob(glob.escape(prefix) + ".index") or glob.glob(prefix + ".index")
                or glob.glob(prefix))


def remove_checkpoint(checkpoint_prefix, meta_graph_suffix="meta"):
    """Deletes a V2 checkpoint's files (index, data shards, meta graph)."""
    for pattern in (".index", ".data-?????-of-?????", "." + meta_graph_suffix):
        for path in glob.glob(glob.escape(checkpoint_prefix) + pattern):
            os.remove(path)


def checkpoint_mtime(checkpoint_prefix):
    """The modification time of a checkpoint's index file, or None when it is missing."""
    try:
        return os.path.getmtime(checkpoint_prefix + ".index")
    except OSError:
        return None
