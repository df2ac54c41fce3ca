"""The vector unit numba compiles for (``compiled.host_isa``): what LLVM generates for a CPU
name and features, that it agrees with the code numba itself generates (here and under the
forced AVX2 variables, in a child process), and that the micro-kernels' tiles and the
algorithm choices follow it."""

import json
import os
import platform
import subprocess
import sys

import pytest

from graphops.kernels.compiled import host_isa
from graphops.kernels.conv_algorithms import direct as conv_direct
from tests.module_settings import module_settings

X86 = platform.machine().lower() in ("x86_64", "amd64")
AVX2 = {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}

# A child's report: host_isa's answer, the direct loops' tiles, and which registers numba
# gives a 16-lane float32 add that it compiles (an intrinsic, as the micro-kernels are).
_REPORT = """
import json
from llvmlite import ir
from numba import njit
from numba.extending import intrinsic
from numba import types
import numpy as np
from graphops.kernels.compiled import direct, host_isa, planar

@intrinsic
def add16(typingctx, a):
    def codegen(context, builder, signature, args):
        vector = ir.VectorType(ir.FloatType(), 16)
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        where = builder.bitcast(data, vector.as_pointer())
        value = builder.load(where, align=4)
        builder.store(builder.fadd(value, value), where, align=4)
        return context.get_dummy_value()
    return types.void(a), codegen

@njit
def double(a):
    add16(a)

double(np.ones(16, np.float32))
asm = "".join(double.inspect_asm().values())
print(json.dumps({"isa": host_isa.isa()._asdict(), "tiles": host_isa.tiles()._asdict(),
                  "direct": [direct.LANES, direct.HALF_LANES, direct.ROWS, direct.WIDE_ROWS],
                  "planar": [planar.ACCUMULATORS, planar.FILTER_ACCUMULATORS],
                  "registers": [r for r in ("zmm", "ymm", "xmm") if r in asm]}))
"""


def _report(env):
    """The child's report with ``env`` added to this process's environment."""
    out = subprocess.run([sys.executable, "-c", _REPORT], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _lanes_of(registers):
    """The float32 lanes of the widest x86 register class in ``registers``."""
    return {"zmm": 16, "ymm": 8, "xmm": 4}[registers[0]]


@pytest.mark.skipif(not X86, reason="x86 CPU names")
@pytest.mark.parametrize("cpu, features, lanes, registers", [
    ("haswell", "", 8, 16),
    ("skylake-avx512", "", 16, 32),
    ("znver4", "", 16, 32),
    ("x86-64", "", 4, 16),
    ("x86-64", "+avx,+avx2,+fma", 8, 16),
    ("skylake-avx512", "-avx512f", 8, 16),
])
def test_describe_reads_llvms_code_for_a_cpu_and_features(cpu, features, lanes, registers):
    got = host_isa.describe(cpu, features)
    assert (got.cpu, got.features, got.lanes, got.registers) == (cpu, features, lanes,
                                                                 registers)


def test_describe_counts_neons_32_registers_on_arm():
    got = host_isa.describe("generic", "", machine="aarch64")
    assert (got.lanes, got.registers) == (4, 32)


@pytest.mark.parametrize("cpu, lanes, registers, want", [
    ("skylake-avx512", 16, 32, (16, 8, 8, 6)),
    ("znver4", 16, 32, (16, 8, 7, 4)),
    ("znver4", 8, 16, (8, 8, 6, 0)),          # forced down to AVX2
    ("haswell", 8, 16, (8, 8, 6, 0)),
    ("x86-64", 4, 16, (4, 4, 6, 0)),
    ("generic", 4, 32, (4, 4, 8, 6)),
])
def test_tiles_fit_the_register_file(cpu, lanes, registers, want):
    """Tiles that fit the registers: a call's accumulators, its vector loads and a
    broadcast."""
    tiles = host_isa.tiles(host_isa.Isa(cpu, "", lanes, registers))
    assert tuple(tiles) == want
    assert 2 * tiles.rows + 2 + 1 <= registers
    assert 4 * tiles.wide_rows + 4 + 1 <= registers


def test_isa_is_numbas_target_in_this_process():
    from numba.core import config
    import llvmlite.binding as ll
    got = host_isa.isa()
    assert got.cpu == (config.CPU_NAME or ll.get_host_cpu_name())
    assert got == host_isa.describe(*host_isa.numba_target())


@pytest.mark.skipif(not X86, reason="x86 register names")
@pytest.mark.parametrize("env", [{}, AVX2], ids=["host", "forced-avx2"])
def test_isa_agrees_with_the_code_numba_compiles(env):
    """In a child process (plain, and with numba forced to AVX2): host_isa's lanes are those
    of the registers numba's own code uses for an explicit 16-lane vector, the direct
    micro-kernels take the tiles for them, and the planar kernels keep as many 16-lane
    accumulators as fit (two registers each at AVX2)."""
    report = _report(env)
    isa, tiles = report["isa"], report["tiles"]
    assert isa["lanes"] == _lanes_of(report["registers"])
    assert report["direct"] == [tiles["lanes"], tiles["half_lanes"], tiles["rows"],
                                tiles["wide_rows"]]
    held = isa["registers"] * isa["lanes"] // 16
    assert report["planar"] == [held // 2, held * 3 // 4]
    if isa["registers"] >= 32 and isa["lanes"] == 16:
        assert report["planar"] == [16, 24]
    if env:
        assert (isa["cpu"], isa["features"], isa["lanes"], isa["registers"]) == (
            "haswell", "", 8, 16)
        assert "zmm" not in report["registers"]
        assert report["planar"] == [4, 6]
        assert report["direct"] == [8, 8, 6, 0]


@pytest.mark.parametrize("registers, channels, want", [
    (32, 64, True), (32, 8, True), (16, 64, False), (16, 16, False), (16, 8, True),
])
def test_strided_input_gradient_choice_follows_the_registers(registers, channels, want):
    isa = host_isa.Isa("cpu", "", 16 if registers == 32 else 8, registers)
    with module_settings(host_isa, isa=lambda: isa):
        assert conv_direct.phases_win(channels) is want


# A child's float16 depthwise conv: numba's code for the CPU the environment names converts
# float16 in hardware or not; either way the op runs (LLVM's runtime helpers for the
# conversions are not linked into numba's JIT: a loop that called them would abort).
_FLOAT16_CONV = """
import json
import numpy as np
from graphops.kernels.compiled import host_isa
from graphops.kernels.conv_algorithms.depthwise import depthwise_forward
from tests.reference_depthwise import depthwise_forward_ref

rng = np.random.default_rng(3)
x = rng.standard_normal((2, 6, 7, 16)).astype(np.float16)
w = rng.standard_normal((3, 3, 16, 1)).astype(np.float16)
geometry = ((1, 1), (1, 1), ((1, 1), (1, 1)))
got = depthwise_forward(x, w, *geometry).astype(np.float64)
want = depthwise_forward_ref(x.astype(np.float64), w.astype(np.float64), *geometry)
print(json.dumps({"hardware": host_isa.float16_conversions(),
                  "error": float(np.abs(got - want).max() / np.abs(want).max())}))
"""


@pytest.mark.skipif(not X86, reason="x86 CPU names")
@pytest.mark.parametrize("cpu, hardware", [("x86-64", False), ("haswell", True)])
def test_float16_runs_with_or_without_hardware_conversions(cpu, hardware):
    """Under a CPU name without F16C (x86-64) float16 converts by its bits, with it by the
    CPU's instructions; the conv matches the float64 reference either way."""
    env = {**os.environ, "NUMBA_CPU_NAME": cpu, "NUMBA_CPU_FEATURES": ""}
    out = subprocess.run([sys.executable, "-c", _FLOAT16_CONV], capture_output=True,
                         text=True, env=env, timeout=600,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.splitlines()[-1])
    assert report["hardware"] is hardware
    assert report["error"] < 2e-3
