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
        (["--string", "100,8"], "--string", "L = 64 (the model's window), got 100"),
        (["--string", "16,32"], "--string", "shift S = 16 (STRING needs W << S)\n"),  # L, not its bound, unnamed
        (["--self-extend", "4,1000"], "--self-extend", "0 <= w_n < L = 64"),
        (["--lengths", "0"], "", "--lengths '0': a length in positions must be a positive integer"),
    ],
)
def test_bad_plans_and_lengths_are_usage_errors_before_loading(model_dir, args, option, message):
    result = CliRunner().invoke(main, ["probe", str(model_dir), *args])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output if option else "Invalid value" in result.output
    assert message in result.output and "cannot load" not in result.output


@pytest.mark.parametrize(
    ("config", "args", "option", "message"),
    [
        # interleaved RoPE: the plans' logits were other than the paper's, with a warning on stderr only
        ({"model_type": "cohere"}, ["--string", "16,4"], "--string", "model type 'cohere' is not one freqlab.apply"),
        ({"model_type": "cohere"}, ["--string", "16,4"], "--string", "; --allow-untested applies them anyway"),
        ({"model_type": "smollm3"}, ["--self-extend", "4,8"], "--self-extend", "model type 'smollm3' is not one"),
        # found after the whole probe had run (a minute here; the results lost)
        ({"model_type": "llama"}, ["--figure", "probe.txt"], "--figure", "unknown figure format 'txt'"),
        (  # a review: "give formats=('png', ...)" named the Python argument
            {"model_type": "llama"},
            ["--figure", "probe"],
            "--figure",
            "'probe' has no suffix: give a path like probe.png (png, pdf or svg)",
        ),
        ({"model_type": "llama"}, ["--string", "100"], "--string", "'100' is not S,W (two values expected)"),
        (
            {"model_type": "llama"},
            ["--string", "600,4"],
            "--string",
            "0 < S < L = 64 (the model's window), got 600",
        ),
        ({"model_type": "llama"}, ["--need", "5"], "--need", "5 needles cannot be found among --needles 4"),
        # a review: a file where the figure's folder goes failed the write after every test had run, nothing printed
        ({"model_type": "llama"}, ["--figure", "afile/p.png"], "--figure", "'afile/p.png': afile is not a folder"),
        # a second review: a raw OSError, exit 1, naming no option
        ({"model_type": "llama"}, ["--figure", "a" * 300 + "/x.png"], "--figure", "/x.png': File name too long"),
        # an adversary's review: a name that is a folder's failed only at the write, after the run
        ({"model_type": "llama"}, ["--figure", "x.png/"], "--figure", "x.png/: cannot write (it names a folder"),
    ],
)
def test_what_a_run_would_find_late_is_refused_before_loading(tmp_path, config, args, option, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    (tmp_path / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 64}))
    result = CliRunner().invoke(main, ["probe", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}':" in result.output, result.output  # quoted, as click quotes options
    assert message in " ".join(result.output.split()) and "cannot load" not in result.output


def test_a_config_that_names_no_model_type_is_left_to_the_loaded_model(tmp_path):
    """A text_config without model_type (a multimodal config written by hand): not 'model type None is not one
    freqlab.apply is tested on' before loading; the loaded model's type is checked where the plan is applied."""
    config = {"model_type": "gemma3", "text_config": {"max_position_embeddings": 64}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = CliRunner().invoke(main, ["probe", str(tmp_path), "--string", "16,4", "--lengths", "240"])
    # past the checks before loading: loading fails (no model here; without torch, its extra is named)
    assert result.exit_code == 1 and "model type None" not in result.output, result.output


@pytest.mark.parametrize("key", ["rope_parameters", "rope_scaling"])
@pytest.mark.parametrize("original", [{"original_max_position_embeddings": 512}, {}])
def test_a_yarn_model_s_plans_are_checked_against_the_window_its_rope_scales_to(tmp_path, key, original):
    """A review: --string 1000,16 on a YaRN model (max_position_embeddings 512, factor 4) was refused against L = 512
    where freqlab.apply takes model_window's 2048 (the STRING + YaRN shift lies between L and N); a second: a block
    naming no original window, which transformers fills in with max_position_embeddings when it loads."""
    rope = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0, **original}
    config = {"model_type": "llama", "max_position_embeddings": 512, key: rope}
    (tmp_path / "config.json").write_text(json.dumps(config))
    beyond = CliRunner().invoke(main, ["probe", str(tmp_path), "--string", "3000,16"])
    assert beyond.exit_code == 2 and "L = 2048 (the model's window)" in beyond.output
    within = CliRunner().invoke(main, ["probe", str(tmp_path), "--string", "1000,16", "--lengths", "240"])
    assert "Invalid value" not in within.output  # past the checks: loading fails, there is no model here


def test_a_device_this_process_cannot_use_is_one_line_before_loading(model_dir):
    """A review: --device foo, or cuda on a machine without one, was a traceback after the model had loaded."""
    torch = pytest.importorskip("torch")
    bad = CliRunner().invoke(main, ["probe", str(model_dir), "--device", "foo", "--lengths", "32"])
    assert bad.exit_code == 1 and bad.output.startswith("Error: device 'foo': not a torch device (")
    if not torch.cuda.is_available():
        cuda = CliRunner().invoke(main, ["probe", str(model_dir), "--device", "cuda:1", "--lengths", "32"])
        assert cuda.output == "Error: device 'cuda:1': no cuda device is available to this process\n"
    for kind in ("meta", "hpu", "lazy"):  # no backend says they are there: a traceback after loading (a second review)
        result = CliRunner().invoke(main, ["probe", str(model_dir), "--device", kind, "--lengths", "32"])
        assert result.output == f"Error: device '{kind}': no {kind} device is available to this process\n"
