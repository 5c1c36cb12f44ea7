"""What a scan is, as three values, each validated in full before anything is read.

- :class:`ScanSettings`: what defines the result (the corpus, the tokenizer, sampling and limits). Its
  :meth:`~ScanSettings.fingerprint`, resolved against the opened corpus and tokenizer, is what checkpoints carry:
  a checkpoint made under another fingerprint is never used.
- :class:`RunOptions`: how the scan runs (engine, workers, batch size, output folder, progress). None of them
  changes the histogram (tested: any worker count, batch size and engine give the same one).
- :class:`ReportOptions`: what the summary computes from the histogram (windows, regimes, budget, threshold).

>>> ScanSettings(sample_rate=0.01, seed=3).sample_rate
0.01
>>> ScanSettings(sample_rate=float("nan"))
Traceback (most recent call last):
...
freqlab.errors.FreqlabError: sample_rate must be in (0, 1], got nan
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freqlab.corpus.base import Corpus
from freqlab.errors import FreqlabError
from freqlab.formats import FINGERPRINT_VERSION  # kept for import compatibility (and used here)
from freqlab.frequency.regimes import DEFAULT_REGIMES, REGIMES, check_windows
from freqlab.frequency.stats import DEFAULT_TAU
from freqlab.paths import expand_home

if TYPE_CHECKING:
    from freqlab.tokenization import TokenCounter

ON_ERROR = ("raise", "skip")
ENGINES = ("local", "ray")
DEFAULT_L: tuple[int, ...] = (2048,)  # the window L the report is computed for
DEFAULT_BATCH_SIZE = 256  # documents per tokenizer call
DEFAULT_OUT = "freqlab-out"  # output folder of a scan: lengths.parquet, summary.json, checkpoints
INT64_MAX = (1 << 63) - 1
# what open_corpus reads a corpus with (ScanSettings fields): never given beside an opened corpus
READER_OPTIONS = (
    "data_files",
    "config",
    "split",
    "text_field",
    "source_field",
    "format",
    "tokens_field",
    "length_field",
    "eos_id",
)


def check_count(name: str, value: Any, *, minimum: int = 1, optional: bool = True) -> int | None:
    """``value`` as an int in ``[minimum, 2^63)``; a FreqlabError naming ``name`` otherwise (None passes if
    ``optional``).
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or int(value) != value:
        raise FreqlabError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise FreqlabError(f"{name} must be at least {minimum}, got {value}")
    if value > INT64_MAX:
        raise FreqlabError(f"{name} must be below 2^63, got {value}")
    return value


@dataclass(frozen=True)
class ScanSettings:
    """What defines a scan's histogram. See :func:`freqlab.scan.scan` for each field.

    ``on_error`` is here because it decides whether a scan with bad records has a result at all, but it is
    not part of the fingerprint: a checkpoint holding skips is simply recounted under ``"raise"``.

    ``corpus``: a corpus already opened by :func:`freqlab.corpus.open_corpus` (also accepted as ``dataset``); it
    carries its reader options, so none of :data:`READER_OPTIONS` may be given beside it (a TypeError names them).
    """

    dataset: str | None = None
    data_files: tuple[str, ...] | None = None
    config: str | None = None
    split: str = "train"
    text_field: str | None = None
    source_field: str | None = None
    format: str | None = None
    tokens_field: str | None = None
    length_field: str | None = None
    eos_id: int | None = None
    tokenizer: Any = None  # a built-in name, path or hub id, or a loaded TokenCounter
    add_special_tokens: bool = False
    sample_rate: float | None = None
    seed: int = 0
    max_docs: int | None = None
    max_tokens: int | None = None
    on_error: str = "raise"
    corpus: Corpus | None = None  # an opened corpus (open_corpus): then no reader option is given here

    if TYPE_CHECKING:  # what the constructor accepts: wider than the fields, which __post_init__ normalises

        def __init__(
            self,
            dataset: str | os.PathLike[str] | Sequence[str] | Corpus | None = None,
            data_files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
            config: str | None = None,
            split: str = "train",
            text_field: str | None = None,
            source_field: str | None = None,
            format: str | None = None,
            tokens_field: str | None = None,
            length_field: str | None = None,
            eos_id: int | None = None,
            tokenizer: Any = None,
            add_special_tokens: bool = False,
            sample_rate: float | None = None,
            seed: int = 0,
            max_docs: int | None = None,
            max_tokens: int | None = None,
            on_error: str = "raise",
            corpus: Corpus | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        if isinstance(self.dataset, Corpus):  # scan(open_corpus(...), ...)
            if self.corpus is not None:
                raise TypeError("give the opened corpus once: as dataset or as corpus, not both")
            object.__setattr__(self, "corpus", self.dataset)
            object.__setattr__(self, "dataset", None)
        if self.corpus is not None:
            if self.dataset is not None:
                raise TypeError("give either dataset or an opened corpus, not both")
            given = [f.name for f in fields(self) if f.name in READER_OPTIONS and getattr(self, f.name) != f.default]
            if given:
                raise TypeError(
                    f"{', '.join(given)}: reader options go to open_corpus(...), not beside an opened corpus"
                )
        if self.dataset is not None and not isinstance(self.dataset, (str, os.PathLike)):  # a list of local paths
            if isinstance(self.dataset, (bytes, Mapping)) or not isinstance(self.dataset, Iterable):
                raise TypeError(
                    f"dataset is a name, a path, a list of paths or an opened corpus, not {type(self.dataset).__name__}"
                )
            if self.data_files is not None:
                raise FreqlabError("give local files either as dataset (a list of paths) or as data_files, not both")
            object.__setattr__(self, "data_files", tuple(self.dataset))
            object.__setattr__(self, "dataset", None)
        if self.dataset is not None:
            object.__setattr__(self, "dataset", os.fspath(self.dataset))
        if self.data_files is not None:
            files = [self.data_files] if isinstance(self.data_files, (str, os.PathLike)) else self.data_files
            object.__setattr__(self, "data_files", tuple(os.fspath(f) for f in files))
        rate = self.sample_rate
        if rate is not None:
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 < float(rate) <= 1.0:
                raise FreqlabError(f"sample_rate must be in (0, 1], got {rate!r}")
            object.__setattr__(self, "sample_rate", None if float(rate) >= 1.0 else float(rate))
        object.__setattr__(self, "seed", check_count("seed", self.seed, minimum=0, optional=False))
        check_count("eos_id", self.eos_id, minimum=0)
        for name in ("text_field", "source_field", "tokens_field", "length_field"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} is a field name (a dotted path for a nested one), not {value!r}")
        if self.tokens_field and self.length_field:
            raise FreqlabError("give tokens_field or length_field, not both")
        check_count("max_docs", self.max_docs)
        check_count("max_tokens", self.max_tokens)
        if self.on_error not in ON_ERROR:
            raise FreqlabError(f"on_error must be one of {', '.join(ON_ERROR)}, got {self.on_error!r}")
        if self.format is not None:  # an unknown --format is a bad parameter, refused before any file is opened
            from freqlab.corpus.registry import get_format

            get_format(self.format)

    @property
    def limited(self) -> bool:
        """Whether the scan stops at a document or token limit."""
        return self.max_docs is not None or self.max_tokens is not None

    def open_corpus(self) -> Corpus:
        """The corpus these settings name (see :func:`freqlab.corpus.open_corpus`), or the opened one given."""
        if self.corpus is not None:
            return self.corpus
        from freqlab.corpus import open_corpus

        return open_corpus(
            self.dataset,
            data_files=list(self.data_files) if self.data_files is not None else None,
            config=self.config,
            split=self.split,
            text_field=self.text_field,
            source_field=self.source_field,
            format=self.format,
            read=self.read_options,
        )

    @property
    def read_options(self):
        """How tokenized data is read (:class:`freqlab.corpus.fields.ReadOptions`)."""
        from freqlab.corpus.fields import ReadOptions

        return ReadOptions(self.tokens_field, self.length_field, self.eos_id)

    def fingerprint(self, corpus: Corpus, counter: TokenCounter | None) -> dict[str, Any]:
        """What a checkpoint must have been made under: the corpus (its shards by id, how it was read), the
        tokenizer (its vocabulary and every rule of its reference implementation, not its name or backend:
        backends are exact), special tokens, sampling and limits. The same whether the corpus was named here or
        opened first (``corpus``).
        """
        ids = [shard.id for shard in corpus.shards]
        read = corpus.read_options
        return {
            "version": FINGERPRINT_VERSION,
            "corpus": corpus.name,
            "corpus_description": corpus.description,
            "shards": {"count": len(ids), "ids_hash": _digest("\n".join(ids))},
            "tokenizer_vocab_hash": counter.vocab_hash if counter is not None else None,
            "tokenizer_rules_hash": counter.rules_hash if counter is not None else None,
            "special_tokens_counted": bool(counter.add_special_tokens) if counter is not None else None,
            "sample_rate": self.sample_rate,
            "seed": self.seed if self.sample_rate is not None else None,
            "max_docs": self.max_docs,
            "max_tokens": self.max_tokens,
            # only when set, so checkpoints of text corpora made before these options existed stay valid
            **({"read_options": read.describe()} if read is not None and not read.is_default else {}),
        }

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON-ready data."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class RunOptions:
    """How a scan runs; none of these changes the histogram."""

    engine: str = "local"
    workers: int | None = None
    address: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    out: Path | None = None
    resume: bool = False
    progress: bool | None = None

    if TYPE_CHECKING:  # the constructor takes any path as ``out`` (a Path once made)

        def __init__(
            self,
            engine: str = "local",
            workers: int | None = None,
            address: str | None = None,
            batch_size: int = DEFAULT_BATCH_SIZE,
            out: str | os.PathLike[str] | None = None,
            resume: bool = False,
            progress: bool | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        check_count("workers", self.workers)
        check_count("batch_size", self.batch_size, optional=False)
        if self.engine not in ENGINES:
            raise FreqlabError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.address and self.engine != "ray":
            raise FreqlabError("address is for the Ray engine: add engine='ray' (--engine ray)")
        if self.out is not None:
            # ~ expanded, as for the corpus's paths (a quoted '~/x' or --out=~/x reaches us unexpanded)
            object.__setattr__(self, "out", Path(expand_home(self.out)))
        if self.resume and self.out is None:
            raise FreqlabError("resume needs an output folder (out) holding the checkpoints")


@dataclass(frozen=True)
class ReportOptions:
    """What the summary computes: windows ``L``, ``regimes``, the budget (``tokens`` training tokens,
    ``corpus_tokens`` to extrapolate a partial scan), the threshold ``tau`` (STRING Sec. 3), and ``megatron``
    (:class:`~freqlab.frequency.megatron_replay.MegatronOptions`) for the ``megatron`` regime.
    """

    L: tuple[int, ...] = DEFAULT_L
    regimes: tuple[str, ...] = DEFAULT_REGIMES
    tokens: int | None = None
    corpus_tokens: int | None = None
    tau: float = DEFAULT_TAU
    megatron: Any = None  # MegatronOptions of the megatron regime (freqlab.frequency.megatron_replay)

    if TYPE_CHECKING:  # the constructor takes one window or regime, or any sequence (tuples once made)

        def __init__(
            self,
            L: int | Sequence[int] = DEFAULT_L,
            regimes: str | Sequence[str] = DEFAULT_REGIMES,
            tokens: int | None = None,
            corpus_tokens: int | None = None,
            tau: float = DEFAULT_TAU,
            megatron: Any = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        object.__setattr__(self, "L", tuple(dict.fromkeys(check_windows(self.L))))  # --L 4096 --L 4K: one
        regimes = (self.regimes,) if isinstance(self.regimes, str) else tuple(self.regimes)
        unknown = [r for r in regimes if r not in REGIMES]
        if unknown:
            raise FreqlabError(f"unknown regime {unknown[0]!r}; choose from {', '.join(REGIMES)}")
        object.__setattr__(self, "regimes", tuple(dict.fromkeys(regimes)))
        if self.megatron is not None and "megatron" in self.regimes:
            self.megatron.check_indexes()  # before the scan, not after it
        check_count("tokens", self.tokens)
        check_count("corpus_tokens", self.corpus_tokens)
        tau = self.tau
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 < tau < 2**63:  # nan, inf fail too
            shown = str(tau) if len(str(tau)) < 24 else f"a number of {len(str(tau))} digits"
            raise FreqlabError(f"tau must be a positive number below 2^63, got {shown}")


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "backslashreplace"), digest_size=16).hexdigest()
