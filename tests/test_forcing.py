"""Token forcing and the replay acceptance profile."""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specpilot import LLM
from specpilot.cli import main
from specpilot.errors import ConfigError
from specpilot.spec.replay import AcceptanceProfile, ReplayProposer


@pytest.fixture(scope="module")
def llm(qwen_dir) -> LLM:
    return LLM(qwen_dir, device="cpu", dtype="float32")


def test_forcing_passes_on_greedy_output(llm):
    out = llm.generate([4, 8, 15, 16, 23, 42], max_new_tokens=30, ignore_eos=True)[0]
    report = llm.validate(out.prompt_ids, out.output_ids)
    assert report.passed and report.num_checked == 30 and not report.near_ties


def test_forcing_catches_corrupted_output(llm):
    out = llm.generate([4, 8, 15, 16, 23, 42], max_new_tokens=30, ignore_eos=True)[0]
    bad = list(out.output_ids)
    bad[11] = (bad[11] + 1) % llm.target.config.vocab_size
    report = llm.validate(out.prompt_ids, bad)
    assert not report.passed
    assert report.failures[0].index == 11
    assert report.failures[0].token == bad[11] and report.failures[0].argmax == out.output_ids[11]
    assert report.failures[0].margin > report.threshold


def test_forcing_reports_near_tie_not_failure(llm):
    out = llm.generate([4, 8, 15, 16, 23, 42], max_new_tokens=10, ignore_eos=True)[0]
    bad = list(out.output_ids)
    bad[3] = (bad[3] + 1) % llm.target.config.vocab_size
    huge = llm.validate(out.prompt_ids, bad, threshold=1e9)
    assert huge.passed and huge.near_ties and huge.near_ties[0].index == 3


@pytest.mark.parametrize("chunk", [1, 5, 6, 13])
def test_forcing_in_chunks_checks_what_one_forward_checks(llm, chunk):
    """Chunks of positions over one cache (the 32k contexts' way) find the same failures and
    near-ties, at the same indices and margins, as the one-forward pass; chunk 5 ends a chunk on
    the last prompt-only row, 6 on the row that predicts the first output token."""
    from specpilot.spec.forcing import token_forcing

    out = llm.generate([4, 8, 15, 16, 23, 42], max_new_tokens=24, ignore_eos=True)[0]
    bad = list(out.output_ids)
    for i in (0, 7, 23):
        bad[i] = (bad[i] + 1) % llm.target.config.vocab_size
    whole = token_forcing(llm.target, out.prompt_ids, bad, threshold=1e-3, chunk=10_000)
    parts = token_forcing(llm.target, out.prompt_ids, bad, threshold=1e-3, chunk=chunk)
    # the corrupted tokens fail, and so may later ones, predicted from the corrupted context
    assert {0, 7, 23} <= {f.index for f in whole.failures}
    assert [(f.index, f.token, f.argmax) for f in parts.failures] == [
        (f.index, f.token, f.argmax) for f in whole.failures
    ]
    for a, b in zip(parts.failures, whole.failures, strict=True):
        assert a.margin == pytest.approx(b.margin, rel=1e-4, abs=1e-5)
    assert token_forcing(llm.target, out.prompt_ids, out.output_ids, chunk=chunk).passed
    with pytest.raises(ValueError, match="chunk"):
        token_forcing(llm.target, out.prompt_ids, bad, chunk=0)


@pytest.mark.parametrize("weights", ["bf16", "w12"])
def test_bf16_outputs_are_checked_against_a_float32_reference(qwen_dir, weights):
    """validate's default reference is a float32 copy of the target (W12 linears decoded), not
    the bf16 target itself; a corrupted token still fails against it."""
    from specpilot.config import EngineConfig

    bf16 = LLM(qwen_dir, device="cpu", dtype="bfloat16", engine=EngineConfig(weights=weights))
    out = bf16.generate([4, 8, 15, 16, 23, 42], max_new_tokens=20, ignore_eos=True)[0]
    report = bf16.validate(out.prompt_ids, out.output_ids)
    assert report.passed and report.reference == "float32" and report.threshold == 0.5
    same = bf16.validate(out.prompt_ids, out.output_ids, reference_dtype=None)
    assert same.reference == "bfloat16"
    reference = bf16._forcing_reference("float32")
    assert all(p.dtype == torch.float32 for p in reference.parameters())
    assert next(bf16.target.parameters()).dtype == torch.bfloat16  # the engine's is untouched
    bad = list(out.output_ids)
    bad[5] = (bad[5] + 1) % bf16.target.config.vocab_size
    assert bf16.validate(out.prompt_ids, bad).failures[0].index == 5


def test_validate_cli_results_file(qwen_dir, tmp_path, capsys):
    code = main(
        [
            "generate",
            "--target",
            str(qwen_dir),
            "--prompt-ids",
            "1,2,3,4",
            "--max-new-tokens",
            "12",
            "--ignore-eos",
            "--json",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    results = tmp_path / "out.jsonl"
    results.write_text(capsys.readouterr().out)
    assert (
        main(["validate", "--target", str(qwen_dir), "--results", str(results), "--device", "cpu"])
        == 0
    )
    import json

    record = json.loads(results.read_text().strip().splitlines()[-1])
    record["output_ids"][5] = (record["output_ids"][5] + 1) % 301
    results.write_text(json.dumps(record) + "\n")
    capsys.readouterr()
    assert (
        main(["validate", "--target", str(qwen_dir), "--results", str(results), "--device", "cpu"])
        == 1
    )
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["passed"] is False


@settings(max_examples=50, deadline=None)
@given(tau=st.floats(1.0, 16.0))
def test_profile_mean_is_exact(tau):
    assert AcceptanceProfile.from_mean(tau, 16).mean == pytest.approx(tau)


@settings(max_examples=30, deadline=None)
@given(tau=st.floats(1.0, 15.9))
def test_geometric_profile_has_the_mean_and_a_falling_tail(tau):
    profile = AcceptanceProfile.geometric(tau, 16)
    assert profile.mean == pytest.approx(tau, abs=1e-6)
    body = profile.weights[:-1]
    assert all(a >= b - 1e-12 for a, b in zip(body, body[1:]))  # P(L) falls with L


def test_profile_parse_and_errors():
    hist = AcceptanceProfile.parse("1:1,4:1", 8)
    assert hist.mean == pytest.approx(2.5)
    assert AcceptanceProfile.parse("geometric:3.5", 8).mean == pytest.approx(3.5)
    for bad in ("0.5", "9", "x", "9:1", "1:-1", "1:0", "geometric:8", "geometric:x"):
        with pytest.raises(ConfigError):
            AcceptanceProfile.parse(bad, 8)


def test_replay_proposer_follows_profile():
    cont = list(range(10, 200))
    proposer = ReplayProposer([cont], AcceptanceProfile.from_mean(5.0, 8), 1000, seed=0)
    drafts = proposer.propose([3], 7)[0].tolist()
    # emitted 3 tokens (cont[0..2]); the next 4 continuation tokens, then a wrong one
    assert drafts[:4] == cont[3:7] and drafts[4] != cont[7]
    rng = random.Random(1)
    profile = AcceptanceProfile.from_mean(6.55, 16)
    samples = [profile.sample(rng) for _ in range(4000)]
    assert sum(samples) / len(samples) == pytest.approx(6.55, abs=0.05)


def test_batch_blocks_parse_and_errors():
    from specpilot.config import EngineConfig

    cfg = EngineConfig(batch_blocks="24:8, 8:12")
    assert cfg.batch_block_table() == ((8, 12), (24, 8))
    assert [cfg.block_for(n, 16) for n in (1, 7, 8, 23, 24, 64)] == [16, 16, 12, 12, 8, 8]
    assert EngineConfig(batch_blocks="1:32").block_for(1, 16) == 16  # never wider than full
    for bad in ("8", "x:8", "8:1", "0:8", "8:8:8"):
        with pytest.raises(ConfigError):
            EngineConfig(batch_blocks=bad)
