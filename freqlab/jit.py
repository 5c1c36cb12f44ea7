"""numba's ``njit``, applied on a kernel's first call instead of at import.

``import numba`` takes ~0.2 s (llvmlite, numba's typing): every module holding a kernel paid it at import, so every
scan's driver paid it before it could start its workers, though the workers count and the driver only merges. A
kernel decorated with :func:`njit` imports numba and compiles (or loads from numba's on-disk cache) when it is
first called; it then calls the compiled dispatcher directly. A kernel calling another one finds it compiled: the
callees named in its body are compiled first and given to it in place of their lazy wrappers.

>>> @njit(cache=False)
... def add(a, b):
...     return a + b
>>> add(2, 3)
5
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any


class LazyKernel:
    """A function compiled by ``numba.njit(**options)`` on its first call (thread-safe; compiled once)."""

    def __init__(self, function: Callable, options: dict[str, Any]) -> None:
        self.py_func = function
        self.options = options
        self._dispatcher: Any = None
        self._lock = threading.Lock()
        self.__name__ = function.__name__
        self.__qualname__ = function.__qualname__
        self.__doc__ = function.__doc__
        self.__module__ = function.__module__
        self.__wrapped__ = function

    def __call__(self, *args: Any) -> Any:
        """The compiled kernel's result for ``args``."""
        return (self._dispatcher or self.compiled())(*args)

    def compiled(self) -> Any:
        """The numba dispatcher (imports numba the first time)."""
        if self._dispatcher is None:
            with self._lock:
                if self._dispatcher is None:
                    self._dispatcher = self._compile()
        return self._dispatcher

    def _compile(self) -> Any:
        import numba

        function = self.py_func
        callees = {
            name: value.compiled()
            for name in function.__code__.co_names
            if isinstance(value := function.__globals__.get(name), LazyKernel)
        }
        if callees:  # numba types a callee from the globals it sees: give it the compiled ones
            function = types.FunctionType(
                function.__code__,
                {**function.__globals__, **callees},
                function.__name__,
                function.__defaults__,
                function.__closure__,
            )
            function.__qualname__ = self.py_func.__qualname__
            function.__module__ = self.py_func.__module__
        return numba.njit(**self.options)(function)


def njit(**options: Any) -> Callable[[Callable], LazyKernel]:
    """``@njit(cache=True, nogil=True)``: :func:`numba.njit` with these options, applied on the first call."""
    return lambda function: LazyKernel(function, options)
