"""Multi-stage schedules: stage frequencies scaled to their budgets add up."""

import numpy as np
import pytest

from freqlab import FreqlabError, LengthHistogram, position_frequency
from freqlab.frequency import load_schedule, parse_tokens, schedule_frequency


@pytest.fixture
def corpus(tmp_path):
    LengthHistogram.from_counts([512, 3000, 20000], [100, 10, 2]).to_parquet(tmp_path / "main.parquet")
    LengthHistogram.from_counts([9000], [5]).to_parquet(tmp_path / "long.parquet")
    return tmp_path


def test_token_counts_accept_suffixes():
    assert parse_tokens("1T") == 10**12 and parse_tokens("20B") == 2 * 10**10 and parse_tokens("1.5K") == 1500
    assert parse_tokens(1e12) == 10**12 and parse_tokens("2e9") == 2 * 10**9
    for bad in ("-1B", "abc", "0", True, "1.5"):
        with pytest.raises(FreqlabError):
            parse_tokens(bad)


def test_two_stage_schedule_adds_scaled_frequencies(corpus):
    (corpus / "s.yaml").write_text(
        "histogram: main.parquet\n"
        "stages:\n"
        "  - {name: pre, L: 2048, tokens: 1T}\n"
        "  - {name: long, L: 8192, tokens: 20B, regime: concat, histogram: long.parquet}\n"
    )
    result = schedule_frequency(load_schedule(corpus / "s.yaml"))
    assert result.window == 8192
    pre = position_frequency([512, 3000, 20000], [100, 10, 2], 2048)
    long = position_frequency([9000], [5], 8192, "concat")
    expected = np.zeros(8192)
    expected[:2048] += pre * (1e12 / pre[0])
    expected += long * (2e10 / long[0])
    assert np.allclose(result.total, expected, rtol=1e-12)
    # exact occurrences at a position only the long stage reaches
    assert result.occurrences(5000) == pytest.approx(float(long[5000]) * 2e10 / float(long[0]))
    eff = result.effective_length(1e9)
    assert expected[eff] >= 1e9 > expected[eff + 1]


def test_json_schedules_and_histogram_override(corpus):
    (corpus / "s.json").write_text('{"stages": [{"L": 1024, "tokens": "100B"}]}')
    result = schedule_frequency(load_schedule(corpus / "s.json", histogram=corpus / "long.parquet"))
    assert result.frequencies[0].tolist() == position_frequency([9000], [5], 1024).tolist()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stages: []", "non-empty list 'stages'"),
        ("stages:\n  - {L: 0, tokens: 1B}", r"stage 1 \(stage-1\): L must be a positive integer"),
        ("stages:\n  - {L: 2048}", "missing 'tokens'"),
        ("stages:\n  - {L: 2048, tokens: 1B, regime: zigzag}", "unknown regime 'zigzag'"),
        ("stages:\n  - {L: 2048, tokens: 1B, windw: 3}", "unknown key"),
        ("stages:\n  - {L: 2048, tokens: 1B}", "no histogram"),
        ("stages: [", "not valid YAML"),
        ("stages:\n  - {L: 2048, tokens: 1B, L: 4096}", r"key 'L' given twice, line 2"),  # not the last silently
        (b"\xff\xfe", "not a UTF-8 text file"),
    ],
)
def test_bad_schedules_name_the_stage_and_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    with pytest.raises(FreqlabError, match=message):
        load_schedule(tmp_path / "bad.yaml")
