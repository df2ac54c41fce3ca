"""The IR of bfloat16 accesses two vectors at a time (``compiled.ir.VectorAccess``
``load_pairs`` / ``store_pairs``), compiled by LLVM for a CPU with AVX512-BF16 whatever the
host: the one-instruction rounding is there, and a streamed store stays non-temporal on
both of its ways (where each way stored, LLVM's passes merged the two into one plain
store)."""

import pytest
from llvmlite import ir

from graphops.kernels.compiled import host_isa
from graphops.kernels.compiled import ir as loops_ir

BF16_HOST = ("znver4", "+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx512bf16")
TRIPLE = "x86_64-unknown-linux-gnu"


def _round_trip_assembly(stream, monkeypatch, conversions=True):
    """The assembly of a function storing ``load_pairs``' two vectors back with
    ``store_pairs`` (non-temporal with ``stream``)."""
    monkeypatch.setattr(host_isa, "bfloat16_dots", lambda: conversions)
    module = ir.Module()
    module.triple = TRIPLE
    halves = ir.IntType(16).as_pointer()
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [halves, halves]), "pairs")
    builder = ir.IRBuilder(function.append_basic_block())
    source = loops_ir.VectorAccess(builder, False, False, None, "bfloat16")
    target = loops_ir.VectorAccess(builder, False, stream, None, "bfloat16")
    even, odd = source.load_pairs(function.args[0], loops_ir.INT(0))
    target.store_pairs(even, odd, function.args[1], loops_ir.INT(0))
    builder.ret_void()
    return _optimized_assembly(str(module))


def _optimized_assembly(source):
    """LLVM's assembly of IR ``source`` for ``BF16_HOST`` after its -O3 passes (which numba
    runs on its functions: they merge stores)."""
    import llvmlite.binding as ll

    if not hasattr(ll, "create_pass_builder"):
        pytest.skip("this llvmlite has no new pass manager")
    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()
    machine = ll.Target.from_triple(TRIPLE).create_target_machine(
        cpu=BF16_HOST[0], features=BF16_HOST[1], opt=3)
    module = ll.parse_assembly(source)
    passes = ll.create_pass_builder(machine, ll.create_pipeline_tuning_options(3))
    passes.getModulePassManager().run(module, passes)
    return machine.emit_assembly(module)


@pytest.mark.parametrize("stream", [False, True])
def test_pairs_round_in_one_instruction_and_stream_where_asked(stream, monkeypatch):
    assembly = _round_trip_assembly(stream, monkeypatch)
    assert "vcvtne2ps2bf16" in assembly and "vfpclassps" in assembly
    assert "vpmovzxwd" not in assembly            # no widening across lanes
    assert ("vmovnt" in assembly) == stream


def test_pairs_round_by_integers_without_the_conversions(monkeypatch):
    assembly = _round_trip_assembly(True, monkeypatch, conversions=False)
    assert "vcvtne2ps2bf16" not in assembly and "vmovnt" in assembly


def test_pairs_are_unmasked_bfloat16_only():
    builder = ir.IRBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []),
                                       "f").append_basic_block())
    for access in (loops_ir.VectorAccess(builder, False, False, None, "float16"),
                   loops_ir.VectorAccess(builder, False, False, None)):
        with pytest.raises(TypeError, match="unmasked bfloat16"):
            access.load_pairs(None, loops_ir.INT(0))
