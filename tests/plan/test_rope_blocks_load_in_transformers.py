"""Every RoPE-scaling block freqlab prints loads, as its label promises, in the oldest and the newest transformers.

Marked ``transformers_versions`` (select or skip with ``-m``). The oldest is the floor pyproject allows (4.45): a
session fixture builds a virtual environment with ``transformers==4.45.*`` once per machine (no torch: config
validation needs none), cached under ``~/.cache/freqlab-tests/transformers-4.45``, and runs ``rope_probe.py`` there on
every block; the newest is the transformers installed with the test extra (5.x), probed in-process. A block is
checked in each version its label covers: no warning while ``LlamaConfig`` validates it, and for YaRN the rotary
embedding transformers computes is YaRN over the original length L with the planned factor (read back from
transformers' own ``_compute_yarn_parameters``), for LongRoPE the inverse frequencies transformers' own
``_compute_longrope_parameters`` gives past L are 1 / (long_factor_j · b^(2j/d_r)) and its attention factor is
sqrt(1 + ln s / ln L). The pitfalls the labels avoid are reproduced too.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from freqlab.plan.rope_scaling import ROPE_TYPES, V4_FLOOR, plan_rope_scaling
from freqlab.plan.string import plan_string

transformers = pytest.importorskip("transformers", reason="transformers is a test dependency (pyproject [test])")

pytestmark = pytest.mark.transformers_versions

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import rope_probe  # noqa: E402  (the same probe runs in the floor environment)

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "freqlab-tests" / f"transformers-{V4_FLOOR}"
L, N = 4096, 16384


def version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def covers(block: dict, installed: str) -> bool:
    """The block's label covers this transformers version: since <= version < until."""
    v = version(installed)
    return version(block["since"]) <= v and (block["until"] is None or v < version(block["until"]))


def printed_blocks() -> list[dict]:
    """Every block `plan rope` and `plan string --extend-to` print: each type, the factor N / L and another one,
    whole and partial rotary dimensions; and the STRING + YaRN blocks (factor (N/L)(1 - S/L), attention_factor)."""
    plans = [
        plan_rope_scaling(L, N, t, factor=factor, partial_rotary_factor=prf, rope_theta=theta)
        for t in ROPE_TYPES
        for factor in (None, 3.0)
        for prf in (1.0, 0.5)
        for theta in (10000.0, 500000.0)
    ]
    plans.append(plan_string(32768, extend_to=131072, rope_theta=1e6).extension.yarn)
    plans.append(plan_rope_scaling(L, N, "longrope", effective_length=2730, E_rule="predicted N*"))
    return [
        {**block.to_dict(), "type": p.rope_type, "L": p.L, "N": p.N, "factor": p.factor, "plan": p}
        for p in plans
        for block in p.blocks
    ]


BLOCKS = printed_blocks()


def _request(blocks: list[dict]) -> list[dict]:
    return [{key: b[key] for key in ("config", "L", "N", "factor")} for b in blocks]


@pytest.fixture(scope="session")
def floor_python() -> Path:
    """The python of a virtual environment with transformers 4.45.*, built once per machine (under a lock)."""
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    python = CACHE / "bin" / "python"
    ready = CACHE / "ready"
    with open(CACHE.parent / f"transformers-{V4_FLOOR}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            venv.EnvBuilder(clear=True, with_pip=True).create(CACHE)
            install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                       f"transformers=={V4_FLOOR}.*", "numpy"]  # fmt: skip
            done = subprocess.run(install, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"pip could not install transformers=={V4_FLOOR}.*: {done.stderr[-2000:]}"
            ready.write_text(V4_FLOOR)
    return python


def probe_floor(python: Path, request: list[dict]) -> dict:
    """rope_probe.py's findings for ``request`` in the floor environment."""
    done = subprocess.run(
        [str(python), str(HERE / "rope_probe.py")], input=json.dumps(request), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert version(found["transformers"]) == version(V4_FLOOR)
    return found


@pytest.fixture(scope="session")
def floor(floor_python) -> dict:
    """The probe's findings for every printed block, in transformers 4.45."""
    return probe_floor(floor_python, _request(BLOCKS))


@pytest.fixture(scope="session")
def newest() -> dict:
    """The same, in-process, for the installed transformers (5.x)."""
    return {"transformers": transformers.__version__, "blocks": rope_probe.probe(_request(BLOCKS))}


def check(findings: dict) -> int:
    """Every block labelled for this version: no warning; YaRN over original L with the planned factor."""
    checked = 0
    for block, found in zip(BLOCKS, findings["blocks"]):
        if not covers(block, findings["transformers"]):
            continue
        checked += 1
        assert found["warnings"] == [], (block["transformers"], block["config"], found["warnings"])
        assert found["rope"].get("factor", block["factor"]) == block["factor"] or block["type"] == "ntk"
        if block["type"] == "yarn":
            planned = block["config"].get("rope_scaling") or block["config"]["rope_parameters"]
            assert found["yarn"]["original"] == block["L"], (block["transformers"], block["config"])
            assert found["yarn"]["factor"] == pytest.approx(block["factor"])
            expected = planned.get("attention_factor", 0.1 * math.log(block["factor"]) + 1)
            assert found["yarn"]["attention_factor"] == pytest.approx(expected)
        if block["type"] == "longrope":
            planned = block["config"].get("rope_scaling") or block["config"]["rope_parameters"]
            d_r = block["plan"].rotary_dim
            theta = block["plan"].rope_theta
            expected = [1 / (lam * theta ** (2 * j / d_r)) for j, lam in enumerate(planned["long_factor"])]
            assert found["longrope"]["inv_freq"] == pytest.approx(expected, rel=1e-6)  # float32 in transformers
            assert found["longrope"]["attention_factor"] == pytest.approx(
                math.sqrt(1 + math.log(block["factor"]) / math.log(block["L"]))
            )
    return checked


def test_the_floor_is_pyprojects():
    pyproject = (HERE.parents[1] / "pyproject.toml").read_text()
    assert f'"transformers>={V4_FLOOR}"' in pyproject


def test_every_block_labelled_for_the_floor_loads_there_as_planned(floor):
    assert check(floor) == sum(covers(b, floor["transformers"]) for b in BLOCKS) >= 30


def test_every_block_labelled_for_the_newest_loads_there_as_planned(newest):
    assert version(newest["transformers"]) >= (5, 0)
    assert check(newest) == sum(covers(b, newest["transformers"]) for b in BLOCKS) >= 30


def test_transformers_445_misreads_the_451_yarn_block(floor):
    """The pitfall the 4.45-4.50 label avoids (issue 22.2): 4.45 logs "Unrecognized keys" for
    original_max_position_embeddings and computes YaRN over max_position_embeddings = N instead of L."""
    index = next(i for i, b in enumerate(BLOCKS) if b["type"] == "yarn" and b["since"] == "4.51")
    found = floor["blocks"][index]
    assert any(re.search("Unrecognized keys.*original_max_position_embeddings", m) for m in found["warnings"])
    assert found["yarn"]["original"] == N != L


def test_a_5x_block_scales_nothing_in_4x(floor):
    """A `rope_parameters` block given to 4.45 loads without a word and leaves RoPE unscaled: hence the labels."""
    for block, found in zip(BLOCKS, floor["blocks"]):
        if block["key"] == "rope_parameters":
            assert found["rope"] == {} and found["warnings"] == []


def test_yarn_blocks_by_version_range():
    """4.45-4.50 keep max_position_embeddings = L and no original key; 4.51+ and 5.x name the original L and
    max_position_embeddings = N = factor · L; a factor other than N / L keeps L everywhere."""
    p = plan_rope_scaling(L, N, "yarn")
    assert [(b.since, b.until, b.config["max_position_embeddings"]) for b in p.blocks] == [
        ("4.45", "4.51", L), ("4.51", "5.0", N), ("5.0", None, N)
    ]  # fmt: skip
    assert "original_max_position_embeddings" not in p.blocks[0].config["rope_scaling"]
    custom = plan_rope_scaling(L, N, "yarn", factor=3.0)
    assert [b.config["max_position_embeddings"] for b in custom.blocks] == [L, L]
    assert any("#38224" in note and "#40320" in note for note in custom.notes)


def test_longrope_in_phi3s_form_replaces_the_factor_in_445_hence_max_position_embeddings_L(floor_python):
    """Phi-3's configs name the original length at the top level (max_position_embeddings N,
    original_max_position_embeddings L); 4.45 then takes factor = N / L whatever ``factor`` says (its attention
    factor sqrt(1 + ln(N/L) / ln L)). The 4.x block keeps max_position_embeddings = L and gives ``factor``, which
    4.45 honours."""
    p = plan_rope_scaling(L, N, "longrope", factor=3.0)
    phi3 = {**p.config_4x, "max_position_embeddings": N, "original_max_position_embeddings": L}
    found = probe_floor(floor_python, [{"config": c, "L": L, "N": N, "factor": 3.0} for c in (phi3, p.config_4x)])
    phi3_found, ours = (b["longrope"] for b in found["blocks"])
    assert phi3_found["inv_freq"] == ours["inv_freq"]  # the same long_factor
    assert phi3_found["attention_factor"] == pytest.approx(math.sqrt(1 + math.log(N / L) / math.log(L)))
    assert ours["attention_factor"] == pytest.approx(math.sqrt(1 + math.log(3.0) / math.log(L)))
