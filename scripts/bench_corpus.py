#!/usr/bin/env python
"""Build the varied, never-repeated benchmark corpus (``--chars``, e.g. 1e9) from the real text on this machine,
by kind, once, into a folder outside the repository, with a manifest that makes the measurement reproducible
(not a test).

Sources (each file read once; every document deduplicated by the SHA-256 of its text across the whole corpus,
so the copies of one package in several virtual environments, or a module unchanged between two Python versions,
count once):

- ``prose``: the shared corpora (``--prose``, default ``../shared/corpora/*.jsonl.zst`` beside the checkout, or
  ``../../shared`` beside its folder of worktrees);
- ``code``: ``.py``/``.pyi``/``.pyx``, C/C++/CUDA (``.c``/``.h``/``.cc``/``.cpp``/``.cu``...), ``.rs``, ``.js``,
  ``.pl``/``.pm``, shell sources, one file per document;
- ``docs``: ``.md``/``.rst``/``.txt`` files, packages' ``METADATA``, notebooks' cells, ``/usr/share/doc``
  (``.gz`` decompressed, HTML stripped to its text), man pages (decompressed, roff requests and escapes stripped
  to their text), the Rust toolchain's HTML books and API docs (stripped; their ``.js`` search indexes are data and
  left out; ``--no-rust-docs`` leaves them all out);
- ``legal``: licence texts (``LICENSE*``, ``COPYING*``, ``NOTICE*``, Debian ``copyright`` files);
- ``mail``: the standard libraries' e-mail test messages;
- ``multilingual``: gettext catalogs (``.mo``: the translated strings; ``.po``), the standard libraries' CJK texts.

Roots (``--roots`` adds more): every ``site-packages`` of the running interpreter and of the virtual environments
beside the checkout (``../*/.venv``, ``../../*/.venv``), pyenv's Python versions (``$PYENV_ROOT/versions/*/lib``),
``/usr/include``, ``/usr/lib/python3*``, ``/usr/share/{doc,man,locale,perl}``, ``/usr/lib/node_modules``,
``~/.cargo/registry``, ``~/.rustup/toolchains/*/share/doc``.

When all kinds hold more than ``--chars``, each kind keeps at most an equal share (small kinds are kept whole and
their unused share is split among the others); a kind that is cut keeps every k-th document (all its sources stay
represented). Documents are written as ``{kind}-{NNNN}.jsonl.zst`` (``{"text": ...}`` per line, about
``--part-chars`` characters each, so a pool of workers has parts to share), and ``manifest.json`` lists per file its
documents, characters, UTF-8 bytes and SHA-256, and per kind and source what exists and what was kept
(``--markdown``: the same as a table, default ``bench_corpus.md`` next to this script).

    python scripts/bench_corpus.py --out /work/bench_corpus --chars 1e9
    python scripts/bench_scan.py --corpus /work/bench_corpus --fraction 0.1 ...   # then measure (see there)
"""

from __future__ import annotations

import argparse
import gettext
import glob
import gzip
import hashlib
import html
import io
import json
import os
import re
import site
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_scan import SHARED

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("prose", "code", "docs", "legal", "mail", "multilingual")
CODE = {
    ".py",
    ".pyi",
    ".pyx",
    ".pxd",
    ".pxi",
    ".c",
    ".h",
    ".hh",
    ".hpp",
    ".hxx",
    ".cc",
    ".cpp",
    ".cxx",
    ".cu",
    ".cuh",
    ".rs",
    ".js",
    ".mjs",
    ".cjs",
    ".ts",
    ".go",
    ".java",
    ".pl",
    ".pm",
    ".sh",
    ".bash",
    ".lua",
    ".rb",
}
DOCS = {".md", ".rst", ".txt", ".markdown"}
HTML = {".html", ".htm"}
LEGAL = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|COPYRIGHT|AUTHORS)([._-].*)?$", re.IGNORECASE)
MAX_FILE_BYTES = 8 << 20  # larger files are data (tables, bundles), not text anyone wrote


# --- text of one file ---------------------------------------------------------------------------------------
def classify(path: Path) -> tuple[str, str] | None:
    """(kind, how the text is extracted) for a file, or None when it holds no text of a kind."""
    name, parts = path.name, path.parts
    if name.endswith(".gz"):
        inner = classify(path.with_name(name[:-3]))
        if "man" in parts and path.parent.name.startswith("man"):
            return "docs", "man.gz"
        return (inner[0], inner[1] + ".gz") if inner else None
    suffix = path.suffix.lower()
    if name.startswith("msg_") and suffix == ".txt" and ("test_email" in parts or {"email", "test"} <= set(parts)):
        return "mail", "text"
    if "cjkencodings" in parts and name.endswith("-utf8.txt"):
        return "multilingual", "text"
    if LEGAL.match(name) or (name == "copyright" and "doc" in parts) or ("licenses" in parts and not suffix):
        return "legal", "text"
    if suffix == ".mo":
        return "multilingual", "mo"
    if suffix == ".po":
        return "multilingual", "text"
    if suffix in CODE:
        if suffix == ".js" and {"rust", "html"} <= set(parts):  # rustdoc's search indexes: data written as .js
            return None
        return "code", "text"
    if suffix in HTML:
        return "docs", "html"
    if suffix == ".ipynb":
        return "docs", "ipynb"
    if suffix in DOCS or name in ("METADATA", "PKG-INFO") or (not suffix and "doc" in parts and "share" in parts):
        return "docs", "text"
    if "man" in parts and path.parent.name.startswith("man") and re.fullmatch(r"\.\d\w*", suffix or ""):
        return "docs", "man"
    return None


def extract(data: bytes, how: str) -> str:
    """The text of a file's bytes (empty when it is not UTF-8 text)."""
    if how.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return ""
        how = how[:-3]
    if how == "mo":
        try:
            catalog = gettext.GNUTranslations(io.BytesIO(data))
        except Exception:  # a damaged or foreign catalog
            return ""
        strings = [v for k, v in catalog._catalog.items() if k and isinstance(v, str)]  # type: ignore[attr-defined]
        return "\n".join(strings)
    if b"\x00" in data:
        return ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if how != "man":
            return ""
        text = data.decode("latin-1")
    if how == "html":
        return strip_html(text)
    if how == "man":
        return strip_roff(text)
    if how == "ipynb":
        try:
            cells = json.loads(text).get("cells", [])
        except (ValueError, AttributeError):
            return ""
        return "\n\n".join(
            "".join(c.get("source", "")) if isinstance(c.get("source"), list) else str(c.get("source"))
            for c in cells
            if isinstance(c, dict)
        )
    return text


_SCRIPT = re.compile(r"<(script|style|nav|head)\b.*?</\1>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")
_BLANKS = re.compile(r"[ \t]*\n(?:[ \t]*\n)+")


def strip_html(text: str) -> str:
    """An HTML page's text: scripts, styles, navigation and the head dropped, tags removed, entities unescaped."""
    text = _TAG.sub("", _SCRIPT.sub("", text))
    return _BLANKS.sub("\n\n", html.unescape(text)).strip()


_ROFF_COMMENT = re.compile(r'^\.\s*\\".*$|^\'\\".*$', re.MULTILINE)
_ROFF_REQUEST = re.compile(r"^[.'][ \t]*[A-Za-z]{1,3}\b[ \t]?(.*)$", re.MULTILINE)
_ROFF_ESCAPE = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)|\\\(..|\\\[[^\]]*\]|\\[*n]\(?..|\\s[+-]?\d|\\[&|^%:,/]")


def strip_roff(text: str) -> str:
    """A man page's text: comments dropped, requests (``.SH NAME``) reduced to their arguments, font and size
    escapes removed, ``\\-`` and ``\\e`` written as ``-`` and ``\\``."""
    text = _ROFF_REQUEST.sub(r"\1", _ROFF_COMMENT.sub("", text))
    text = _ROFF_ESCAPE.sub("", text).replace("\\-", "-").replace("\\e", "\\").replace('"', "")
    return _BLANKS.sub("\n\n", text).strip()


# --- the roots ----------------------------------------------------------------------------------------------
def default_roots(rust_docs: bool) -> list[tuple[str, Path]]:
    """(source label, folder) for every root of the module docstring that exists here, without duplicates."""
    home = Path.home()
    pyenv = Path(os.environ.get("PYENV_ROOT", home / ".pyenv"))
    candidates: list[tuple[str, str]] = [("site-packages", p) for p in site.getsitepackages()]
    for venvs in (ROOT.parent / "*" / ".venv", ROOT.parent.parent / "*" / ".venv"):
        found = glob.glob(str(venvs / "lib" / "python*" / "site-packages"))
        candidates += [("site-packages", p) for p in sorted(found)]
    for lib in sorted(glob.glob(str(pyenv / "versions" / "*" / "lib" / "python*"))):
        candidates.append((f"pyenv {Path(lib).parent.parent.name}", lib))
    candidates += [("/usr/include", "/usr/include"), *((p, p) for p in sorted(glob.glob("/usr/lib/python3*")))]
    candidates += [(f"/usr/share/{d}", f"/usr/share/{d}") for d in ("doc", "man", "locale", "perl")]
    candidates += [("/usr/lib/node_modules", "/usr/lib/node_modules")]
    candidates += [("cargo registry", str(home / ".cargo" / "registry"))]
    if rust_docs:
        candidates += [
            (f"rust docs {Path(p).parent.parent.name.split('-')[0]}", p)
            for p in sorted(glob.glob(str(home / ".rustup" / "toolchains" / "*" / "share" / "doc")))
        ]
    roots, seen = [], set()
    for label, folder in candidates:
        real = os.path.realpath(folder)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            roots.append((label, Path(real)))
    return roots


def walk(folder: Path):
    """Regular files under ``folder``, sorted, symbolic links not followed, ``__pycache__`` and rendered
    source listings (rustdoc's ``src/``) skipped."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in ("__pycache__", ".git") and not (d == "src" and "html" in Path(dirpath).parts)
        )
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if not path.is_symlink():
                yield path


def read_prose(files: list[str]):
    import orjson
    import zstandard

    for path in files:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            for line in io.BufferedReader(reader):
                if line.strip():
                    yield orjson.loads(line)["text"]


# --- the build ----------------------------------------------------------------------------------------------
def gather(roots: list[tuple[str, Path]], prose: list[str], spill: Path) -> dict:
    """Every unique document, spilled per kind to ``spill/{kind}.jsonl`` (text and source), and the counts."""
    import orjson

    seen_raw: set[bytes] = set()
    seen_text: set[bytes] = set()
    outs = {kind: open(spill / f"{kind}.jsonl", "wb") for kind in KINDS}  # noqa: SIM115 (closed below)
    stats: dict = {kind: defaultdict(lambda: [0, 0, 0]) for kind in KINDS}  # source -> [docs, chars, duplicates]

    def add(kind: str, source: str, text: str) -> None:
        if not text.strip():
            return
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        if digest in seen_text:
            stats[kind][source][2] += 1
            return
        seen_text.add(digest)
        outs[kind].write(orjson.dumps({"text": text, "source": source}) + b"\n")
        stats[kind][source][0] += 1
        stats[kind][source][1] += len(text)

    for text in read_prose(prose):
        add("prose", "shared corpora", text)
    for label, folder in roots:
        start, before = time.perf_counter(), sum(s[1] for k in KINDS for s in stats[k].values())
        for path in walk(folder):
            what = classify(path)
            if what is None:
                continue
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            raw = hashlib.sha256(data).digest()
            if raw in seen_raw:  # the same file in another venv: its text is a duplicate, not read again
                stats[what[0]][label][2] += 1
                continue
            seen_raw.add(raw)
            add(what[0], label, extract(data, what[1]))
        after = sum(s[1] for k in KINDS for s in stats[k].values())
        print(
            f"{label} ({folder}): +{(after - before) / 1e6:,.1f}M characters in {time.perf_counter() - start:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    for out in outs.values():
        out.close()
    return {
        kind: {
            source: {"documents": d, "characters": c, "duplicates_skipped": dup}
            for source, (d, c, dup) in sorted(sources.items())
        }
        for kind, sources in stats.items()
    }


def write_parts(spill: Path, out: Path, kind: str, available: int, keep: int, part_chars: float) -> list[dict]:
    """Write one kind's kept documents (every k-th when cut) as parts of about ``part_chars`` characters."""
    import orjson
    import zstandard

    # keep every k-th character's document, k a little smaller than available/keep so that the last sources are
    # reached too and the share is met (the loop stops once it is)
    stride = max(0.995 * available / keep, 1.0) if keep else float("inf")
    files, buffer, size, sources = [], [], 0, defaultdict(int)

    def flush() -> None:
        nonlocal buffer, size, sources
        if not buffer:
            return
        path = out / f"{kind}-{len(files):04d}.jsonl.zst"
        data = b"".join(buffer)
        path.write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
        files.append(
            {
                "file": path.name,
                "kind": kind,
                "documents": len(buffer),
                "characters": size,
                "bytes_uncompressed": len(data),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "sources": dict(sorted(sources.items())),
            }
        )
        buffer, size, sources = [], 0, defaultdict(int)

    done, credit = 0, 0.0  # credit: the characters owed to the kept share so far (1/stride of those seen)
    with open(spill / f"{kind}.jsonl", "rb") as handle:
        for line in handle:
            record = orjson.loads(line)
            chars = len(record["text"])
            credit += chars / stride
            if credit < chars or done >= keep:
                continue
            credit -= chars
            buffer.append(orjson.dumps({"text": record["text"]}) + b"\n")
            size += chars
            done += chars
            sources[record["source"]] += 1
            if size >= part_chars:
                flush()
    flush()
    return files


def markdown(manifest: dict, manifest_sha256: str) -> str:
    """The manifest as Markdown: per kind what exists and what was kept, per source, and the files' digests."""
    lines = [
        "# The varied benchmark corpus (scripts/bench_corpus.py)",
        "",
        f"`{manifest['command']}`, built {manifest['built']} in {manifest['seconds']} s: "
        f"{manifest['characters']:,} characters, {manifest['documents']:,} documents, "
        f"{len(manifest['files'])} files; `manifest.json` SHA-256 `{manifest_sha256}`. Deduplication: "
        f"{manifest['deduplication']}.",
        "",
        "| kind | unique characters here | kept | documents kept | files |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, info in manifest["kinds"].items():
        lines.append(
            f"| {kind} | {info['available_characters']:,} | {info['kept_characters']:,} | "
            f"{info['kept_documents']:,} | {info['files']} |"
        )
    lines += [
        "",
        "| kind | source | unique documents | unique characters | duplicates skipped |",
        "|---|---|---:|---:|---:|",
    ]
    for kind, info in manifest["kinds"].items():
        for source, n in info["sources"].items():
            if n["documents"] or n["duplicates_skipped"]:
                lines.append(
                    f"| {kind} | {source} | {n['documents']:,} | {n['characters']:,} | {n['duplicates_skipped']:,} |"
                )
    lines += [
        "",
        "Roots: " + "; ".join(f"{label} `{folder}`" for label, folder in manifest["roots"]) + ".",
        "",
        "| file | documents | characters | SHA-256 |",
        "|---|---:|---:|---|",
    ]
    lines += [
        f"| {f['file']} | {f['documents']:,} | {f['characters']:,} | `{f['sha256']}` |" for f in manifest["files"]
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="Output folder (outside the repository), e.g. /work/bench_corpus.")
    parser.add_argument("--chars", type=float, default=1e9, help="Characters in all (at most: all there is).")
    parser.add_argument("--part-chars", type=float, default=10e6, help="Characters per .jsonl.zst file.")
    parser.add_argument("--prose", default=SHARED, help="Glob of the prose .jsonl.zst files (field 'text').")
    parser.add_argument("--roots", action="append", default=[], help="Another folder to draw from (repeatable).")
    parser.add_argument(
        "--markdown",
        default=str(Path(__file__).with_name("bench_corpus.md")),
        help="Where to write the manifest as Markdown.",
    )
    parser.add_argument("--no-rust-docs", action="store_true", help="Leave the Rust toolchains' HTML docs out.")
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"Error: {out} is not empty (the corpus is written once; remove it to rebuild)")
    out.mkdir(parents=True, exist_ok=True)
    roots = default_roots(not args.no_rust_docs) + [(r, Path(r)) for r in args.roots]
    prose = sorted(glob.glob(args.prose))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-corpus-", dir=out.parent) as tmp:
        stats = gather(roots, prose, Path(tmp))
        available = {kind: sum(s["characters"] for s in sources.values()) for kind, sources in stats.items()}
        files, left = [], args.chars
        for k, kind in enumerate(sorted(KINDS, key=available.get)):  # small kinds first, whole; the rest share
            keep = int(min(available[kind], left / (len(KINDS) - k)))
            files += write_parts(Path(tmp), out, kind, available[kind], keep, args.part_chars)
            left -= sum(f["characters"] for f in files if f["kind"] == kind)
        files.sort(key=lambda f: f["file"])
    kinds = {
        kind: {
            "available_characters": available[kind],
            "kept_characters": sum(f["characters"] for f in files if f["kind"] == kind),
            "kept_documents": sum(f["documents"] for f in files if f["kind"] == kind),
            "files": sum(f["kind"] == kind for f in files),
            "sources": stats[kind],
        }
        for kind in KINDS
    }
    manifest = {
        "command": "python scripts/bench_corpus.py " + " ".join(sys.argv[1:]),
        "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": round(time.perf_counter() - start),
        "roots": [[label, str(folder)] for label, folder in roots] + [["prose", p] for p in prose],
        "deduplication": "SHA-256 of each document's text across the whole corpus (and of each file's bytes)",
        "documents": sum(f["documents"] for f in files),
        "characters": sum(f["characters"] for f in files),
        "kinds": kinds,
        "files": files,
    }
    text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    (out / "manifest.json").write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    Path(args.markdown).write_text(markdown(manifest, digest), encoding="utf-8")
    for kind, info in kinds.items():
        print(
            f"{kind}: {info['available_characters'] / 1e6:,.1f}M unique characters, kept "
            f"{info['kept_characters'] / 1e6:,.1f}M in {info['kept_documents']:,} documents, {info['files']} files"
        )
    print(
        f"total: {manifest['characters']:,} characters, {manifest['documents']:,} documents, {len(files)} files "
        f"in {manifest['seconds']} s"
    )


if __name__ == "__main__":
    main()
