"""gp.train.Saver: TF1's name-based checkpoints of Variables in the V2 format.

    saver = gp.train.Saver()                      # every global Variable, keyed by op name
    path = saver.save(sess, "/tmp/run/model", global_step=100)   # "/tmp/run/model-100"
    saver.restore(other_sess, gp.train.latest_checkpoint("/tmp/run"))

The constructor builds TF's nodes under a "save" scope: `save/Const` (the checkpoint prefix,
a PlaceholderWithDefault fed by `save`/`restore`), `save/SaveV2` and
`save/control_dependency`, `save/RestoreV2` (on the CPU) with one Identity and
AssignVariableOp per variable, grouped by `save/restore_all`; with `sharded=True` also TF's
temporary-prefix, ShardedFilename and MergeV2Checkpoints nodes. Files are TF's: TF reads
graphops' checkpoints and the other way round. `save` also writes "<prefix>.meta", a
MetaGraphDef (graph, SaverDef and collections) that `gp.train.import_meta_graph` reads back.
"""

import importlib
import numbers
import os
import re
import time

from graphops.api import raw_ops
from graphops.training.variables import Variable, global_variables
from graphops.building.constant_op import constant
from graphops.building.graph import get_default_graph
from graphops.client.session import Session
from graphops.interchange import checkpoint_state
from graphops.registry import errors

_CPU = "/device:CPU:0"


def _saver_def_module():
    return importlib.import_module("graphops.interchange.proto.saver_pb2")


def _meta_graph_io():
    """graphops.training.meta_graph_io, which builds on this module (loaded on first use)."""
    return importlib.import_module("graphops.training.meta_graph_io")


class SaverDef:
    """TF's `tf.train.SaverDef.V1` / `.V2` constants (the CheckpointFormatVersion enum);
    `Saver.saver_def` is the SaverDef message itself."""

    LEGACY, V1, V2 = 0, 1, 2


class Saver:
    """Saves and restores Variables (TF1's tf.train.Saver), V2 checkpoint format only."""

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=SaverDef.V2, pad_step_number=False,
                 save_relative_paths=False, filename=None):
        if defer_build and var_list:
            raise ValueError("If `var_list` is provided then build cannot be deferred. "
                             "Either set defer_build=False or var_list=None.")
        if write_version != SaverDef.V2:
            raise NotImplementedError("gp.train.Saver writes the V2 checkpoint format only "
                                      "(write_version=gp.train.SaverDef.V2).")
        if builder is not None:
            raise NotImplementedError("gp.train.Saver does not take a custom `builder`.")
        self._var_list = var_list
        self._reshape = reshape
        self._sharded = sharded
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._name = name
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self.saver_def = saver_def
        self._is_built = False
        self._is_empty = None
        self._allow_empty = allow_empty
        self._last_checkpoints = []           # (prefix, time), oldest first
        self._checkpoints_to_be_deleted = []
        self._next_checkpoint_time = None
        if not defer_build:
            self.build()
        if self.saver_def is not None:
            self._check_saver_def()

    # ------------------------------------------------------------------ building

    def build(self):
        """Builds the save and restore nodes (once)."""
        if self._is_built:
            return
        self._is_built = True
        if self.saver_def is None:
            named = _variables_by_name(global_variables() if self._var_list is None
                                       else self._var_list)
            if not named:
                if self._allow_empty:
                    self._is_empty = True
                    return
                raise ValueError("No variables to save")
            self._is_empty = False
            self.saver_def = _build_saver_def(
                named, self._name, self._filename, self._sharded, self._reshape,
                self._max_to_keep or 0, self._keep_hours)
        self._check_saver_def()
        self._next_checkpoint_time = (time.time()
                                      + self.saver_def.keep_checkpoint_every_n_hours * 3600)

    def _check_saver_def(self):
        if not self.saver_def.save_tensor_name:
            raise ValueError(f"saver_def must specify the save_tensor_name: {self.saver_def}")
        if not self.saver_def.restore_op_name:
            raise ValueError(f"saver_def must specify the restore_op_name: {self.saver_def}")

    def as_saver_def(self):
        """The SaverDef message naming this Saver's nodes."""
        return self.saver_def

    def to_proto(self, export_scope=None):
        return self.saver_def

    # ------------------------------------------------------------------ checkpoint list

    @property
    def last_checkpoints(self):
        """The prefixes of the checkpoints not yet deleted, oldest first."""
        return [path for path, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        assert isinstance(last_checkpoints, list)
        self._last_checkpoints = [(path, float("inf")) for path in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        assert isinstance(last_checkpoints_with_time, list)
        self._last_checkpoints = last_checkpoints_with_time

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes back the checkpoints of `checkpoint_paths` that still exist (their index
        files' times as their times), e.g. after a restart."""
        found = [(p, checkpoint_state.checkpoint_mtime(p)) for p in checkpoint_paths]
        self.set_last_checkpoints_with_time([(p, t) for p, t in found if t is not None])

    def _record_last_checkpoint(self, path):
        if not self.saver_def.max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self.saver_def.max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _maybe_delete_old_checkpoints(self, meta_graph_suffix):
        if not self._checkpoints_to_be_deleted:
            return
        path, saved_at = self._checkpoints_to_be_deleted.pop(0)
        if saved_at > self._next_checkpoint_time:      # kept: one every n hours
            self._next_checkpoint_time += self.saver_def.keep_checkpoint_every_n_hours * 3600
            return
        try:
            checkpoint_state.remove_checkpoint(path, meta_graph_suffix)
        except OSError:
            pass                                       # TF logs and ignores it too

    # ------------------------------------------------------------------ save / restore

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Saves the variables at `save_path` (plus "-<global_step>") and, with
        `write_meta_graph`, the graph at "<that prefix>.meta"; returns the prefix, or None
        for an empty Saver."""
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        latest_filename = latest_filename or checkpoint_state.DEFAULT_STATE_FILENAME
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = _text(os.fspath(save_path))
        if global_step is not None:
            if not isinstance(global_step, numbers.Integral):
                global_step = int(sess.run(global_step))
            step = f"{global_step:08d}" if self._pad_step_number else str(global_step)
            checkpoint_file = f"{save_path}-{step}"
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(f"'latest_filename' collides with 'save_path': "
                                 f"'{latest_filename}' and '{save_path}'")
        if not isinstance(sess, Session):
            raise TypeError(f"'sess' must be a Session; {sess}")
        path = None
        if not self._is_empty:
            path = self._save(sess, save_path, checkpoint_file, latest_filename,
                              meta_graph_suffix, write_state)
        if write_meta_graph:
            basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_file)
            with sess.graph.as_default():
                self.export_meta_graph(f"{basename}.{meta_graph_suffix}",
                                       strip_default_attrs=strip_default_attrs)
        return path

    def _save(self, sess, save_path, checkpoint_file, latest_filename, meta_graph_suffix,
              write_state):
        parent = os.path.dirname(save_path)
        try:
            path = _text(sess.run(self.saver_def.save_tensor_name,
                                  {self.saver_def.filename_tensor_name: checkpoint_file}))
        except (errors.FailedPreconditionError, errors.NotFoundError):
            if parent and not os.path.isdir(parent):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't "
                                 "save.") from None
            raise
        if write_state:
            self._record_last_checkpoint(path)
            checkpoint_state.update_checkpoint_state(
                parent, path, self.last_checkpoints, latest_filename,
                self._save_relative_paths)
            self._maybe_delete_old_checkpoints(meta_graph_suffix)
        return path

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False,
                          clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False):
        """The MetaGraphDef of the default graph (collections included) with this Saver's
        SaverDef, also written to `filename` when given (`gp.train.export_meta_graph`)."""
        return _meta_graph_io().export_meta_graph(
            filename=filename, saver_def=self.saver_def, collection_list=collection_list,
            as_text=as_text, export_scope=export_scope, clear_devices=clear_devices,
            clear_extraneous_savers=clear_extraneous_savers,
            strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)

    def restore(self, sess, save_path):
        """Assigns the checkpoint's values at `save_path` to the variables."""
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        prefix = _text(os.fspath(save_path))
        if not checkpoint_state.checkpoint_exists(prefix):
            raise ValueError("The passed save_path is not a valid checkpoint: " + prefix)
        try:
            sess.run(self.saver_def.restore_op_name,
                     {self.saver_def.filename_tensor_name: prefix})
        except errors.NotFoundError as err:
            raise _restore_error(err, "a Variable name or other graph key that is missing") \
                from None
        except errors.InvalidArgumentError as err:
            raise _restore_error(err, "a mismatch between the current graph and the graph") \
                from None


def _restore_error(err, what):
    message = (f"Restoring from checkpoint failed. This is most likely due to {what} from the "
               "checkpoint. Please ensure that you have not altered the graph expected based "
               f"on the checkpoint. Original error:\n\n{err.message}")
    return type(err)(message, err.op, err.node_def)


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _variables_by_name(var_list):
    """{checkpoint key: Variable}: a dict as given, a list keyed by the variables' op names."""
    if isinstance(var_list, dict):
        named = dict(var_list)
    else:
        named = {}
        for var in var_list:
            if not isinstance(var, Variable):
                raise TypeError(f"Variable to save is not a Variable: {var}")
            name = var.op.name
            if name in named:
                raise ValueError(f"At least two variables have the same name: {name}")
            named[name] = var
    for key, var in named.items():
        if not isinstance(key, str):
            raise TypeError(f"A checkpoint key must be a string, got {key!r}")
        if not isinstance(var, Variable):
            raise TypeError(f"Variable to save is not a Variable: {var}")
    return dict(sorted(named.items()))


def _build_saver_def(named, name, filename, sharded, reshape, max_to_keep, keep_hours):
    """Builds TF's save and restore nodes for {key: Variable}; returns their SaverDef."""
    graph = get_default_graph()
    with graph.as_default(), graph.name_scope(name or "save"):
        filename_tensor = raw_ops.PlaceholderWithDefault(input=filename or "model", shape=[],
                                                         name="filename")
        filename_tensor = raw_ops.PlaceholderWithDefault(input=filename_tensor, shape=[],
                                                         name="Const")
        if sharded:
            shards = _by_device(named)
            save_tensor = _sharded_save(filename_tensor, shards)
            restores = [_restore(filename_tensor, shard, reshape, "restore_shard")
                        for shard in shards.values()]
            with graph.control_dependencies(restores):
                restore_op = raw_ops.NoOp(name="restore_all")
        else:
            save_tensor = _save(filename_tensor, named)
            restore_op = _restore(filename_tensor, named, reshape, "restore_all")
    return _saver_def_module().SaverDef(
        filename_tensor_name=filename_tensor.name, save_tensor_name=save_tensor.name,
        restore_op_name=restore_op.name, max_to_keep=max_to_keep, sharded=sharded,
        keep_checkpoint_every_n_hours=keep_hours, version=SaverDef.V2)


def _by_device(named):
    """{device: {key: Variable}}, devices sorted as TF's _GroupByDevices does."""
    shards = {}
    for key, var in named.items():
        shards.setdefault(var.op.device, {})[key] = var
    return dict(sorted(shards.items()))


def _save(prefix, named):
    """SaveV2 of the variables' values, then the prefix (an Identity depending on it)."""
    graph = get_default_graph()
    save = raw_ops.SaveV2(prefix=prefix, tensor_names=list(named),
                          shape_and_slices=[""] * len(named),
                          tensors=[var._as_graph_element() for var in named.values()])
    with graph.control_dependencies([save]):
        return raw_ops.Identity(input=prefix, name="control_dependency")


def _sharded_save(prefix, shards):
    """TF's sharded V2 save: each shard written under "<prefix>_temp/part-<i>-of-<n>", then
    merged into `prefix`."""
    graph = get_default_graph()
    with graph.device(_CPU):
        is_s3 = raw_ops.StaticRegexFullMatch(input=prefix, pattern="^s3://.*")
        suffix = raw_ops.Select(condition=is_s3, x=constant(".part"),
                                y=constant(os.path.normpath("_temp/part")))
        temp_prefix = raw_ops.StringJoin(inputs=[prefix, suffix])
    num_shards = constant(len(shards), name="num_shards")
    saves, parts = [], []
    for shard, named in enumerate(shards.values()):
        with graph.device(_CPU):
            part = raw_ops.ShardedFilename(basename=temp_prefix, shard=shard,
                                           num_shards=num_shards)
            parts.append(part)
            saves.append(_save(part, named))
    with graph.control_dependencies([s.op for s in saves]), graph.device(_CPU):
        with graph.name_scope("MergeV2Checkpoints") as scope:
            packed = raw_ops.Pack(values=parts, axis=0, name="checkpoint_prefixes")
            merge = raw_ops.MergeV2Checkpoints(checkpoint_prefixes=packed,
                                               destination_prefix=prefix,
                                               delete_old_dirs=True, name=scope)
        with graph.control_dependencies([merge]):
            return raw_ops.Identity(input=prefix)


def _restore(prefix, named, reshape, name):
    """RestoreV2 (on the CPU) of every key, each value assigned to its Variable (an Assign
    for a reference variable); one NoOp `name` grouping the assignments."""
    graph = get_default_graph()
    with graph.device(_CPU):
        values = raw_ops.RestoreV2(prefix=prefix, tensor_names=list(named),
                                   shape_and_slices=[""] * len(named),
                                   dtypes=[var.dtype.base_dtype for var in named.values()])
    if not isinstance(values, (list, tuple)):
        values = [values]
    assigns = []
    for value, var in zip(values, named.values()):
        if reshape:
            value = raw_ops.Reshape(tensor=value, shape=var.shape.as_list())
        with graph.device(var.op.device):
            if var.dtype.is_ref:       # a TF1 reference variable: TF's save/Assign
                validate = not reshape and var.shape.is_fully_defined()
                assigns.append(raw_ops.Assign(ref=var._ref(), value=value,
                                              validate_shape=validate).op)
                continue
            value = raw_ops.Identity(input=value)
            validate = not reshape and var.shape.is_fully_defined()    # as the reads assume
            assigns.append(raw_ops.AssignVariableOp(resource=var.handle, value=value,
                                                    validate_shape=validate))
    with graph.control_dependencies(assigns):
        return raw_ops.NoOp(name=name)
