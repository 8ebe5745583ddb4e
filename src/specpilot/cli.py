"""The `specpilot` command line: generate, synth, validate, train-drafter; bench, compare, score;
serve; w12 convert | stats.

Every command that measures or checks ends its output with one JSON line (with --json for
generate) so that other programs can read it. User errors print one line and exit with code 2;
a failed token-forcing check exits with code 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from specpilot import switches
from specpilot.errors import ConfigError, SpecPilotError
from specpilot.formats import w12_checkpoint
from specpilot.measure import bench, compare, score
from specpilot.server import command as serve_command
from specpilot.spec import draft_vocab
from specpilot.train import command as train_command


def _ids(text: str, flag: str) -> list[int]:
    try:
        ids = [int(t) for t in text.replace(" ", "").split(",") if t]
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated integers, got {text!r}") from None
    if not ids:
        raise ConfigError(f"{flag} is empty")
    return ids


def _engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    p.add_argument("--dtype", default="auto", help="float32, bfloat16 or auto (bf16 on cuda)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specpilot", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="greedy generation, AR or speculative")
    gen.add_argument(
        "--target",
        help="checkpoint dir, .gguf file or hub id[@rev]; default: the embedded SmolLM2-135M-"
        "Instruct with the DFlash drafter we trained for it",
    )
    gen.add_argument(
        "--draft", help="DFlash drafter checkpoint, or replay:TAU (no drafter compute)"
    )
    gen.add_argument(
        "--compare-ar",
        action="store_true",
        help="also decode without the drafter and report AR tok/s and whether outputs match",
    )
    gen.add_argument(
        "--replay",
        help="with --draft PATH: substitute replayed proposals (TAU or "
        "a histogram like 1:0.2,16:0.8) after the real draft",
    )
    src = gen.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", help="prompt text (needs the checkpoint's tokenizer)")
    src.add_argument("--prompt-ids", help="prompt token ids, comma-separated")
    gen.add_argument("--chat", action="store_true", help="wrap --prompt in the chat template")
    gen.add_argument("--max-new-tokens", type=int, default=128)
    gen.add_argument(
        "--block-size",
        type=int,
        default=0,
        help="0: the drafter's own (the embedded pair on a CPU: 8, measured faster there)",
    )
    serve_command.add_cuda_graphs_argument(gen)
    gen.add_argument(
        "--pipeline",
        nargs="?",
        const="on",
        default="auto",
        choices=["auto", "on", "off"],
        help="launch each speculative step before the previous one is booked (same tokens); "
        "auto: on on CUDA (H200: a step ~7%% faster for the embedded pair, run 35; 2-4%% at the "
        "Qwen3-8B shape, runs 40 and 44), off on a CPU",
    )
    serve_command.add_weights_arguments(gen)
    serve_command.add_draft_arguments(gen)
    serve_command.add_pdl_argument(gen)
    serve_command.add_tiles_argument(gen)
    serve_command.add_switch_argument(gen)
    gen.add_argument(
        "--min-acceptance",
        type=float,
        default=0.0,
        help="finish with AR decoding when, after 8 speculative steps, the mean acceptance "
        "length is below this (where AR is faster; same tokens); 0: never",
    )
    gen.add_argument("--ignore-eos", action="store_true", help="do not stop at end-of-sequence")
    gen.add_argument("--validate", action="store_true", help="token-force the output afterwards")
    gen.add_argument("--seed", type=int, default=0, help="seed of the replay profile")
    gen.add_argument("--json", action="store_true", help="end with one JSON line")
    _engine_args(gen)

    syn = sub.add_parser("synth", help="write a random-weight checkpoint at a real shape")
    syn.add_argument("--arch", required=True, choices=["qwen3", "llama", "dflash"])
    syn.add_argument("--preset", required=True, help="models/synth.py: a target or drafter preset")
    syn.add_argument("--out", required=True, type=Path)
    syn.add_argument("--target", type=Path, help="(dflash) the target checkpoint to size it to")
    syn.add_argument("--seed", type=int, default=0)
    syn.add_argument("--init-std", type=float, default=0.02, help="std of the random weights")
    syn.add_argument("--save-dtype", default="bfloat16", choices=["float32", "bfloat16"])
    syn.add_argument("--device", default="cpu", help="where to draw the weights (cuda is faster)")

    val = sub.add_parser("validate", help="token forcing: check outputs against the target")
    val.add_argument("--target", required=True)
    val.add_argument("--prompt-ids")
    val.add_argument("--output-ids")
    val.add_argument("--results", type=Path, help="JSON / JSON-lines file(s) of generate --json")
    val.add_argument(
        "--threshold",
        type=float,
        help="near-tie logit margin; default by the dtype the output was generated in "
        "(float32 1e-3, bfloat16 0.5)",
    )
    val.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    val.add_argument(
        "--dtype", default="float32", help="precision of the reference forward (default float32)"
    )
    bench.add_parser(sub)
    compare.add_parser(sub)
    score.add_parser(sub)
    serve_command.add_parser(sub)
    w12_checkpoint.add_parser(sub)
    draft_vocab.add_parser(sub)

    trn = sub.add_parser("train-drafter", help="train a DFlash drafter by self-distillation")
    train_command.add_arguments(trn)
    return parser


def _load_results(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    text = path.read_text()
    records: list[dict[str, Any]] = []
    try:
        whole = json.loads(text)
        records = whole if isinstance(whole, list) else [whole]
    except json.JSONDecodeError:
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    records = [
        r for r in records if isinstance(r, dict) and "output_ids" in r and "prompt_ids" in r
    ]
    if not records:
        raise ConfigError(f"{path}: no JSON object with prompt_ids and output_ids found")
    for i, r in enumerate(records):
        for key in ("prompt_ids", "output_ids"):
            ids = r[key]
            if not isinstance(ids, list) or not all(type(t) is int for t in ids):
                raise ConfigError(f"{path}: record {i}: {key} must be a list of integers")
    return records


def cmd_generate(args: argparse.Namespace) -> int:
    from specpilot.config import EngineConfig
    from specpilot.engine.llm import LLM

    if args.max_new_tokens <= 0:
        raise ConfigError(f"--max-new-tokens must be > 0, got {args.max_new_tokens}")
    if args.replay and not args.draft:
        raise ConfigError("--replay needs --draft PATH (or use --draft replay:TAU)")
    from specpilot.models.embedded import resolve_pair

    switched = switches.from_texts(args.switch)
    args.target, args.draft, defaults = resolve_pair(args.target, args.draft, args.device)
    llm = LLM(
        args.target,
        draft=args.draft,
        device=args.device,
        dtype=args.dtype,
        engine=EngineConfig(
            block_size=args.block_size or defaults["block_size"],
            cuda_graphs=args.cuda_graphs,
            weights=args.weights,
            w12_matrices=args.w12_matrices,
            draft_vocab=args.draft_vocab,
            draft_head=args.draft_head,
            draft_weights=args.draft_weights,
            pdl=args.pdl,
            tiles=args.tiles,
            target_head=args.target_head,
            min_acceptance=args.min_acceptance,
            pipeline=defaults["pipeline"] if args.pipeline == "auto" else args.pipeline == "on",
        ),
        replay=args.replay,
        seed=args.seed,
    )
    prompt = _ids(args.prompt_ids, "--prompt-ids") if args.prompt_ids else args.prompt
    out = llm.generate(
        prompt, max_new_tokens=args.max_new_tokens, chat=args.chat, ignore_eos=args.ignore_eos
    )[0]
    record = out.to_dict()
    record.update(
        target=str(args.target),
        draft=args.draft,
        device=str(llm.device),
        dtype=str(llm.dtype).removeprefix("torch."),
        block_size=llm.generator.block_size,
    )
    if switched:
        record["switches"] = switched
    if args.validate:
        record["validation"] = llm.validate(out.prompt_ids, out.output_ids).to_dict()
    if args.compare_ar:
        ar = llm.generate(
            out.prompt_ids, args.max_new_tokens, ignore_eos=args.ignore_eos, speculative=False
        )[0]
        record["ar"] = {
            "tokens_per_s": ar.tokens_per_s,
            "identical": ar.output_ids == out.output_ids,
            "speedup": ar.decode_time_s / out.decode_time_s if out.decode_time_s else None,
        }
    if out.text is not None:
        print(out.text)
    print(
        f"[{len(out.output_ids)} tokens, {out.tokens_per_s:.1f} tok/s, "
        f"TTFT {out.time_to_first_token_s * 1e3:.1f} ms, drafter {out.drafter}, "
        f"mean acceptance length {out.mean_acceptance_length:.2f}"
        + (f", AR from step {out.ar_from_step}" if out.ar_from_step is not None else "")
        + "]",
        file=sys.stderr,
    )
    if args.compare_ar:
        a = record["ar"]
        print(
            f"[AR (same engine, no drafter): {a['tokens_per_s']:.1f} tok/s; speculative "
            f"{out.tokens_per_s:.1f} tok/s = {a['speedup']:.2f}x; outputs identical: "
            f"{a['identical']}]",
            file=sys.stderr,
        )
    if args.validate:
        v = record["validation"]
        print(
            f"[token forcing: {'PASS' if v['passed'] else 'FAIL'}, {v['num_failures']} failures, "
            f"{v['num_near_ties']} near-ties]",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps(record))
    return 0 if not args.validate or record["validation"]["passed"] else 1


def cmd_synth(args: argparse.Namespace) -> int:
    import torch

    from specpilot.config import resolve_device
    from specpilot.models.synth import (
        draft_hf_config,
        synth_drafter,
        synth_target,
        target_hf_config,
    )

    dtype = torch.float32 if args.save_dtype == "float32" else torch.bfloat16
    device = str(resolve_device(args.device))
    if args.arch == "dflash":
        if args.target is None:
            raise ConfigError("--arch dflash needs --target DIR (the target it drafts for)")
        config_file = args.target / "config.json"
        if not config_file.is_file():
            raise ConfigError(f"{config_file}: file not found")
        hf = draft_hf_config(args.preset, json.loads(config_file.read_text()))
        cfg = synth_drafter(args.out, hf, args.seed, dtype, device, args.init_std)
        summary = {
            "arch": "dflash",
            "layers": cfg.num_layers,
            "block_size": cfg.block_size,
            "target_layer_ids": list(cfg.target_layer_ids),
        }
    else:
        hf = target_hf_config(args.arch, args.preset)
        cfg = synth_target(args.out, hf, args.seed, dtype, device, args.init_std)
        summary = {
            "arch": cfg.arch,
            "layers": cfg.num_layers,
            "hidden": cfg.hidden_size,
            "vocab": cfg.vocab_size,
        }
    print(json.dumps({"out": str(args.out), **summary}))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from specpilot.config import resolve_device, resolve_dtype
    from specpilot.models.loader import load_target
    from specpilot.spec.forcing import token_forcing

    if args.results is not None:
        if args.prompt_ids or args.output_ids:
            raise ConfigError("give either --results or --prompt-ids with --output-ids")
        records = _load_results(args.results)
        pairs = [(r["prompt_ids"], r["output_ids"]) for r in records]
        generated = [r.get("dtype") for r in records]
    elif args.prompt_ids and args.output_ids:
        pairs = [(_ids(args.prompt_ids, "--prompt-ids"), _ids(args.output_ids, "--output-ids"))]
        generated = [None]
    else:
        raise ConfigError("validate needs --results FILE or both --prompt-ids and --output-ids")
    device = resolve_device(args.device)
    dtype_name = (
        args.dtype if args.dtype != "auto" else ("bfloat16" if device.type == "cuda" else "float32")
    )
    target, _ = load_target(args.target, device, resolve_dtype(dtype_name))
    vocab = target.config.vocab_size
    for prompt_ids, output_ids in pairs:
        if not prompt_ids:
            raise ConfigError("prompt_ids is empty")
        bad = [t for t in prompt_ids + output_ids if not 0 <= t < vocab]
        if bad:
            raise ConfigError(f"token ids {bad[:3]} are outside the vocabulary ({vocab})")
    reports = [
        token_forcing(target, p, o, args.threshold, gen_dtype).to_dict()
        for (p, o), gen_dtype in zip(pairs, generated)
    ]
    passed = all(r["passed"] for r in reports)
    for i, r in enumerate(reports):
        print(
            f"output {i}: {'PASS' if r['passed'] else 'FAIL'} ({r['num_checked']} tokens, "
            f"{r['num_failures']} failures, {r['num_near_ties']} near-ties)"
        )
        for f in r["failures"][:10]:
            print(
                f"  token {f['index']}: emitted {f['token']}, target argmax {f['argmax']}, "
                f"margin {f['margin']:.4f}"
            )
    print(
        json.dumps(
            {
                "passed": passed,
                "num_outputs": len(reports),
                "num_checked": sum(r["num_checked"] for r in reports),
                "num_failures": sum(r["num_failures"] for r in reports),
                "num_near_ties": sum(r["num_near_ties"] for r in reports),
                "reports": reports,
            }
        )
    )
    return 0 if passed else 1


COMMANDS = {
    "generate": cmd_generate,
    "synth": cmd_synth,
    "validate": cmd_validate,
    "bench": bench.cmd_bench,
    "compare": compare.cmd_compare,
    "score": score.cmd_score,
    "serve": serve_command.cmd_serve,
    "train-drafter": train_command.run,
    "w12": w12_checkpoint.cmd_w12,
    "draft-vocab": draft_vocab.cmd_draft_vocab,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except SpecPilotError as exc:
        print(f"specpilot {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
