"""Code-size budget, read from the source: no module over MAX_MODULE_LINES lines and no
function or method over MAX_FUNCTION_LINES, so each stays small enough to read whole.
Generated protobuf modules (``*_pb2.py``) are not counted."""

import ast

from tests.paths import ROOT

FOLDERS = ("registry", "kernels", "graphops", "tests", "benchmarks", "examples", "docs")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def oversized(source, name):
    """Messages for what in ``source`` (a module called ``name``) is over the budget."""
    found = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines (module, at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            span = node.end_lineno - node.lineno + 1
            if span > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}: {span} lines "
                             f"(function, at most {MAX_FUNCTION_LINES})")
    return found


def test_modules_and_functions_stay_within_the_budget():
    paths = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
                   if not p.name.endswith("_pb2.py"))
    found = [message for p in paths
             for message in oversized(p.read_text(), str(p.relative_to(ROOT)))]
    assert not found, "over the size budget:\n" + "\n".join(found)


def test_the_checker_reports_a_long_module_and_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    path = tmp_path / "long.py"
    path.write_text("async def long():\n" + body + "\n" * MAX_MODULE_LINES)
    assert oversized(path.read_text(), "long.py") == [
        f"long.py: {MAX_FUNCTION_LINES + 1 + MAX_MODULE_LINES} lines (module, at most "
        f"{MAX_MODULE_LINES})",
        f"long.py:1 long: {MAX_FUNCTION_LINES + 1} lines (function, at most {MAX_FUNCTION_LINES})"]
    assert oversized("def short():\n    pass\n", "short.py") == []
