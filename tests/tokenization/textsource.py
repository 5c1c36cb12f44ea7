"""Real text for tokenizer tests: the running interpreter's standard library source (no shipped text)."""

from __future__ import annotations

import functools
import sysconfig
from pathlib import Path

NON_ASCII = (
    "Größe Straße Ærøskøbing naïve café résumé déjà vu — «guillemets» „Anführung“",
    "Ελληνικά κείμενα, русский текст, עברית, العربية, हिन्दी, ไทย, 한국어, 日本語のテキスト、中文文本。",
    "e\u0301 vs \u00e9, A\u030a vs \u00c5, \ufb01 ligature, \u212b angstrom, \u1e9b\u0323, Ⅻ ½ ٣٤٥",
    "emoji 👩‍👩‍👧‍👦 🇫🇷 🏳️‍🌈 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀 nbsp\u00a0thin\u2009ideo\u3000zw\u200bzwj\u200dx",
    "tabs\tand\r\nwindows\rold mac\u2028line sep\u2029para\x85nel\x0bvt\x0cff   \n\n \t\n",
    "I'm sure they'll say it's what we'd've done; DON'T SHOUT. l'été, O'Neil's 1234567 1,234.56e-7",
)


@functools.lru_cache(maxsize=1)
def stdlib_files() -> tuple[Path, ...]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return tuple(sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts))


def stdlib_modules(start: int, count: int) -> list[str]:
    """``count`` whole source files, every 3rd file from ``start`` (deterministic)."""
    texts = []
    for path in stdlib_files()[start::3]:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        if len(texts) == count:
            break
    return texts


def stdlib_documents(start: int, count: int, max_chars: int = 1500) -> list[str]:
    """``count`` documents: blank-line separated chunks of stdlib files (real, varied, short)."""
    docs: list[str] = []
    for text in stdlib_modules(start, 10 * count):
        chunk = ""
        for block in text.split("\n\n"):
            if chunk and len(chunk) + len(block) > max_chars:
                docs.append(chunk)
                chunk = ""
                if len(docs) == count:
                    return docs
            chunk += block + "\n\n"
    return docs
