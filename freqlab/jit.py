"""numba's ``njit``, applied on a kernel's first call instead of at import.

``import numba`` takes ~0.2 s (llvmlite, numba's typing): every module holding a kernel paid it at import, so every
scan's driver paid it before it could start its workers, though the workers count and the driver only merges. A
kernel decorated with :func:`njit` imports numba and compiles (or loads from numba's on-disk cache) when it is
first called; it then calls the compiled dispatcher directly. A kernel calling other kernels (itself included) finds
them compiled: the kernels named in its body are given to it as their dispatchers, in place of their lazy wrappers.
Kernels calling each other in a cycle compile, but only with ``cache=False``: numba's on-disk cache of such a cycle
crashes the next process that loads it (numba issue #6061, numba's own ``njit`` alike); no freqlab kernel has one.

>>> @njit(cache=False)
... def add(a, b):
...     return a + b
>>> add(2, b=3)
5
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

# one lock for every kernel's compilation: a kernel's callees (itself, or kernels calling each other) are resolved
# while it is being built, on the same thread (re-entrant), never half-built on another
_COMPILING = threading.RLock()


class LazyKernel:
    """A function compiled by ``numba.njit(**options)`` on its first call (thread-safe; compiled once). It pickles by
    name, as the module-level function it stands for.
    """

    def __init__(self, function: Callable, options: dict[str, Any]) -> None:
        self.py_func = function
        self.options = options
        self._dispatcher: Any = None
        self._building: Any = None  # the dispatcher while its callees are resolved (this thread only)
        self.__name__ = function.__name__
        self.__qualname__ = function.__qualname__
        self.__doc__ = function.__doc__
        self.__module__ = function.__module__
        self.__wrapped__ = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The compiled kernel's result for these arguments."""
        return (self._dispatcher or self.compiled())(*args, **kwargs)

    def __reduce__(self) -> str:
        return self.__qualname__  # pickled as a reference to the module-level name, like a function

    def compiled(self) -> Any:
        """The numba dispatcher (imports numba the first time)."""
        if self._dispatcher is not None:
            return self._dispatcher
        with _COMPILING:
            if self._dispatcher is None:
                if self._building is not None:  # a callee cycle led back here: the dispatcher being built
                    return self._building
                self._dispatcher = self._build()
        return self._dispatcher

    def _build(self) -> Any:
        import numba

        function = self.py_func
        callees = [n for n in function.__code__.co_names if isinstance(function.__globals__.get(n), LazyKernel)]
        if not callees:
            return numba.njit(**self.options)(function)
        # numba types a callee from the globals it sees at its first compilation (on the first call, not here): a
        # copy of the function whose globals hold the callees' dispatchers
        namespace = dict(function.__globals__)
        copy = types.FunctionType(
            function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
        )
        copy.__qualname__, copy.__module__ = function.__qualname__, function.__module__
        self._building = numba.njit(**self.options)(copy)
        try:
            for name in callees:
                namespace[name] = namespace[name].compiled()
        finally:
            dispatcher, self._building = self._building, None
        return dispatcher


def njit(**options: Any) -> Callable[[Callable], LazyKernel]:
    """``@njit(cache=True, nogil=True)``: :func:`numba.njit` with these options, applied on the first call."""
    return lambda function: LazyKernel(function, options)
