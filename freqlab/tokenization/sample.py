"""Built-in verification texts: real text from the running interpreter plus strings that stress regex engines.

Used at load time to check each faster backend against the tokenizer's reference implementation. Real
text is a deterministic slice of the standard library source (code, prose in docstrings, many identifiers);
the extra strings target the places where two regex engines or two normalisers can disagree: Unicode
whitespace and line breaks, digits of other scripts, contractions, combining marks, astral-plane characters.
"""

from __future__ import annotations

import functools
import random
import sysconfig
from collections.abc import Sequence
from pathlib import Path

TRICKY_TEXTS: tuple[str, ...] = (
    "",
    " ",
    "\n",
    "   leading spaces and trailing   ",
    "tabs\tand\r\nwindows\rold mac\u2028line sep\u2029para sep\x85next line\x0bvt\x0cff",
    "nbsp\u00a0thin\u2009ideographic\u3000zero-width\u200bjoiner\u200dword",
    "I'm sure they'll say it's what we'd've done; DON'T SHOUT. l'été, O'Neil's",
    "Zahlen 1234567 and ٣٤٥ and ४५६ and ⅫⅢ and ½ and 1,234.56e-7",
    "Größe Straße Ærøskøbing naïve café résumé déjà vu",
    "e\u0301 vs \u00e9, A\u030a vs \u00c5, \ufb01 ligature, \u212b angstrom, \u1e9b\u0323",
    "Ελληνικά κείμενα, русский текст, עברית, العربية, हिन्दी, ไทย, 한국어",
    "日本語のテキスト、中文文本。",
    "emoji 👩‍👩‍👧‍👦 🇫🇷 🏳️‍🌈 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀",
    "code:\n    def f(x):\n        return x**2  # comment\n\n\n\tif a<=b: pass\n",
    "URL https://example.com/path?q=1&r=2#frag, e-mail a.b@c.de, path C:\\Users\\x",
    "-----\n=====\n.....\n!!!???",
    "\n\n\n  \n \t\n",
    "trailing newline\n",
    "trailing spaces   ",
    # long runs: where regex engines backtrack, and where BPE merges the longest whitespace/digit tokens
    "indent" + " " * 3000 + "x" + "\t" * 700 + "\n" * 400 + " \n" * 300 + "end",
    "digits " + "1234567890" * 200 + " punctuation " + "!?" * 500 + " letters " + "a" * 2000,
)

# Where pre-tokenizer regexes spelled differently can part ways: case variants of contractions, digit runs,
# CR/LF mixes, letters and numbers of other scripts (:mod:`freqlab.tokenization.presets`).
ADVERSARIAL_TEXTS: tuple[str, ...] = (
    "it's IT'S It'S iT's we're WE'RE We'Re we'rE they've THEY'VE they'Ve I'm I'M we'll WE'LL we'Ll we'lL I'd I'D",
    "'s's 'S'S ''s x'sy x'Sy 'ss 'll'll 're're 'd'd 've've 'm'm 'x 'K 'ﬆ 'İ 'ı 'Ｓ ’s ‘t ſ's",
    "'ſ 'ſt x'ſt",  # U+017F LONG S: folds to "s" (see freqlab.tokenization.presets.FOLDED_LETTERS)
    "0 12 123 1234 12345 123456 1234567 12345678901234567890 1,234,567.89 3.14159e-10 0x1F 1e100",
    "١٢٣٤٥٦٧ ०१२३४५६ ０１２３４５６ ①②③④ ⅠⅡⅢⅣⅫ ½¾⅓ ²³¹ 𝟏𝟐𝟑 a1b22c333d4444",
    "a\r\nb\r\n\r\nc\n\rd\r\re\n\nf \r\n g\t\r\n\th  \n  i\r\n\r\n\r\n j \r",
    "x\r\n\r\n   \r\n\ty\u2028z\u2029w\x85v\x0bu\x0ct  \n\n\n  end  ",
    "ǅemal ǈubljana ǋ Σίσυφος ΣΊΣΥΦΟΣ İstanbul ıi ß ẞ ﬁne ﬆ Ǆ x\u0301y\u0327 a\u20dd 𐐷𐑏 𝔄𝔅",
    "日本語テキスト123と'sを混ぜる。中文，标点！한국어'd 텍스트",
    "!!!??? ... --- === \"'\"' `code` [x](y) {a: b} <tag/> #hash @at $5 %d ^ & * ( ) _ + |",
)


@functools.lru_cache(maxsize=4)
def stdlib_texts(max_files: int = 40, max_chars: int = 250_000) -> tuple[str, ...]:
    """A deterministic sample of the standard library's ``.py`` files (every k-th file, at most ``max_chars``)."""
    from freqlab.corpus.builtin import stdlib_files  # the built-in corpus's own listing (os.walk: fast)

    root = Path(sysconfig.get_paths()["stdlib"])
    files = [root / name for name in stdlib_files(str(root))]
    if not files:
        return ()
    step = max(1, len(files) // max_files)
    texts: list[str] = []
    total = 0
    for path in files[::step]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if total + len(text) > max_chars:
            continue
        texts.append(text)
        total += len(text)
        if len(texts) >= max_files:
            break
    return tuple(texts)


def default_verify_texts() -> list[str]:
    """The texts a fast path is verified on when the caller gives none (~0.25M characters)."""
    return [*TRICKY_TEXTS, *ADVERSARIAL_TEXTS, *stdlib_texts()]


def vocab_salad(
    tokens: Sequence[bytes], *, documents: int = 40, tokens_per_document: int = 500, seed: int = 0
) -> list[str]:
    """Texts made of random vocabulary tokens glued together (seeded), decoded as UTF-8 with replacement.

    Real text only meets the merges its language needs; gluing random tokens puts every part of a vocabulary
    (other scripts, long tokens, odd byte sequences) next to every other, where two BPE implementations that
    pick merges differently would part ways.
    """
    if not tokens:
        return []
    rng = random.Random(seed)
    return [
        b"".join(rng.choices(tokens, k=tokens_per_document)).decode("utf-8", errors="replace") for _ in range(documents)
    ]
