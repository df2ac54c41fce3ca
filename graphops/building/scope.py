"""The C++-style Scope API: immutable Scope objects that name, place and guard new nodes.

A root scope owns a new Graph; every `with_*` / `new_sub_scope` call returns a new Scope that
shares the graph. Naming follows TF's `cc/framework/scope.cc`: each scope prefix keeps a name
map shared by its `with_*` copies, the first use of a name keeps it, later uses get `_1`,
`_2`, ... (`linear/W`, `linear/b_3`, `linear/MatMul`); a sub-scope gets a fresh map.

Errors: unlike C++ (which records them in a shared status checked with `ok()`), building an
op with a bad argument raises the typed error at once; `ok()` is therefore always True.
"""

from graphops.building.graph import Graph
from graphops.runtime.devices import canonical_device
from graphops.building.op_builder import create_node, warn_deprecated
from graphops.building.values import dtype_of
from graphops.building.tensor import Operation, Tensor, as_graph_element
from graphops.registry.op_registry import get_op_def


def _as_operation(obj):
    obj = getattr(obj, "operation", obj)
    obj = as_graph_element(obj)
    if isinstance(obj, Tensor):
        return obj.op
    if not isinstance(obj, Operation):
        raise TypeError(f"Control dependency must be an Operation, a Tensor or an op object, "
                        f"not {type(obj).__name__}.")
    return obj


class Scope:
    """Where and how ops are built: graph, name prefix, op name, device, control deps."""

    __slots__ = ("_graph", "_name", "_names", "_op_name", "_device", "_control")

    def __init__(self, graph, name, names, op_name, device, control):
        self._graph = graph
        self._name = name
        self._names = names
        self._op_name = op_name
        self._device = device
        self._control = control

    @staticmethod
    def new_root_scope():
        """A scope over a new, empty Graph."""
        return Scope(Graph(), "", {}, "", "", ())

    def _copy(self, **changes):
        fields = {k: getattr(self, "_" + k) for k in
                  ("graph", "name", "names", "op_name", "device", "control")}
        fields.update(changes)
        return Scope(**fields)

    @property
    def graph(self):
        return self._graph

    @property
    def name(self):
        """The name prefix of this scope ("" at the root, e.g. "block/inner")."""
        return self._name

    @property
    def device(self):
        return self._device

    @property
    def control_dependencies(self):
        return list(self._control)

    def ok(self):
        """Always True: errors raise when an op is built (see the module docstring)."""
        return True

    def new_sub_scope(self, child_scope_name):
        """A scope whose ops are named `<prefix>/<child>/...`; the child name is uniquified."""
        if not child_scope_name:
            return self._copy(op_name="")
        unique = self._unique(child_scope_name, is_op=False)
        name = f"{self._name}/{unique}" if self._name else unique
        return self._copy(name=name, names={}, op_name="")

    def with_op_name(self, *fragments):
        """The next op gets this name (fragments concatenated: with_op_name("b_", 3) -> b_3)."""
        return self._copy(op_name="".join(str(f) for f in fragments))

    def with_device(self, device):
        """Ops built with the returned scope are pinned to `device` ("/gpu:0", ...)."""
        return self._copy(device=canonical_device(device))

    def with_control_dependencies(self, control_deps):
        """Adds control dependencies (ops, tensors or op objects) to those of this scope."""
        if not isinstance(control_deps, (list, tuple)):
            control_deps = [control_deps]
        control = list(self._control)
        for dep in map(_as_operation, control_deps):
            if dep not in control:
                control.append(dep)
        return self._copy(control=tuple(control))

    def with_no_control_dependencies(self):
        return self._copy(control=())

    def get_unique_name_for_op(self, default_name):
        """The full name the next op gets: the op name (or `default_name`), uniquified."""
        unique = self._unique(self._op_name or default_name, is_op=True)
        return f"{self._name}/{unique}" if self._name else unique

    def _unique(self, prefix, is_op):
        """C++ Scope's GetUniqueName; op names also skip names already in the graph."""
        def taken(candidate):
            if candidate in self._names:
                return True
            full = f"{self._name}/{candidate}" if self._name else candidate
            return is_op and full in self._graph._ops_by_name

        with self._graph._lock:
            if not taken(prefix):
                self._names[prefix] = 0
                return prefix
            count = self._names.setdefault(prefix, 0)
            while True:
                count += 1
                candidate = f"{prefix}_{count}"
                if not taken(candidate):
                    break
            self._names[prefix] = count
            self._names[candidate] = 0
            return candidate

    def build(self, op_type, keywords):
        """Adds an `op_type` node built from `keywords` (inputs and attrs by name)."""
        op_def = get_op_def(op_type)
        warn_deprecated(op_def)
        name = self.get_unique_name_for_op(op_type)
        helpers = self._copy(op_name="")

        def make_const(array, input_name):
            return helpers.build("Const", {"value": array, "dtype": dtype_of(array)}).outputs[0]

        return create_node(self._graph, op_def, name, dict(keywords), make_const,
                           control_inputs=list(self._control), device=self._device)

    def __repr__(self):
        return f"<gp.Scope name={self._name!r} device={self._device!r}>"
