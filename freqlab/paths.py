"""A path as the user wrote it: ``~`` and ``~user`` at its start are home folders, for the files freqlab reads and
the ones it writes alike (the shell leaves ``~`` as is in ``'~/x'`` and after ``--out=``).

>>> import os; expand_home("~/runs") == os.path.join(os.path.expanduser("~"), "runs")
True
>>> expand_home("runs/~x")
'runs/~x'
>>> shown("~/runs")  # a relative folder named ~ (Path("./~/runs") prints so), not the home folder
'./~/runs'
"""

from __future__ import annotations

import io
import os
import stat
import sys

from freqlab.errors import FreqlabError


def expand_home(path: str | bytes | os.PathLike) -> str:
    """``path`` with a leading ``~`` or ``~user`` replaced by that home folder; an unknown user is a one-line error
    (a folder named ``~user`` would otherwise be read or made in the working folder), unless ``path`` exists as
    written (a file named ``~x.jsonl`` here). An empty path is one too: pathlib reads ``''`` as the working folder
    (``--out ""`` wrote a scan's outputs there, ``--tokenizer ""`` loaded its ``tokenizer.json``).
    """
    text = os.fsdecode(path)  # bytes too: a name that is not UTF-8 as \udcXX escapes, as Python's own str paths
    if text == "":
        raise FreqlabError("an empty path names no file or folder")
    if not text.startswith("~"):
        return text
    expanded = os.path.expanduser(text)
    if expanded == text and not os.path.lexists(text):
        user = text[1:].split(os.sep, 1)[0]
        whose = "this user" if not user else f"user {user!r}"
        raise FreqlabError(f"{text}: no home folder for {whose} (.{os.sep}{text} for a path of that name here)")
    return expanded


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as a message shows it: :func:`unambiguous`, with what a terminal would not show as it is escaped
    (:func:`printable`).
    """
    return printable(unambiguous(path))


def unambiguous(path: str | os.PathLike[str]) -> str:
    """``path`` as text that names it wherever it is read: a relative path that begins with ``~`` gets ``./``, so
    that it does not read as the home folder.
    """
    text = os.fspath(path)
    return f".{os.sep}{text}" if text.startswith("~") else text


def printable(text: str) -> str:
    r"""``text`` on one line, as a terminal shows it without being driven by it: control and format characters
    (a newline, ESC, a right-to-left override) escaped, and a byte of a file name that is not UTF-8 (Python holds
    it as ``\udcXX``) as ``\xXX``.

    >>> printable("runs/a\nb\x1b[31m")
    'runs/a\\nb\\x1b[31m'
    >>> printable(os.fsdecode(b"x\xff.parquet")), printable("é\u202ex")
    ('x\\xff.parquet', 'é\\u202ex')
    """
    return text if text.isprintable() else "".join(c if c.isprintable() else _escaped(c) for c in text)


def printable_lines(lines: list[str]) -> str:
    r"""A report's ``lines`` joined, each line (and each line a multi-line entry holds) made :func:`printable`: what
    was not escaped where it was put in is escaped here, while a report's own line breaks stay line breaks.

    >>> printable_lines(["a\x1b", "b\nc"])
    'a\\x1b\nb\nc'
    """
    return "\n".join(printable(part) for line in lines for part in line.split("\n"))


_NAMED = {"\n": r"\n", "\r": r"\r", "\t": r"\t"}


def _escaped(character: str) -> str:
    code = ord(character)
    if character in _NAMED:
        return _NAMED[character]
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for a byte that is not UTF-8
        code -= 0xDC00
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def file_identity(path: str) -> object:
    """What makes two paths one file: its real path (symlinks resolved), or for a file with several hard links its
    device and inode (the links share them). Only then: a filesystem that numbers no inodes (0, some FUSE mounts)
    would make every file one; a URL, or a path that cannot be read, is its real path.
    """
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return os.path.realpath(path)
    return (info.st_dev, info.st_ino) if info.st_nlink > 1 and info.st_ino else os.path.realpath(path)


def writes_stdout(path: str | os.PathLike) -> bool:
    """Whether writing ``path`` writes this process's standard output: ``/dev/stdout``, ``/dev/fd/1``, or the file or
    pipe stdout goes to (a command writing a file there prints its report elsewhere). False where stdout is no file.
    """
    try:
        target, stdout = os.stat(path), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # no such file; stdout closed or no file
        return False
    if stat.S_ISCHR(target.st_mode):  # a terminal or /dev/null: nothing read back, a report there harms nothing
        return False
    return (target.st_dev, target.st_ino) == (stdout.st_dev, stdout.st_ino)
