"""fastokens' pre-tokenizer presets for ``tokenizer.json`` files: recognise equivalent spellings, confirm, route.

fastokens runs a hand-written splitter (its *preset*) instead of PCRE2 when a ``Split`` pre-tokenizer's regex is,
character for character, one it knows, such as Llama 3's as Hugging Face ships it; on the same vocabulary that is
~3x faster (measured: 28.0M against 10.1M tokens per second on stdlib source). Converters spell the same regex
differently: llama.cpp's GGUF converters write the contractions ``(?i:'s|'t|...)`` as
``(?:'[sS]|'[tT]|'[rR][eE]|...)``, which fastokens does not recognise.

:func:`choose_preset` gives fastokens the preset's own spelling when the file's regex *behaves* like the preset:

1. normalise: known alternative spellings (:data:`SPELLINGS`) are rewritten to the preset's; the result must be a
   preset's spelling (:data:`PRESETS`);
2. confirm: the file's own regex and the preset's *behaviour* (a regex doing what fastokens' splitter does) must
   split every verification text and every adversarial text (:data:`ADVERSARIAL_TEXTS`: case variants of
   contractions, digit runs, CR/LF mixes, letters and numbers of other scripts) into the same pieces, with the
   ``regex`` module; otherwise fastokens is given the file's regex wrapped in ``(?:...)`` (PCRE2, exact);
3. route: fastokens' Llama 3 splitter matches the contractions in ASCII case only (measured: it keeps ``'ſt``,
   U+017F LONG S, as one piece), while ``(?i:'s|...)`` in Oniguruma (Hugging Face) and ``regex`` also matches
   ``'ſ``; so do its cl100k and o200k presets, which it recognises in any file. For any regex that treats ``'ſ``
   unlike an ordinary letter (:func:`folded_routed`) the texts containing ``ſ`` are counted by the next verified
   backend (the counter's ``fastokens_routed``: tiktoken, which runs the file's own regex, else the reference);
   for the llama.cpp spelling, which never matches it, nothing is routed. The counts can differ, not only the
   pieces: Llama 3 (``ignore_merges``) counts ``x'ſektedir`` in 5 tokens and fastokens' preset in 7, because
   ``ektedir`` is one token whole but not by merges. Where the file's normalizer may write ``ſ`` into text holding
   none (a ``Replace`` or ``Prepend`` writing it: :func:`normalizer_refusal`), no literal says which texts to
   route: fastokens is left out. fastokens' cl100k splitter and the PCRE2 it runs every regex of no preset with also
   take U+180E for whitespace, which the regex does not: texts holding it are routed too wherever fastokens meets
   cl100k's regex (:data:`ENCODING_ROUTED`), and wherever fastokens counts :data:`SEPARATOR_PROBES` otherwise than
   the reference at load (:mod:`~freqlab.tokenization.verify`).

Every candidate is then verified end to end against Hugging Face like any fast path
(:mod:`freqlab.tokenization.verify`).
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from freqlab.tokenization.backends import FASTOKENS_PRESETS, LLAMA3_PATTERN, compiled_pattern
from freqlab.tokenization.sample import ADVERSARIAL_TEXTS

CONTRACTIONS_FOLDED = "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
CONTRACTIONS_ASCII = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"

# alternative spelling -> (the preset's spelling of the same construct in ASCII text, who writes it so)
SPELLINGS: dict[str, tuple[str, str]] = {
    CONTRACTIONS_ASCII: (CONTRACTIONS_FOLDED, "llama.cpp's (?:'[sS]|'[tT]|...)"),  # convert_hf_to_gguf, GGUF
    "(?:'s|'S|'t|'T|'re|'RE|'Re|'rE|'ve|'VE|'Ve|'vE|'m|'M|'ll|'LL|'Ll|'lL|'d|'D)": (
        CONTRACTIONS_FOLDED,
        "(?:'s|'S|...) listing the cases",
    ),
}


@dataclass(frozen=True)
class Preset:
    """A fastokens preset: its ``spelling`` (the regex string fastokens recognises) and its ``behaviour`` (a
    regex for the ``regex`` module that splits text as fastokens' splitter does: the tests check it against
    fastokens on :data:`ADVERSARIAL_TEXTS`).
    """

    name: str
    spelling: str
    behaviour: str


PRESETS: dict[str, Preset] = {
    LLAMA3_PATTERN: Preset(
        "llama3 (cl100k-style)", LLAMA3_PATTERN, LLAMA3_PATTERN.replace(CONTRACTIONS_FOLDED, CONTRACTIONS_ASCII)
    ),
}

# letters whose simple case fold is a contraction's first letter (U+017F LONG S folds to "s"): after an apostrophe,
# a case-insensitive contraction ((?i:'s|...), '(?i:[sdmt]|...)) matches them in Oniguruma (Hugging Face), in
# ``regex`` and in tiktoken's engine, where fastokens' hand-written presets (Llama 3 / cl100k, o200k) do not
FOLDED_LETTERS: tuple[str, ...] = ("\u017f",)
NEXT_BACKEND = "the next verified backend"  # in the note, where the counter names it once verified
# strings fastokens' own encodings (tiktoken ranks' presets) split otherwise than their regex, found by a sweep of
# every code point before an apostrophe: U+180E MONGOLIAN VOWEL SEPARATOR, whitespace to its cl100k splitter, a
# format character to the regex ("x\u180e's": 7 tokens against tiktoken's 8 on Llama 3's ranks); its llama3 and
# o200k splitters get it right (swept)
ENCODING_ROUTED: dict[str, tuple[str, ...]] = {"cl100k_base": ("\u180e",)}
MONGOLIAN_VOWEL_SEPARATOR = "\u180e"
#: texts with U+180E among the characters regexes tell apart, counted by fastokens and the reference at load: where
#: any differs, texts holding U+180E skip fastokens (verify: ``separator:`` verdict). fastokens' PCRE2 and some of its
#: splitters take it for whitespace where Oniguruma and tiktoken's engine, on Unicode 6.3 on, see a format character
#: (a fuzzing review: "x\u180e'll" 5 tokens for 6 under GPT-2's regex, "a\u180eb" 2 for 5 under Split(\s+, removed));
#: whether it shows depends on the regex, the rest of the file and the vocabulary (Tekken's ranks and a Llama 3 file
#: as Hugging Face ships it count alike; a tokenizer.json with Tekken's regex, or Llama 3's with a prefix space, do
#: not: a second review), hence a count at load rather than a rule. Letters and signs a vocabulary may lack are
#: neighbours too: next to unknown characters, a BPE with ``fuse_unk`` fuses U+180E into one ``<unk>`` with them
#: where PCRE2 splits there ("本\u180e本" 3 tokens for 1: a tokenizer fuzzing review)
SEPARATOR_PROBES = tuple(
    f"{left}\u180e{right}"
    for left in ("", "x", "word", " ", "  ", "1", "'", "\n", ".", "\u180e", "Mongolian", "ᠮᠣᠩᠭᠣᠯ", "本", "²")
    for right in ("", "x", "'ll", "'s", "'t", " word", "  x", "1", "\n", ".", "\u180e", "\u180e ", "b", "ᠠ", "本", "½")
)


@dataclass(frozen=True)
class PresetChoice:
    """What fastokens is given for a ``tokenizer.json``: ``json_text`` (the file's, or with the preset's spelling),
    the ``preset`` taken (None: none), the ``routed`` strings whose texts fastokens leaves to the next backend,
    ``note`` (one line for the summary: which preset was taken and why, or why not), and ``refusal``: why
    fastokens is no candidate at all (None: it is one).
    """

    json_text: str
    preset: str | None = None
    routed: tuple[str, ...] = ()
    note: str | None = None
    refusal: str | None = None  # why fastokens is left out for this file (None: it is a candidate)


def normalise(pattern: str) -> str:
    r"""``pattern`` with every known alternative spelling (:data:`SPELLINGS`) rewritten to the preset's.

    >>> normalise("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|\\s+")
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|\\s+"
    """
    for spelling, (canonical, _) in SPELLINGS.items():
        pattern = pattern.replace(spelling, canonical)
    return pattern


def spelling_of(pattern: str) -> str:
    """How ``pattern`` spells its preset: "as Hugging Face ships it" or the alternative spellings it uses."""
    names = [name for spelling, (_, name) in SPELLINGS.items() if spelling in pattern]
    return "spelled " + " and ".join(names) if names else "spelled as Hugging Face ships it"


def split_regex(config: dict[str, Any]) -> tuple[list, str] | None:
    """(path to the pattern in ``config``, the pattern) of the tokenizer's one ``Split`` regex, or None."""
    pre = config.get("pre_tokenizer") or {}
    steps = [(["pre_tokenizer"], pre)]
    if pre.get("type") == "Sequence":
        steps = [(["pre_tokenizer", "pretokenizers", i], step) for i, step in enumerate(pre.get("pretokenizers", []))]
    found = [
        ([*path, "pattern", "Regex"], step["pattern"]["Regex"])
        for path, step in steps
        if step.get("type") == "Split" and isinstance(step.get("pattern"), dict) and "Regex" in step["pattern"]
    ]
    return found[0] if len(found) == 1 else None


#: the Unicode properties fastokens' PCRE2 reads as Hugging Face's Oniguruma and tiktoken's engine do: general
#: categories, by their short and long names (case, spaces, ``_`` and ``-`` ignored, as the engines ignore them)
GENERAL_CATEGORIES = frozenset((
    "l", "lu", "ll", "lt", "lm", "lo", "lc", "l&", "m", "mn", "mc", "me", "n", "nd", "nl", "no", "p", "pc", "pd",
    "ps", "pe", "pi", "pf", "po", "s", "sm", "sc", "sk", "so", "z", "zs", "zl", "zp", "c", "cc", "cf", "cs", "co",
    "cn", "any", "letter", "casedletter", "uppercaseletter", "lowercaseletter", "titlecaseletter", "modifierletter",
    "otherletter", "mark", "nonspacingmark", "spacingmark", "enclosingmark", "number", "decimalnumber",
    "letternumber", "othernumber", "punctuation", "connectorpunctuation", "dashpunctuation", "openpunctuation",
    "closepunctuation", "initialpunctuation", "finalpunctuation", "otherpunctuation", "symbol", "mathsymbol",
    "currencysymbol", "modifiersymbol", "othersymbol", "separator", "spaceseparator", "lineseparator",
    "paragraphseparator", "other", "control", "format", "surrogate", "privateuse", "unassigned", "combiningmark"
))  # fmt: skip
#: ``\p{...}``, ``\P{...}``, ``\pL`` after an even number of backslashes (``\\p{Latin}`` is a backslash, then text)
_PROPERTY = re.compile(r"(?<!\\)(?:\\\\)*(\\[pP](?:\{\^?([^}]*)\}|([A-Za-z])))")


def script_property(patterns: Sequence[str]) -> str | None:
    r"""The first Unicode property of ``patterns`` that is no general category (``\p{Latin}``, ``\p{Han}``,
    ``\p{Alphabetic}``), or None: fastokens' PCRE2 reads a script as its Script_Extensions, where Oniguruma and
    tiktoken's engine read Script (U+00B7 MIDDLE DOT is Latin and Greek to PCRE2, Common to them: under
    ``\p{Latin}+|\P{Latin}+``, 'a ·' is 3 tokens for 2, a tokenizer fuzzing review), so fastokens is no candidate.

    >>> script_property([r"\p{L}+|\p{Lowercase_Letter}|\pN|\p{gc=Lu}"]), script_property([r"\p{Latin}+|\P{Han}"])
    (None, '\\p{Latin}')
    >>> script_property([r"\\p{Latin}"]), script_property([r"\\\p{Latin}"])  # a backslash, then text; then a property
    (None, '\\p{Latin}')
    """
    for pattern in patterns:
        for match in _PROPERTY.finditer(pattern):
            name = re.sub(r"[\s_-]", "", match.group(2) if match.group(2) is not None else match.group(3)).lower()
            bare = re.sub(r"^(?:generalcategory=|gc=|is)", "", name)  # \p{gc=L}, \p{IsL}: a category still
            if name not in GENERAL_CATEGORIES and bare not in GENERAL_CATEGORIES:
                return match.group(1)
    return None


def script_refusal(patterns: Sequence[str], reference: str) -> str | None:
    """Why fastokens is no candidate for these regexes (:func:`script_property`), or None."""
    found = script_property(patterns)
    if found is None:
        return None
    return (
        f"{found} in the regex is no general category: fastokens reads a script as its Script_Extensions, "
        f"{reference} as its Script"
    )


def regexes(config: Any) -> list[str]:
    """Every regex of a parsed ``tokenizer.json`` (``{"Regex": ...}`` anywhere: pre-tokenizers, normalizers)."""
    if isinstance(config, dict):
        own = [config["Regex"]] if isinstance(config.get("Regex"), str) else []
        return own + [r for key, value in config.items() if key != "model" for r in regexes(value)]
    if isinstance(config, list):
        return [r for value in config for r in regexes(value)]
    return []


def first_difference(pattern: str, other: str, texts: Sequence[str]) -> int | None:
    """Index of the first text ``pattern`` and ``other`` split into different pieces (``regex``), or None."""
    a, b = compiled_pattern(pattern), compiled_pattern(other)
    for i, text in enumerate(texts):
        if a.findall(text) != b.findall(text):
            return i
    return None


def folded_routed(pattern: str) -> tuple[str, ...]:
    r"""The letters of :data:`FOLDED_LETTERS` that ``pattern`` splits after an apostrophe otherwise than an ordinary
    letter (``x'ſt`` against ``x'at``): texts holding one skip fastokens, which may run the regex as one of its
    presets (it recognises cl100k's and o200k's in any file, and Llama 3's spelling: :func:`choose_preset`). The
    letter alone is looked for, not the apostrophe before it, which a normalizer may make (``’`` -> ``'``). A regex
    the ``regex`` module cannot compile routes them all.

    >>> folded_routed(r"(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+"), folded_routed(r"'s|'t|\p{L}+")
    (('ſ',), ())
    """
    try:
        compiled = compiled_pattern(pattern)
    except Exception:  # regex.error, or a pattern of another engine's syntax
        return FOLDED_LETTERS

    def ends(text: str) -> list[int]:
        return [match.end() for match in compiled.finditer(text)]

    return tuple(ch for ch in FOLDED_LETTERS if ends(f"x'{ch}t") != ends("x'at"))


#: normalizer steps that never write a routed letter into text holding none: no composition, case mapping or
#: compatibility mapping yields ``ſ`` (NFKC and NFKD map it to ``s``). fastokens itself takes only NFC, Lowercase,
#: Prepend, Replace and Sequence; NFD and BertNormalizer (``strip_accents``) make ``ſ`` of ``ẛ`` (U+1E9B)
NEVER_WRITE_LETTERS = frozenset({"NFC", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents", "Nmt", "ByteLevel"})


def normalizer_refusal(config: dict[str, Any], letters: Sequence[str]) -> str | None:
    """Why fastokens is left out for a ``tokenizer.json`` whose normalizer may write one of the routed ``letters``
    into text holding none, or None. The regex sees normalized text, the routing the text read: a ``Replace`` or
    ``Prepend`` writing ``ſ`` would hand fastokens' preset the ``'ſ`` it splits otherwise, from a text that is not
    routed (``Q`` -> ``ſ``; after ``NFC`` composes ``e`` and U+0301, ``é`` -> ``ſ``; a step making the ``Q`` a later
    one replaces). Which texts those are, no literal says, so such a file is counted without fastokens. The steps:
    :data:`NEVER_WRITE_LETTERS` never write one; a ``Replace`` or ``Prepend`` whose text holds one, SentencePiece's
    ``Precompiled`` map whose blob holds one (its normalized strings lie there as UTF-8), and any other step (NFD,
    BertNormalizer, a type not known here) may.

    >>> normalizer_refusal({"normalizer": {"type": "NFC"}}, ("ſ",)) is None
    True
    >>> normalizer_refusal({"normalizer": {"type": "Prepend", "prepend": "ſ"}}, ("ſ",))[:50]
    "not used: the normalizer's Prepend step may write "
    """
    if not letters or not config.get("normalizer"):
        return None
    for step in _normalizer_steps(config["normalizer"]):
        if written := _may_write(step, letters):
            kind = step.get("type") if isinstance(step, dict) else step
            return (
                f"not used: the normalizer's {kind} step may write {', '.join(map(repr, written))} into text holding "
                "none, which fastokens' preset splits otherwise"
            )
    return None


def _normalizer_steps(step: Any) -> list[Any]:
    """The steps of a normalizer's JSON, ``Sequence`` flattened."""
    if isinstance(step, dict) and step.get("type") == "Sequence":
        return [leaf for inner in step.get("normalizers") or [] for leaf in _normalizer_steps(inner)]
    return [step]


def _may_write(step: Any, letters: Sequence[str]) -> tuple[str, ...]:
    """The ``letters`` the normalizer ``step`` may write into text holding none (see :func:`normalizer_refusal`)."""
    kind = step.get("type") if isinstance(step, dict) else None
    if kind in NEVER_WRITE_LETTERS:
        return ()
    if kind in ("Replace", "Prepend"):
        written = str(step.get("content" if kind == "Replace" else "prepend", ""))
        return tuple(letter for letter in letters if letter in written)
    if kind == "Precompiled":
        try:
            blob = base64.b64decode(step.get("precompiled_charsmap") or "")
        except (ValueError, TypeError):
            return tuple(letters)
        return tuple(letter for letter in letters if letter.encode("utf-8", "surrogatepass") in blob)
    return tuple(letters)


def routing_note(routed: Sequence[str]) -> str:
    """The note's clause on the texts that skip fastokens (NEXT_BACKEND: named once the backends are verified)."""
    return f"; texts containing {', '.join(map(repr, routed))} go to {NEXT_BACKEND}" if routed else ""


def choose_preset(config: dict[str, Any], json_text: str, texts: Sequence[str]) -> PresetChoice:
    """What to give fastokens for a parsed ``tokenizer.json`` (see the module docstring); ``texts``: the load-time
    verification texts (the adversarial ones are added here).
    """
    refusal = script_refusal(regexes(config), "Hugging Face")
    if refusal is not None:
        return PresetChoice(json_text, None, (), f"fastokens {refusal}", refusal)
    found = split_regex(config)
    if found is None:
        return PresetChoice(json_text)
    where, pattern = found
    # fastokens runs its own cl100k or o200k splitter wherever it meets that regex, its llama3 one when given its
    # spelling (below), PCRE2 otherwise: the strings routed are the regex's and that engine's
    encoding = FASTOKENS_PRESETS.get(pattern)
    preset = PRESETS.get(normalise(pattern)) if encoding is None else None
    routed = folded_routed(pattern) + ENCODING_ROUTED.get(encoding or "", ())
    refusal = normalizer_refusal(config, routed)
    if refusal is not None:
        return PresetChoice(json_text, None, routed, f"fastokens {refusal}", refusal)
    if preset is None:  # fastokens' own encoding's splitter, or PCRE2
        note = f"fastokens: the file's regex{routing_note(routed)}" if routed else None
        return PresetChoice(json_text, None, routed, note)
    behaviour = preset.behaviour
    probes = [t for t in dict.fromkeys((*texts, *ADVERSARIAL_TEXTS)) if not any(s in t for s in routed)]
    differ = first_difference(pattern, behaviour, probes)
    spelled = spelling_of(pattern)
    if differ is not None:
        text = probes[differ]
        note = (
            f"fastokens: regex not run as its {preset.name} preset ({spelled}, it splits {text[:30]!r}... "
            f"differently); run by PCRE2{routing_note(routed)}"
        )
        return PresetChoice(_with_pattern(config, where, f"(?:{pattern})"), None, routed, note)
    note = (
        f"fastokens: {preset.name} pre-tokenizer preset (the file's regex, {spelled}, splits "
        f"{len(probes)} verification and adversarial texts like it{routing_note(routed)})"
    )
    text = json_text if pattern == preset.spelling else _with_pattern(config, where, preset.spelling)
    return PresetChoice(text, preset.name, routed, note)


def _with_pattern(config: dict[str, Any], where: list, pattern: str) -> str:
    """``config`` as JSON text with the regex at ``where`` replaced by ``pattern`` (the dicts and lists on the
    way copied, the rest shared: a Llama 3 ``tokenizer.json`` holds ~400k merges).
    """
    edited = copy.copy(config)
    node = edited
    for key in where[:-1]:
        node[key] = copy.copy(node[key])
        node = node[key]
    node[where[-1]] = pattern
    return json.dumps(edited, ensure_ascii=False)
