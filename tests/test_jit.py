"""Kernels compiled on their first call (freqlab.jit): numba is imported then, not at import; a kernel behaves as
numba's own njit would (keyword arguments, recursion, kernels calling kernels, pickling by name, first calls from
several threads at once)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading

import numpy as np

from freqlab.frequency.kernels import best_fit_fills, scatter_add
from freqlab.jit import LazyKernel, njit


@njit(cache=False)
def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


@njit(cache=False)
def is_even(n):
    return True if n == 0 else is_odd(n - 1)


@njit(cache=False)
def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def test_importing_a_module_of_kernels_imports_no_numba_until_a_kernel_runs():
    code = (
        "import sys; import freqlab.frequency.kernels as k, freqlab.scan.counts\n"
        "assert 'numba' not in sys.modules\n"
        "import numpy as np; print(k.scatter_add(4, np.array([1, 1, 3]), np.array([2, 5, 7])).tolist())\n"
        "assert 'numba' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 7, 0, 7]"


def test_keyword_arguments_recursion_and_kernels_calling_kernels():
    assert scatter_add(3, index=np.array([0, 2]), values=np.array([5, 7])).tolist() == [5, 0, 7]
    assert factorial(10) == 3_628_800
    assert (is_even(10), is_odd(7), is_odd(10)) == (True, True, False)
    # best_fit_fills calls two other kernels: a chunk of 5 and two of 3 (longest first) fill bins of 10 as 5 + 3, 3
    fills = best_fit_fills(np.array([5, 3]), np.array([1, 2]), 10)
    assert fills.tolist() == [0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0]


def test_a_kernel_pickles_by_name_as_the_function_it_stands_for():
    assert isinstance(scatter_add, LazyKernel)
    assert pickle.loads(pickle.dumps(scatter_add)) is scatter_add


def test_first_calls_from_several_threads_compile_once_and_agree():
    @njit(cache=False)
    def total(values):
        s = 0
        for v in values:
            s += v
        return s

    results, start = [], threading.Barrier(6, timeout=60)

    def call() -> None:
        start.wait()
        results.append(total(np.arange(1_000, dtype=np.int64)))

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [499_500] * 6
    assert total.compiled() is total.compiled()
