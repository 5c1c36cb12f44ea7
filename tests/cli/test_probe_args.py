"""`freqlab probe` refuses bad plans and lengths before it loads the model (exit 2), from the window that the model's
config.json states: a folder holding only a config.json shows that nothing else was read."""

import json

import pytest
from click.testing import CliRunner

from freqlab.cli import main


@pytest.fixture
def model_dir(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "max_position_embeddings": 64}))
    return tmp_path


@pytest.mark.parametrize(
    ("args", "option", "message"),
    [
        (["--string", "100,8"], "--string", "(the model's window L = 64)"),
        (["--string", "16,32"], "--string", "(the model's window L = 64)"),
        (["--self-extend", "4,1000"], "--self-extend", "0 <= w_n < L = 64"),
        (["--lengths", "0"], "", "--lengths '0': a length in positions must be a positive integer"),
    ],
)
def test_bad_plans_and_lengths_are_usage_errors_before_loading(model_dir, args, option, message):
    result = CliRunner().invoke(main, ["probe", str(model_dir), *args])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {option}" in result.output if option else "Invalid value" in result.output
    assert message in result.output and "cannot load" not in result.output
