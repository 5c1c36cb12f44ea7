"""Write the Megatron fixtures of the tests with megatron-core itself, and what its GPTDataset trains on.

Run with megatron-core installed (it needs torch; the CPU build is enough, no GPU):
``pip install torch megatron-core && python tests/data/megatron/make_reference.py``. It writes, next to itself:

- ``PREFIX.bin`` / ``PREFIX.idx`` with ``IndexedDatasetBuilder`` (documents ending with EOD = 2, as
  ``preprocess_data.py --append-eod`` writes them; ``multi`` has documents of several sequences);
- ``reference.json``: for each configuration, f(i) counted token by token from the attention masks of the
  samples megatron-core's ``GPTDataset`` / ``BlendedDataset`` hand the trainer, and megatron-core's version.

freqlab's tests read these files; they never import megatron-core.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from megatron.core import package_info
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

HERE = Path(__file__).parent
EOD = 2


class Tokenizer:
    """What GPTDatasetConfig needs of a tokenizer."""

    eod = EOD
    pad = 0
    vocab_size = 1000
    unique_identifiers: ClassVar[dict] = {"class": "Tokenizer"}


def write(prefix: str, documents: list[list[list[int]]], dtype) -> None:
    builder = IndexedDatasetBuilder(str(HERE / f"{prefix}.bin"), dtype=dtype)
    for sequences in documents:
        for sequence in sequences:
            builder.add_item(torch.tensor(sequence))
        builder.end_document()
    builder.finalize(str(HERE / f"{prefix}.idx"))


def documents(seed: int, count: int, multi: bool) -> list[list[list[int]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n = int(rng.geometric(1 / 12)) + 1
        tokens = [*rng.integers(3, 1000, n - 1).tolist(), EOD]
        if multi and n > 3 and rng.random() < 0.5:
            cut = int(rng.integers(1, n - 1))
            out.append([tokens[:cut], tokens[cut:]])  # two sequences, the EOD in the last
        else:
            out.append([tokens])
    return out


def frequency(dataset, count: int, L: int) -> list[int]:
    """f(i): (query, key) pairs at distance i that the attention mask lets through, over ``count`` samples."""
    f = np.zeros(L, np.int64)
    for k in range(count):
        masked = dataset[k]["attention_mask"][0].numpy()  # True: masked (causal mask, reset after EODs)
        allowed = ~masked
        for i in range(L):
            f[i] += int(np.trace(allowed, offset=-i))
    return f.tolist()


def build(config: dict, cache: str):
    blend = config["data_path"].split()
    if len(blend) == 1:
        prefixes, weights = [str(HERE / blend[0])], None
    else:
        prefixes, weights = [str(HERE / p) for p in blend[1::2]], [float(w) for w in blend[::2]]
    gpt = GPTDatasetConfig(
        random_seed=config["seed"],
        sequence_length=config["L"],
        blend=(prefixes, weights),
        split=config["split"],
        reset_position_ids=False,
        reset_attention_mask=config["reset_attention_mask"],
        eod_mask_loss=False,
        tokenizer=Tokenizer(),
        path_to_cache=cache,
        create_attention_mask=True,
    )
    samples = config.get("train_samples")
    other = None if weights is None else 1  # a weighted blend needs a size for every split (unused here)
    train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [samples, other, other], lambda: True, gpt).build()
    return train, samples if samples is not None else len(train)


CONFIGS = [
    {"data_path": "single", "L": 16, "seed": 1234, "split": "969,30,1", "reset_attention_mask": True},
    {"data_path": "single", "L": 16, "seed": 1234, "split": "969,30,1", "reset_attention_mask": False},
    {"data_path": "single", "L": 32, "seed": 7, "split": "80,20", "reset_attention_mask": True, "train_samples": 50},
    {"data_path": "single", "L": 24, "seed": 3, "split": "1", "reset_attention_mask": True, "train_samples": 160},
    {
        "data_path": "multi",
        "L": 16,
        "seed": 1234,
        "split": "969,30,1",
        "reset_attention_mask": True,
        "train_samples": 90,
    },
    {"data_path": "multi", "L": 64, "seed": 5, "split": "90,10,0", "reset_attention_mask": True, "train_samples": 21},
    {
        "data_path": "0.3 single 0.7 multi",
        "L": 16,
        "seed": 1234,
        "split": "90,10",
        "reset_attention_mask": True,
        "train_samples": 120,
    },
    {
        "data_path": "2 multi 1 single",
        "L": 20,
        "seed": 11,
        "split": "95,5",
        "reset_attention_mask": False,
        "train_samples": 40,
    },
]


def main() -> None:
    # BlendedDataset asks torch.distributed for its rank: a one-process group on the loopback
    torch.distributed.init_process_group("gloo", init_method="tcp://127.0.0.1:29517", rank=0, world_size=1)
    write("single", documents(0, 120, multi=False), np.int32)
    write("multi", documents(1, 90, multi=True), np.uint16)
    cache = tempfile.mkdtemp()
    rows = []
    try:
        for config in CONFIGS:
            train, count = build(config, cache)
            rows.append({**config, "f": frequency(train, count, config["L"])})
    finally:
        shutil.rmtree(cache)
    out = {"megatron_core": package_info.__version__, "eod": EOD, "configs": rows}
    (HERE / "reference.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
