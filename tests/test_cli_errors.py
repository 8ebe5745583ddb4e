"""Every bad input to the CLI gives one clear line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

from specpilot.cli import main
from tests.conftest import make_target

GEN = ["--prompt-ids", "1,2,3", "--max-new-tokens", "4", "--device", "cpu", "--ignore-eos"]


def cli_error(capsys, *argv: str) -> str:
    """Run the CLI in-process; assert exit code 2 and exactly one error line; return it."""
    rc = main(list(argv))
    _, err = capsys.readouterr()
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"expected one line, got {err!r}"
    assert lines[0].startswith(f"specpilot {argv[0]}: error:"), lines[0]
    return lines[0]


def cli_json(capsys, *argv: str) -> dict:
    """Run the CLI in-process; assert success and return its final JSON line."""
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out.strip().splitlines()[-1])


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def edit_config(directory: Path, **changes) -> None:
    file = directory / "config.json"
    config = json.loads(file.read_text())
    config.update(changes)
    file.write_text(json.dumps(config))


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory) -> Path:
    """A target of another shape (vocabulary 317, 3 layers) than `qwen_dir` (301, 4 layers)."""
    return make_target(tmp_path_factory.mktemp("llama"), "llama-untied-gqa4-llama3rope")


@pytest.fixture(scope="module")
def sharded_dir(tmp_path_factory, qwen_dir) -> Path:
    """`qwen_dir` with its state dict split over two shards named by an index file."""
    out = copy(qwen_dir, tmp_path_factory.mktemp("sharded") / "ckpt")
    tensors = load_file(out / "model.safetensors")
    (out / "model.safetensors").unlink()
    names = sorted(tensors)
    weight_map = {}
    for k, part in enumerate((names[::2], names[1::2])):
        shard = f"model-{k + 1:05d}-of-00002.safetensors"
        save_file({n: tensors[n] for n in part}, out / shard, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(part, shard))
    index = {"metadata": {}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index))
    return out


# ---------------------------------------------------------------------------------------------
# broken target checkpoints: each case breaks a copy of the tiny Qwen3 checkpoint


def _no_config(d: Path) -> None:
    (d / "config.json").unlink()


def _bad_json(d: Path) -> None:
    (d / "config.json").write_text('{"model_type": "qwen3", ')


def _bad_model_type(d: Path) -> None:
    edit_config(d, model_type="gpt2")


def _bad_value(d: Path) -> None:
    edit_config(d, hidden_size="sixty-four")


def _no_weights(d: Path) -> None:
    (d / "model.safetensors").unlink()


def _garbage_weights(d: Path) -> None:
    (d / "model.safetensors").write_bytes(b"\x00\x13garbage, not safetensors" * 8)


def _truncated_weights(d: Path) -> None:
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])


def _wrong_shape(d: Path) -> None:
    edit_config(d, intermediate_size=96)  # the stored MLP weights are 160 wide


BROKEN: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "no-config": (_no_config, ["config.json", "not found"]),
    "bad-json": (_bad_json, ["config.json", "not valid JSON"]),
    "bad-model-type": (_bad_model_type, ["model_type", "gpt2"]),
    "bad-config-value": (_bad_value, ["sixty-four"]),
    "no-weights": (_no_weights, ["model.safetensors", "not found"]),
    "garbage-weights": (_garbage_weights, ["model.safetensors", "cannot read"]),
    "truncated-weights": (_truncated_weights, ["model.safetensors", "cannot read"]),
    "wrong-shape": (_wrong_shape, ["mlp.gate_proj.weight", "(160, 64)", "(96, 64)"]),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_target(capsys, tmp_path, qwen_dir, case):
    breaker, needles = BROKEN[case]
    ckpt = copy(qwen_dir, tmp_path / "ckpt")
    breaker(ckpt)
    line = cli_error(capsys, "generate", "--target", str(ckpt), *GEN)
    assert str(ckpt) in line
    for needle in needles:
        assert needle in line


def test_target_not_found(capsys, tmp_path):
    missing = tmp_path / "no-such-checkpoint"
    line = cli_error(capsys, "generate", "--target", str(missing), *GEN)
    assert "not found" in line and str(missing) in line


def test_sharded_checkpoint_matches_unsharded(capsys, qwen_dir, sharded_dir):
    args = ["--prompt-ids", "5,17,42", "--max-new-tokens", "8", "--device", "cpu", "--ignore-eos"]
    whole = cli_json(capsys, "generate", "--target", str(qwen_dir), *args, "--json")
    sharded = cli_json(capsys, "generate", "--target", str(sharded_dir), *args, "--json")
    assert len(whole["output_ids"]) == 8
    assert sharded["output_ids"] == whole["output_ids"]


def test_index_names_missing_shard(capsys, tmp_path, sharded_dir):
    ckpt = copy(sharded_dir, tmp_path / "ckpt")
    (ckpt / "model-00002-of-00002.safetensors").unlink()
    line = cli_error(capsys, "generate", "--target", str(ckpt), *GEN)
    assert "model-00002-of-00002.safetensors" in line
    assert "model.safetensors.index.json" in line


# ---------------------------------------------------------------------------------------------
# drafters that do not fit the target


def test_drafter_vocabulary_mismatch(capsys, qwen_drafter_dir, llama_dir):
    # drafted for the Qwen3 target (vocabulary 301), used with the Llama one (317)
    line = cli_error(
        capsys, "generate", "--target", str(llama_dir), "--draft", str(qwen_drafter_dir), *GEN
    )
    assert "vocabulary" in line and "301" in line and "317" in line
    assert str(qwen_drafter_dir) in line


@pytest.mark.parametrize(
    "changes, needles",
    [
        (dict(hidden_size=32), ["hidden size", "32", "64"]),
        (dict(vocab_size=400), ["vocabulary", "400", "301"]),
        (dict(num_target_layers=7), ["layers", "7"]),
    ],
    ids=["hidden", "vocabulary", "layers"],
)
def test_drafter_does_not_fit(capsys, tmp_path, qwen_dir, qwen_drafter_dir, changes, needles):
    drafter = copy(qwen_drafter_dir, tmp_path / "drafter")
    edit_config(drafter, **changes)
    line = cli_error(capsys, "generate", "--target", str(qwen_dir), "--draft", str(drafter), *GEN)
    assert str(drafter) in line
    for needle in needles:
        assert needle in line


# ---------------------------------------------------------------------------------------------
# bad arguments


def test_prompt_longer_than_context_config(capsys, tmp_path, qwen_dir):
    ckpt = copy(qwen_dir, tmp_path / "ckpt")
    edit_config(ckpt, max_position_embeddings=8)
    ids = ",".join(str(i) for i in range(10, 16))  # 6 tokens + 4 new > 8
    line = cli_error(capsys, "generate", "--target", str(ckpt), *GEN, "--prompt-ids", ids)
    assert "context length (8)" in line


def test_prompt_longer_than_context_long_prompt(capsys, qwen_dir):
    ids = ",".join(str(i % 300) for i in range(2050))  # the context is 2048
    line = cli_error(capsys, "generate", "--target", str(qwen_dir), *GEN, "--prompt-ids", ids)
    assert "2050 tokens" in line and "context length (2048)" in line


@pytest.mark.parametrize(
    "extra, needles",
    [
        (["--max-new-tokens", "0"], ["--max-new-tokens", "0"]),
        (["--max-new-tokens", "-3"], ["--max-new-tokens", "-3"]),
        (["--device", "tpu"], ["device", "'tpu'"]),
        (["--device", "cuda"], ["'cuda'", "CUDA is not available"]),
        (["--dtype", "float64"], ["dtype", "'float64'"]),
        (["--prompt-ids", "1,two,3"], ["--prompt-ids", "'1,two,3'", "integers"]),
        (["--prompt-ids", "1,2,999"], ["999", "vocabulary"]),
        (["--tiles", "/nonexistent/tiles.json"], ["tiles file", "/nonexistent/tiles.json"]),
    ],
    ids=[
        "max-new-0",
        "max-new-neg",
        "tpu",
        "cuda",
        "float64",
        "ids-not-int",
        "ids-vocab",
        "tiles-missing",
    ],  # fmt: skip
)
def test_bad_generate_argument(capsys, qwen_dir, extra, needles):
    if extra == ["--device", "cuda"]:
        import torch

        if torch.cuda.is_available():
            pytest.skip("CUDA is available here")
    line = cli_error(capsys, "generate", "--target", str(qwen_dir), *GEN, *extra)
    for needle in needles:
        assert needle in line


def test_text_prompt_without_tokenizer(capsys, tmp_path, qwen_dir):
    ckpt = copy(qwen_dir, tmp_path / "ckpt")
    for file in ckpt.iterdir():
        if file.name.startswith("tokenizer") or file.suffix == ".jinja":
            file.unlink()
    line = cli_error(
        capsys, "generate", "--target", str(ckpt), "--prompt", "hello", "--device", "cpu"
    )
    assert "tokenizer" in line


# ---------------------------------------------------------------------------------------------
# validate


def test_validate_results_missing(capsys, tmp_path, qwen_dir):
    missing = tmp_path / "results.jsonl"
    line = cli_error(capsys, "validate", "--target", str(qwen_dir), "--results", str(missing))
    assert str(missing) in line and "not found" in line


@pytest.mark.parametrize(
    "text, needles",
    [
        ('{"prompt_ids": [1, 2]}\n{"tokens_per_s": 3.0}\n', ["prompt_ids and output_ids"]),
        ("not json at all\n", ["prompt_ids and output_ids"]),
        ('{"prompt_ids": "1,2", "output_ids": [4]}', ["prompt_ids", "list of integers"]),
    ],
    ids=["no-ids", "not-json", "ids-not-list"],
)
def test_validate_results_without_ids(capsys, tmp_path, qwen_dir, text, needles):
    results = tmp_path / "results.jsonl"
    results.write_text(text)
    line = cli_error(
        capsys, "validate", "--target", str(qwen_dir), "--results", str(results), "--device", "cpu"
    )
    assert str(results) in line
    for needle in needles:
        assert needle in line


def test_validate_ids_outside_vocabulary(capsys, qwen_dir):
    line = cli_error(
        capsys,
        "validate",
        "--target",
        str(qwen_dir),
        "--prompt-ids",
        "1,2",
        "--output-ids",
        "5,5000",
        "--device",
        "cpu",
    )
    assert "5000" in line and "vocabulary" in line


# ---------------------------------------------------------------------------------------------
# the real process: exit code 2 and no traceback


def _run_cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "specpilot.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def test_subprocess_exit_code_and_no_traceback(tmp_path, qwen_dir):
    ckpt = copy(qwen_dir, tmp_path / "ckpt")
    (ckpt / "model.safetensors").write_bytes(b"garbage" * 10)
    proc = _run_cli(["generate", "--target", str(ckpt), *GEN], dict(os.environ), tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("specpilot generate: error:")
    assert "model.safetensors" in lines[0]
    assert proc.stdout == ""


def test_hub_id_unreachable_offline(tmp_path):
    """A hub id that is neither reachable (offline) nor cached: one line naming the repo."""
    home = tmp_path / "hf-home"
    home.mkdir()
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(home), HF_HUB_CACHE=str(home / "hub"))
    repo = "specpilot-tests/no-such-model"
    proc = _run_cli(["generate", "--target", repo, *GEN], env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("specpilot generate: error:")
    assert "cannot get" in lines[0] and repo in lines[0]


def test_serve_bad_batch_blocks(capsys, qwen_dir):
    line = cli_error(capsys, "serve", "--target", str(qwen_dir), "--batch-blocks", "24")
    assert "batch_blocks" in line and "'24'" in line and "ROWS:BLOCK" in line


def test_serve_negative_admit_delay(capsys, qwen_dir):
    line = cli_error(capsys, "serve", "--target", str(qwen_dir), "--admit-delay-factor", "-1")
    assert "--admit-delay-factor must be >= 0" in line


def test_generate_pdl_choices(capsys, qwen_dir):
    """--pdl reaches EngineConfig (every mode runs; on a CPU none launches anything) and an
    unknown mode is argparse's one-line error."""
    for mode in ("off", "all"):
        out = cli_json(capsys, "generate", "--target", str(qwen_dir), *GEN, "--pdl", mode, "--json")
        assert out["output_ids"]
    with pytest.raises(SystemExit) as exc:
        main(["generate", "--target", str(qwen_dir), *GEN, "--pdl", "sometimes"])
    assert exc.value.code == 2 and "invalid choice: 'sometimes'" in capsys.readouterr().err


def test_generate_min_acceptance(capsys, qwen_dir, qwen_drafter_dir):
    """--min-acceptance reaches EngineConfig: a limit no drafter meets hands the rest to AR
    after the probe steps (`ar_from_step` in the JSON), with AR's tokens; a negative one is a
    one-line error."""
    args = ["generate", "--target", str(qwen_dir), "--draft", str(qwen_drafter_dir)]
    args += ["--prompt-ids", "1,2,3", "--max-new-tokens", "24", "--device", "cpu"]
    args += ["--ignore-eos", "--json"]
    ar = cli_json(capsys, *args[:3], *args[5:])  # no drafter
    out = cli_json(capsys, *args, "--min-acceptance", "100")
    assert out["ar_from_step"] == 8 and out["output_ids"] == ar["output_ids"]
    assert cli_json(capsys, *args)["ar_from_step"] is None
    line = cli_error(capsys, *args[:-1], "--min-acceptance", "-1")
    assert "min_acceptance must be >= 0" in line


def test_generate_switch(capsys, qwen_dir, monkeypatch):
    """--switch sets a module switch for the process (its value in the JSON, the tokens the
    same); a misspelt name, a non-integer, a boolean out of 0/1 and a value outside a module's
    SWITCH_RULES are one-line errors before any model loads."""
    from specpilot.kernels import w12_tc
    from specpilot.models import fused

    monkeypatch.setattr(w12_tc, "VERIFY", True)  # restored after the test
    monkeypatch.setattr(fused, "DRAFT_CONTEXT_ONCE", fused.DRAFT_CONTEXT_ONCE)
    args = ["generate", "--target", str(qwen_dir), *GEN, "--json"]
    plain = cli_json(capsys, *args)
    out = cli_json(capsys, *args, "--switch", "kernels.w12_tc.VERIFY=0", "--switch",
                   "models.fused.DRAFT_CONTEXT_ONCE=2")  # fmt: skip
    assert out["switches"] == {"kernels.w12_tc.VERIFY": 0, "models.fused.DRAFT_CONTEXT_ONCE": 2}
    assert w12_tc.VERIFY is False and fused.DRAFT_CONTEXT_ONCE == 2
    assert out["output_ids"] == plain["output_ids"] and "switches" not in plain
    for bad, words in (
        ("kernels.w12_tc.VERIF=0", "wants MODULE.NAME=INT"),
        ("kernels.nowhere.VERIFY=0", "wants MODULE.NAME=INT"),
        ("kernels.w12_tc.VERIFY=yes", "wants MODULE.NAME=INT"),
        ("kernels.w12_tc.VERIFY", "wants MODULE.NAME=INT"),
        ("kernels.w12_tc.VERIFY=2", "is a boolean: 0 or 1, got 2"),
        ("models.fused.DRAFT_CONTEXT_ONCE=3", "must be 0, 1 or 2, got 3"),
    ):
        assert words in cli_error(capsys, *args, "--switch", bad), bad
    w12_tc.VERIFY = True  # a good switch before a bad one is not applied either
    cli_error(capsys, *args, "--switch", "kernels.w12_tc.VERIFY=0", "--switch", "x.Y=1")
    assert w12_tc.VERIFY is True
    line = cli_error(capsys, "serve", "--target", str(qwen_dir), "--switch", "w12_tc.VERIFY=0")
    assert "wants MODULE.NAME=INT" in line
