"""The benchmark runners stay runnable (smoke runs on the smallest cases; no timing asserted).

bench_gpu.py and bench_gpu_training.py can only be timed on a real GPU; their --simulated mode
runs the same code on the simulated GPU and checks every result against the CPU, so a broken
runner shows up here rather than on a borrowed GPU machine.
"""

import importlib.util
import os
import re
import runpy
import sys

import pytest
from tests.paths import ROOT

BENCHMARKS = os.path.join(ROOT,
                          "benchmarks")


def _run(script, argv, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [script] + argv)
    monkeypatch.syspath_prepend(BENCHMARKS)
    runpy.run_path(os.path.join(BENCHMARKS, script), run_name="__main__")
    return capsys.readouterr().out


def test_bench_conv_quick_runs(monkeypatch, capsys):
    out = _run("bench_conv.py", ["--quick", "--no-ref", "--repeat", "1", "--only", "Conv2D"],
               monkeypatch, capsys)
    rows = [line for line in out.splitlines() if line.startswith("Conv2D")]
    assert len(rows) == 3 and "best SGEMM rate seen" in out


def test_bench_conv_times_the_references_case_by_case(monkeypatch, capsys):
    """The references' child serves one case at a time, round after round: where TF
    imports, each row gets TF's time and the ratio; elsewhere the table has no TF column."""
    out = _run("bench_conv.py", ["--quick", "--repeat", "1", "--rounds", "2", "--only",
                                 "Conv2DBackpropFilter"], monkeypatch, capsys)
    rows = [line.split() for line in out.splitlines() if line.startswith("Conv2D")]
    assert len(rows) == 1 and "best of 2 round(s) each" in out
    if importlib.util.find_spec("tensorflow") is None:
        assert "vs TF" not in out
    else:
        assert "vs TF" in out and float(rows[0][-2]) > 0 and float(rows[0][-1]) > 0


@pytest.mark.parametrize("only", ["Conv3DBackpropInputV2", "Depthwise"])
def test_bench_gpu_simulated_runs_and_matches_the_cpu(monkeypatch, capsys, only):
    out = _run("bench_gpu.py", ["--simulated", "--quick", "--repeat", "1", "--only", only],
               monkeypatch, capsys)
    assert out.startswith("simulated GPU; SGEMM")
    rows = [line for line in out.splitlines() if line.startswith(only)]
    assert len(rows) == 1
    max_err = float(re.split(r"\s+", rows[0].strip())[-1])
    assert max_err < 1e-5


def test_bench_gpu_training_simulated_trains_alike_on_both_devices(monkeypatch, capsys):
    out = _run("bench_gpu_training.py", ["--simulated", "--steps", "3", "--batch", "8"],
               monkeypatch, capsys)
    assert "nodes placed automatically: {'GPU': 185}" in out
    assert "; of the last: {'to GPU': 4, 'to host': 1}" in out
    losses = {line.split(":")[0]: [float(v) for v in line.split(":")[1].split()]
              for line in out.splitlines() if line.startswith("losses on the")}
    assert len(losses["losses on the GPU"]) == 3
    assert losses["losses on the GPU"] == losses["losses on the CPU"]


def test_bench_models_runs_and_matches_tensorflow(monkeypatch, capsys):
    pytest.importorskip("tensorflow")
    out = _run("bench_models.py", ["--only", "small_cnn", "--batch", "1", "--repeat", "1",
                                   "--rounds", "1"], monkeypatch, capsys)
    rows = [line.split() for line in out.splitlines() if line.startswith("small_cnn")]
    assert len(rows) == 1
    assert float(rows[0][-1]) < 1e-5
    assert all(float(ms) > 0 for ms in rows[0][3:5])    # timed in the children


def test_bench_models_warm_up_outlasts_the_conv_tuning(monkeypatch):
    """The model runners time the runs after graphops' conv tuning has chosen: a conv that
    two paths take makes WARM_UPS + TRIALS calls of each first."""
    from graphops.kernels.conv_algorithms import tuning
    monkeypatch.syspath_prepend(BENCHMARKS)
    import bench_models
    assert bench_models.WARM_UP_RUNS > 2 * (tuning.WARM_UPS + tuning.TRIALS)


def test_bench_sequence_runs_and_matches_tensorflow(monkeypatch, capsys):
    pytest.importorskip("tensorflow")
    out = _run("bench_sequence.py", ["--only", "lstm", "--batch", "1", "--repeat", "1",
                                     "--rounds", "1"], monkeypatch, capsys)
    assert out.startswith("ISA: graphops' compiled loops for ") and "\nAVX2 run: " in out
    rows = [line.split() for line in out.splitlines() if line.startswith("lstm")]
    assert [row[1] for row in rows] == ["lowered", "functional"]
    assert all(float(row[-1]) < 1e-5 for row in rows)

@pytest.mark.slow
def test_bench_distributed_quick_runs(monkeypatch, capsys):
    pytest.importorskip("dask.distributed", reason="dask.distributed is not installed "
                        "(pip install graphops[distributed])")
    out = _run("bench_distributed.py", ["--quick", "--repeat", "2"], monkeypatch, capsys)
    rows = [line for line in out.splitlines()
            if line.startswith(("empty step", "one cross-task", "transfer", "data-parallel"))]
    assert len(rows) == 5
    timings = [row for row in rows if not row.startswith("transfer")]
    assert all(float(row.split()[-2]) > 0 for row in timings)


def test_bench_training_runs_and_both_frameworks_train_alike(monkeypatch, capsys):
    out = _run("bench_training.py", ["--batch", "4", "--repeat", "1", "--rounds", "2"],
               monkeypatch, capsys)
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith("  ")}
    assert float(rows["graphops"][1]) > 0
    if rows["TF"][1] != "not":                          # TensorFlow installed
        assert abs(float(rows["graphops"][-1]) - float(rows["TF"][-1])) < 1e-4
        assert len(rows["ratio"][rows["ratio"].index("(rounds:") + 1:]) == 2   # one a round


@pytest.mark.slow
def test_bench_compile_runs(monkeypatch, capsys):
    out = _run("bench_compile.py", [], monkeypatch, capsys)
    rows = out.splitlines()[1:]
    assert len(rows) == 30 and rows[0].startswith("import numba")
    assert any(row.startswith("Conv2DBackpropInput") for row in rows)
    assert all(int(row.split()[-1]) >= 0 for row in rows)


def test_bench_programs_runs_and_times_a_program(monkeypatch, capsys):
    out = _run("bench_programs.py", ["--only", "logistic", "--steps", "3", "--repeat", "1",
                                     "--rounds", "1"], monkeypatch, capsys)
    rows = [line.split() for line in out.splitlines() if line.startswith("logistic")]
    assert len(rows) == 1 and rows[0][1] != "failed"
    if rows[0][2] != "n/a":                           # TensorFlow installed
        assert len(rows[0]) == 5                      # ours, TF's, the ratio, one round
