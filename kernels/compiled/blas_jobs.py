"""OpenBLAS's parallel jobs on numba's OpenMP threads: the callback OpenBLAS (0.3.27 and
later) calls in place of its own thread server, as a C function
(``support.blas_threads`` installs it).

OpenBLAS hands the callback ``count`` jobs that wait on each other (each packs a part of an
operand the others read), so they must all run at once, each on a thread of its own: the
callback runs them on a team of exactly ``count`` of numba's threads, one iteration a
chunk, and puts the calling thread's numba settings back after.
"""

import numba
from llvmlite import ir
from numba import cfunc, njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

_I32, _I64 = ir.IntType(32), ir.IntType(64)
# The callback is built as this module loads, linked against the threading layer's symbols:
# the layer loads first (numba loads it with a parallel loop's first launch, or here).
numba.get_num_threads()
_JOB = ir.FunctionType(ir.VoidType(), [_I32, ir.IntType(8).as_pointer(), _I32])


@intrinsic
def _call_job(typingctx, job, thread, data, extra):
    """Calls the C function at address ``job`` as ``job(thread, data, extra)``:
    OpenBLAS's ``dojob(int thread_num, void *jobdata, int dojob_data)``."""
    def codegen(context, builder, signature, args):
        function = builder.inttoptr(args[0], _JOB.as_pointer())
        builder.call(function, [args[1], builder.inttoptr(args[2], _JOB.args[1]), args[3]])
        return context.get_dummy_value()
    return types.void(types.intp, types.int32, types.intp, types.int32), codegen


def _threading_call(name, result, argument=None):
    """A call of numba's threading-layer function ``name`` by the symbol and type numba's
    own parallel loops declare it with (so that the code caches): no argument, or one
    ``argument`` (an LLVM integer type) taken from an int64."""
    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(result, [argument] if args else []), name)
        called = builder.call(function, [builder.trunc(a, argument) if argument.width < 64
                                         else a for a in args])
        return context.get_dummy_value() if isinstance(result, ir.VoidType) else called
    returns = types.void if isinstance(result, ir.VoidType) else types.int64
    if argument is None:
        return intrinsic(lambda typingctx: (returns(), codegen))
    return intrinsic(lambda typingctx, value: (returns(types.int64), codegen))


_get_threads = _threading_call("get_num_threads", _I64)
_set_threads = _threading_call("set_num_threads", ir.VoidType(), _I32)
_get_chunk = _threading_call("get_parallel_chunksize", _I64)
_set_chunk = _threading_call("set_parallel_chunksize", ir.VoidType(), _I64)


@njit(cache=True, parallel=True, nogil=True)
def run_jobs(job, count, size, data, extra):
    """Job i (its data at ``data + i * size``) for i < ``count``, one a thread."""
    threads, chunk = _get_threads(), _get_chunk()
    _set_threads(count)
    _set_chunk(1)
    for i in prange(count):
        _call_job(job, numba.int32(i), data + i * size, extra)
    _set_chunk(chunk)
    _set_threads(threads)


@cfunc(types.void(types.int32, types.intp, types.int32, types.uintp, types.intp, types.int32),
       cache=True, nogil=True)
def callback(sync, job, count, size, data, extra):
    """OpenBLAS's ``openblas_threads_callback`` ``(sync, dojob, numjobs, jobdata_elsize,
    jobdata, dojob_data)``; it returns once every job has run."""
    run_jobs(job, count, numba.intp(size), data, extra)
