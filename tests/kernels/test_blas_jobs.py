"""OpenBLAS's parallel jobs on numba's threads while a plan runs
(``blas_threads.blas_jobs_on_compiled_threads``): the same products bit for bit, in
sessions, nested and from several threads at once, and never where a job could wait for a
thread it cannot get (fewer numba threads than OpenBLAS's, a forked child)."""

import os
import subprocess
import sys
import threading

import numba  # noqa: F401  (loaded, as a kernel loads it: the hook is decided only then)
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import graphops as gp
from graphops.kernels.support import blas_threads, parallelism

HOOKED = bool(blas_threads._find_blas_hook())
needs_hook = pytest.mark.skipif(not HOOKED, reason="NumPy's BLAS has no OpenBLAS threads "
                                "callback (OpenBLAS 0.3.27+) or numba has no OpenMP layer")


def _operands(m, k, n, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def test_numpys_openblas_takes_the_callback():
    """NumPy's wheels carry an OpenBLAS with the callback: the tests below are not vacuous
    where the project is installed as the README says."""
    libraries = parallelism.blas_controllers()
    if not (len(libraries) == 1 and libraries[0].internal_api == "openblas"):
        pytest.skip("NumPy's BLAS is not OpenBLAS")
    version = tuple(int(part) for part in libraries[0].version.split(".")[:3])
    assert HOOKED == (version >= (0, 3, 27))


@needs_hook
@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 700), k=st.integers(1, 300), n=st.integers(1, 700),
       seed=st.integers(0, 2**16))
def test_products_on_numba_threads_are_openblas_own_bit_for_bit(m, k, n, seed):
    a, b = _operands(m, k, n, seed)
    with blas_threads.blas_jobs_on_compiled_threads():
        with blas_threads.blas_jobs_on_compiled_threads():      # nested
            inner = a @ b
        outer = a @ b
    want = a @ b
    assert np.array_equal(inner, want) and np.array_equal(outer, want)
    assert np.allclose(want, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                       atol=1e-3 * np.sqrt(k))


@needs_hook
def test_sessions_in_several_threads_at_once_get_their_products():
    a, b = _operands(512, 256, 384, 0)
    graph = gp.Graph()
    with graph.as_default():
        x = gp.placeholder(gp.float32, [None, 256])
        y = gp.matmul(x, gp.constant(b))
    results, errors = {}, []

    def run(index):
        try:
            with gp.Session(graph=graph) as sess:
                results[index] = [sess.run(y, {x: a * index}) for _ in range(20)]
        except Exception as error:   # noqa: BLE001  (reported below)
            errors.append(error)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(1, 4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not errors and not any(worker.is_alive() for worker in workers)
    for index, runs in results.items():
        assert all(np.array_equal(got, (a * index) @ b) for got in runs)


def _child(script, **env):
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), timeout=120,
                          env={**os.environ, **env}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@needs_hook
def test_a_child_forked_while_a_plan_runs_multiplies_on_openblas_threads():
    _child("import os, sys, numba, numpy as np\n"
           "sys.path.insert(0, os.getcwd())\n"
           "from graphops.kernels.support import blas_threads\n"
           "a = np.ones((1024, 512), np.float32)\n"
           "with blas_threads.blas_jobs_on_compiled_threads():\n"
           "    assert blas_threads._installed\n"
           "    pid = os.fork()\n"
           "    if pid == 0:\n"
           "        os._exit(0 if (a @ a.T == 512).all() else 3)\n"
           "sys.exit(os.waitpid(pid, 0)[1] >> 8)\n")


def test_fewer_numba_threads_than_openblas_leaves_openblas_its_own():
    """Each job needs a thread of its own: with one numba thread and OpenBLAS's two, the
    callback is not installed and the product completes."""
    _child("import os, sys, numba, numpy as np\n"
           "sys.path.insert(0, os.getcwd())\n"
           "from graphops.kernels.support import blas_threads\n"
           "a = np.ones((1024, 512), np.float32)\n"
           "with blas_threads.blas_jobs_on_compiled_threads():\n"
           "    assert blas_threads._find_blas_hook() and not blas_threads._installed\n"
           "    assert (a @ a.T == 512).all()\n",
           NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="2")


@needs_hook
def test_a_run_begun_before_numba_loaded_takes_the_hook_as_the_first_loop_module_loads():
    """A process's first run enters the context before any kernel has loaded numba: its
    products and the tuning trials timed beside them run on numba's threads from the first
    compiled loop module on, as in later runs, and the hook goes when the run ends."""
    _child("import os, sys\n"
           "sys.path.insert(0, os.getcwd())\n"
           "import numpy as np\n"
           "import graphops\n"
           "from graphops.kernels.support import blas_threads\n"
           "assert 'numba' not in sys.modules\n"
           "a = np.ones((1024, 512), np.float32)\n"
           "with blas_threads.blas_jobs_on_compiled_threads():\n"
           "    assert not blas_threads._installed\n"
           "    assert (a @ a.T == 512).all()\n"
           "    from graphops.kernels.compiled import loops\n"
           "    loops('elementwise')\n"
           "    assert blas_threads._installed\n"
           "    assert (a @ a.T == 512).all()\n"
           "assert not blas_threads._installed\n")
