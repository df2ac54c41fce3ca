"""`python -m graphops`: ops, kernels, devices, dot."""

import subprocess
import sys

import pytest

import graphops as gp
from graphops.runtime import devices
from graphops.__main__ import main
from graphops.interchange.graph_def import as_graph_def
from graphops.interchange.graph_json import graph_def_to_json
from graphops.registry import OpKernel, register_kernel, register_op
from graphops.registry.kernel_registry import deregister_kernels
from graphops.registry.op_registry import deregister_op, get_op_def, list_ops
from tests.paths import ROOT


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ops_lists_every_op_with_its_summary(capsys):
    code, out, _ = _run(capsys, "ops")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(list_ops())
    assert [line.split()[0] for line in lines] == list_ops()
    conv = next(line for line in lines if line.startswith("Conv2D "))
    assert conv.split(None, 1)[1] == get_op_def("Conv2D").summary


def test_ops_name_prints_the_op_def(capsys):
    code, out, _ = _run(capsys, "ops", "Conv3DBackpropFilterV2")
    assert code == 0
    assert out.startswith('op {\n  name: "Conv3DBackpropFilterV2"\n  input_arg {\n'
                          '    name: "input"\n    type_attr: "T"\n  }\n')
    assert '  attr {\n    name: "strides"\n    type: "list(int)"\n    has_minimum: true\n' \
           '    minimum: 5\n  }\n' in out
    assert ('    name: "data_format"\n    type: "string"\n    default_value {\n'
            '      s: "NDHWC"\n    }\n    allowed_values {\n      list {\n        s: "NDHWC"\n'
            '        s: "NCDHW"\n      }\n    }\n') in out
    assert out.endswith("}\n")


def test_ops_doc_prints_the_wrapper_docstring(capsys):
    code, out, _ = _run(capsys, "ops", "Relu", "--doc")
    assert code == 0 and out == gp.raw_ops.Relu.__doc__ + "\n"


def test_unknown_op_suggests_close_names(capsys):
    code, out, err = _run(capsys, "ops", "Conv2d")
    assert code == 1 and out == ""
    assert err == "graphops: no op named 'Conv2d' is registered. Did you mean: Conv2D, Conv, Conv3D?\n"
    code, _, err = _run(capsys, "kernels", "Nope")
    assert code == 1 and "no op named 'Nope'" in err


def test_kernels_grouped_by_device(capsys):
    register_op("CliTestOp").input("x: T").output("y: T").attr("T: {float, int32}")

    @register_kernel("CliTestOp", device="CPU", type_constraints={"T": [gp.float32]})
    class CliCpu(OpKernel):
        pass

    @register_kernel("CliTestOp", device="GPU", type_constraints={"T": [gp.int32]},
                     priority=2)
    class CliGpu(OpKernel):
        pass

    try:
        code, out, _ = _run(capsys, "kernels", "CliTestOp")
        assert code == 0
        assert out.splitlines() == [
            "CPU (1 kernel):",
            f"  {'CliTestOp':<36} {'CliCpu':<32} T in [DT_FLOAT]",
            "GPU (1 kernel):",
            f"  {'CliTestOp':<36} {'CliGpu':<32} T in [DT_INT32]; priority=2"]
        code, out, _ = _run(capsys, "kernels")
        assert code == 0 and "CPU (" in out and "  Conv2D " in out and "CliGpu" in out
    finally:
        deregister_kernels("CliTestOp")
        deregister_op("CliTestOp")
    code, out, _ = _run(capsys, "kernels", "NoOp")
    assert code == 0 and out.startswith("CPU (1 kernel):\n  NoOp")


def test_devices_lists_physical_devices(capsys):
    code, out, _ = _run(capsys, "devices")
    assert code == 0
    assert out.splitlines() == [f"{d.name}  {d.device_type}"
                                for d in devices.list_physical_devices()]
    assert out.startswith("/physical_device:CPU:0  CPU\n")


def _graph_json(tmp_path):
    g = gp.Graph()
    with g.as_default():
        gp.raw_ops.Relu(features=gp.placeholder(gp.float32, [2], name="x"), name="r")
    path = tmp_path / "g.json"
    path.write_text(graph_def_to_json(as_graph_def(g)))
    return path


def test_dot_prints_or_writes_a_picture(capsys, tmp_path):
    path = _graph_json(tmp_path)
    code, out, _ = _run(capsys, "dot", str(path))
    assert code == 0 and '"x" -> "r" [label="float32 (2,)"];' in out
    code, out, _ = _run(capsys, "dot", str(path), "-o", str(tmp_path / "g.gv"))
    assert code == 0 and out == "" and (tmp_path / "g.gv").read_text().startswith("digraph")
    binary = gp.io.write_graph(gp.io.read_graph_def(path), str(tmp_path), "g.pb", as_text=False)
    code, out, _ = _run(capsys, "dot", binary)
    assert code == 0 and '"x" -> "r" [label="float32 (2,)"];' in out


def test_dot_errors_are_reported_not_raised(capsys, tmp_path):
    code, _, err = _run(capsys, "dot", str(tmp_path / "missing.json"))
    assert code == 1 and err.startswith("graphops: [Errno 2]")
    bad = tmp_path / "bad.json"
    bad.write_text('{"node": 1}')
    code, _, err = _run(capsys, "dot", str(bad))
    assert code == 1 and "Invalid GraphDef JSON: Failed to parse node field" in err


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "the following arguments are required: command" in capsys.readouterr().err


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "graphops", "ops", "NoOp"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('op {\n  name: "NoOp"\n')
