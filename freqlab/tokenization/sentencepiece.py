"""SentencePiece ``.model`` files: read the protobuf, convert BPE models to an equivalent ``tokenizer.json``.

A ``.model`` file is a serialized ``sentencepiece.ModelProto`` (sentencepiece_model.proto): the pieces with
their scores and types, the trainer settings (model type, byte fallback) and the normalizer settings. It is
read here with a small protobuf wire-format reader, so loading needs neither ``protobuf`` nor
``sentencepiece``; ``sentencepiece`` itself is the reference every converted counter is verified against.

Conversion (BPE models, as the Llama-2 / Mistral v1-v3 "legacy" conversion of ``transformers``):

* normalizer ``Prepend("▁")`` (``add_dummy_prefix``) then ``Replace(" ", "▁")`` (``escape_whitespaces``);
  no pre-tokenizer: the whole text is one BPE word;
* BPE over all pieces (ids = piece positions) with ``byte_fallback`` as trained, unknown characters fused
  into ``<unk>`` otherwise; merges: every split ``(a, b)`` of a normal piece ``p = a + b`` into two pieces,
  ordered by ``p``'s score (highest first): SentencePiece merges the adjacent pair whose concatenation has
  the highest score, Hugging Face the pair listed first, so the two orders agree.

SentencePiece splits the text into words at ``▁`` before merging; one BPE word gives the same result when no
piece holds ``▁`` after a non-``▁`` character (checked), since then no merge can cross a word boundary.
Control pieces (``<s>``, ``[INST]``) are never produced from text by SentencePiece; they stay plain vocabulary
entries. User-defined pieces are matched in raw text by SentencePiece; documents containing one are counted by
``sentencepiece`` itself. Anything else (unigram models, custom normalization rules, extra-whitespace
removal, UNUSED pieces, merged pieces sharing a score but for Llama 2's runs of ``▁``: :func:`_tied_pieces`) is
:class:`~freqlab.tokenization.bytelevel.NotConvertible` and counted by ``sentencepiece``.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freqlab.errors import FreqlabError
from freqlab.tokenization.backends import BACKEND_FASTOKENS, BACKEND_HF, BACKEND_SENTENCEPIECE, BACKEND_TIKTOKEN
from freqlab.tokenization.bytelevel import NotConvertible
from freqlab.tokenization.counter import TokenCounter, vocab_hash
from freqlab.tokenization.verify import fastokens_candidate, read_loaded, verified

SPACE = "\u2581"  # "▁", SentencePiece's visible space

# sentencepiece_model.proto: SentencePiece.Type and TrainerSpec.ModelType
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclass(frozen=True)
class SentencePieceModel:
    """The parts of a ``ModelProto`` that decide segmentation (proto defaults where a field is absent)."""

    pieces: tuple[str, ...]
    scores: tuple[float, ...]
    types: tuple[int, ...]
    model_type: int = 1
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    normalizer_name: str = "nmt_nfkc"
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    normalization_rule_tsv: str = ""
    bos_id: int = 1
    eos_id: int = 2

    @property
    def user_defined(self) -> tuple[str, ...]:
        """Pieces SentencePiece matches in raw text before segmenting (type USER_DEFINED)."""
        return tuple(p for p, t in zip(self.pieces, self.types) if t == USER_DEFINED)

    @property
    def user_defined_routed(self) -> tuple[str, ...]:
        """What to look for in a text to find those that hold a user-defined piece as SentencePiece matches it: on
        the normalized text, where each space is ``▁`` (``escape_whitespaces``) and a ``▁`` comes before the text
        (``add_dummy_prefix``). A piece holding ``▁`` is looked for with a space or a ``▁`` at each (``a qz x``,
        ``a qz▁x``...) and, when it begins with one, without it as well (``qz▁x`` at a text's start; found
        anywhere: a few more texts go to the reference than hold the piece). Past :data:`MAX_SPACE_FORMS` forms, by
        its longest run of other characters. A piece of ``▁`` alone is refused (:func:`sentencepiece_to_hf_json`).

        >>> SentencePieceModel(["<unk>", "\u2581qz\u2581x"], [0.0] * 2, [2, 4]).user_defined_routed
        ('▁qz▁x', '▁qz x', ' qz▁x', ' qz x', 'qz▁x', 'qz x')
        """
        forms: list[str] = []
        for piece in self.user_defined:
            spellings = [piece]
            if piece.startswith(SPACE) and self.add_dummy_prefix:
                spellings.append(piece[1:])
            for spelling in filter(None, spellings):
                forms.extend(_space_forms(spelling) if self.escape_whitespaces else [spelling])
        return tuple(dict.fromkeys(form for form in forms if form))


MAX_SPACE_FORMS = 64  # a user-defined piece with more ▁ than log2 of this is looked for by its longest other run


def _space_forms(piece: str) -> list[str]:
    """``piece`` with a space or ``▁`` at each ``▁``; past :data:`MAX_SPACE_FORMS`, its longest run of other
    characters (all of them hold it).
    """
    parts = piece.split(SPACE)
    if 2 ** (len(parts) - 1) > MAX_SPACE_FORMS:
        return [max(parts, key=len)]
    glues = itertools.product((SPACE, " "), repeat=len(parts) - 1)
    return [parts[0] + "".join(glue + part for glue, part in zip(each, parts[1:])) for each in glues]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes):
    """(field number, wire type, value) of a protobuf message; value is int, bytes or float."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = struct.unpack("<f", data[pos : pos + 4])[0], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(data):
            raise ValueError("truncated protobuf message")
        yield number, wire, value


def parse_sentencepiece_model(data: bytes) -> SentencePieceModel:
    """Read a serialized ``ModelProto`` (field numbers from sentencepiece_model.proto); ValueError if malformed."""
    pieces: list[str] = []
    scores: list[float] = []
    types: list[int] = []
    options: dict = {}
    for number, wire, value in _fields(data):
        if number == 1 and wire == 2:  # repeated SentencePiece pieces
            piece, score, kind = "", 0.0, NORMAL
            for n, _, v in _fields(value):
                if n == 1:
                    piece = v.decode("utf-8")
                elif n == 2:
                    score = float(v)
                elif n == 3:
                    kind = int(v)
            pieces.append(piece)
            scores.append(score)
            types.append(kind)
        elif number == 2 and wire == 2:  # TrainerSpec
            names = {3: "model_type", 35: "byte_fallback", 24: "treat_whitespace_as_suffix",
                     26: "allow_whitespace_only_pieces", 41: "bos_id", 42: "eos_id"}  # fmt: skip
            for n, _, v in _fields(value):
                if n in names:
                    options[names[n]] = v if n in (3, 41, 42) else bool(v)
        elif number == 3 and wire == 2:  # NormalizerSpec
            for n, _, v in _fields(value):
                if n == 1:
                    options["normalizer_name"] = v.decode("utf-8")
                elif n == 2:
                    options["precompiled_charsmap"] = bytes(v)
                elif n in (3, 4, 5):
                    key = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces", 5: "escape_whitespaces"}[n]
                    options[key] = bool(v)
                elif n == 6:
                    options["normalization_rule_tsv"] = v.decode("utf-8")
    if not pieces:
        raise ValueError("no pieces (not a SentencePiece model)")
    for key in ("bos_id", "eos_id"):  # int32 fields: -1 (disabled) arrives as a 64-bit two's complement varint
        if options.get(key, 0) >= 2**63:
            options[key] -= 2**64
    return SentencePieceModel(pieces=tuple(pieces), scores=tuple(scores), types=tuple(types), **options)


def read_sentencepiece_model(path: str | Path) -> tuple[SentencePieceModel, bytes]:
    """Parse a ``.model`` file; FreqlabError naming the file if it is unreadable or not a SentencePiece model."""
    path = Path(path)
    try:
        data = read_loaded(path)
        return parse_sentencepiece_model(data), data
    except (OSError, ValueError, IndexError, UnicodeDecodeError, struct.error) as exc:
        raise FreqlabError(f"{path}: not a SentencePiece model ({exc.__class__.__name__}: {exc})") from exc


def sentencepiece_to_hf_json(model: SentencePieceModel) -> str:
    """``tokenizer.json`` text for a SentencePiece BPE model; NotConvertible (with the reason) otherwise."""
    if model.model_type != 2:
        raise NotConvertible(f"SentencePiece {MODEL_TYPES.get(model.model_type, model.model_type)} model, not BPE")
    if model.precompiled_charsmap or model.normalization_rule_tsv or model.normalizer_name not in ("identity", ""):
        raise NotConvertible(f"SentencePiece normalization {model.normalizer_name!r} is not converted")
    if model.remove_extra_whitespaces:
        raise NotConvertible("SentencePiece remove_extra_whitespaces is not converted")
    if model.treat_whitespace_as_suffix:
        raise NotConvertible("SentencePiece treat_whitespace_as_suffix is not converted")
    spaces = [piece for piece in model.user_defined if not piece.strip(SPACE)]
    if spaces:  # in nearly every text once spaces are ▁: nothing to look for (user_defined_routed)
        raise NotConvertible(f"user-defined piece {spaces[0]!r} is made of spaces: SentencePiece counts every text")
    vocab = {piece: i for i, piece in enumerate(model.pieces)}
    if len(vocab) != len(model.pieces):
        raise NotConvertible("duplicate SentencePiece pieces")
    for piece, kind in zip(model.pieces, model.types):
        if kind == NORMAL and SPACE in piece.lstrip(SPACE):
            raise NotConvertible(f"piece {piece!r} has '▁' inside a word: merges could cross word boundaries")
    unused = [piece for piece, kind in zip(model.pieces, model.types) if kind == UNUSED]
    if unused:
        raise NotConvertible(f"UNUSED piece {unused[0]!r}: SentencePiece merges into it and splits it again")
    tied = _tied_pieces(model)
    if tied:
        raise NotConvertible(
            f"pieces {tied[0]!r} and {tied[1]!r} share a score: SentencePiece merges the leftmost of such pairs, "
            "a merge list the one listed first"
        )
    unk = next((p for p, t in zip(model.pieces, model.types) if t == UNKNOWN), None)
    mergeable = {p for p, t in zip(model.pieces, model.types) if t in (NORMAL, USER_DEFINED)}
    order = sorted(
        (i for i, t in enumerate(model.types) if t == NORMAL and len(model.pieces[i]) > 1),
        key=lambda i: (-model.scores[i], i),
    )
    merges = []
    for i in order:
        piece = model.pieces[i]
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in mergeable and right in mergeable:
                merges.append([left, right])
    normalizers = []
    if model.add_dummy_prefix:
        normalizers.append({"type": "Prepend", "prepend": SPACE})
    if model.escape_whitespaces:
        normalizers.append({"type": "Replace", "pattern": {"String": " "}, "content": SPACE})
    config = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": normalizers} if normalizers else None,
        "pre_tokenizer": None,
        "post_processor": _bos_eos_template(model),
        "decoder": None,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": bool(model.byte_fallback),
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    return json.dumps(config, ensure_ascii=False)


def _tied_pieces(model: SentencePieceModel) -> tuple[str, str] | None:
    """Two merged pieces of the same score, one of them not all ``▁``, or None. Such pieces (a vocabulary extension's,
    appended with score 0) compete: SentencePiece merges the leftmost pair of equal score, Hugging Face's BPE the
    pair listed first ('qjx' with 'qj' and 'jx' of score 0: 2 pieces for 3, a tokenizer fuzzing review). Llama 2's
    and Mistral's runs of ``▁`` (all of score -1e9) are a family the conversion orders alike (tested on those
    models).
    """
    first: dict[float, str] = {}
    for piece, score, kind in zip(model.pieces, model.scores, model.types):
        if kind != NORMAL or len(piece) < 2:
            continue
        other = first.setdefault(score, piece)
        if other != piece and (piece.strip(SPACE) or other.strip(SPACE)):
            return other, piece
    return None


def _bos_eos_template(model: SentencePieceModel) -> dict | None:
    """``<s> text </s>``: the tokens a pretraining document gets (as ``sentencepiece`` with add_bos/add_eos)."""
    ends = [(model.pieces[i], i) for i in (model.bos_id, model.eos_id) if 0 <= i < len(model.pieces)]
    if not ends:
        return None
    template = [{"SpecialToken": {"id": p, "type_id": 0}} for p, i in ends if i == model.bos_id]
    template.append({"Sequence": {"id": "A", "type_id": 0}})
    template += [{"SpecialToken": {"id": p, "type_id": 0}} for p, i in ends if i == model.eos_id]
    return {
        "type": "TemplateProcessing",
        "single": template,
        "pair": template,
        "special_tokens": {p: {"id": p, "ids": [i], "tokens": [p]} for p, i in ends},
    }


def load_sentencepiece_file(
    path: str | Path, *, add_special_tokens: bool = False, verify_texts: Sequence[str] | None = None
) -> TokenCounter:
    """A counter for a SentencePiece ``.model`` file, verified against ``sentencepiece`` (required).

    Candidates: fastokens and Hugging Face on the converted ``tokenizer.json``; reference: ``sentencepiece``.
    ``add_special_tokens`` counts ``<s> text </s>`` (the model's BOS and EOS, where defined).
    """
    model, data = read_sentencepiece_model(path)
    try:
        import sentencepiece  # noqa: F401
    except ImportError as exc:
        raise FreqlabError(
            f"{path}: a SentencePiece model is counted and verified with the sentencepiece package: "
            "pip install 'freqlab[sentencepiece]'"
        ) from exc
    sources: dict[str, Any] = {BACKEND_SENTENCEPIECE: data}
    refusals = {BACKEND_TIKTOKEN: "a SentencePiece model is not byte-level BPE"}
    version = None
    try:
        json_text = sentencepiece_to_hf_json(model)
    except NotConvertible as exc:
        refusals[BACKEND_FASTOKENS] = refusals[BACKEND_HF] = str(exc)
    else:
        sources[BACKEND_HF] = json_text
        version = fastokens_candidate(sources, refusals, lambda: json_text)
    ends = [i for i in (model.bos_id, model.eos_id) if 0 <= i < len(model.pieces)]
    candidate = TokenCounter(
        name=str(path),
        spec=str(path),
        vocab_size=len(model.pieces),
        vocab_hash=vocab_hash((i, p.encode("utf-8")) for i, p in enumerate(model.pieces)),
        sources=sources,
        routed=model.user_defined_routed,
        add_special_tokens=add_special_tokens,
        special_tokens_added=len(ends),
        fastokens_version=version,
    )
    salad = [p.replace(SPACE, " ").encode("utf-8") for p, t in zip(model.pieces, model.types) if t == NORMAL]
    return verified(candidate, refusals=refusals, verify_texts=verify_texts, salad_tokens=salad)
