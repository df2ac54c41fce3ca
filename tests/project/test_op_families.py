"""One name per op family: an op defined in ``registry/op_defs/<family>.py`` has its kernels
in ``kernels/ops/<family>.py`` (or ``graphops/framework_kernels/<family>.py``, for kernels
that need the framework) and its gradient, or its NotDifferentiable mark, in
``graphops/autodiff/rules/<family>.py``; so a newcomer finds every room of a change from the
op's family alone."""

import ast
import collections

import graphops  # noqa: F401  (registers the built-in ops, kernels and gradients)
from graphops.autodiff import gradients
from graphops.registry.kernel_registry import registered_kernels
from graphops.registry.op_registry import get_op_def, list_ops
from tests.paths import ROOT

DEFS = "graphops.registry.op_defs."
KERNEL_ROOMS = ("graphops.kernels.ops.", "graphops.framework_kernels.")
RULES = "graphops.autodiff.rules."


def _built_in_families():
    """{op: family} of the ops registry/op_defs defines."""
    return {op: get_op_def(op).module[len(DEFS):] for op in list_ops()
            if get_op_def(op).module.startswith(DEFS)}


def _marked_ops(node):
    """The op names a ``NotDifferentiable("X")`` call, or a ``for`` loop of them over a
    tuple of names, marks."""
    if isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple):
        if any(_marked_ops(statement) for statement in node.body):
            return [name.value for name in node.iter.elts]
    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) in ("NotDifferentiable", "NoGradient")):
        argument = node.value.args[0]
        return [argument.value] if isinstance(argument, ast.Constant) else [None]
    return []


def _not_differentiable_marks():
    """{op: rules module} of the NotDifferentiable/NoGradient marks in autodiff/rules."""
    return {op: path.stem
            for path in sorted((ROOT / "graphops" / "autodiff" / "rules").glob("*.py"))
            for node in ast.parse(path.read_text()).body for op in _marked_ops(node) if op}


def _misplaced(families):
    """'op (family): what lives elsewhere' for each kernel or gradient outside the family."""
    found = []
    for kernel in registered_kernels():
        family = families.get(kernel.op)
        module = kernel.kernel_class.__module__
        if family is not None and module not in (room + family for room in KERNEL_ROOMS):
            found.append(f"{kernel.op} ({family}): kernel in {module}")
    marks = _not_differentiable_marks()
    for op, family in sorted(families.items()):
        if op not in gradients._registry:
            continue
        function = gradients._registry[op]
        module = function.__module__ if function is not None else RULES + marks.get(op, "?")
        if module != RULES + family:
            found.append(f"{op} ({family}): gradient in {module}")
    return sorted(set(found))


def test_every_kernel_and_gradient_lives_in_its_ops_family():
    misplaced = _misplaced(_built_in_families())
    assert not misplaced, "\n".join(misplaced)


def test_every_family_module_holds_some_op_of_that_family():
    families = collections.defaultdict(set)
    for op, family in _built_in_families().items():
        families[family].add(op)
    kernel_modules = {p.stem for p in (ROOT / "kernels" / "ops").glob("*.py")} | {
        p.stem for p in (ROOT / "graphops" / "framework_kernels").glob("*.py")}
    rules_modules = {p.stem for p in (ROOT / "graphops" / "autodiff" / "rules").glob("*.py")}
    helpers = {"__init__", "util"}
    assert kernel_modules - helpers <= set(families), kernel_modules - helpers - set(families)
    assert rules_modules - helpers <= set(families), rules_modules - helpers - set(families)


def test_the_check_reports_a_kernel_outside_its_family():
    assert any("Conv2D (math): kernel in graphops.kernels.ops.conv" == line
               for line in _misplaced({"Conv2D": "math"}))
