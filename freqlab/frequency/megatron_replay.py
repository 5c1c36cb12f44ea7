"""The ``megatron`` regime: the windows Megatron-LM's ``GPTDataset`` draws, replayed exactly from the ``.idx``.

What megatron-core's ``GPTDataset`` does (``megatron/core/datasets/gpt_dataset.py``, checked against its own
samples in the tests), replayed here with numpy only, in O(sequences):

1. Its units are the index's *sequences* (GPT splits by sequence; ``document_indices`` is not used). The
   ``--split`` weights (e.g. ``969,30,1``) are normalised and cut the sequences into ranges
   ``[round(a·S), round(b·S))``; the train split is the first.
2. The number of epochs is the least E with ``E·T ≥ samples·L + 1`` (T: tokens of the split), samples being
   ``--train-samples`` (one epoch without it). The epochs' sequence ids, ``arange(S, dtype=int32)`` repeated,
   are shuffled by ``numpy.random.RandomState(seed)`` (``--seed``, default 1234); when the last epoch would
   give fewer than 80% of an epoch's samples, it is shuffled separately after the others.
3. Samples are windows of ``L + 1`` tokens at stride L over that stream, ``(E·T - 1) // L`` of them; the
   trainer takes the first ``--train-samples`` in the order of a shuffled ``arange`` (the same RandomState).
4. Without ``--reset-attention-mask`` each window's L input tokens are one segment: f(i) = windows · (L - i).
   With it, a segment ends after every EOD token among the inputs: the last token of each document, as
   ``preprocess_data.py --append-eod`` writes it, and any other token with its id (a document whose text holds
   ``<|endoftext|>``, tokenized as the special token, is cut there too). The EOD id is the scan's ``--eos-id``
   (``MegatronOptions.eod_id``), else the one the corpus's EOS check finds the documents ending with, and
   ``PREFIX.bin`` is read once for its EOD tokens (O(tokens), at the disk's speed; the replay itself reads the index
   only). With neither, Megatron's id is not known here: no cut is replayed, and the row says so.
5. A blend (``--data-path W1 P1 W2 P2``) normalises the weights, builds each prefix's dataset for
   ``ceil(ceil(N·w)·1.005)`` samples (N = ``--train-samples``), and takes the first N samples of the blend,
   each from the prefix whose count lags its weight most (megatron-core's ``build_blending_indices``).

From a length histogram alone there is no order to replay: ``pack`` (with ``reset_attention_mask``) or
``concat`` (without) is computed instead, and the result says which (``Segments.approximation``).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np

from freqlab.errors import FreqlabError, brief
from freqlab.frequency.kernels import blending_counts, megatron_walk
from freqlab.frequency.regimes import Segments, segments
from freqlab.resources import doing, require_memory

DEFAULT_SEED = 1234  # Megatron-LM's --seed default
DEFAULT_SPLIT = "969,30,1"  # Megatron-LM's --split default
SURPLUS = 0.005  # megatron-core's mid_level_dataset_surplus default
FINAL_EPOCH_THRESHOLD = 0.80  # below this share of an epoch, the last epoch is shuffled on its own


@dataclass(frozen=True)
class MegatronOptions:
    """What a Megatron-LM run sets that decides its windows (the window L is ``--seq-length``).

    ``data_path``: Megatron's ``--data-path`` as given (``"PREFIX"`` or ``"W1 P1 W2 P2 ..."``; a prefix may
    also be written with ``.idx``); empty: the scanned ``index`` (its path as it is: a data_path's words are split,
    so a path with a space could not be named there; a review), else no index, and the regime is approximated from
    the histogram. ``epochs`` or ``train_samples`` (not both) say how much is trained; neither: one epoch.
    """

    data_path: str = ""
    seed: int = DEFAULT_SEED
    split: str = DEFAULT_SPLIT
    reset_attention_mask: bool = False
    train_samples: int | None = None
    epochs: int | None = None
    #: Megatron's ``tokenizer.eod``, after which its reset mask cuts (a scan's ``--eos-id``); None: the token the
    #: index's documents end with (the EOS check), if they end with one
    eod_id: int | None = None
    index: str = ""  # the one .idx scanned, replayed when data_path is empty (with_data_path)

    def __post_init__(self) -> None:
        if self.train_samples is not None and self.epochs is not None:
            raise FreqlabError("give train_samples or epochs for the megatron regime, not both")
        for name in ("train_samples", "epochs"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
                raise FreqlabError(f"{name} must be a positive integer, got {value!r}")
        if not 0 <= int(self.seed) < 2**32:
            raise FreqlabError(f"the Megatron seed must be in [0, 2^32), got {self.seed}")
        if self.eod_id is not None and (
            isinstance(self.eod_id, bool) or int(self.eod_id) != self.eod_id or self.eod_id < 0
        ):
            raise FreqlabError(f"the EOD id must be a token id (an integer >= 0), got {self.eod_id!r}")
        split_vector(self.split)
        if self.data_path and not self.data_path.strip():
            raise FreqlabError("data_path (--data-path) names no index: leave it empty to read the scanned one")
        self.blend()

    def blend(self) -> list[tuple[float | None, str]]:
        """``(weight, prefix)`` pairs of ``data_path`` (weight None when the prefixes are not weighted)."""
        words = self.data_path.split()
        if not words:
            return [(None, _prefix(self.index))] if self.index else []
        if len(words) % 2 == 0 and all(_is_number(w) for w in words[::2]):
            pairs = [(float(w), _prefix(p)) for w, p in zip(words[::2], words[1::2])]
            for word, (w, _) in zip(words[::2], pairs):
                if not 0 < w < math.inf:
                    raise FreqlabError(
                        f"data_path (--data-path) weights must be positive finite numbers, got {brief(word)}"
                    )
            return list(pairs)  # list[tuple[float | None, str]], as the weightless branch
        if any(_is_number(w) for w in words):
            raise FreqlabError(f"data_path is 'PREFIX' or 'W1 PREFIX1 W2 PREFIX2 ...', got {self.data_path!r}")
        return [(None, _prefix(w)) for w in words]

    def check_indexes(self) -> None:
        """Refuse a ``data_path`` naming an index that is missing or unreadable, or without its ``.bin`` (each
        index's header and the ``.bin``'s size are read; a scan checks before it counts).
        """
        from freqlab.corpus.megatron import read_index

        for _, prefix in self.blend():
            if not os.path.isfile(prefix + ".idx"):
                raise FreqlabError(f"{prefix}.idx: no such Megatron index (data_path names prefixes of .idx/.bin)")
            read_index(prefix + ".idx")

    def describe(self) -> dict:
        """The options that are set, by name."""
        return {k: v for k, v in vars(self).items() if v is not None}

    def with_data_path(self, paths: list[str]) -> MegatronOptions:
        """These options, reading the scanned index (``index``) when ``data_path`` is empty and one ``.idx`` was
        scanned.
        """
        if self.data_path or len(paths) != 1 or not paths[0].endswith(".idx"):
            return self
        from dataclasses import replace

        return replace(self, index=paths[0])


def _is_number(word: str) -> bool:
    """Whether Megatron's ``float(w)`` reads ``word`` as a weight (signs, ``1.``, ``1_0``, nan and inf included; then
    refused as no positive weight: a review, ``-1 single`` looked for ``-1.idx``).
    """
    try:
        float(word)
    except ValueError:
        return False
    return True


def _prefix(path: str) -> str:
    for suffix in (".idx", ".bin"):
        if path.endswith(suffix):
            return path[: -len(suffix)]
    return path


def split_vector(split: str) -> list[float]:
    """megatron-core's ``parse_and_normalize_split``: the numbers of ``split``, padded to 3, normalised."""
    words = re.findall(r"[.0-9]+", split)
    usage = f"split (--megatron-split) must be up to three non-negative weights like 969,30,1, got {brief(split)}"
    if any(len(word) > 30 or not re.fullmatch(r"[0-9]+\.?[0-9]*|\.[0-9]+", word) for word in words):
        raise FreqlabError(usage)
    # megatron-core reads the digits only: "-1" would be 1, "1e3" 1 and 3 (a sign before a number, an exponent after
    # one; "969-30-1" and "train=969,valid=30,test=1" are separators it reads right)
    if re.search(r"(?:^|[^0-9.])[-+][0-9.]|[0-9.][eE][-+]?[0-9]", split):
        raise FreqlabError(f"{usage} (megatron-core reads only digits and dots: signs and exponents would be dropped)")
    values = [float(x) for x in words]
    if not values or len(values) > 3:
        raise FreqlabError(usage)
    if sum(values) <= 0:
        raise FreqlabError(f"{usage}: its weights sum to 0, which splits nothing")
    values += [0.0] * (3 - len(values))
    total = float(np.sum(np.array(values, np.float64)))
    return (np.array(values, np.float64) / total).tolist()


def train_range(split: str, sequences: int) -> tuple[int, int]:
    """The train split's sequences ``[begin, end)``: ``round(a·S)``, ``round(b·S)`` as megatron-core cuts."""
    first = split_vector(split)[0]
    # convert_split_vector_to_split_matrix: bookends 0 .. first; Python's round, as megatron-core uses
    return round(0.0 * float(sequences)), round(first * float(sequences))


def _epochs(tokens: int, samples: int | None, L: int) -> int:
    """GPTDataset._get_num_epochs: the least E with E·T >= samples·L + 1 (1 without samples)."""
    if samples is None:
        return 1
    return max(1, -(-(samples * L + 1) // tokens))


def _no_sample(tokens: int, L: int, epochs: int) -> str:
    """Why a replay draws no sample: ``epochs`` of ``tokens`` make no window of L + 1 tokens ((E·T − 1) // L = 0)."""
    taken = "one epoch of it makes" if epochs == 1 else f"{epochs} epochs of it make"
    return (
        f"the train split holds {tokens:,} tokens: {taken} no sample of L + 1 = {L + 1:,} tokens "
        f"((E·T − 1) // L = 0); {-(-(L + 1) // tokens)} epochs make one (--epochs, --train-samples), or give a "
        "smaller --L"
    )


def _shuffled(values: np.ndarray, random_state: np.random.RandomState) -> np.ndarray:
    random_state.shuffle(values)
    return values


@dataclass(frozen=True)
class MegatronDataset:
    """One prefix's train split as GPTDataset builds it for ``samples`` samples of L + 1 tokens."""

    sequence_order: np.ndarray  # int32 sequence ids in stream order (all epochs)
    windows: int  # samples built: (E·T - 1) // L
    shuffle: np.ndarray  # the sample order the trainer reads

    @classmethod
    def build(cls, lengths: np.ndarray, begin: int, end: int, L: int, samples: int | None, seed: int):
        """Replay Megatron's sample index for documents ``begin .. end - 1`` at sequence length ``L``."""
        indices = np.arange(begin, end, dtype=np.int32)
        tokens = int(np.sum(lengths[begin:end], dtype=np.int64))
        if tokens <= 1:
            raise FreqlabError(f"the train split holds {tokens} tokens: too few for windows of {L}")
        epochs = _epochs(tokens, samples, L)
        separate = False
        if epochs > 1 and samples is not None:  # epochs > 1 only with samples (_epochs)
            sans_final = ((epochs - 1) * tokens - 1) // L
            per_epoch = (tokens - 1) // L
            separate = samples - sans_final < int(FINAL_EPOCH_THRESHOLD * per_epoch)
        random_state = np.random.RandomState(seed)
        if separate:
            order = np.concatenate(
                [
                    _shuffled(np.tile(indices, epochs - 1), random_state),
                    _shuffled(indices.copy(), random_state),
                ]
            )
        else:
            order = _shuffled(np.tile(indices, epochs), random_state)
        windows = (epochs * tokens - 1) // L
        if windows == 0:  # a review: "the histogram holds no documents" was said of a replay that drew no sample
            raise FreqlabError(_no_sample(tokens, L, 1))
        dtype = np.uint32 if windows < np.iinfo(np.uint32).max - 1 else np.int64
        first = sans_final if separate else windows
        shuffle = _shuffled(np.arange(first, dtype=dtype), random_state)
        if first < windows:
            shuffle = np.concatenate([shuffle, _shuffled(np.arange(first, windows, dtype=dtype), random_state)])
        return cls(order, windows, shuffle)

    def consumed(self, taken: int | None) -> np.ndarray:
        """Which windows the trainer reads when it takes the first ``taken`` samples (all: empty mask)."""
        if taken is None or taken >= self.windows:
            return np.zeros(0, bool)
        mask = np.zeros(self.windows, bool)
        mask[self.shuffle[:taken].astype(np.int64)] = True
        return mask


def blend_counts(weights: list[float], samples: int) -> list[int]:
    """How many of the first ``samples`` samples of a blend each dataset gives (megatron-core's greedy
    ``build_blending_indices``: each sample from the dataset whose count lags ``weight · max(k, 1)`` most).

    >>> blend_counts([0.25, 0.75], 8)
    [2, 6]
    """
    return blending_counts(np.array(weights, np.float64), samples).tolist()


def normalize(weights: list[float]) -> list[float]:
    """megatron-core's ``normalize``: ``w / sum(w)`` in float64."""
    w = np.array(weights, np.float64)
    return (w / np.sum(w)).tolist()


def megatron_segments(
    L: int, options: MegatronOptions | None, *, histogram=None, seed: int = 0, eod: int | bool | None = None
):
    """Segments of the ``megatron`` regime at window (``--seq-length``) L: exact from ``options.data_path``,
    else an approximation from ``histogram`` (``pack`` with ``reset_attention_mask``, else ``concat``).

    ``eod``: the EOD token id (None or True: the one the indexes' EOS check finds documents ending with; False: no
    EOD, nothing to reset at).
    """
    options = options or MegatronOptions()
    blend = options.blend()
    if not blend:
        if histogram is None:
            raise FreqlabError("the megatron regime needs data_path (Megatron's --data-path) or a histogram")
        proxy = "pack" if options.reset_attention_mask else "concat"
        lengths, counts = histogram
        approx = segments(lengths, counts, L, proxy, seed=seed)
        return Segments(approx.lengths, approx.counts, L, "megatron", approximation=proxy)
    counts, unmasked = megatron_counts(L, options, blend, options.eod_id if eod is None else eod)
    nonzero = np.flatnonzero(counts)
    note = None
    if unmasked:  # a mask asked for that cuts nothing is said (a review: it was silent)
        note = (
            f"--reset-attention-mask cuts nothing in {', '.join(unmasked)}: its documents end with no common "
            "token and no --eos-id was given, so Megatron's EOD id is not known here (whole windows counted)"
        )
    return Segments(nonzero.astype(np.int64), counts[nonzero], L, "megatron", note=note)


def megatron_counts(L: int, options: MegatronOptions, blend, eod: int | bool | None) -> tuple[np.ndarray, list[str]]:
    """Exact segment-length counts (index l: segments of l tokens) of the windows the trainer reads, and the
    prefixes whose reset mask, asked for, cuts nothing (no EOD id known for them).
    """
    from freqlab.corpus.megatron import read_index

    if L < 2:
        raise FreqlabError("Megatron's seq_length must be at least 2")
    samples = options.train_samples
    weights = [w for w, _ in blend]
    blended = len(blend) > 1 or weights[0] is not None
    if blended:
        if samples is None:
            raise FreqlabError("a weighted or multi-prefix data_path needs train_samples (Megatron's --train-samples)")
        if weights[0] is None:
            raise FreqlabError(  # megatron-core weights them by their sample counts: a blend not replayed here
                "several prefixes without weights (megatron-core then weights each by its number of samples) are not "
                "replayed; give the weights: data_path 'W1 P1 W2 P2'"
            )
        normalised = normalize(weights)
        built: list[int | None] = [math.ceil(math.ceil(samples * w) * (1 + SURPLUS)) for w in normalised]
    else:
        built = [samples]
    prefixes = []  # every index opened and every replay sized before the blend's O(samples) walk
    options.check_indexes()
    for (_, prefix), build in zip(blend, built):
        index = read_index(prefix + ".idx")
        lengths = np.asarray(index.sequence_lengths)
        begin, end = train_range(options.split, index.sequences)
        if options.epochs is not None:  # all samples of that many epochs
            tokens = int(np.sum(lengths[begin:end], dtype=np.int64))
            build = (options.epochs * tokens - 1) // L
            if build == 0 and tokens > 1:  # said with the epochs given (an adversary's review: "one epoch" was said)
                raise FreqlabError(_no_sample(tokens, L, options.epochs))
        _require_memory(options, lengths, begin, end, L, build, reset=options.reset_attention_mask)
        prefixes.append((index, lengths, begin, end, build))
    if blended:
        # BlendedDataset normalises them again; samples is an int here (checked when blended, above)
        taken: list[int | None] = list(blend_counts(normalize(normalised), samples))  # type: ignore[arg-type]
    else:  # one prefix: the samples asked for, or all of --epochs
        taken = [prefixes[0][4] if options.epochs is not None else samples]
    counts, unmasked = np.zeros(L + 1, np.int64), []
    for (index, lengths, begin, end, build), take in zip(prefixes, taken):
        with doing(f"replaying Megatron's samples of {index.prefix}"):
            eod_id = _eod_id(index, eod) if options.reset_attention_mask else None
            if options.reset_attention_mask and eod_id is None:
                unmasked.append(index.prefix)
            counts += _replay(index, lengths, begin, end, L, build, take, options, eod_id)
    return counts, unmasked


def _replay(
    index, lengths, begin: int, end: int, L: int, build, take, options: MegatronOptions, eod_id: int | None
) -> np.ndarray:
    """Segment-length counts of one prefix's train split: the windows its shuffled stream gives the trainer, cut
    after each ``eod_id`` token (None: whole windows).
    """
    dataset = MegatronDataset.build(lengths, begin, end, L, build, options.seed)
    consumed = dataset.consumed(take)
    used = dataset.windows if consumed.size == 0 else int(np.count_nonzero(consumed))
    counts = np.zeros(L + 1, np.int64)
    if eod_id is None:
        counts[L] = used
        return counts
    from freqlab.corpus.base import FileChanged, changed_while_read

    try:
        with doing(f"reading {index.bin_path} for its EOD tokens (id {eod_id})"):
            cut_starts, cut_offsets = eod_cuts(index, eod_id)
    except FileChanged as exc:
        raise changed_while_read(exc) from exc
    order = dataset.sequence_order
    return megatron_walk(order, np.asarray(lengths, np.int64), cut_starts, cut_offsets, L, dataset.windows, consumed)


def eod_cuts(index, eod_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Where Megatron's reset mask cuts within each sequence: the offsets of the tokens equal to ``eod_id`` (it cuts
    after each), as ``(starts, offsets)``: sequence j's are ``offsets[starts[j]:starts[j + 1]]``, ascending.

    Two passes over the ``.bin`` (read a chunk at a time, ``index.token_chunks()``): the first counts the EOD
    tokens, so that their offsets (int32: a sequence holds at most 2^31 - 1 tokens) are sized before they are kept
    (a common token taken for the EOD, 5% of 10^10 tokens, would otherwise fill memory unchecked; a review).

    >>> from types import SimpleNamespace
    >>> index = SimpleNamespace(token_chunks=lambda: iter([(0, np.array([5, 2, 7, 2])), (4, np.array([2, 9]))]),
    ...                         sequence_pointers=np.array([0, 8, 20]), sequence_lengths=np.array([2, 3, 1]),
    ...                         dtype=np.dtype(np.int32), bin_path="x.bin")
    >>> starts, offsets = eod_cuts(index, 2)  # sequences [5 2] [7 2 2] [9], read in chunks of 4 tokens
    >>> starts.tolist(), offsets.tolist()
    ([0, 1, 3, 3], [1, 1, 2])
    """
    from freqlab.corpus.base import FileChanged

    itemsize = index.dtype.itemsize
    pointers = np.asarray(index.sequence_pointers, np.int64)
    sizes = np.asarray(index.sequence_lengths, np.int64)
    # sequences lie back to back, as Megatron writes them, in bytes: a pointer elsewhere would move cuts between
    # sequences without a word (a review; opening the index checks the first 1,024 pointers and the last)
    apart = np.flatnonzero(pointers[1:] != pointers[:-1] + sizes[:-1] * itemsize)
    if pointers.size and (pointers[0] % itemsize or apart.size):
        j = int(apart[0]) + 1 if pointers[0] % itemsize == 0 else 0
        where = f"where sequence {j - 1:,} ends" if j else f"at a whole number of {index.dtype.name} tokens"
        raise FreqlabError(
            f"{index.bin_path}: sequence {j:,} starts at byte {int(pointers[j]):,}, not {where}: the index's "
            "pointers are corrupt"
        )
    first = pointers // itemsize
    found = sum(int(np.count_nonzero(chunk == eod_id)) for _, chunk in index.token_chunks())
    seen = 0  # EOD tokens of the second pass: a .bin rewritten between the two finds another number (a review)
    require_memory(4 * found, f"the EOD id {eod_id}", f"{found:,} tokens of {index.bin_path} equal to it, 4 bytes each")
    offsets = np.empty(found, np.int32)
    starts = np.full(sizes.size + 1, -1, np.int64)  # filled from the sequences that begin in each chunk
    kept = 0
    for a, chunk in index.token_chunks():
        at = np.flatnonzero(chunk == eod_id) + a
        seen += at.size
        if seen > found:
            raise FileChanged(f"more tokens equal to {eod_id} than the first pass counted", index.bin_path)
        sequence = np.searchsorted(first, at, side="right") - 1  # an empty sequence shares the next one's start
        begins = slice(np.searchsorted(first, a, side="left"), np.searchsorted(first, a + chunk.size, side="left"))
        owner = np.maximum(sequence, 0)
        inside = (sequence >= 0) & (at - first[owner] < sizes[owner])
        at, sequence = at[inside], sequence[inside]
        # sequence j's cuts start at the count of the EOD tokens before its first token
        starts[begins] = kept + np.searchsorted(at, first[begins], side="left")
        offsets[kept : kept + at.size] = at - first[sequence]
        kept += at.size
    if seen != found:
        raise FileChanged(f"fewer tokens equal to {eod_id} than the first pass counted", index.bin_path)
    starts[starts < 0] = kept  # sequences that begin past the last token (empty ones at the end)
    return starts, offsets[:kept]


def _require_memory(
    options: MegatronOptions, lengths, begin: int, end: int, L: int, samples: int | None, *, reset: bool
) -> None:
    """Refuse, naming ``--epochs`` or ``--train-samples``, a replay whose arrays exceed the memory available: the
    stream of E epochs' sequence ids (int32, and a copy when the last epoch is shuffled alone), the sample order
    (uint32 or int64, and a copy) and the mask of the samples taken; with ``--reset-attention-mask`` also the
    sequences' first tokens, lengths and cut bounds (int64 each); the EOD tokens' offsets (int32) are sized when
    counted (:func:`eod_cuts`).
    """
    tokens = int(np.sum(lengths[begin:end], dtype=np.int64))
    if tokens <= 1:
        return  # MegatronDataset.build says why
    epochs = _epochs(tokens, samples, L)
    stream = epochs * (end - begin)
    windows = (epochs * tokens - 1) // L
    sequences = lengths.size if reset else 0
    needed = stream * 8 + sequences * 4 * 8 + windows * (2 * (4 if windows < 2**32 - 1 else 8) + 1)
    option = (
        f"--epochs {options.epochs:,}"
        if options.epochs is not None
        else (f"--train-samples {options.train_samples:,}" if samples is not None else "one epoch of the train split")
    )
    require_memory(
        needed,
        option,
        f"the Megatron replay of {epochs:,} epochs of {end - begin:,} sequences, {windows:,} samples of {L:,} tokens",
    )


def _eod_id(index, eod: int | bool | None) -> int | None:
    """The EOD id the reset mask cuts at: ``eod`` when given as an id, else the token the EOS check of the index's
    documents finds them ending with (None: none, or ``eod`` False).
    """
    if eod is False:
        return None
    if eod is not None and eod is not True:
        return int(eod)
    from freqlab.corpus.base import FileChanged, changed_while_read
    from freqlab.corpus.token_files import EOS_CHECKED, EosCheck

    check = EosCheck()
    try:
        check.add(index.last_tokens(EOS_CHECKED))
    except FreqlabError:
        raise
    except FileChanged as exc:
        raise changed_while_read(exc) from exc
    except ValueError as exc:  # a corrupt index among the first documents
        raise FreqlabError(f"{index.prefix}.idx: {exc}") from None
    described = check.describe()["eos"]
    return int(described["eos_id"]) if described["appended"] else None


def replay_options(
    hist: str,
    h,
    options: MegatronOptions | None = None,
    *,
    weighted: bool = False,
    how: str = "give --data-path PREFIX (Megatron's --data-path), or --regime concat for what it approximates",
) -> MegatronOptions:
    """The :class:`MegatronOptions` with which ``--regime megatron`` replays the length histogram ``h`` (read from
    the file ``hist``): ``options`` (Megatron's settings; None: its defaults) when they name a ``data_path``, else
    with the index the histogram was scanned from (``meta["megatron_index"]``, and the EOD id the scan was given,
    ``meta["megatron_eod"]``), when it is there and still holds
    the histogram's documents; else FreqlabError saying what to give (``how``): a length histogram alone has no
    order to replay.
    """
    from freqlab.corpus.megatron import read_index

    options = options or MegatronOptions()
    if options.data_path:
        return _with_scanned_eod(options, h)
    if weighted:
        raise FreqlabError(f"--regime megatron replays an index, not a weighted mix; {how}")
    index = h.meta.get("megatron_index")
    if not index:
        raise FreqlabError(
            f"{hist}: --regime megatron replays Megatron's windows from its .idx, and this histogram names none "
            f"(it was not scanned whole from one Megatron index); {how}"
        )
    if not os.path.isfile(index):
        raise FreqlabError(
            f"{hist}: --regime megatron replays {index}, the index it was scanned from, which is gone; {how}"
        )
    opened = read_index(index)
    documents = opened.documents
    if documents != h.documents_read:
        raise FreqlabError(
            f"{hist}: {index} now holds {documents:,} documents, the histogram {h.documents_read:,}: "
            f"the index changed since the scan; rescan it, or {how}"
        )
    # the lengths too (a review: sizes 9, 20 rewritten as 10, 19 passed, and the replay's EOD check then dropped the
    # reset mask without a word): O(documents), as the replay's own read of the index; a scan that skipped documents
    # holds fewer lengths than its index
    lengths = opened.document_lengths(0, documents)
    values, counts = np.unique(lengths[lengths > 0], return_counts=True)
    if not h.skipped and not (np.array_equal(values, h.lengths) and np.array_equal(counts, h.counts)):
        raise FreqlabError(
            f"{hist}: {index} holds documents of other lengths than the histogram (its {documents:,} documents, "
            f"{int(lengths.sum()):,} tokens; the histogram's {h.tokens:,}): the index changed since the scan; "
            f"rescan it, or {how}"
        )
    return _with_scanned_eod(options.with_data_path([index]), h)


def _with_scanned_eod(options: MegatronOptions, h) -> MegatronOptions:
    """``options`` with the EOD id the scan of ``h`` was given (``--eos-id``, ``meta["megatron_eod"]``), which the reset
    mask cuts at, when they name none and replay the index that scan read (a review: ``--data-path`` naming it lost
    the id, and the mask with mixed endings).
    """
    eod, index = h.meta.get("megatron_eod"), h.meta.get("megatron_index")
    if options.eod_id is not None or not isinstance(eod, int) or isinstance(eod, bool) or not index:
        return options
    scanned = os.path.abspath(_prefix(index))
    prefixes = {os.path.abspath(prefix) for _, prefix in options.blend()}
    if scanned not in prefixes:
        return options
    from dataclasses import replace

    return replace(options, eod_id=eod)
