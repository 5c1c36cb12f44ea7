"""scripts/make_figures.py runs and writes every figure it lists, small enough to commit.

The test uses ``--quick`` (a seeded synthetic histogram instead of scanning the built-in corpus) and
``--out`` a temporary folder, so it neither rescans the corpus nor touches the committed figures/.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "make_figures.py"
EXPECTED = [
    "fig1_regimes",
    "fig1_natural",
    "fig2_effective_length",
    "fig3_windows",
    "string_fig5",
    "string_fig8",
    "string_usage",
    "self_extend_fig3",
    "harpe_waveforms",
    "harpe_envelopes",
    "sources",
    "recipe_gemma3",
    "exposure",
]


def test_make_figures_quick(tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    pngs = sorted(p.stem for p in tmp_path.glob("*.png"))
    assert pngs == sorted(EXPECTED)
    for name in EXPECTED:
        png = tmp_path / f"{name}.png"
        assert png.read_bytes()[:4] == b"\x89PNG"
        assert png.stat().st_size < 200_000, f"{png.name} is {png.stat().st_size} bytes"
    readme = (tmp_path / "README.md").read_text()
    for name in EXPECTED:
        assert f"`python scripts/make_figures.py --only {name}`" in readme
    assert "--quick (synthetic histogram)" in readme and "26,800 documents" in readme


def test_committed_figures_match_the_list():
    """figures/ holds exactly what the script makes, and its README lists each figure."""
    folder = ROOT / "figures"
    assert sorted(p.stem for p in folder.glob("*.png")) == sorted(EXPECTED)
    readme = (folder / "README.md").read_text()
    assert all(f"({name}.png)" in readme for name in EXPECTED)
