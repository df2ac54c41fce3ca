"""Every built-in OpDef as TF 2.21 registers it, field by field (skips without TensorFlow):
arg names and types, attr names, order, types, minimums, defaults, allowed values (in TF's
order, which shows in error messages), commutativity and deprecation."""


import pytest

from graphops.registry.dtypes import DType
from graphops.registry.op_registry import get_op_def, list_ops

tf = pytest.importorskip("tensorflow")
from tensorflow.python.framework import dtypes as tf_dtypes, op_def_registry  # noqa: E402

BUILT_IN = sorted(op for op in list_ops()
                  if get_op_def(op).module.startswith("graphops.registry.op_defs."))


def tf_type(enum):
    return tf_dtypes.as_dtype(enum).name


def _args(args):
    return [(a.name, a.type_attr, a.number_attr, a.type_list_attr, a.is_ref,
             a.type.name if a.type else None) for a in args]


def _tf_args(args):
    return [(a.name, a.type_attr, a.number_attr, a.type_list_attr, a.is_ref,
             tf_type(a.type) if a.type else None) for a in args]


def tf_default(value):
    """A TF AttrValue default as a plain Python value (None for shapes and tensors)."""
    which = value.WhichOneof("value")
    if which == "list":
        field = next((f for f in ("s", "i", "f", "b", "type") if getattr(value.list, f)), None)
        items = list(getattr(value.list, field)) if field else []
        return [tf_type(t) if field == "type" else t.decode() if field == "s" else t
                for t in items]
    if which in ("shape", "tensor"):
        return None
    raw = getattr(value, which)
    return tf_type(raw) if which == "type" else raw.decode() if which == "s" else raw


def our_default(value):
    if isinstance(value, DType):
        return value.name
    if isinstance(value, (list, tuple)):
        return [our_default(v) for v in value]
    return value if isinstance(value, (bool, int, float, str)) else None


def test_every_built_in_op_is_a_tensorflow_op():
    assert [op for op in BUILT_IN if op_def_registry.get(op) is None] == []


@pytest.mark.parametrize("op", BUILT_IN)
def test_op_def_matches_tensorflow(op):
    ours, theirs = get_op_def(op), op_def_registry.get(op)
    assert _args(ours.input_arg) == _tf_args(theirs.input_arg)
    assert _args(ours.output_arg) == _tf_args(theirs.output_arg)
    assert [a.name for a in ours.attr] == [a.name for a in theirs.attr]
    for mine, tf_attr in zip(ours.attr, theirs.attr):
        where = f"{op}.{mine.name}"
        assert mine.type == tf_attr.type, where
        assert (mine.has_minimum, mine.minimum) == (tf_attr.has_minimum, tf_attr.minimum), where
        assert mine.has_default == tf_attr.HasField("default_value"), where
        if mine.has_default:
            assert our_default(mine.default_value) == \
                pytest.approx(tf_default(tf_attr.default_value)), where
        if tf_attr.allowed_values.list.type:
            assert [t.name for t in mine.allowed_values] == \
                [tf_type(t) for t in tf_attr.allowed_values.list.type], where
        elif tf_attr.allowed_values.list.s:
            assert mine.allowed_values == [s.decode() for s in tf_attr.allowed_values.list.s], where
        else:
            assert mine.allowed_values is None, where
    assert ours.is_commutative == theirs.is_commutative
    assert ours.is_stateful == theirs.is_stateful
    assert (ours.deprecation.version if ours.deprecation else 0) == \
        (theirs.deprecation.version if theirs.HasField("deprecation") else 0)
