r"""Mixture and schedule files: read within bounds, before any value is looked at.

A mixture (``--weights FILE``) or a schedule is a few lines of YAML or JSON. :func:`read_config_file` refuses, in one
line naming the file, whatever could cost more than its text: a file over :data:`MAX_CONFIG_BYTES` (1 MiB), YAML
anchors and aliases (``&a`` / ``*a``: a 452-byte "billion laughs" file of lists that reuse each other grows to
gigabytes once its values are walked), plain values that YAML 1.1 (PyYAML) turns into another number or a boolean
where YAML 1.2 reads otherwise (``01024`` octal 532, ``1:30`` base-60 90, ``no`` False: quoted, they are text;
``0b11`` and ``1_000`` are read as the numbers they spell), nesting deeper than :data:`MAX_DEPTH` (the deepest
documented shape is the recipe presets file: its mapping > preset > ``stages`` > stage > ``curriculum`` > ``{value,
source}`` > list, 7 collections), and a key given twice in one mapping (a parser would keep the last one silently; the
command line refuses ``a=1,a=5`` too). A ``.json`` file is parsed as JSON, once; any other as YAML with safe types
only (libyaml's parser when PyYAML has it).

>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "mix.yaml"
>>> _ = path.write_text("weights: {a: 1, b: 2}\n")
>>> read_config_file(path, "mixture")
{'weights': {'a': 1, 'b': 2}}
>>> _ = path.write_text("a: &x [1, 2]\nb: *x\n")
>>> read_config_file(path, "mixture")
Traceback (most recent call last):
...
freqlab.errors.FreqlabError: ...mix.yaml: line 1: YAML anchors and aliases (&, *) are not allowed in a mixture file
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

import yaml

from freqlab.errors import FreqlabError

#: the largest mixture or schedule file read (a schedule of a thousand stages is ~100 KB)
MAX_CONFIG_BYTES = 1 << 20
#: the deepest nesting of mappings and lists a mixture or schedule file may hold
MAX_DEPTH = 7

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeys(_LOADER):
    """The safe loader, refusing a key given twice in one mapping."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else ():
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.YAMLError(f"key {key!r} given twice, line {key_node.start_mark.line + 1}")
            with contextlib.suppress(TypeError):  # an unhashable key: the base class says so
                seen.add(key)
        return super().construct_mapping(node, deep)


def unique_pairs(pairs: list) -> dict:
    """JSON objects with every key once (``object_pairs_hook``)."""
    data = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"key {key!r} given twice")
        data[key] = value
    return data


def read_config_file(path: str | Path, what: str):
    """The data of a YAML or JSON ``what`` file (``"mixture"``, ``"schedule"``), checked as the module docstring
    says; a one-line FreqlabError naming the file otherwise.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            # a regular file's size is known: read exactly it (read(n) would set n bytes aside first)
            raw = handle.read(MAX_CONFIG_BYTES + 1) if size == 0 or size > MAX_CONFIG_BYTES else handle.read(size + 1)
    except OSError as exc:
        raise FreqlabError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise FreqlabError(f"{path}: more than {MAX_CONFIG_BYTES:,} bytes (1 MiB), the most a {what} file may hold")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FreqlabError(f"{path}: not a UTF-8 text file (byte {exc.start})") from None
    if path.suffix.lower() == ".json":
        return _json(text, path, what)
    return _yaml(text, path, what)


def _json(text: str, path: Path, what: str):
    try:
        data = json.loads(text, object_pairs_hook=unique_pairs)
    except json.JSONDecodeError as exc:
        raise FreqlabError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except (RecursionError, ValueError) as exc:  # nesting past the parser's stack; a number of 4,300+ digits
        raise FreqlabError(f"{path}: not a {what} JSON file ({_first_line(exc)})") from None
    if _depth(data) > MAX_DEPTH:
        raise FreqlabError(f"{path}: nested deeper than a {what} file is (at most {MAX_DEPTH} levels)")
    return data


def _yaml(text: str, path: Path, what: str):
    try:
        depth = 0
        for event in yaml.parse(text, Loader=_LOADER):  # events only: nothing is built yet
            line = event.start_mark.line + 1 if event.start_mark else "?"
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise FreqlabError(
                    f"{path}: line {line}: YAML anchors and aliases (&, *) are not allowed in a {what} file"
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise FreqlabError(
                        f"{path}: line {line}: nested deeper than a {what} file is (at most {MAX_DEPTH} levels)"
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent) and event.implicit[0] and (read := _ambiguous(event.value)):
                raise FreqlabError(  # a plain (unquoted) value
                    f"{path}: line {line}: {event.value!r} is {read[0]} to YAML 1.1 (PyYAML), not to YAML 1.2; "
                    f"quote it for text, or {read[1]}"
                )
        return yaml.load(text, Loader=_UniqueKeys)  # a safe loader
    except FreqlabError:
        raise
    except yaml.YAMLError as exc:
        raise FreqlabError(f"{path}: {_yaml_where(exc)}not valid YAML/JSON ({_yaml_problem(exc)})") from None
    except (RecursionError, ValueError, OverflowError) as exc:  # safe types, but e.g. a date out of range
        raise FreqlabError(f"{path}: not a {what} file ({_first_line(exc)})") from None


#: plain scalars PyYAML reads by YAML 1.1's rules where YAML 1.2 (and most readers of the file) would not: booleans
#: spelled yes/no/on/off, octal numbers with a leading zero (01024 is 532), base-60 numbers (1:30 is 90)
_YAML11_ONLY = (
    (re.compile(r"yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF"), "a boolean", "write true or false"),
    (re.compile(r"[-+]?0[0-7_]+"), "an octal number", "write the number without its leading zero"),
    # PyYAML's base-60 integer starts with 1-9; its base-60 float has a fraction (0:30 and 00:30 stay text)
    (
        re.compile(r"[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"),
        "a base-60 number",
        "write the number",
    ),
)


def _ambiguous(value: str) -> tuple[str, str] | None:
    """What YAML 1.1 reads the plain scalar ``value`` as, when YAML 1.2 reads it otherwise, and what to write instead
    (a review: ``L: 01024`` was a window of 532, a source named ``no`` was False); None for any other value.
    """
    found = next(((what, fix) for pattern, what, fix in _YAML11_ONLY if pattern.fullmatch(value)), None)
    if found is not None and found[0] == "an octal number":  # 00 and 07 are the same number in both readings
        digits = value.lstrip("+-").replace("_", "")
        return found if int(digits, 8) != int(digits, 10) else None
    return found


def _depth(data) -> int:
    """How deeply lists and mappings nest in parsed JSON (iterative: no recursion limit)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((item, level + 1) for item in (value.values() if isinstance(value, dict) else value))
    return deepest


def _yaml_where(error: BaseException) -> str:
    """``line 3, column 1: `` where PyYAML marks the problem (a review: a tab or a bad indent named no line)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def _yaml_problem(error: BaseException) -> str:
    """PyYAML's words: "while scanning for the next token: found character that cannot start any token"."""
    problem, context = getattr(error, "problem", None), getattr(error, "context", None)
    return ": ".join(str(x) for x in (context, problem) if x)[:200] or _first_line(error)


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:200]
