"""Old names kept for one release after issue 24's renames: each still works, is the new object, and warns once
(a :class:`DeprecationWarning` naming the new name) when it is imported or looked up.

The table of old and new names is the CHANGELOG's "Unreleased" section. Nothing in freqlab imports an old name
(``tests/test_deprecations.py`` checks it): the shims are for code written against 0.1.

>>> renamed("freqlab.tokenize", "freqlab.tokenization")
'freqlab.tokenize is renamed freqlab.tokenization; the old name goes in 0.3'
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from collections.abc import Callable
from typing import Any

#: the release that removes the old names
REMOVED_IN = "0.3"


def renamed(old: str, new: str) -> str:
    """The warning's message: ``old`` is renamed ``new``, and when the old name goes."""
    return f"{old} is renamed {new}; the old name goes in {REMOVED_IN}"


def _importing(frame: Any) -> bool:
    return frame.f_code.co_filename.startswith("<frozen importlib")


def _stacklevel() -> int:
    """The stack level of the first frame outside the import machinery and freqlab's shims: the user's line
    (``warnings.warn`` skips the import machinery's frames itself, so they are not counted).
    """
    level, frame = 1, sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        shim = frame.f_globals.get("__freqlab_shim__", False) or frame.f_code.co_name == "__getattr__"
        if not (_importing(frame) or name == __name__ or (shim and name.startswith("freqlab"))):
            return level
        level += not _importing(frame)
        frame = frame.f_back
    return level


def warn_renamed(old: str, new: str) -> None:
    """Warn (DeprecationWarning) that ``old`` is renamed ``new``, at the user's line."""
    warnings.warn(renamed(old, new), DeprecationWarning, stacklevel=_stacklevel())


def resolve(target: str) -> Any:
    """The object a dotted path names: a module, or an attribute of one (``"freqlab.plan.compare_rope_scalings"``)."""
    where, _, name = target.rpartition(".")
    module = importlib.import_module(where)
    try:
        return getattr(module, name)
    except AttributeError:
        return importlib.import_module(target)


def renamed_attributes(
    module: str, aliases: dict[str, str], submodules: dict[str, str] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the old names of ``module``: each old name maps to the dotted path of the new
    object (``"freqlab.plan.compare_rope_scalings"``); looking it up warns and returns that very object.

    ``submodules`` maps the package's old submodule names to their new paths (``{"resolve": "freqlab.corpus.open"}``):
    in 0.1 a plain ``import freqlab`` made ``freqlab.corpus.resolve`` an attribute; looking it up now warns and gives
    what ``import freqlab.corpus.resolve`` gives, with its warning.
    """

    def __getattr__(name: str) -> Any:
        target = aliases.get(name) or (submodules or {}).get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        # `from package import name` asks hasattr() first (importlib's _handle_fromlist), then gets it: warn once
        caller = sys._getframe(1)
        while caller.f_code.co_name == "__getattr__":  # freqlab's own __getattr__ passing the name on
            caller = caller.f_back
        if _importing(caller):
            return resolve(target)  # hasattr(): no side effect, the look-up that follows warns
        if name in aliases:
            warn_renamed(f"{module}.{name}", target)
            return resolve(target)
        # the old module's shim warns, at the user's line (the builtin __import__ adds no frame of its own)
        __import__(f"{module}.{name}")
        return sys.modules[f"{module}.{name}"]

    return __getattr__


def alias_module(old: str, new: str) -> None:
    """Make module ``old`` the module ``new``, and warn: called by the old module's shim, which the import then
    replaces by the new module (``sys.modules[old]`` is the new one), so the old path gives the very same objects.
    A package's submodules are registered under the old dotted names too: ``import old.sub`` and
    ``from old.sub import x`` give the new modules.
    """
    warn_renamed(old, new)
    package = importlib.import_module(new)
    sys.modules[old] = package
    if not hasattr(package, "__path__"):
        return
    for info in pkgutil.walk_packages(package.__path__, f"{new}."):
        module = importlib.import_module(info.name)
        alias = old + info.name[len(new) :]
        sys.modules[alias] = module


def renamed_method(old: str, new: str) -> Any:
    """A method ``old`` that warns and calls method ``new`` of the same object (with the same arguments)."""

    def method(self, *args: Any, **kwargs: Any) -> Any:
        owner = type(self).__name__
        warn_renamed(f"{owner}.{old}", f"{owner}.{new}")
        return getattr(self, new)(*args, **kwargs)

    method.__name__ = method.__qualname__ = old
    method.__doc__ = f"Deprecated: renamed :meth:`{new}` (the old name goes in {REMOVED_IN})."
    return method
