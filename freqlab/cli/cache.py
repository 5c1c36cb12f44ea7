"""``freqlab cache``: where the tokenizer cache is, what it holds, and ``--clear`` (see
:mod:`freqlab.tokenization.cache`).
"""

from __future__ import annotations

import os
import time

import click

from freqlab.cli.options import echo_json, json_option
from freqlab.display import quantity
from freqlab.paths import shown


@click.command("cache")
@click.option("--clear", is_flag=True, help="Remove the cache's files (the next load of each tokenizer is a cold one).")
@json_option
def cache_command(clear, as_json):
    """The tokenizer cache: its folder, its files and their size; --clear removes them.

    Loading a tokenizer converts and verifies it (seconds for Llama 3); the cache keeps the result per tokenizer
    file, load options and backend versions, so a new version or an edited file adds an entry beside the old ones.
    Only the cache's own files are listed or removed (entries, fastokens inputs, unfinished writes, known by their
    names): anything else in the folder is left. The folder is FREQLAB_CACHE_DIR/tokenizers, else
    XDG_CACHE_HOME/freqlab/tokenizers, else ~/.cache/freqlab/tokenizers; FREQLAB_NO_CACHE=1 turns the cache off.

    \b
    Examples:
      freqlab cache                 # the folder, its entries and their size
      freqlab cache --clear --json  # remove them; what was removed, as JSON
    """
    from freqlab.tokenization.cache import CACHE_FILE_KINDS, cache_files, cache_folder, cache_off, clear_cache

    folder, off = cache_folder().absolute(), cache_off()
    cleared = clear_cache(folder) if clear else None
    files = cleared.removed if cleared else cache_files(folder)
    failed, left = (cleared.not_removed, cleared.left) if cleared else ([], [])
    counts = {kind: sum(f.kind == kind for f in files) for kind in CACHE_FILE_KINDS}
    size = sum(f.size for f in files)
    if as_json:
        echo_json(
            {
                "folder": str(folder),
                "state": _state(folder),
                "off": off,
                "cleared": clear,
                "files": [
                    {"path": str(f.path), "kind": f.kind, "bytes": f.size, "modified": f.modified} for f in files
                ],
                "bytes": size,
                "not_removed": [{"path": str(f.path), "reason": reason} for f, reason in failed],
                "left": [str(f.path) for f in left],
            }
        )
    else:
        _report(folder, off, files, counts, size, clear)
        if left:
            writes = f"{len(left):,} unfinished write{'s' if len(left) != 1 else ''}"
            click.echo(f"left     {writes} younger than 10 minutes (a write may be running)")
    for found, reason in failed:
        click.echo(f"Error: could not remove {shown(found.path)}: {reason}", err=True)
    if failed:
        raise SystemExit(1)


def _state(folder) -> str:
    """``folder``, ``not made yet`` or ``not a folder`` (something else is there, or above it)."""
    if folder.is_dir():
        return "folder"
    there = os.path.lexists(folder) or any(os.path.lexists(p) and not p.is_dir() for p in folder.parents)
    return "not a folder" if there else "not made yet"


def _report(folder, off: bool, files, counts: dict[str, int], size: int, clear: bool) -> None:
    state = " (off: FREQLAB_NO_CACHE is set)" if off else ""
    state += {
        "folder": "",
        "not a folder": " (not a folder: a scan cannot write the cache there)",
        "not made yet": " (not made yet)",
    }[_state(folder)]
    click.echo(f"folder   {shown(folder)}{state}")
    held = ", ".join(quantity(n, kind) for kind, n in counts.items())
    verb = "removed" if clear else "holds"
    click.echo(f"{verb:<8} {held}: {size / 2**20:,.1f} MiB")
    if files and not clear:
        newest = max(f.modified for f in files)
        click.echo(f"newest   {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(newest))}")


def register(main: click.Group) -> None:
    """Add ``freqlab cache`` to the command group ``main``."""
    main.add_command(cache_command)
