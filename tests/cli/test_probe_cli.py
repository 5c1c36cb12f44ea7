"""``freqlab probe`` on a tiny random model saved to a temporary directory (offline): the mechanics, not accuracy
(a random model retrieves nothing; no accuracy is asserted beyond what the counts themselves say)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("transformers")

from apply.tiny_models import tiny_model
from apply.tiny_tokenizer import save_tiny_model, tiny_tokenizer

from freqlab.cli import main


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    model = tiny_model("llama", vocab_size=len(tiny_tokenizer()), max_positions=512)
    return save_tiny_model(tmp_path_factory.mktemp("tiny"), model)


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_probe_with_and_without_string(model_dir, tmp_path):
    result = run(
        "probe",
        model_dir,
        "--lengths",
        "240,250",
        "--depths",
        "0,1",
        "--trials",
        2,
        "--string",
        "32,4",
        "--figure",
        tmp_path / "probe.png",
        "--json",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["label"] for r in data["results"]] == ["stock", "STRING 32,4"]
    for r in data["results"]:
        assert (r["lengths"], r["depths"], r["trials"], r["needles"], r["need"]) == ([240, 250], [0.0, 1.0], 2, 4, 2)
        passes = r["passes"]
        assert [len(row) for row in passes] == [2, 2] and all(0 <= n <= 2 for row in passes for n in row)
        assert r["accuracy"] == [(passes[0][j] + passes[1][j]) / 4 for j in range(2)]
    assert data["ruler_command"].endswith("""--metadata='{"max_seq_lengths":[240,250]}' --batch_size 1""")
    assert data["figure"] == [str(tmp_path / "probe.png")] and (tmp_path / "probe.png").stat().st_size > 0


def test_a_figure_that_cannot_be_written_after_the_run_loses_no_result(model_dir, tmp_path, monkeypatch):
    """A review: the figure was written before the report was printed, so a failing write (a folder made read-only
    during the run, a full disk) threw away every test's result."""
    import freqlab.plots.style
    from freqlab.errors import FreqlabError

    def fail(*args, **kwargs):
        raise FreqlabError(f"{tmp_path / 'probe.png'}: cannot write (No space left on device)")

    monkeypatch.setattr(freqlab.plots.style, "save_figure", fail)
    result = run("probe", model_dir, "--lengths", "240", "--depths", "0", "--trials", 1, "--figure",
                 tmp_path / "probe.png", "--json")  # fmt: skip
    assert result.exit_code == 1
    data = json.loads(result.stdout)  # the results, whole, before the error
    assert [r["lengths"] for r in data["results"]] == [[240]] and data["figure"] is None
    assert result.stderr.splitlines()[-1] == f"Error: {tmp_path / 'probe.png'}: cannot write (No space left on device)"


def test_the_text_report_names_the_rule_and_the_ruler_command(model_dir):
    result = run(
        "probe",
        model_dir,
        "--lengths",
        "240",
        "--depths",
        "0.5",
        "--trials",
        1,
        "--self-extend",
        "4,16",
        "--no-baseline",
    )
    assert result.exit_code == 0, result.output
    assert "a test passes with >= 2 of 4 needles, a length with >= 50% of its tests" in result.output
    assert "effective length, Self-Extend 4,16:" in result.output
    assert "lm_eval --model hf" in result.output


def test_bad_usage_is_one_line(model_dir):
    result = run("probe", model_dir, "--lengths", "100")
    assert result.exit_code == 2 and "shorter than the needle template (230 tokens" in result.output
    assert "Invalid value for '--lengths'" in result.output
    result = run("probe", model_dir, "--steps", "2", "--max-length", "200")  # 100 and 200: no default fits
    assert result.exit_code == 2 and "lengths [100, 200] are shorter than the needle template" in result.output
    assert "'--lengths'" not in result.output and "'--max-length' (the default lengths" in result.output
    result = run("probe", model_dir, "--lengths", "")  # was taken for the defaults (a review)
    assert result.exit_code == 2 and "--lengths '': give comma-separated lengths" in result.output
    result = run("probe", model_dir, "--string", "300,16", "--string", "200,16")  # the first was dropped (a review)
    assert result.exit_code == 2 and "Invalid value for '--string': given 2 times (300,16; 200,16)" in result.output
    result = run("probe", model_dir, "--string", "32")
    assert result.exit_code == 2 and "is not S,W" in result.output
    result = run("probe", model_dir, "--string", "600,4", "--lengths", "240", "--trials", 1, "--depths", "0")
    assert result.exit_code == 2  # found before the model is loaded, against the window its config.json states
    assert "the shift S must be an integer with 0 < S < L = 512 (the model's window), got 600" in result.output


def test_a_directory_without_a_model_is_one_error_line(tmp_path):
    result = run("probe", tmp_path, "--lengths", "240")
    assert result.exit_code == 1
    lines = result.stdout.strip().splitlines() + result.stderr.strip().splitlines()
    assert (
        [line for line in lines if line.startswith("Error:")]
        == [line for line in lines if "cannot load a causal LM and its tokenizer offline" in line]
        != []
    )


def test_the_text_is_the_probe_reports_report_and_the_json_its_dict(model_dir):
    """The command prints ProbeReport.report() and, with --json, ProbeReport.to_dict() of the same (greedy, so
    deterministic) results."""
    import numpy as np

    from freqlab.apply.probe import ProbeReport, ProbeResult

    args = ["probe", model_dir, "--lengths", "240", "--depths", "0,1", "--trials", 1, "--string", "32,4"]
    data = json.loads(run(*args, "--string", "32, 4", "--json").stdout)  # the same setting twice is one (reviews)
    results = tuple(
        ProbeResult(
            r["label"],
            tuple(r["lengths"]),
            tuple(r["depths"]),
            np.array(r["passes"]),
            r["trials"],
            r["needles"],
            r["need"],
            r["threshold"],
            np.array(r["needles_found"]),
        )
        for r in data["results"]
    )
    report = ProbeReport(data["model"], results, data["ruler_command"])
    assert report.to_dict() == data
    assert run(*args).stdout == report.report() + "\n"


def test_attn_implementation_reaches_the_model_and_a_missing_kernel_is_one_line(model_dir):
    from freqlab.apply.probe import load_model

    model, _ = load_model(str(model_dir), attn_implementation="eager")
    assert model.config._attn_implementation == "eager"
    model, _ = load_model(str(model_dir))  # transformers' own choice when none is given
    assert model.config._attn_implementation == "sdpa"
    pytest.importorskip("torch").cuda.is_available() and pytest.skip("flash-attn may be installed on a GPU machine")
    result = run("probe", model_dir, "--lengths", "240", "--attn-implementation", "flash_attention_2")
    assert result.exit_code == 1 and "cannot load a causal LM and its tokenizer offline" in result.output
    result = run("probe", model_dir, "--attn-implementation", "flash")
    assert result.exit_code == 2 and "'flash' is not one of" in result.output


def test_an_untested_model_type_runs_with_allow_untested(tmp_path):
    model = tiny_model("cohere", vocab_size=len(tiny_tokenizer()), max_positions=512)
    folder = save_tiny_model(tmp_path, model)
    args = ("probe", folder, "--lengths", "240", "--depths", "0", "--trials", 1, "--string", "32,4", "--no-baseline")
    refused = run(*args)
    assert refused.exit_code == 2 and "model type 'cohere' is not one freqlab.apply is tested on" in refused.output
    with pytest.warns(UserWarning, match="'cohere' is not among them"):
        result = run(*args, "--allow-untested", "--json")
    assert result.exit_code == 0, result.output
    assert [r["label"] for r in json.loads(result.stdout)["results"]] == ["STRING 32,4"]


def test_a_plan_the_model_cannot_take_is_refused_before_the_stock_probe(monkeypatch):
    """A partial rotary (RoPE on 4 of 8 dimensions): the whole stock probe ran (160 tests) before the plan was
    refused; each plan is applied and removed before the first test now. (From config.json it cannot be told:
    transformers 5 ignores a partial_rotary_factor on Llama, whose RoPE then covers every dimension.)"""
    from freqlab.apply import probe as p
    from freqlab.errors import FreqlabError

    model = tiny_model("llama", vocab_size=len(tiny_tokenizer()), max_positions=512)
    rotary = next(m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding"))
    rotary.inv_freq = rotary.inv_freq[:2]
    monkeypatch.setattr(p, "probe", lambda *args, **kwargs: pytest.fail("a test ran before the plan was checked"))
    with pytest.raises(FreqlabError, match="RoPE covers 4 of 8 head dimensions"):
        p.probe_settings(model, tiny_tokenizer(), p.hf_builder(tiny_tokenizer()), [240], plans=[("STRING", (32, 4))])
    assert model.config._attn_implementation == "sdpa"  # as it was


@pytest.mark.parametrize("config", ["null", "[1, 2]", '{"model_type": "llama", "text_config": {"hidden_size": 8}}'])
def test_a_config_transformers_cannot_read_is_one_line(tmp_path, config):
    """null, a list, a text_config without model_type: tracebacks (TypeError, AttributeError) from transformers."""
    (tmp_path / "config.json").write_text(config)
    result = run("probe", tmp_path, "--lengths", "240", "--string", "16,4")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{tmp_path}: cannot load a causal LM and its tokenizer offline (" in result.output


def test_a_probe_that_raises_leaves_the_model_as_it_was_given(monkeypatch):
    """probe_settings applied each plan and removed it after its probe, with nothing between: a probe that raised
    (out of memory, an interrupt in a notebook) left the plan on the model (apply review)."""
    from freqlab.apply import probe as p

    model = tiny_model("llama", vocab_size=len(tiny_tokenizer()), max_positions=512)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(p, "probe", interrupted)
    with pytest.raises(KeyboardInterrupt):
        p.probe_settings(model, tiny_tokenizer(), p.hf_builder(tiny_tokenizer()), [240], plans=[("STRING", (32, 4))],
                         baseline=False)  # fmt: skip
    assert model.config._attn_implementation == "sdpa"


def test_a_model_without_its_tokenizer_names_the_whole_reason(model_dir, tmp_path):
    """A review: transformers' reason begins "Couldn't instantiate the backend tokenizer from one of:" and lists
    them on the next lines; the error kept the first line alone, naming nothing. A second: the whole reason asked to
    install sentencepiece or tiktoken; a folder with no tokenizer file is said so before transformers is asked."""
    import shutil

    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(model_dir / name, tmp_path / name)
    result = run("probe", tmp_path, "--lengths", "240")
    assert result.exit_code == 1 and "Traceback" not in result.output
    error = next(line for line in result.output.splitlines() if line.startswith("Error:"))
    assert error == (
        f"Error: {tmp_path}: cannot load a causal LM and its tokenizer offline (no tokenizer file there: "
        "tokenizer.json, tokenizer_config.json, tokenizer.model, vocab.json, ...; save the tokenizer beside the model "
        "with tokenizer.save_pretrained)"
    )
    (tmp_path / "tokenizer_config.json").write_text("{}")  # a tokenizer file that holds none: transformers' reason
    error = next(line for line in run("probe", tmp_path, "--lengths", "240").output.splitlines() if "Error:" in line)
    assert f"{tmp_path}: cannot load a causal LM and its tokenizer offline (" in error
    assert not error.rstrip(")").rstrip().endswith(":"), error  # the reason goes on past its first line


def test_lengths_past_the_models_window_are_said(model_dir):
    """A review: --lengths past max_position_embeddings ran with transformers' "friendly reminder" alone."""
    result = run("probe", model_dir, "--lengths", "240,600", "--depths", "0", "--trials", 1)
    assert result.exit_code == 0, result.output
    assert (
        "note: lengths [600] pass the 512 positions the model is set up for (max_position_embeddings, or its RoPE "
        "scaling's): the stock model meets positions it was never trained on there" in result.stderr
    )
    assert "note:" not in run("probe", model_dir, "--lengths", "240", "--depths", "0", "--trials", 1).stderr
    # a prompt that fits, with an answer that does not (4 needles: up to 4 · 8 + 8 = 40 tokens): a review
    result = run("probe", model_dir, "--lengths", "480", "--depths", "0", "--trials", 1)
    assert result.exit_code == 0, result.output
    assert (
        "note: lengths [480] fit the 512 positions the model is set up for, but their answers (up to 40 tokens) pass "
        "them" in result.stderr
    )


@pytest.mark.parametrize("as_json", [False, True])
def test_a_setting_out_of_memory_after_others_reports_them_before_its_error(model_dir, monkeypatch, as_json):
    """A review: a plan's probe running out of memory threw away the stock model's results, probed in full before
    it (hours of tests on a long model). They are printed, and the error names them; the exit status is 1."""
    from freqlab.apply import probe as p

    settings = []

    def generator(model, tokenizer):  # the stock model reads every needle back; the plan runs out of memory
        settings.append(model.config._attn_implementation)

        def generate(batch, max_new_tokens):
            if len(settings) > 1:
                raise type("OutOfMemoryError", (RuntimeError,), {})("CUDA out of memory. Tried to allocate 2 GiB")
            return [tokenizer.decode(ids) for ids in batch]

        return generate

    monkeypatch.setattr(p, "hf_generator", generator)
    args = ["--lengths", "240,250", "--depths", "0,1", "--trials", 2, "--string", "32,4"]
    result = run("probe", model_dir, *args, *(["--json"] if as_json else []))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == (
        "Error: STRING 32,4: out of memory at length 240 with 4 prompt(s) at once (CUDA out of memory. Tried to "
        "allocate 2 GiB): use a smaller batch size or shorter lengths (probed in full before it: stock: effective "
        "length 250)"
    )
    if as_json:
        data = json.loads(result.stdout)
        (stock,) = data["results"]
        assert stock["label"] == "stock" and stock["passes"] == [[2, 2], [2, 2]]
        assert data["stopped"].startswith("STRING 32,4: out of memory at length 240")  # an adversary: unsaid
    else:
        assert "effective length, stock: 250 (every tested length passes" in result.stdout
        assert "STRING" not in result.stdout
    assert settings[0] == "sdpa" and len(settings) == 2


def test_ctrl_c_after_a_setting_prints_it_and_exits_130(model_dir, monkeypatch):
    """A review: Ctrl-C during the plan's setting printed "interrupted" alone, the stock model's results lost."""
    from freqlab.apply import probe as p

    settings = []

    def generator(model, tokenizer):  # the stock model reads every needle back; Ctrl-C during the plan's
        settings.append(model.config._attn_implementation)

        def generate(batch, max_new_tokens):
            if len(settings) > 1:
                raise KeyboardInterrupt
            return [tokenizer.decode(ids) for ids in batch]

        return generate

    monkeypatch.setattr(p, "hf_generator", generator)
    args = ["--lengths", "240,250", "--depths", "0,1", "--trials", 2, "--string", "32,4", "--json"]
    result = run("probe", model_dir, *args)
    assert result.exit_code == 130 and "Traceback" not in result.output
    data = json.loads(result.stdout)
    assert [r["label"] for r in data["results"]] == ["stock"]
    assert data["stopped"] == "interrupted (probed in full before it: stock: effective length 250)"


def test_a_figure_in_a_folder_that_takes_no_file_is_refused_before_the_model_loads(tmp_path):
    """A review: --figure /sys/x.png was refused after every test had run (root may write anywhere but there)."""
    result = run("probe", tmp_path, "--figure", "/proc/freqlab-probe.png")
    assert result.exit_code == 2 and "'/proc/freqlab-probe.png': cannot write in /proc (" in result.output


def test_the_default_lengths_of_a_model_of_learned_positions_leave_room_for_the_answer(tmp_path):
    """An adversary: GPT-2's defaults (up to max_position_embeddings) were refused: the answer passed its 512
    learned positions. They stop 8 tokens per needle and 8 more before them."""
    import transformers

    config = transformers.GPT2Config(n_embd=32, n_layer=1, n_head=2, n_positions=512, vocab_size=len(tiny_tokenizer()))
    model_dir = save_tiny_model(tmp_path / "gpt2", transformers.GPT2LMHeadModel(config))
    result = run("probe", model_dir, "--steps", 2, "--trials", 1, "--depths", 1, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["lengths"] == [236, 472]  # 512 - 4 x 8 - 8 = 472


def test_default_lengths_shorter_than_the_template_are_left_out_with_a_note(model_dir):
    """A review: a run with no option failed on a small model (its default lengths 64, 128, 192 below the 230-token
    template); the defaults that fit are probed, the others named. Depths given twice are probed once, as lengths
    (0 counted twice in each length's accuracy)."""
    result = run("probe", model_dir, "--steps", 3, "--max-length", 480, "--trials", 1, "--depths", "0,0,1", "--json")
    assert result.exit_code == 0, result.output
    assert "note: default lengths [160] are shorter than the needle template (230 tokens" in result.stderr
    (stock,) = json.loads(result.stdout)["results"]
    assert (stock["lengths"], stock["depths"]) == ([320, 480], [0.0, 1.0])
    assert [len(row) for row in stock["passes"]] == [2, 2]  # a length's row: one count per depth
