"""Every file format freqlab writes, with its version, in one place (tests/test_formats.py writes each one through
the code that writes it and checks it against what is defined here).

Parquet files carry a JSON header under the Parquet key-value metadata key :data:`METADATA_KEY` (``freqlab``),
whose ``format`` and ``version`` say what the file is; a reader refuses another format, and a version it does not
know. A version is bumped when a file of the previous one can no longer be read as it was meant.

- ``OUT/lengths.parquet`` (:data:`LENGTHS`, ``freqlab.length_histogram`` version 1): a length histogram,
  written by ``LengthHistogram.to_parquet`` (``freqlab scan``);
- ``OUT/summary.json`` (:data:`SUMMARY_KEYS`; JSON, no version of its own): the scan's summary;
- ``freqlab freq --out`` (:data:`FREQUENCY`, ``freqlab.position_frequency`` version 1): f(i) per (L, regime);
- ``freqlab plan string --usage-out`` (:data:`USAGE`, ``freqlab.string_usage`` version 1): pairs per position;
- ``freqlab calibrate --out`` (:data:`CALIBRATION_KEYS`; JSON, ``freqlab-calibration`` version 1): a fitted tau,
  read back by ``--tau-from``;
- ``OUT/checkpoints/*.parquet`` (:data:`CHECKPOINT_COUNTS`, :data:`CHECKPOINT_LOG`, ``freqlab.scan.checkpoint``
  version 2): one per finished shard (or one per group of small shards, :data:`CHECKPOINT_GROUP_HEADER`), and
  ``OUT/checkpoints/manifest.json`` (:data:`MANIFEST_KEYS`) with the settings fingerprint (:data:`FINGERPRINT_KEYS`,
  version :data:`FINGERPRINT_VERSION` = 3) they were made under.

Column types are polars dtype names (``str(frame.schema[column])``); this module imports nothing heavy.

>>> LENGTHS.columns, LENGTHS.optional, LENGTHS.name, LENGTHS.version
({'length': 'Int64', 'count': 'Int64'}, {'source': 'String'}, 'freqlab.length_histogram', 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The Parquet key-value metadata key holding a file's JSON header.
METADATA_KEY = "freqlab"


@dataclass(frozen=True)
class TableFormat:
    """A Parquet table freqlab writes: its ``format`` name and ``version`` (None: a plain table without a header),
    the columns always there and the ones only sometimes there (name -> polars dtype), and its header's keys
    (``header`` always there, ``header_optional`` only sometimes).
    """

    name: str | None
    version: int | None
    columns: dict[str, str]
    optional: dict[str, str] = field(default_factory=dict)
    header: tuple[str, ...] = ()
    header_optional: tuple[str, ...] = ()


# lengths.parquet: a length histogram (freqlab.histogram.LengthHistogram)
LENGTHS_FILE = "lengths.parquet"
LENGTHS_FORMAT = "freqlab.length_histogram"
LENGTHS_VERSION = 1
UNLABELLED_SOURCE = "(none)"  # the source of documents without a label in a split histogram
ALL_SOURCES = "(all)"  # the row or curve of every source together beside theirs (no source's label is taken)
LENGTHS = TableFormat(
    LENGTHS_FORMAT,
    LENGTHS_VERSION,
    {"length": "Int64", "count": "Int64"},
    {"source": "String"},  # a histogram split by corpus source: one block of rows per source
    ("format", "version", "corpus", "tokenizer", "documents_read", "skipped", "empty_documents", "meta", "sources"),
)

# freqlab freq --out: f(i) for every (L, regime)
FREQUENCY_FORMAT = "freqlab.position_frequency"
FREQUENCY_VERSION = 1
FREQUENCY = TableFormat(
    FREQUENCY_FORMAT,
    FREQUENCY_VERSION,
    {"L": "Int64", "regime": "String", "position": "Int64", "frequency": "Int64"},
    header=("format", "version", "histogram", "L", "regimes", "seed"),
    header_optional=("mixture", "megatron"),
)

# freqlab plan string --usage-out: per position, the query-key pairs using it before and after STRING (its header
# says what it is, so that --usage-out replaces only a table it wrote)
USAGE_FORMAT = "freqlab.string_usage"
USAGE_VERSION = 1
USAGE = TableFormat(
    USAGE_FORMAT,
    USAGE_VERSION,
    {"position": "Int64", "pairs_before": "Int64", "pairs_after": "Int64"},
    {"trained": "Int64"},  # f(p), when a frequency was given
    ("format", "version", "L", "S", "W"),
)

# freqlab calibrate --out: a fitted tau (JSON; freqlab.frequency.calibrate.Calibration.to_dict), its top-level keys
CALIBRATION_FORMAT = "freqlab-calibration"
CALIBRATION_VERSION = 1
CALIBRATION_KEYS = ("format", "version", "tau", "range", "bootstrap_95", "method", "points")
CALIBRATION_START = b'{\n  "format": "freqlab-calibration",'  # how every calibration freqlab wrote begins

# summary.json: the scan's summary (JSON, no version of its own); its top-level keys
SUMMARY_FILE = "summary.json"
SUMMARY_KEYS = ("corpus", "tokenizer", "documents", "tokens", "lengths", "scan", "budget", "windows", "outputs")
SUMMARY_OPTIONAL_KEYS = ("sources",)

# OUT/figures/ (scan --plot, plot scan): the figures, and the list of those the last run wrote there (JSON), which
# the next run (a scan's results, a plot scan) removes first: no figure of another corpus stays beside new results
FIGURES_DIR = "figures"
FIGURES_WRITTEN = ".written.json"

# OUT/checkpoints/: one Parquet file per finished shard, and the manifest of the scan they belong to
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_MANIFEST = "manifest.json"
MANIFEST_KEYS = ("fingerprint", "hash")
CHECKPOINT_FORMAT = "freqlab.scan.checkpoint"
CHECKPOINT_VERSION = 3  # 3: counted_by (documents per tokenizer backend); 2 is still read (its counted_by unknown)
# "failed": the shard's file failed while read, after these documents (absent in older files: false)
_CHECKPOINT_HEADER = (
    "format", "version", "shard_id", "skipped", "sampled_out", "blank_lines", "counted_by", "complete", "failed",
    "documents_read", "tokens", "fingerprint", "identity", "rows", "checksum",
)  # fmt: skip
#: a group file's header (``OUT/checkpoints/group+<random>.parquet``): ``group`` lists the headers of the partials
#: whose rows follow one another in the file (``rows`` each), every one a :data:`CHECKPOINT_COUNTS` or
#: :data:`CHECKPOINT_LOG` header
CHECKPOINT_GROUP_HEADER = ("format", "version", "group")
#: a shard's counts: (source, length, count), length 0 holding empty documents
CHECKPOINT_COUNTS = TableFormat(
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    {"source": "String", "length": "Int64", "count": "Int64"},
    header=_CHECKPOINT_HEADER,
)
#: a shard's log, kept under document limits: one row per document, in order
CHECKPOINT_LOG = TableFormat(
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    {"source_index": "Int32", "code": "Int64"},
    # position: only when sampled; backend: each document's tokenizer backend, its index in the header's
    # "backends" (-1: no text, -2: not known), so that a scan cut inside it keeps its documents per backend exactly;
    # blank_before: the blank lines just before each document, so that it keeps those before the documents it keeps
    {"position": "Int64", "backend": "Int8", "blank_before": "Int64"},
    header=(*_CHECKPOINT_HEADER, "reasons", "labels"),
    header_optional=("backends",),
)

# the settings fingerprint checkpoints are made under (freqlab.scan.settings.ScanSettings.fingerprint)
FINGERPRINT_VERSION = 3  # bumped when checkpoints of an older freqlab can no longer be trusted
FINGERPRINT_KEYS = (
    "version", "corpus", "corpus_description", "shards", "tokenizer_vocab_hash", "tokenizer_rules_hash",
    "special_tokens_counted", "sample_rate", "seed", "max_docs", "max_tokens",
)  # fmt: skip
FINGERPRINT_OPTIONAL_KEYS = ("read_options",)  # only when set


def fingerprint_hash(fingerprint: dict) -> str:
    """A short hash of a scan's fingerprint (canonical JSON): the ``hash`` of a checkpoint manifest."""
    import hashlib
    import json

    text = json.dumps(fingerprint, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "backslashreplace"), digest_size=16).hexdigest()


def manifest_fingerprint(data: Any) -> dict:
    """The fingerprint a checkpoint manifest's parsed JSON holds; KeyError, TypeError or ValueError when ``data`` is
    no freqlab manifest (no fingerprint, or a ``hash`` that is not the fingerprint's :func:`fingerprint_hash`).
    """
    fingerprint = data["fingerprint"]
    if not isinstance(fingerprint, dict) or data.get("hash") != fingerprint_hash(fingerprint):
        raise ValueError("hash mismatch")
    return fingerprint
