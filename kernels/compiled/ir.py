"""Building blocks of the numba intrinsics written in LLVM IR (``compiled.direct``,
``compiled.depthwise_vectors``, ``compiled.planar``, ``compiled.transpose``,
``compiled.pool_vectors``): a counted loop
carrying values in registers, a switch on a run-time count, fused multiply-adds of vectors
(and of float32 scalars, for compiled loops that need one rounding whatever their
contraction flags), vector loads and stores (plain, masked or non-temporal; of float32
values or of bfloat16 bits, widened to float32 as they load and rounded as they store, two
vectors of bfloat16 at a time as their even and odd values), a memory fence for after
non-temporal stores, an intrinsic's typing and its arguments as pointers."""

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from graphops.kernels.compiled import host_isa
from graphops.kernels.compiled.constants import CACHE_LINE_BYTES, LANES

INT = ir.IntType(64)
INT32 = ir.IntType(32)
VECTOR = ir.VectorType(ir.FloatType(), LANES)     # a vector register of float32 values
ZERO = ir.Constant(VECTOR, [0.0] * LANES)
HALF_BITS = ir.VectorType(ir.IntType(16), LANES)  # a vector of 16-bit floats, as bits
_HALVES = ir.VectorType(ir.HalfType(), LANES)     # ... as float16 values
WORDS = ir.VectorType(INT32, LANES)               # float32 values, as bits


def arguments(context, builder, signature, args):
    """An intrinsic's arguments: arrays as their data pointers, the rest as they are."""
    return [context.make_array(kind)(context, builder, value).data
            if isinstance(kind, types.Array) else value
            for kind, value in zip(signature.args, args)]


def typed(arguments, floats, offsets, codegen, halves=()):
    """An intrinsic's typing: ``(void signature, codegen)`` when the arrays among its typed
    ``arguments`` at positions ``floats`` hold float32, those at ``halves`` float32 or
    16-bit float bits (``half_kind``) and those at ``offsets`` int64 (the signature takes
    them as given and every other argument as an int64), else None."""
    arrays = {**dict.fromkeys(floats, (types.float32,)), **dict.fromkeys(offsets, (types.int64,)),
              **dict.fromkeys(halves, (types.float32, types.uint16, types.int16))}
    if any(arguments[i].dtype not in kinds for i, kinds in arrays.items()):
        return None
    return types.void(*(argument if i in arrays else types.int64
                        for i, argument in enumerate(arguments))), codegen


def fma(builder, vector_type):
    """LLVM's fused multiply-add of two float vectors of ``vector_type`` onto a third."""
    return builder.module.declare_intrinsic(
        f"llvm.fma.v{vector_type.count}f32", fnty=ir.FunctionType(vector_type, [vector_type] * 3))


@intrinsic
def fused_multiply_add(typingctx, a, b, c):
    """a * b + c for float32 scalars, rounded once (LLVM's fma, which vectorizes): the
    same result whatever contraction the calling function allows."""
    if not all(value == types.float32 for value in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        function = builder.module.declare_intrinsic(
            "llvm.fma.f32", fnty=ir.FunctionType(ir.FloatType(), [ir.FloatType()] * 3))
        return builder.call(function, list(args))
    return types.float32(types.float32, types.float32, types.float32), codegen


def counted_loop(builder, count, initial, body):
    """Emits ``for k in range(count): values = body(k, values)``, the carried values
    starting as ``initial`` (kept in registers: phis); returns their values after the loop
    (``initial`` if it never ran) and leaves the builder after it."""
    entry = builder.block
    loop = builder.append_basic_block("loop")
    done = builder.append_basic_block("done")
    builder.cbranch(builder.icmp_signed(">", count, INT(0)), loop, done)
    builder.position_at_end(loop)
    k = builder.phi(INT)
    values = [builder.phi(value.type) for value in initial]
    following = body(k, values)
    latch = builder.block                  # the body's last block (it may hold loops)
    k_next = builder.add(k, INT(1))
    for phi, start, step in [(k, INT(0), k_next)] + list(zip(values, initial, following)):
        phi.add_incoming(start, entry)
        phi.add_incoming(step, latch)
    builder.cbranch(builder.icmp_signed("<", k_next, count), loop, done)
    builder.position_at_end(done)
    results = [builder.phi(value.type) for value in following]
    for result, start, value in zip(results, initial, following):
        result.add_incoming(start, entry)
        result.add_incoming(value, latch)
    return results


def switch(builder, value, counts, emit):
    """Emits ``emit(count)`` for each of ``counts``, the one equal to the run-time ``value``
    running (none for other values); leaves the builder after them."""
    leave = builder.append_basic_block("leave")
    cases = builder.switch(value, leave)
    for count in counts:
        block = builder.append_basic_block(f"case{count}")
        cases.add_case(INT(count), block)
        builder.position_at_end(block)
        emit(count)
        builder.branch(leave)
    builder.position_at_end(leave)


def half_kind(kind):
    """What arrays of numba type ``kind`` hold for ``VectorAccess``: "bfloat16" bits
    (uint16), "float16" bits (int16), or None (float32 values). The two 16-bit formats
    travel as integers of different signedness so that a kernel compiles once for each."""
    return {types.uint16: "bfloat16", types.int16: "float16"}.get(kind.dtype)


def _widened(builder, bits, half):
    """The float32 values of a vector of ``half`` bits: bfloat16's are float32's upper
    half; float16's widen exactly (``vcvtph2ps`` on x86)."""
    if half == "float16":
        return builder.fpext(builder.bitcast(bits, _HALVES), VECTOR)
    return builder.bitcast(builder.shl(builder.zext(bits, WORDS), _splat(WORDS, 16)), VECTOR)


def _rounded(builder, values, half):
    """A float32 vector rounded to ``half`` bits: float16's by LLVM's IEEE conversion (to
    nearest even, overflowing to infinity, NaN kept NaN); bfloat16's as
    ``casts.bfloat16_bits`` rounds each value: to nearest even, overflowing to infinity; a
    NaN becomes the quiet NaN of its sign."""
    if half == "float16":
        return builder.bitcast(builder.fptrunc(values, _HALVES), HALF_BITS)
    return builder.trunc(_bfloat16_words(builder, values), HALF_BITS)


def _bfloat16_words(builder, values):
    """A float32 vector's values rounded to bfloat16 (as ``_rounded``), each one's bits in
    the low half of a 32-bit word (the high half zero)."""
    bits = builder.bitcast(values, WORDS)
    upper = builder.lshr(bits, _splat(WORDS, 16))
    odd = builder.and_(upper, _splat(WORDS, 1))
    nearest = builder.lshr(builder.add(builder.add(bits, _splat(WORDS, 0x7FFF)), odd),
                           _splat(WORDS, 16))
    nan = builder.icmp_unsigned(">", builder.and_(bits, _splat(WORDS, 0x7FFFFFFF)),
                                _splat(WORDS, 0x7F800000))
    quiet = builder.or_(builder.and_(upper, _splat(WORDS, 0x8000)), _splat(WORDS, 0x7FC0))
    return builder.select(nan, quiet, nearest)


def _paired_words(builder, even, odd):
    """``even`` and ``odd`` rounded as ``_rounded`` rounds bfloat16, in words of an even and
    an odd value."""
    return builder.or_(_bfloat16_words(builder, even),
                       builder.shl(_bfloat16_words(builder, odd), _splat(WORDS, 16)))


def _nan_or_subnormal(builder, values):
    """Which lanes of a float32 vector hold a NaN or a subnormal value (``vfpclassps``)."""
    mask = ir.VectorType(ir.IntType(1), LANES)
    classify = builder.module.declare_intrinsic(
        "llvm.x86.avx512.fpclass.ps.512", fnty=ir.FunctionType(mask, [VECTOR, INT32]))
    return builder.call(classify, [values, INT32(0x81 | 0x20)])   # NaNs, subnormals


def _interleaved_bfloat16(builder, even, odd):
    """``even`` and ``odd`` rounded to bfloat16 by AVX512-BF16's ``vcvtne2ps2bf16`` (to
    nearest even, overflowing to infinity; for values that are neither NaN nor subnormal
    what ``_rounded`` gives), interleaved into words of an even and an odd value. Declared
    with the 16-bit integer vector LLVM took before its ``bfloat`` type (LLVM reads both)."""
    halves = ir.VectorType(ir.IntType(16), 2 * LANES)
    convert = builder.module.declare_intrinsic(
        "llvm.x86.avx512bf16.cvtne2ps2bf16.512", fnty=ir.FunctionType(halves, [VECTOR, VECTOR]))
    rounded = builder.call(convert, [odd, even])      # even's values first
    order = [i // 2 + (i % 2) * LANES for i in range(2 * LANES)]
    return builder.bitcast(builder.shuffle_vector(rounded, ir.Constant(halves, ir.Undefined),
                                                  ir.Constant(ir.VectorType(INT32, 2 * LANES),
                                                              order)), WORDS)


def broadcast(builder, value, vector_type):
    """A ``vector_type`` vector of copies of the scalar ``value``."""
    lone = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value, INT32(0))
    return builder.shuffle_vector(lone, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(INT32, vector_type.count),
                                              [0] * vector_type.count))


def deinterleaved(builder, low, high):
    """The even and the odd lanes of the ``2*LANES`` values of vectors ``low`` then
    ``high``: two vectors, the order ``VectorAccess.load_pairs`` gives values in."""
    lanes = range(2 * LANES)
    return tuple(builder.shuffle_vector(low, high, ir.Constant(
        ir.VectorType(INT32, LANES), list(lanes[parity::2]))) for parity in (0, 1))


def _splat(vector_type, value):
    return ir.Constant(vector_type, [value] * vector_type.count)


class VectorAccess:
    """A kernel's loads and stores of ``VECTOR``s: plain, masked to the first ``left``
    lanes, or (stores) non-temporal, on addresses aligned to the vector's size or a cache
    line, whichever is smaller. With ``half`` ("bfloat16" or "float16", ``half_kind``)
    the memory holds that format's bits, widened as they load and rounded (``_rounded``)
    as they store."""

    def __init__(self, builder, masked, stream, left, half=None):
        self.builder, self.stream, self.mask = builder, stream, None
        self.half, self.align = half, 2 if half else 4     # bytes of a value
        self.memory = HALF_BITS if half else VECTOR
        self.passthrough = _splat(HALF_BITS, 0) if half else ZERO   # masked-off lanes
        if masked:
            lanes = ir.VectorType(INT32, LANES)
            count = broadcast(builder, builder.trunc(left, INT32), lanes)
            self.mask = builder.icmp_unsigned("<", ir.Constant(lanes, list(range(LANES))),
                                              count)
            memory, pointer = self.memory, self.memory.as_pointer()
            name = "v16i16.p0v16i16" if half else "v16f32.p0v16f32"
            self.masked_load = builder.module.declare_intrinsic(
                f"llvm.masked.load.{name}",
                fnty=ir.FunctionType(memory, [pointer, INT32, self.mask.type, memory]))
            self.masked_store = builder.module.declare_intrinsic(
                f"llvm.masked.store.{name}",
                fnty=ir.FunctionType(ir.VoidType(), [memory, pointer, INT32, self.mask.type]))

    def _pointer(self, base, at, kind=None):
        return self.builder.bitcast(self.builder.gep(base, [at]),
                                    (kind or self.memory).as_pointer())

    def load(self, base, at):
        """The vector at ``base[at]``."""
        if self.mask is not None:
            held = self.builder.call(self.masked_load, [self._pointer(base, at),
                                                        INT32(self.align), self.mask,
                                                        self.passthrough])
        else:
            held = self.builder.load(self._pointer(base, at), align=self.align)
        return _widened(self.builder, held, self.half) if self.half else held

    def load_pairs(self, base, at):
        """The ``2*LANES`` bfloat16 values from ``base[at]`` as two float32 vectors: those at
        even offsets, then those at odd ones. Each 32-bit word holds an even and an odd
        value, whose float32 bits are the word shifted left and its upper half: two integer
        operations a vector, where widening values in order moves them across lanes."""
        self._check_pairs()
        words = self.builder.load(self._pointer(base, at, WORDS), align=self.align)
        even = self.builder.shl(words, _splat(WORDS, 16))
        odd = self.builder.and_(words, _splat(WORDS, -0x10000))
        return self.builder.bitcast(even, VECTOR), self.builder.bitcast(odd, VECTOR)

    def store_pairs(self, even, odd, base, at):
        """Stores ``2*LANES`` float32 values rounded to bfloat16 at ``base[at]``: ``even``'s
        at even offsets, ``odd``'s at odd ones (the layout ``load_pairs`` reads). With
        AVX512-BF16 (``host_isa.bfloat16_dots``) one instruction rounds both vectors where
        no value is a NaN or subnormal (which it would not round as NumPy does). One store
        after the two ways' values meet, so that a non-temporal one stays so."""
        self._check_pairs()
        builder = self.builder
        if not host_isa.bfloat16_dots():
            self._write(_paired_words(builder, even, odd), self._pointer(base, at, WORDS))
            return
        special = builder.bitcast(builder.or_(_nan_or_subnormal(builder, even),
                                              _nan_or_subnormal(builder, odd)), ir.IntType(LANES))
        with builder.if_else(builder.icmp_unsigned("!=", special, ir.Constant(
                ir.IntType(LANES), 0))) as (rare, usual):
            with rare:
                exact, exact_block = _paired_words(builder, even, odd), builder.block
            with usual:
                fast, fast_block = _interleaved_bfloat16(builder, even, odd), builder.block
        words = builder.phi(WORDS)
        words.add_incoming(exact, exact_block)
        words.add_incoming(fast, fast_block)
        self._write(words, self._pointer(base, at, WORDS))

    def _check_pairs(self):
        if self.mask is not None or self.half != "bfloat16":
            raise TypeError("pairs of vectors are unmasked bfloat16 accesses")

    def store(self, value, base, at):
        """Stores the vector ``value`` at ``base[at]``."""
        if self.half:
            value = _rounded(self.builder, value, self.half)
        pointer = self._pointer(base, at)
        if self.mask is not None:
            self.builder.call(self.masked_store, [value, pointer, INT32(self.align), self.mask])
        else:
            self._write(value, pointer)

    def _write(self, value, pointer):
        """A plain or (``stream``) non-temporal store of ``value`` at ``pointer``."""
        if self.stream:
            store = self.builder.store(value, pointer,
                                       align=min(CACHE_LINE_BYTES, LANES * self.align))
            store.set_metadata("nontemporal", self.builder.module.add_metadata([INT32(1)]))
        else:
            self.builder.store(value, pointer, align=self.align)


@intrinsic
def fence(typingctx):
    """A full memory fence: the thread's non-temporal stores are visible to others after it
    (they are not ordered by ordinary synchronization on x86)."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen
