"""The vector unit numba generates code for, and the register tiles the micro-kernels take
from it.

numba compiles for ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` where they are set (its
config), else for the host's CPU name and features. ``isa()`` asks LLVM itself, with that
CPU name and those features, which registers a 16-lane float32 add is given: ``zmm``
(AVX-512: 16 lanes, 32 registers), ``ymm`` (AVX/AVX2: 8 lanes, 16 registers), ``xmm`` (SSE: 4
lanes, 16 registers) or NEON's ``v`` registers (4 lanes, 32 registers). A CPU name alone
(``NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES=""``, numba's way to force AVX2 code) carries
its own features, which only LLVM knows: hence the probe rather than a feature list.

numba caches compiled code per CPU name and features, so a loop module whose tiles come from
here compiles once per level, from one source.
"""

import ctypes
import functools
import platform
import sys
from collections import namedtuple

Isa = namedtuple("Isa", "cpu features lanes registers")
Tiles = namedtuple("Tiles", "lanes half_lanes rows wide_rows")
# CPUs that run each 512-bit vector operation as two 256-bit halves (AMD Zen 4): there a
# broadcast costs what a multiply-add does, and two-vector calls keep 7 rows (the
# micro-kernel of two vectors summed 106-114 GFLOP/s a core with 5-7 rows, 92-95 with 8);
# four-vector calls keep the 4 rows measured there.
SPLIT_512_BIT_CPUS = ("znver4",)
# Linux x86-64: the system call and the request that grant a process the AMX tile state
_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA = 158, 0x1023, 18

_PROBE = """
define void @probe(<16 x float>* %a, <16 x float>* %b) {
  %x = load <16 x float>, <16 x float>* %a
  %y = load <16 x float>, <16 x float>* %b
  %z = fadd <16 x float> %x, %y
  store <16 x float> %z, <16 x float>* %a
  ret void
}
"""

_HALF_PROBE = """
define void @probe(<16 x i16>* %a, <16 x float>* %b) {
  %bits = load <16 x i16>, <16 x i16>* %a
  %halves = bitcast <16 x i16> %bits to <16 x half>
  %x = fpext <16 x half> %halves to <16 x float>
  store <16 x float> %x, <16 x float>* %b
  %rounded = fptrunc <16 x float> %x to <16 x half>
  %back = bitcast <16 x half> %rounded to <16 x i16>
  store <16 x i16> %back, <16 x i16>* %a
  ret void
}
"""


@functools.lru_cache(maxsize=None)
def numba_target():
    """``(cpu name, features)`` as numba's code generator passes them to LLVM; kept, as
    numba reads them once per process and asking LLVM for the host's features costs
    hundreds of microseconds (the conv routes ask on every call)."""
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features
    import llvmlite.binding as ll

    cpu = config.CPU_NAME or ll.get_host_cpu_name()
    features = (config.CPU_FEATURES if config.CPU_FEATURES is not None
                else get_host_cpu_features())
    return cpu, features


@functools.lru_cache(maxsize=None)
def describe(cpu, features, machine=None):
    """The ``Isa`` LLVM generates for ``cpu`` with ``features`` (a string as numba passes
    it, ``""`` for the CPU's own) on this process's target (``machine``, e.g. ``x86_64``,
    for the register count)."""
    assembly = _assembly(_PROBE, cpu, features)
    machine = (machine or platform.machine()).lower()
    if "zmm" in assembly:
        return Isa(cpu, features, 16, 32)
    if "ymm" in assembly:
        return Isa(cpu, features, 8, 16)
    arm = machine.startswith(("aarch64", "arm"))
    return Isa(cpu, features, 4, 32 if arm else 16)


@functools.lru_cache(maxsize=None)
def float16_conversions():
    """Whether numba's code converts float16 to and from float32 in hardware (x86's F16C or
    AVX512-FP16, ARM's FCVT): without it LLVM calls runtime helpers that numba's JIT does
    not link, and a loop that converts would abort the process as it compiles."""
    return "call" not in _assembly(_HALF_PROBE, *numba_target())


def _assembly(source, cpu, features):
    """The assembly LLVM emits for the IR ``source`` for ``cpu`` with ``features``."""
    import llvmlite.binding as ll

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    target = ll.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=2)
    return target.emit_assembly(ll.parse_assembly(source))


@functools.lru_cache(maxsize=None)
def matrix_tiles():
    """Whether compiled loops may use AMX tiles for bfloat16 products: numba generates code
    with AMX-TILE and AMX-BF16, and Linux grants this process the tile state (it asks once,
    ``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``; a process that never asked
    is killed at its first tile instruction)."""
    features = numba_target()[1].split(",")
    if not {"+amx-tile", "+amx-bf16"} <= set(features):
        return False
    if not (sys.platform.startswith("linux") and platform.machine() == "x86_64"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0
    except (OSError, AttributeError):
        return False


@functools.lru_cache(maxsize=None)
def bfloat16_dots():
    """Whether compiled loops may use AVX512-BF16's dot products of bfloat16 pairs
    (``vdpbf16ps``) and conversions: numba generates code with that feature and with
    AVX512-DQ and -BW (the classifying and shuffling instructions around them)."""
    return {"+avx512bf16", "+avx512dq", "+avx512bw"} <= set(numba_target()[1].split(","))


def isa():
    """The ``Isa`` of the code numba generates in this process."""
    return describe(*numba_target())


def tiles(host=None):
    """The micro-kernels' register tiles for ``host`` (an ``Isa``; this process's by
    default): ``lanes`` float32 values a vector; ``half_lanes``, the vector a last group of
    8 output channels takes (8 where a vector is wider); ``rows`` of accumulators a call of
    one or two vectors a row keeps; ``wide_rows`` a call of four keeps (0: no such calls).
    With 32 registers: 8 rows of two vectors (16 accumulators, 2 vector loads and a
    broadcast; 7 on ``SPLIT_512_BIT_CPUS``) and 6 of four (24 accumulators, 4 loads and a
    broadcast: 29 registers; 4 on ``SPLIT_512_BIT_CPUS``). Six rows of four load a vector
    operand a third less often per multiply-add than four; seven rows spill. With 16: 6
    rows of two (12 accumulators, 15 registers in all) and no four-vector calls (4 x 2
    accumulators leave too few independent sums to hide the fused multiply-add's latency).
    The tiles made for 32 registers would spill to the stack on every step at AVX2."""
    host = host or isa()
    wide = host.registers >= 32
    split = wide and host.cpu in SPLIT_512_BIT_CPUS
    rows = 7 if split else 8 if wide else 6
    return Tiles(host.lanes, min(8, host.lanes), rows, 4 if split else 6 if wide else 0)
