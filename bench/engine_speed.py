"""Batch-1 engine speed on one GPU: AR, forward time per block width, draft, replayed speculation.

One process: measures HBM copy bandwidth, builds a synthetic Qwen3-8B-shaped target (and, with
--llama, a Llama-3.1-8B-shaped one) plus a DFlash-b16-shaped drafter directly on the GPU (random
bf16 weights), then at each context length measures
- target forward time for K = 1, 2, 4, 8, 16, 32, 64 tokens (CUDA events over graph replays);
- draft forward time (one block, context one block wide);
- AR decode tok/s through the engine (prefill excluded);
- speculative tok/s with the drafter's real forward and replayed proposals at each tau (the
  acceptance is replayed, labeled "replay");
- each time as a fraction of its bandwidth floor (bytes it must read / measured copy bandwidth);
and transformers eager AR on the same weights as the side-by-side baseline. Prints a table; the
last line is one JSON object.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import cache, partial

import torch
from report import finish, save  # bench/ is on sys.path when run as a script

from specpilot import switches
from specpilot.config import (
    DRAFT_HEADS,
    DRAFT_WEIGHTS,
    L2_AHEAD_MODES,
    PDL_MODES,
    TARGET_HEADS,
    WEIGHT_PREFETCH_MODES,
    DraftConfig,
    EngineConfig,
    ModelConfig,
)
from specpilot.engine.generator import Generator
from specpilot.engine.sequence import Sequence
from specpilot.errors import ConfigError
from specpilot.formats import w12_engine
from specpilot.formats.fp8 import Fp8Weight
from specpilot.models.dflash import DFlashDrafter
from specpilot.models.synth import TARGET_PRESETS, draft_hf_config, randomize
from specpilot.models.target import TargetModel
from specpilot.spec.forcing import token_forcing
from specpilot.spec.replay import AcceptanceProfile, ReplayProposer
from specpilot.switches import apply as apply_switches
from specpilot.switches import values as switch_values

TAUS = (3.0, 4.25, 6.55, 7.87)
WIDTHS = (1, 2, 4, 8, 16, 32, 64)


@cache  # once a process: w12_speed asks for it in its kernel table and end to end
def copy_bandwidth() -> float:
    """Bytes/s of a 2 GiB device-to-device copy (read + write), median of 10."""
    src = torch.randn(2**30 // 2, device="cuda", dtype=torch.bfloat16).repeat(2)
    dst = torch.empty_like(src)
    times = []
    for _ in range(13):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    del src, dst
    return 2 * 2**31 / statistics.median(times[3:])


def add_launch_arguments(parser: argparse.ArgumentParser) -> None:
    """--pdl, --weight-prefetch and --l2-ahead: the kernels' launch switches (EngineConfig.pdl /
    weight_prefetch / l2_ahead, kernels/launch.py)."""
    parser.add_argument(
        "--pdl",
        default=EngineConfig.pdl,
        choices=list(PDL_MODES),
        help="EngineConfig.pdl: programmatic dependent launch",
    )
    parser.add_argument(
        "--weight-prefetch",
        default="off",
        choices=list(WEIGHT_PREFETCH_MODES),
        help="EngineConfig.weight_prefetch",
    )
    parser.add_argument(
        "--l2-ahead",
        default=EngineConfig.l2_ahead,
        choices=list(L2_AHEAD_MODES),
        help="EngineConfig.l2_ahead: weights asked for in L2 ahead of their multiply",
    )


# --ablate: the kernels of the fused forwards that can be left out
ABLATIONS = ("norm", "swiglu", "rope", "attention")


def ablate(parts: set[str]) -> None:
    """--ablate: leave these kernels out of the fused forwards (models/fused.py), each input
    passed on as the output with no launch, to time what they cost inside the graphs. The
    tokens, acceptance checks and token forcing are then meaningless: times only. "norm":
    the RMSNorm kernels; "swiglu": the SwiGLU kernel (the gate half goes on); "rope": q/k norm,
    rotary and the cache write (q goes on unrotated); "attention": split-K attention and its
    merge (q goes on as the attention output)."""
    from specpilot.models import fused

    if "norm" in parts:
        fused.rmsnorm = lambda x, weight, eps, ahead=(): x
    if "swiglu" in parts:
        fused.silu_mul = lambda gate_up, ahead=(): gate_up[:, : gate_up.shape[1] // 2]
    if "rope" in parts:
        fused._FusedBlock.write_kv = lambda self, qkv, heads, *_: qkv[:, : heads * self.head_dim]
    if "attention" in parts:
        fused.decode_attention = lambda q, *_, **__: q


def ablations(text: str) -> set[str]:
    """--ablate's value: comma-separated ABLATIONS."""
    parts = {p for p in text.split(",") if p}
    if parts - set(ABLATIONS):
        raise argparse.ArgumentTypeError(f"--ablate takes {ABLATIONS}, got {sorted(parts)}")
    if "rope" in parts and "attention" not in parts:  # its q would be the projection's slice
        raise argparse.ArgumentTypeError("--ablate rope needs attention too")
    return parts


def named_counts(text: str, names: tuple[str, ...], what: str) -> dict[str, int]:
    """ "N" (every name; -1: none, the defaults) or "name=N,name=M" -> {name: count}."""
    if "=" not in text:
        count = int(text)
        return {} if count < 0 else dict.fromkeys(names, count)
    out = {}
    for item in text.split(","):
        name, _, count = item.partition("=")
        if name not in names:
            listed = ", ".join(names[:-1]) + " and " + names[-1]
            raise argparse.ArgumentTypeError(f"{what} are {listed}, got {name!r}")
        out[name] = int(count)
    return out


def prologue_rows(text: str) -> dict[str, int]:
    """--prologue-rows: "N" (both kinds; -1: the default) or "norm=N,glu=M"."""
    return named_counts(text, ("norm", "glu"), "prologue kinds")


def attention_warps(text: str) -> dict[str, int]:
    """--attention-warps: "N" (every launch) or e.g. "narrow=4,wide=8,merge=8" (the split
    launches of at most / more than attention.WIDE_ROWS query rows, the merge launch)."""
    out = named_counts(text, ("narrow", "wide", "merge"), "attention launches")
    if any(w not in (1, 2, 4, 8, 16) for w in out.values()):
        raise argparse.ArgumentTypeError(f"warps must be a power of two up to 16, got {text!r}")
    return out


def attention_stages(text: str) -> dict[str, int]:
    """--attention-stages: "N" (every split launch) or e.g. "narrow=3,wide=1" (launches of at
    most / more than attention.WIDE_ROWS query rows)."""
    out = named_counts(text, ("narrow", "wide"), "split launches")
    if any(not 1 <= n <= 4 for n in out.values()):
        raise argparse.ArgumentTypeError(f"stages must be 1 to 4, got {text!r}")
    return out


# the attention switches that kernels/attention.SWITCH_RULES checks, as options (and --paired
# arm options) of one integer each, -1 for the kernels' default: option -> (switch, what it sets)
CHECKED_ATTENTION_OPTIONS = {
    "attention_kv_prefetch": ("KV_PREFETCH_KEYS", "the most keys of its slice whose keys and "
                              "values a split program asks L2 for before its PDL wait; 0 none"),
    "attention_q_rows": ("WIDE_Q_ROWS", "the query rows a split program takes in verify and "
                         "draft blocks; 0 all"),
    "attention_kv_step": ("SPLIT_KV_STEP", "the keys a split program's loop takes a step"),
    "attention_merge_program_rows": ("MERGE_PROGRAM_ROWS", "the query rows a merge program "
                                     "takes; 0 one, the merge kernel"),
    "attention_early_positions": ("EARLY_POSITIONS", "1: the split and merge programs read "
                                  "the positions before their PDL wait"),
    "attention_max_splits": ("MAX_SPLITS", "the most key slices an attention launch has; 0 "
                             "no cap"),
    "attention_merge_chunk": ("MERGE_SPLIT_CHUNK", "the slices a one-row merge program loads "
                              "at a time; 0 all"),
}  # fmt: skip


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn, reps: int = 20, wall: bool = False) -> float:
    """Median seconds of fn() measured with CUDA events, or by the wall clock around device
    synchronisations (wall, or without CUDA: the CPU smoke test), after 3 warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        if wall or not torch.cuda.is_available():
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def preset_hf(preset: str) -> dict:
    """A synthetic target's Hugging Face config (models/synth.TARGET_PRESETS), no EOS token."""
    hf = dict(TARGET_PRESETS[preset], eos_token_id=None)
    qwen = hf["model_type"] == "qwen3"
    hf["architectures"] = ["Qwen3ForCausalLM" if qwen else "LlamaForCausalLM"]
    return hf


def build(hf: dict, kind: str, seed: int):
    cfg = ModelConfig.from_hf(hf) if kind == "target" else DraftConfig.from_hf(hf)
    with torch.device("cuda"):
        model = (TargetModel(cfg) if kind == "target" else DFlashDrafter(cfg)).to(torch.bfloat16)
    randomize(model, seed)
    return model.eval().requires_grad_(False)


def linear_bytes(model: torch.nn.Module, skip_embedding: bool = True) -> int:
    """Bytes of weights a forward reads: parameters (bf16) plus W12 and FP8 linears' arrays."""
    from specpilot.formats.packed import PackedLinear

    packed = sum(m.weight.nbytes() for m in model.modules() if isinstance(m, PackedLinear))
    return packed + sum(
        p.numel() * p.element_size()
        for n, p in model.named_parameters()
        if not (skip_embedding and "embed_tokens" in n)
    )


def draft_head_bytes(gen: Generator) -> int:
    """Bytes of the LM head a draft reads: a draft vocabulary's rows or an FP8 copy
    (EngineConfig.draft_head), or the target's head."""
    head = gen.fused_drafter.head if gen.fused_drafter is not None else gen.draft_head
    if gen.draft_ids is None and not isinstance(head, Fp8Weight):
        return linear_bytes(gen.target.lm_head)
    if isinstance(head, torch.Tensor):
        return head.numel() * head.element_size()
    return head.nbytes()  # W12 or FP8


def synthetic_draft_vocab(size: int, vocab_size: int, directory: str | None = None) -> str:
    """A draft vocabulary file of the first `size` ids (in `directory`, default a new temporary
    one): for the random-weight targets, where which ids does not matter for speed (labelled as
    synthetic in the report)."""
    from specpilot.spec import draft_vocab

    directory = directory or tempfile.mkdtemp(prefix="specpilot-vocab-")
    path = f"{directory}/first-{size}.safetensors"
    ids = torch.arange(min(size, vocab_size))
    draft_vocab.save_ids(path, ids, vocab_size, f"synthetic: the first {size} ids")
    return path


def kv_bytes(cfg, context: int) -> int:
    return context * cfg.num_layers * 2 * cfg.num_kv_heads * cfg.head_dim * 2


def prompt(context: int, vocab: int, seed: int = 0) -> list[int]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (context,), generator=gen).tolist()


def certified_rows_of(gen: Generator) -> int:
    """The forwards (by rows, at most) whose tokens a certified LM head gives
    (EngineConfig.target_head as the generator resolved it): 0 none, 1 one-row forwards."""
    return gen.fused_target.certified_rows if gen.fused_target is not None else 0


def forcing(target: TargetModel, prompt_ids: list[int], output_ids: list[int]) -> dict:
    """Token forcing of an engine output against the same bf16 weights through the PyTorch
    modules (teacher-forced, SDPA): a different code path from the fused kernels."""
    report = token_forcing(target, prompt_ids, output_ids, generated_dtype=torch.bfloat16)
    margins = [t.margin for t in report.near_ties + report.failures]
    return {
        "reference": "bf16 PyTorch path",
        "passed": report.passed,
        "checked": report.num_checked,
        "failures": len(report.failures),
        "near_ties": len(report.near_ties),
        "max_margin": max(margins, default=0.0),
    }


REPEATS = 5  # timed runs of each decode measurement after its warm-up: median, min and max
FORCED_ROWS = 2  # rows of each batched run that token forcing checks (measure_batched)


def fresh_runs(
    context: int, vocab: int, new_tokens: int, batch: int = 1
) -> Callable[[], list[Sequence]]:
    """A function returning `batch` new sequences of the benches' `context`-token prompts (seeds
    0, 1, ...), each to decode `new_tokens` more (every timed run starts from them)."""
    prompts = [prompt(context, vocab, seed=i) for i in range(batch)]

    def fresh() -> list[Sequence]:
        return [Sequence(list(ids), new_tokens, frozenset()) for ids in prompts]

    return fresh


def run_tokens(seqs: list[Sequence]) -> int:
    """The tokens a run's sequences decoded after each one's first (the prefill's), summed."""
    return sum(len(s.output_ids) - 1 for s in seqs)


def forcing_text(checks: dict | None) -> str:
    """', forcing AR/spec True/False' for measure_batched's checks (every row checked passed),
    or '' where none ran."""
    if not checks:
        return ""
    ar, spec = (all(c["passed"] for c in checks[m]) for m in ("ar", "spec"))
    return f", forcing AR/spec {ar}/{spec}"


def tok_s_runs(run: Callable[[], list[Sequence]], repeats: int) -> tuple[list[float], Sequence]:
    """`repeats` calls of run (which decodes and returns the sequences it timed, of which the
    first counts) -> each call's tokens/s after the first token, and the last call's first
    sequence."""
    rates = []
    for _ in range(repeats):
        s = run()[0]
        rates.append((len(s.output_ids) - 1) / s.decode_time_s)
    return rates, s


def ar_decode(gen: Generator, fresh: Callable[[], list[Sequence]]) -> list[Sequence]:
    """One AR run of fresh sequences -> them (the run's decode_time_s on each, set by
    Generator.run)."""
    seqs = fresh()
    gen.run(seqs, speculative=False)
    return seqs


def replay_decode(
    gen: Generator, fresh: Callable[[], list[Sequence]], profile: AcceptanceProfile,
    passes: list[int],
) -> list[Sequence]:  # fmt: skip
    """One replayed speculative run (seed 0) -> its sequences; appends the replay passes it
    took to `passes`."""
    seqs, used = gen.run_replay(fresh, profile, seed=0)
    passes.append(used)
    return seqs


def spread(tok_s: list[float]) -> dict:
    """The repeated runs' tokens/s: median (what the table prints), min, max, every run."""
    return {
        "tok_s": statistics.median(tok_s),
        "tok_s_min": min(tok_s),
        "tok_s_max": max(tok_s),
        "tok_s_runs": tok_s,
    }


@torch.inference_mode()
def measure_context(
    gen: Generator,
    context: int,
    new_tokens: int,
    bw: float,
    reference: TargetModel | None = None,
    taus: tuple = TAUS,
    repeats: int = REPEATS,
) -> dict:
    """reference: the bf16 target that token forcing checks outputs against (default: the
    engine's own target, run through the PyTorch modules). AR and each speculative arm: one
    warm-up run, then `repeats` timed runs (median; min, max and every run in the JSON)."""
    target, drafter, dev = gen.target, gen.drafter, gen.device
    reference = target if reference is None else reference
    tcfg = target.config
    fresh = fresh_runs(context, tcfg.vocab_size, new_tokens)
    ids = fresh()[0].prompt_ids
    weight_bytes = linear_bytes(target)
    result: dict = {"context": context}

    # AR through the engine (graphs captured by the warm-up run)
    gen.run(fresh(), speculative=False)
    ar_runs, ar_seq = tok_s_runs(partial(ar_decode, gen, fresh), repeats)
    ar_step = 1 / statistics.median(ar_runs)
    floor = (weight_bytes + kv_bytes(tcfg, context)) / bw
    result["ar"] = {
        **spread(ar_runs),
        "step_ms": ar_step * 1e3,
        "floor_ms": floor * 1e3,
        "fraction_of_floor": floor / ar_step,
    }
    ar_ids = ar_seq.output_ids
    result["ar"]["token_forcing"] = forcing(reference, ids, ar_ids)

    # forward time per width K at this context (positions right after the prompt)
    forwards = {}
    for k in WIDTHS:
        block = torch.tensor([ar_ids[:1] * k], device=dev)
        pos = context + torch.arange(k, device=dev)[None]
        t = timed(lambda b=block, p=pos, n=context + k: gen._target_forward(b, p, n, ()))
        forwards[k] = {"ms": t * 1e3, "ratio_to_k1": None}
    for k in WIDTHS:
        forwards[k]["ratio_to_k1"] = forwards[k]["ms"] / forwards[1]["ms"]
    result["forward"] = forwards

    # draft forward: one block, a one-block context
    k = gen.block_size
    width = len(drafter.config.target_layer_ids) * drafter.config.hidden_size
    hidden = torch.randn(1, k, width, device=dev, dtype=gen.dtype)
    ctx_pos = context - k + torch.arange(k, device=dev)[None]
    anchors = torch.tensor([ar_ids[0]], device=dev)
    block_pos = context + torch.arange(k, device=dev)[None]
    gen._buffers_for("draft", 1, context + new_tokens + 2 * k + 1)
    t_draft = timed(lambda: gen._draft_forward(hidden, ctx_pos, anchors, block_pos, context + k))
    draft_bytes = linear_bytes(gen.drafter) + draft_head_bytes(gen)  # bf16, W12 or FP8
    result["draft"] = {
        "ms": t_draft * 1e3,
        "ratio_to_ar_step": t_draft / ar_step,
        "floor_ms": draft_bytes / bw * 1e3,
    }

    # speculative decoding: real drafter compute, replayed proposals (labeled "replay")
    spec, outputs = {}, {}
    verify_floor = (weight_bytes + kv_bytes(tcfg, context)) / bw
    for tau in taus:
        profile = AcceptanceProfile.from_mean(tau, k)
        gen.run_replay(fresh, profile, seed=0)  # warm-up (captures graphs)
        passes: list[int] = []
        runs, s = tok_s_runs(partial(replay_decode, gen, fresh, profile, passes), repeats)
        gen.profile_steps = True  # one more run with CUDA events per step, not timed
        gen.run_replay(fresh, profile, seed=0)
        gen.profile_steps = False
        breakdown = gen.step_breakdown()
        check = forcing(reference, ids, s.output_ids) if tau == 6.55 else None
        steps = len(s.acceptance_lengths)
        measured_tau = (len(s.output_ids) - 1) / steps
        step_time = measured_tau / statistics.median(runs)
        spec[str(tau)] = {
            "drafter": "replay",
            **spread(runs),
            "measured_tau": measured_tau,
            "step_ms": step_time * 1e3,
            "replay_passes": passes[-1],
            "speedup_vs_ar": statistics.median(runs) * ar_step,
            "step_floor_ms": (verify_floor + draft_bytes / bw) * 1e3,
            "host_and_other_ms": (step_time - t_draft - forwards[16]["ms"] / 1e3) * 1e3,
            "breakdown_ms": breakdown,
            "token_forcing": check,
            "identical_to_ar": s.output_ids == ar_ids,
        }
        outputs[tau] = s.output_ids
    result["speculative"] = spec
    if 6.55 in outputs:
        result["speculative_pipelined"] = pipelined(gen, fresh, outputs[6.55], repeats)
    return result


@torch.inference_mode()
def paired_rounds(
    arms: dict[str, tuple[Generator, Callable[[], None]]],
    context: int,
    new_tokens: int,
    rounds: int,
    tau: float = 6.55,
    batch: int = 1,
) -> dict:
    """A/B(/C...) in interleaved rounds after an untimed one: each round runs every arm once,
    on `batch` sequences at once (their tokens summed over the run's time),
    AR then speculative (replayed tau), in an order rotated by one each round, so that drift
    of the GPU's clocks or of the host falls on every arm alike. arms: name -> (its Generator,
    a function that puts its process-wide switches in place, called before each of its runs);
    the first arm is the base. Each arm's median tok/s, and each other arm's speed-up over the
    base as a ratio of summed rates with its 95% bootstrap interval over rounds
    (measure.compare.bootstrap_speedup, rounds as the pairs). Also whether each arm's tokens
    equal the base's (bf16 and W12 may part at near-ties: forcing is checked by
    measure_context)."""
    if rounds < 2 or not arms:
        raise ValueError(f"paired_rounds needs arms and >= 2 rounds, got {len(arms)} / {rounds}")
    import numpy as np

    from specpilot.measure.compare import bootstrap_speedup

    names = list(arms)
    first = arms[names[0]][0]
    fresh = fresh_runs(context, first.target.config.vocab_size, new_tokens, batch)
    profile = AcceptanceProfile.from_mean(tau, first.block_size)
    runs: dict[str, dict[str, list[tuple[int, float]]]] = {n: {"ar": [], "spec": []} for n in names}
    outputs: dict[str, dict[str, list[int]]] = {}
    for gen, prepare in arms.values():  # warm-up: graphs captured with the arm's switches
        prepare()
        gen.run(fresh(), speculative=False)
        gen.run_replay(fresh, profile, seed=0)
    # round -1 settles and is not kept: run 107's first round was 5-8% slow in every arm
    for r in range(-1, rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            gen, prepare = arms[name]
            prepare()
            for mode, seqs in (
                ("ar", ar_decode(gen, fresh)),
                ("spec", replay_decode(gen, fresh, profile, [])),
            ):
                if r < 0:
                    continue
                runs[name][mode].append((run_tokens(seqs), seqs[0].decode_time_s))
                outputs.setdefault(name, {})[mode] = [s.output_ids for s in seqs]
    out: dict = {"rounds": rounds, "tau": tau, "drafter": "replay", "base": names[0], "arms": {}}
    out["batch"] = batch
    for name in names:
        out["arms"][name] = {
            mode: {
                **spread([t / s for t, s in pairs]),
                "identical_to_base": outputs[name][mode] == outputs[names[0]][mode],
            }  # fmt: skip
            for mode, pairs in runs[name].items()
        }
    for name in names[1:]:
        for mode in ("ar", "spec"):
            new, base = np.array(runs[name][mode]), np.array(runs[names[0]][mode])
            up = bootstrap_speedup(new[:, 0], new[:, 1], base[:, 0], base[:, 1])
            out["arms"][name][mode]["over_base"] = dataclasses.asdict(up)
    if CONTROL in names:
        for name in names[1:]:
            for mode in ("ar", "spec"):
                arm = out["arms"][name][mode]
                arm["beyond_control"] = beyond(arm["over_base"], out["arms"][CONTROL][mode])
    return out


# --paired-control's arm: the base's options again, its own Generator. Two such arms differ by
# up to ~0.7% with tight intervals (docs/LOG.md run 232: AR 0.993x [0.993-0.993]), so an arm's
# speed-up counts only where its interval clears the control's.
CONTROL = "control"


def beyond(up: dict, control: dict) -> bool:
    """Whether a speed-up interval (`over_base`) lies wholly outside the control arm's (and
    1, the base itself): a difference the arms' own spread does not explain."""
    c = control.get("over_base", {"low": 1.0, "high": 1.0})
    low, high = min(c["low"], 1.0), max(c["high"], 1.0)
    return up["low"] > high or up["high"] < low


def with_control(
    arms: dict[str, argparse.Namespace], parser: argparse.ArgumentParser
) -> dict[str, argparse.Namespace]:
    """The arms and, last, CONTROL: a copy of the base's options."""
    if CONTROL in arms:
        parser.error(f"--paired-control adds an arm named {CONTROL!r}; name yours otherwise")
    return arms | {CONTROL: copy.copy(next(iter(arms.values())))}


def paired_lines(result: dict) -> list[str]:
    """A paired_rounds result, a line an arm after the base: its speed-ups with intervals (and,
    with a control arm, whether each lies beyond the control's spread)."""
    lines = []
    for name in list(result["arms"])[1:]:
        arm = result["arms"][name]
        ar, spec = (arm[mode]["over_base"] for mode in ("ar", "spec"))
        line = (
            f"{name}/{result['base']}: AR {ar['ratio']:.3f}x [{ar['low']:.3f}-{ar['high']:.3f}], "
            f"spec@{result['tau']} {spec['ratio']:.3f}x [{spec['low']:.3f}-{spec['high']:.3f}]"
        )
        if name != CONTROL and "beyond_control" in arm["ar"]:
            verdict = ("beyond" if arm[m]["beyond_control"] else "within" for m in ("ar", "spec"))
            line += "; against the control: AR {}, spec {}".format(*verdict)
        lines.append(line)
    return lines


@torch.inference_mode()
def measure_batched(
    gen: Generator,
    context: int,
    new_tokens: int,
    batches: list[int],
    tau: float = 6.55,
    forced_rows: int = FORCED_ROWS,
) -> list[dict]:
    """B sequences at once through the engine (no server): the graphed verify forward of
    [B, block] and draft forward of B blocks, AR and speculative (replayed tau, drafter forward
    real) tok/s summed over the rows: the engine's side of server_speed.py's batched steps.
    The first `forced_rows` rows of each run pass token forcing or not (`forcing`, at every
    context); batched rows part from AR at bf16 near-ties (rows_identical_to_ar), so forcing
    is their check."""
    k, dev = gen.block_size, gen.device
    capture = gen.drafter.config.target_layer_ids
    vocab = gen.target.config.vocab_size
    width = len(capture) * gen.drafter.config.hidden_size
    out = []
    for b in batches:
        fresh = fresh_runs(context, vocab, new_tokens, b)
        profile = AcceptanceProfile.from_mean(tau, k)
        gen.run_replay(fresh, profile, seed=0)  # warm-up: buffers and graphs for batch b
        spec, passes = gen.run_replay(fresh, profile, seed=0)
        ar = fresh()
        stats = gen.run(ar, speculative=False)
        spec_steps = max(len(s.acceptance_lengths) for s in spec)
        tokens = run_tokens(spec)
        block = torch.ones(b, k, dtype=torch.long, device=dev)
        pos = (context + torch.arange(k, device=dev))[None].repeat(b, 1)
        t_verify = timed(partial(gen._target_forward, block, pos, context + k, capture))
        hidden = torch.randn(b, k, width, device=dev, dtype=gen.dtype)
        ctx_pos = pos - k
        anchors = torch.ones(b, dtype=torch.long, device=dev)
        t_draft = timed(partial(gen._draft_forward, hidden, ctx_pos, anchors, pos, context + k))
        ar_tokens = run_tokens(ar)
        forced = {}
        for mode, rows in (("ar", ar), ("spec", spec)):
            checked = rows[:forced_rows]
            forced[mode] = [forcing(gen.target, s.prompt_ids, s.output_ids) for s in checked]
        out.append(
            {
                "batch": b,
                "verify_forward_ms": t_verify * 1e3,
                "draft_forward_ms": t_draft * 1e3,
                "ar_step_ms": stats.decode_s / stats.num_steps * 1e3,
                "ar_tok_s": ar_tokens / stats.decode_s,
                "spec_step_ms": spec[0].decode_time_s / spec_steps * 1e3,
                "spec_tok_s": tokens / spec[0].decode_time_s,
                "spec_over_ar": (tokens / spec[0].decode_time_s) / (ar_tokens / stats.decode_s),
                "measured_tau": tokens / sum(len(s.acceptance_lengths) for s in spec),
                "replay_passes": passes,
                "rows_identical_to_ar": sum(s.output_ids == a.output_ids for s, a in zip(spec, ar)),
                "token_forcing": forced or None,
                "drafter": "replay",
            }
        )
    return out


def pipelined(  # noqa: ANN001
    gen: Generator, fresh, reference_ids: list[int], repeats: int = REPEATS
) -> dict:
    """Speculative tok/s at replayed tau 6.55 and AR tok/s with EngineConfig.pipeline (the host
    one step behind the device), and whether the speculative tokens equal the synchronous
    loop's."""
    plain_config = gen.config
    gen.config = dataclasses.replace(plain_config, pipeline=True)
    try:
        profile = AcceptanceProfile.from_mean(6.55, gen.block_size)
        gen.run_replay(fresh, profile, seed=0)  # warm-up
        passes: list[int] = []
        runs, s = tok_s_runs(partial(replay_decode, gen, fresh, profile, passes), repeats)
        gen.run(fresh(), speculative=False)  # warm-up
        ar_runs, _ = tok_s_runs(partial(ar_decode, gen, fresh), repeats)
    finally:
        gen.config = plain_config
    return {
        "tau": 6.55,
        "drafter": "replay",
        **spread(runs),
        **{f"ar_{key}": value for key, value in spread(ar_runs).items()},
        "measured_tau": (len(s.output_ids) - 1) / len(s.acceptance_lengths),
        "replay_passes": passes[-1],
        "identical_to_unpipelined": s.output_ids == reference_ids,
    }


@torch.inference_mode()
def measure_prefill(gen: Generator, tokens: int, reps: int = 10) -> dict:
    """One prompt's prefill, as a server admits it (the costs of runs 33 / 39 per request):
    the target forward without and with the drafter's captured layers, for each
    EngineConfig.prefill this generator can run ("torch", and "fused" with the Triton
    kernels), then the drafter's context forward (`Generator._draft_prefill`); each the median
    of `reps` after warm-up, wall time (host + device: what the running rows wait for) beside
    the device's own time."""
    ids = prompt(tokens, gen.target.config.vocab_size, seed=1)
    gen._buffers_for("target", 1, tokens + 64)
    gen._buffers_for("draft", 1, tokens + 64)
    capture = gen.drafter.config.target_layer_ids
    hidden = {}

    def target(layers):  # noqa: ANN001, ANN202
        def run() -> None:
            hidden["h"] = gen._prefill([Sequence(list(ids), 2, frozenset())], layers)

        return run

    def draft() -> None:
        gen._draft_prefill([Sequence(list(ids), 2, frozenset())], hidden["h"])

    def both(fn) -> dict:  # noqa: ANN001
        return {"wall_ms": timed(fn, reps, wall=True) * 1e3, "device_ms": timed(fn, reps) * 1e3}

    own = gen.config
    out: dict = {"tokens": tokens}
    try:
        for mode in ("torch", "fused") if gen.fused_target is not None else ("torch",):
            gen.config = dataclasses.replace(own, prefill=mode)
            out[mode] = {"target": both(target(())), "target_capture": both(target(capture))}
    finally:
        gen.config = own
    target(capture)()
    out["draft"] = both(draft)
    return out


# CUDA runtime calls whose self time includes waiting for the device (a copy to the host, a
# synchronisation): host time only in part
BLOCKING_CALLS = ("cudaMemcpyAsync", "cudaStreamSynchronize", "cudaEventSynchronize",
                  "cudaDeviceSynchronize")  # fmt: skip


def host_profile(gen: Generator, context: int, new_tokens: int, tau: float = 6.55) -> dict:
    """Host (CPU) time a decode step by operator: torch.profiler with CPU activities over two
    speculative runs at `context` with replayed proposals, of `new_tokens` and of 3x as many;
    each operator's self time and calls in the longer run less the shorter's, over the steps it
    has more. So the prefill, the drafter's context write and the run's set-up cancel, which a
    single run's totals would charge to its steps (docs/LOG.md run 75). Only the speculative run
    is profiled: `run_replay`'s AR reference and its earlier passes only find the continuations
    (profiled with them, run 81 charged ~6.5 AR steps to each speculative step). Calls in
    BLOCKING_CALLS are listed apart: their self time is mostly the host waiting for the device."""
    from torch.profiler import ProfilerActivity, profile

    acceptance = AcceptanceProfile.from_mean(tau, gen.block_size)
    vocab = gen.target.config.vocab_size
    with profile(activities=[ProfilerActivity.CPU]):  # the profiler's own first-use set-up, which
        sync()  # made the first profiled run the longer one in wall time (run 84: -87 ms a step)
    profiled = []
    for tokens in (new_tokens, 3 * new_tokens):
        fresh = fresh_runs(context, vocab, tokens)
        agreed, _ = gen.run_replay(fresh, acceptance, seed=0)  # also the warm-up
        continuations = [s.output_ids for s in agreed]
        seqs = fresh()
        proposer = ReplayProposer(continuations, acceptance, vocab, seed=0)
        sync()
        start = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            gen.run(seqs, speculative=True, proposer=proposer)
            sync()
        wall = time.perf_counter() - start
        ops = {e.key[:80]: (e.self_cpu_time_total, e.count) for e in prof.key_averages()}
        profiled.append((len(seqs[0].acceptance_lengths), wall, ops))
    (steps0, wall0, ops0), (steps1, wall1, ops1) = profiled
    steps = steps1 - steps0
    if steps < 1:
        raise RuntimeError(f"the longer run made no more steps ({steps1} vs {steps0})")
    per_step = {}
    for key, (us, calls) in ops1.items():
        us0, calls0 = ops0.get(key, (0.0, 0))
        if calls > calls0:
            per_step[key] = {"us": (us - us0) / steps, "calls": (calls - calls0) / steps}
    ranked = sorted(per_step.items(), key=lambda kv: -kv[1]["us"])
    host = [kv for kv in ranked if kv[0] not in BLOCKING_CALLS]
    return {
        "context": context,
        "tau": tau,
        "steps": steps,
        "wall_ms_per_step": (wall1 - wall0) / steps * 1e3,  # under the profiler
        "top_self_cpu_us_per_step": dict(host[:20]),
        "host_us_per_step": sum(v["us"] for _, v in host),
        "blocking_per_step": {k: v for k, v in ranked if k in BLOCKING_CALLS},
        "calls_per_step": {k: round(v["calls"], 2) for k, v in ranked},
    }


def device_timeline(prof) -> list[tuple[float, float, str]]:  # noqa: ANN001 - a torch profile
    """A profile's device activity (kernels, those replayed inside CUDA graphs included, copies,
    memsets) as (start us, end us, name), in start order."""
    from torch.autograd import DeviceType

    rows = [
        (e.time_range.start, e.time_range.end, e.name)
        for e in prof.events()
        if e.device_type == DeviceType.CUDA
    ]
    return sorted(rows)


def ours(name: str) -> bool:
    """Whether a device activity is one of our Triton kernels (their names begin with "_")."""
    return name.startswith("_")


def timeline_sums(rows: list[tuple[float, float, str]]) -> dict:
    """A device timeline's totals (us): its span, the time our kernels and the others (PyTorch's
    kernels, copies, memsets) run (each kind's union of busy time, kernels that overlap under
    PDL counted once), their launches, the others' busy time and launches by name, and the idle
    time between one activity's end (the latest so far) and the next's start, summed by the
    pair of names around it ("a -> b")."""
    out = {"span": 0.0, "ours": 0.0, "others": 0.0, "ours_n": 0, "others_n": 0, "idle": 0.0}
    pairs: dict[str, list[float]] = {}
    by_name: dict[str, list[float]] = {}
    if not rows:
        return out | {"pairs": pairs, "others_by_name": by_name}
    end, last = rows[0][0], rows[0][2]
    kind_end = {True: rows[0][0], False: rows[0][0]}
    for start, stop, name in rows:
        mine = ours(name)
        key = "ours" if mine else "others"
        busy = max(stop - max(start, kind_end[mine]), 0.0)
        out[key] += busy
        out[key + "_n"] += 1
        kind_end[mine] = max(kind_end[mine], stop)
        if not mine:
            entry = by_name.setdefault(name[:60], [0.0, 0])
            entry[0] += busy
            entry[1] += 1
        if start > end:
            out["idle"] += start - end
            pair = pairs.setdefault(f"{last[:40]} -> {name[:40]}", [0.0, 0])
            pair[0] += start - end
            pair[1] += 1
        if stop >= end:
            end, last = stop, name
    out["span"] = end - rows[0][0]
    return out | {"pairs": pairs, "others_by_name": by_name}


# the pipelined loop's one copy a step: its packed result to the host's pinned buffer
STEP_COPY = "Memcpy DtoH (Device -> Pinned)"


def loop_profile(
    gen: Generator,
    context: int,
    new_tokens: int,
    tau: float = 6.55,
    replay: bool = True,
    speculative: bool = True,
) -> dict:
    """The device's time line of the pipelined speculative loop (EngineConfig.pipeline, as
    `pipelined` runs it, with replayed proposals at `tau`, or with `replay` False the drafter's
    own: no replay glue, the loop a deployment runs, at whatever the drafter's acceptance is:
    ~1 token a step for random weights), or with `speculative` False the pipelined AR loop (a
    step: one token's forward and the work between forwards; run 230: 4.04 ms a token against
    a 4.00 ms forward back to back): torch.profiler's CUDA activity over
    one run at `context`, from the end of its first step's result copy (STEP_COPY, one a step)
    to the end of its last, so whole steps only: no prefill, no drafter context write, no first
    (eager) step. Per step (us): the span, our kernels' busy time and the others' (the PyTorch
    work between and around the graphs: the anchor block, argmaxes, accept, packing, the next
    step's inputs, the result's copy) with their launches, the others by name, the idle time,
    and the largest idle sums by the pair of activities around them. Beside it the same run's
    unprofiled wall time a step (prefill and all: an upper bound)."""
    from torch.profiler import ProfilerActivity, profile

    replay = replay and speculative
    acceptance = AcceptanceProfile.from_mean(tau, gen.block_size) if replay else None
    vocab = gen.target.config.vocab_size
    plain_config = gen.config
    gen.config = dataclasses.replace(plain_config, pipeline=True)
    cuda = gen.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    try:
        with profile(activities=activities):  # the profiler's own first-use set-up
            sync()
        fresh = fresh_runs(context, vocab, new_tokens)
        continuations = None
        if replay:
            agreed, _ = gen.run_replay(fresh, acceptance, seed=0)  # also the warm-up
            continuations = [s.output_ids for s in agreed]
        else:
            gen.run(fresh(), speculative=speculative)  # the warm-up

        def proposer() -> ReplayProposer | None:  # the same draws each run
            if continuations is None:
                return None
            return ReplayProposer(continuations, acceptance, vocab, seed=0)

        seqs = fresh()
        start = time.perf_counter()
        gen.run(seqs, speculative=speculative, proposer=proposer())  # unprofiled
        sync()
        wall = time.perf_counter() - start
        seqs = fresh()
        with profile(activities=activities) as prof:
            gen.run(seqs, speculative=speculative, proposer=proposer())
            sync()
    finally:
        gen.config = plain_config
    run_steps = len(seqs[0].acceptance_lengths) if speculative else len(seqs[0].output_ids) - 1
    rows = device_timeline(prof)
    copies = [i for i, r in enumerate(rows) if r[2].startswith(STEP_COPY)]
    steps = max(len(copies) - 1, 0)
    window = rows[copies[0] + 1 : copies[-1] + 1] if steps >= 1 else []
    sums = timeline_sums(window)
    n = max(steps, 1)
    per_step = {k: v / n for k, v in sums.items() if k not in ("pairs", "others_by_name")}

    def ranked(table: dict[str, list[float]], most: int) -> dict:
        top = sorted(table.items(), key=lambda kv: -kv[1][0])[:most]
        return {k: {"us": us / n, "calls": calls / n} for k, (us, calls) in top}

    return {
        "context": context,
        "tau": tau if replay else None,
        "proposals": ("replay" if replay else "drafter") if speculative else "none (AR)",
        "steps": steps,
        "run_steps": run_steps,
        "us_per_step": per_step,
        "unprofiled_wall_us_per_step": wall / max(run_steps, 1) * 1e6,
        "others_per_step": ranked(sums["others_by_name"], 25),
        "largest_idle_per_step": ranked(sums["pairs"], 15),
    }


def print_loop_profile(label: str, p: dict) -> None:
    """loop_profile's result in three lines: the step's parts, its largest idle times, the
    others' busy times."""
    u, wall = p["us_per_step"], p["unprofiled_wall_us_per_step"]
    print(
        f"{label} ctx {p['context']} pipelined step on the device ({p['proposals']}, "
        f"{p['steps']} steps, "
        f"profiled): span {u['span']:.0f} us (unprofiled wall {wall:.0f}), ours "
        f"{u['ours']:.0f} us/{u['ours_n']:.0f}, others {u['others']:.0f} us/"
        f"{u['others_n']:.0f}, idle {u['idle']:.0f} us",
        flush=True,
    )
    for title, key in (("largest idle", "largest_idle_per_step"), ("others", "others_per_step")):
        rows = ", ".join(f"{k} {v['us']:.1f}us/{v['calls']:.1f}" for k, v in p[key].items())
        print(f"{label} ctx {p['context']} {title} a step: {rows}", flush=True)


@torch.inference_mode()
def kernel_profile(gen: Generator, context: int) -> dict:
    """GPU microseconds per forward by kernel name (torch.profiler over eager forwards, so
    names are resolved): decode (K=1), verify (K=16) and draft, at `context`, and a whole
    speculative step ("step": draft, verify and the PyTorch work around them, the anchor
    block, argmaxes, accept and packing, that the kernel timeline does not see). On the CPU
    (the smoke test) the operators' self CPU time instead."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    dev = gen.device
    cuda = dev.type == "cuda"
    gen._buffers_for("target", 1, context + 64)
    gen._buffers_for("draft", 1, context + 64)
    k = gen.block_size
    width = len(gen.drafter.config.target_layer_ids) * gen.drafter.config.hidden_size
    hidden = torch.randn(1, k, width, device=dev, dtype=gen.dtype)
    ctx_pos = context - k + torch.arange(k, device=dev)[None]
    block_pos = context + torch.arange(k, device=dev)[None]
    anchors = torch.tensor([1], device=dev)
    use_graphs, gen.use_graphs = gen.use_graphs, False
    forwards = {
        "decode": lambda: gen._target_forward(block_pos[:, :1] * 0 + 1, block_pos[:, :1], 0, ()),
        "verify": lambda: gen._target_forward(block_pos * 0 + 1, block_pos, 0, ()),
        "draft": lambda: gen._draft_forward(hidden, ctx_pos, anchors, block_pos, context + k),
        # meta (start, first context position, anchor), replay None, kv lengths, captures
        "step": lambda: gen._spec_step(
            hidden,
            torch.tensor([[context, context - k, 1]], device=dev),
            None,
            context,
            context + k,
            tuple(gen.drafter.config.target_layer_ids),
        ),
    }
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    out: dict = {}
    by_multiply = {}
    w12_engine.PROFILE_RANGES = True  # each multiply in a range named by its kind and shape
    try:
        for name, fn in forwards.items():
            fn()
            sync()
            with profile(activities=activities) as prof:
                for _ in range(3):
                    fn()
                sync()
            rows, ranges = {}, {}
            for e in prof.key_averages():
                is_range = e.key.split(" ")[0] in w12_engine.PROFILE_KINDS
                if cuda:
                    us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
                    if not is_range and e.device_type != DeviceType.CUDA:
                        continue  # operators: their kernels are listed themselves
                else:
                    us = e.cpu_time_total if is_range else e.self_cpu_time_total
                if us > 0:
                    row = {"us_per_forward": us / 3, "calls_per_forward": e.count / 3}
                    (ranges if is_range else rows)[e.key[:60]] = row
            out[name] = dict(sorted(rows.items(), key=lambda kv: -kv[1]["us_per_forward"]))
            if name != "step":  # the step's multiplies are the verify's and the draft's
                by_multiply[name] = dict(sorted(ranges.items(), key=lambda kv: kv[0]))
    finally:
        w12_engine.PROFILE_RANGES = False
        gen.use_graphs = use_graphs
    out["by_multiply"] = by_multiply
    return out


def print_kernel_profile(label: str, context: int, profiles: dict) -> None:
    """kernel_profile's result: a line a forward with its total and its six largest kernels,
    then a line a forward with each multiply shape's time (us) and calls."""
    for name, rows in profiles.items():
        if name == "by_multiply":
            continue
        total = sum(r["us_per_forward"] for r in rows.values())
        top = ", ".join(
            f"{k} {r['us_per_forward']:.0f}us/{r['calls_per_forward']:.0f}"
            for k, r in list(rows.items())[:6]
        )
        print(f"{label} {name} forward (eager, ctx {context}): {total:.0f} us: {top}", flush=True)
    for name, ranges in profiles.get("by_multiply", {}).items():
        shapes = ", ".join(
            f"{k} {r['us_per_forward']:.0f}us/{r['calls_per_forward']:.0f}"
            for k, r in ranges.items()
        )
        print(f"{label} {name} multiplies: {shapes or 'none (no fused path here)'}", flush=True)


@torch.inference_mode()
def transformers_ar(target: TargetModel, hf: dict, new_tokens: int) -> float:
    from transformers import AutoConfig, AutoModelForCausalLM

    fields = {k: v for k, v in hf.items() if k != "model_type"}
    config = AutoConfig.for_model(hf["model_type"], **fields)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.load_state_dict(target.state_dict(), strict=False)
    model.eval()
    ids = torch.tensor([prompt(1024, hf["vocab_size"])], device="cuda")
    kwargs = dict(
        do_sample=False, eos_token_id=None, pad_token_id=0, attention_mask=torch.ones_like(ids)
    )
    model.generate(ids, max_new_tokens=4, **kwargs)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **kwargs)
    torch.cuda.synchronize()
    n = out.shape[1] - ids.shape[1]
    del model
    torch.cuda.empty_cache()
    return n / (time.perf_counter() - t0)


def module_switch(text: str) -> tuple[str, str, int]:
    """--switch MODULE.NAME=INT -> (module, name, value), checked against the module
    (specpilot.switches.parse) so that a bad value fails here and not after the models are
    built."""
    try:
        return switches.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def module_switches(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """(module, attribute) -> value: the process-wide switches of models/fused,
    kernels/attention and kernels/launch that these options set (the options left at their
    defaults set none)."""
    from specpilot.kernels import attention, launch  # the switches are these modules' own
    from specpilot.models import fused

    out: dict = {}
    if args.swiglu_epilogue >= 0:
        out[fused, "SWIGLU_EPILOGUE_MIN_ROWS"] = args.swiglu_epilogue
    if args.merge_rows >= 0:
        out[attention, "FUSED_MERGE_MAX_ROWS"] = args.merge_rows
    for flag, switch in (("attention_min_keys", "MIN_SPLIT_KEYS"),
                         ("attention_min_keys_wide", "WIDE_MIN_SPLIT_KEYS")):  # fmt: skip
        keys = getattr(args, flag)
        if keys % attention.BLOCK_KV:
            option = "--" + flag.replace("_", "-")
            parser.error(f"{option} must be a multiple of {attention.BLOCK_KV}")
        if keys:
            out[attention, switch] = keys
    if args.prologue_rows:
        out[fused, "PROLOGUE_ROWS"] = fused.PROLOGUE_ROWS | args.prologue_rows
    if args.prologue_max_k:
        out[fused, "PROLOGUE_MAX_K"] = args.prologue_max_k
    if args.pdl_min_waves:
        out[launch, "PDL_MIN_WAVES"] = args.pdl_min_waves
    for flag, (switch, _) in CHECKED_ATTENTION_OPTIONS.items():
        value = getattr(args, flag)  # -1: the default; the kernels' own rule for the rest
        if value >= 0:
            try:
                out[attention, switch] = attention.checked(switch, value)
            except ValueError as exc:
                parser.error(f"--{flag.replace('_', '-')}: {exc}")
    split = {k: v for k, v in args.attention_warps.items() if k != "merge"}
    if split:
        out[attention, "SPLIT_WARPS"] = attention.SPLIT_WARPS | split
    if "merge" in args.attention_warps:
        out[attention, "MERGE_WARPS"] = args.attention_warps["merge"]
    if args.attention_stages:
        out[attention, "SPLIT_STAGES"] = attention.SPLIT_STAGES | args.attention_stages
    return out | switch_values(args.switch)


def engine_config(args: argparse.Namespace, vocab_size: int) -> EngineConfig:
    """The EngineConfig that these options ask for, with the host-synchronous loop unless
    --pipeline 1 (the AR and spec columns since run 10; `pipelined` measures
    EngineConfig.pipeline's, the engine's default on CUDA, beside it)."""
    return EngineConfig(
        pipeline=bool(args.pipeline),
        cuda_graphs=bool(args.graphs),
        kernels=args.kernels,
        pdl=args.pdl,
        weight_prefetch=args.weight_prefetch,
        l2_ahead=args.l2_ahead,
        draft_vocab=synthetic_draft_vocab(args.draft_vocab, vocab_size) if args.draft_vocab else "",
        draft_head=args.draft_head,
        draft_weights=args.draft_weights,
        tiles=args.tiles,
        step_graph=bool(args.step_graph),
        decode_graph=bool(args.decode_graph),
        target_head=args.target_head,
    )


# the options a --paired arm may set: an engine's own (EngineConfig) or a module switch
ARM_OPTIONS = (
    "kernels", "pdl", "weight_prefetch", "l2_ahead", "tiles", "draft_vocab", "draft_head",
    "draft_weights", "target_head", "swiglu_epilogue",
    "merge_rows", "attention_min_keys", "attention_min_keys_wide", "prologue_rows",
    "prologue_max_k", "pdl_min_waves", "attention_warps", "attention_stages", "switch",
    "step_graph", "decode_graph", "pipeline",
    *CHECKED_ATTENTION_OPTIONS,
)  # fmt: skip


def paired_arms(
    spec: str,
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    least: int = 2,
    option: str = "--paired",
) -> dict[str, argparse.Namespace]:
    """--paired "name|options;name|options;...": each arm's options over the defaults, the
    first arm the base. Only ARM_OPTIONS, which the command line (args) then leaves alone; at
    least `least` arms (`option`: the command line's name for them, in errors)."""
    import shlex

    defaults = parser.parse_args([])
    common = [k for k in ARM_OPTIONS if getattr(args, k) != getattr(defaults, k)]
    if common:
        names = ", ".join("--" + k.replace("_", "-") for k in common)
        parser.error(f"with {option}, {names} belong in the arms")
    arms: dict[str, argparse.Namespace] = {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        name, _, options = part.partition("|")
        if not name or name in arms:
            parser.error(f"{option}: arm names must be given and distinct ({part!r})")
        arm = parser.parse_args(shlex.split(options))
        other = [k for k, v in vars(arm).items() if v != getattr(defaults, k)]
        other = [k for k in other if k not in ARM_OPTIONS]
        if other:
            names = ", ".join("--" + k.replace("_", "-") for k in other)
            parser.error(f"{option} arm {name!r}: {names} cannot differ between arms")
        module_switches(arm, parser)  # its errors now, not after the models are built
        arms[name] = arm
    if len(arms) < least:
        parser.error(f"{option} needs at least {least} arm{'s' if least > 1 else ''}")
    return arms


def arm_summary(arm: argparse.Namespace) -> dict:
    """An arm's ARM_OPTIONS, for the report."""
    return {k: getattr(arm, k) for k in ARM_OPTIONS}


def arm_preparers(
    arms: dict[str, argparse.Namespace], parser: argparse.ArgumentParser
) -> tuple[Callable[[str], None], Callable[[], None]]:
    """For arms of one process (paired_arms): a function that puts arm `name`'s process-wide
    state in place (its module switches, the defaults for the switches only other arms set,
    and the built-in tile tables plus its own tiles file), and one that puts the defaults and
    the built-in tables back. A Generator built or run after prepare(name) runs as that arm;
    EngineConfig.tiles also installs the arm's file when the Generator is built."""
    from specpilot.kernels import tiles as tiles_files

    switches = {n: module_switches(a, parser) for n, a in arms.items()}
    defaults = {key: getattr(*key) for sw in switches.values() for key in sw}
    tables = tiles_files.tables()
    own = {n: tiles_files.read(a.tiles) if a.tiles else None for n, a in arms.items()}

    def prepare(name: str) -> None:
        apply_switches(defaults | switches[name])
        tiles_files.restore(tables)
        if own[name]:
            tiles_files.install(own[name])

    def restore() -> None:
        apply_switches(defaults)
        tiles_files.restore(tables)

    return prepare, restore


def run_paired(
    arms: dict[str, argparse.Namespace],
    target: TargetModel,
    drafter: DFlashDrafter,
    context: int,
    args: argparse.Namespace,
) -> dict:
    """The arms on one target and drafter, each with its own Generator (graphs captured with
    its switches in place), in args.paired_rounds interleaved rounds (paired_rounds): AR and
    replayed spec@6.55 tok/s of each, and each arm's speed-up over the first with its 95%
    interval. Switches an arm leaves alone are the defaults while it runs, and the tile tables
    are the built-in ones plus the arm's own tiles file."""
    prepare_arm, restore = arm_preparers(arms, build_parser())
    kept: dict = {}
    for name, arm in arms.items():
        prepare_arm(name)
        config = engine_config(arm, target.config.vocab_size)
        weight = target.lm_head.weight
        gen = Generator(target, drafter, config, weight.device, weight.dtype)

        def prepare(name=name, gen=gen) -> None:
            prepare_arm(name)
            gen.configure_launches()

        kept[name] = (gen, prepare)
    result = paired_rounds(
        kept, context, args.new_tokens, args.paired_rounds, batch=args.paired_batch
    )
    restore()
    result["context"] = context
    result["options"] = {n: arm_summary(a) for n, a in arms.items()}
    result["pdl"] = {n: gen.pdl for n, (gen, _) in kept.items()}
    # the forwards (by rows, at most) whose tokens the certified head gives (target_head resolved)
    result["certified_rows"] = {n: certified_rows_of(gen) for n, (gen, _) in kept.items()}
    for line in paired_lines(result):
        batch = f", batch {args.paired_batch}" if args.paired_batch > 1 else ""
        print(f"paired ({args.paired_rounds} rounds, ctx {context}{batch}) {line}", flush=True)
    kept.clear()
    return result


def build_parser() -> argparse.ArgumentParser:
    from specpilot.kernels import attention  # its switches' rules, for the options' help

    parser = argparse.ArgumentParser()
    parser.add_argument("--contexts", default="1024,8192,32768", help="comma-separated; '': none")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--graphs", type=int, default=1)
    parser.add_argument(
        "--models",
        default="qwen3-8b",
        help="target shapes (models/synth.py presets), e.g. "
        "qwen3-8b,smollm2-135m (the embedded target's shape, with a 3-layer drafter)",
    )
    parser.add_argument(
        "--llama", action="store_true", help="also the Llama-3.1-8B shape, at --llama-contexts"
    )
    parser.add_argument("--llama-contexts", default="1024", help="with --llama ('': none)")
    parser.add_argument("--hf-baseline", type=int, default=1)
    parser.add_argument("--profile", type=int, default=1, help="per-kernel GPU time per forward")
    parser.add_argument("--kernels", default="auto", help="auto, triton or torch (EngineConfig)")
    parser.add_argument(
        "--torch-baseline", type=int, default=1, help="also AR with kernels=torch (first context)"
    )
    parser.add_argument(
        "--batches", default="8,32", help="batch sizes measured at the first context ('' : none)"
    )
    parser.add_argument(
        "--prefill-tokens",
        type=int,
        default=0,
        help="also time one prompt's prefill of this many tokens (target, captured, drafter)",
    )
    parser.add_argument(
        "--prologue-rows",
        type=prologue_rows,
        default={},
        help="bf16 multiplies compute their norm / SwiGLU input themselves up to this many rows: "
        "N for both or 'norm=N,glu=M' (models/fused.PROLOGUE_ROWS; -1 / none: the default)",
    )
    parser.add_argument(
        "--prologue-max-k",
        type=int,
        default=0,
        help="... for inputs at most this wide (models/fused.PROLOGUE_MAX_K; 0: default)",
    )
    parser.add_argument(
        "--ablate",
        type=ablations,
        default=set(),
        help=f"leave these kernels out of the fused forwards to time them (comma-separated of "
        f"{ABLATIONS}; the tokens are then meaningless: times only)",
    )
    parser.add_argument(
        "--merge-rows",
        type=int,
        default=-1,
        help="attention: the last split program merges up to this many query rows itself "
        "(kernels/attention.FUSED_MERGE_MAX_ROWS; 0: always the merge kernel; -1: default)",
    )
    parser.add_argument(
        "--attention-min-keys",
        type=int,
        default=0,
        help="attention: the fewest keys a slice takes (kernels/attention.MIN_SPLIT_KEYS, a "
        "multiple of 64); 0: default",
    )
    parser.add_argument(
        "--attention-min-keys-wide",
        type=int,
        default=0,
        help="attention: the fewest keys a slice takes in verify and draft blocks (more than "
        "attention.WIDE_ROWS query rows; kernels/attention.WIDE_MIN_SPLIT_KEYS, a multiple of "
        "64); 0: default",
    )
    for flag, (switch, what) in CHECKED_ATTENTION_OPTIONS.items():
        rule = attention.SWITCH_RULES[switch][1]
        parser.add_argument(
            "--" + flag.replace("_", "-"),
            type=int,
            default=-1,
            help=f"attention: {what} (kernels/attention.{switch}: {rule}); -1: default",
        )
    parser.add_argument(
        "--attention-warps",
        type=attention_warps,
        default={},
        help="warps a program of the attention's launches: N for all, or "
        "'narrow=N,wide=M,merge=K' (kernels/attention.SPLIT_WARPS / MERGE_WARPS; default 4)",
    )
    parser.add_argument(
        "--attention-stages",
        type=attention_stages,
        default={},
        help="key blocks the split launches' loop pipelines: N for all, or 'narrow=N,wide=M' "
        "(kernels/attention.SPLIT_STAGES; default 3)",
    )
    parser.add_argument(
        "--swiglu-epilogue",
        type=int,
        default=-1,
        help="the gate|up multiply ends in silu(gate) * up from this many token rows on, 0: "
        "never (models/fused.SWIGLU_EPILOGUE_MIN_ROWS; -1: default)",
    )
    parser.add_argument(
        "--tiles", default="", help="EngineConfig.tiles: a tiles file over the built-in tiles"
    )
    parser.add_argument(
        "--draft-vocab",
        type=int,
        default=0,
        help="EngineConfig.draft_vocab of the first N ids (synthetic: speed only; acceptance is "
        "replayed either way; bench/draft_vocab_acceptance.py measures its cost); 0: all",
    )
    parser.add_argument(
        "--draft-weights",
        default="auto",
        choices=DRAFT_WEIGHTS,
        help="EngineConfig.draft_weights (fp8: the drafter's linears in e4m3)",
    )
    parser.add_argument(
        "--draft-head",
        default="auto",
        choices=DRAFT_HEADS,
        help="EngineConfig.draft_head (fp8: the draft's LM head in e4m3; acceptance is replayed "
        "either way; bench/draft_head_acceptance.py measures its cost)",
    )
    parser.add_argument(
        "--target-head",
        default="auto",
        choices=TARGET_HEADS,
        help="EngineConfig.target_head (certified: the argmax from an int8 copy of the LM head "
        "and the bf16 rows it cannot rule out; the same tokens)",
    )
    add_launch_arguments(parser)
    parser.add_argument(
        "--switch",
        type=module_switch,
        action="append",
        default=[],
        help="MODULE.NAME=INT (repeatable): set the integer (or 0/1 boolean) switch NAME of "
        "specpilot.MODULE for the process, e.g. kernels.elementwise.NORM_WARPS=1",
    )
    parser.add_argument(
        "--pdl-min-waves",
        type=float,
        default=0.0,
        help="pdl waves: the fewest programs an SM of a multiply launched with PDL "
        "(kernels/launch.PDL_MIN_WAVES); 0: default",
    )
    parser.add_argument(
        "--taus", default=",".join(map(str, TAUS)), help="replayed acceptance lengths (6.55 always)"
    )
    parser.add_argument(
        "--loop-profile",
        type=int,
        default=0,
        help="1: the device's time line of the pipelined speculative loop (loop_profile); 2: also "
        "with the drafter's own proposals (no replay glue); 3: also the pipelined AR loop",
    )
    parser.add_argument(
        "--pipeline",
        type=int,
        default=0,
        help="1: the AR and spec columns (and --paired arms) with EngineConfig.pipeline",
    )
    parser.add_argument(
        "--step-graph",
        type=int,
        default=0,
        help="1: EngineConfig.step_graph (a whole speculative step one CUDA graph)",
    )
    parser.add_argument(
        "--decode-graph",
        type=int,
        default=0,
        help="1: EngineConfig.decode_graph (a pipelined AR step one CUDA graph feeding itself)",
    )
    parser.add_argument(
        "--host-profile",
        type=int,
        default=0,
        help="1: after each context, the host time of one spec@6.55 run by CPU operator",
    )
    parser.add_argument(
        "--repeats", type=int, default=REPEATS, help="timed runs per decode arm (each prefills)"
    )
    parser.add_argument(
        "--paired",
        default="",
        help="'name|options;name|options;...': instead of the report, these arms (each its own "
        "options of " + ", ".join("--" + k.replace("_", "-") for k in ARM_OPTIONS) + " over "
        "the defaults; the first the base) on one model each, at the first context, in "
        "interleaved rounds: speed-ups with 95%% intervals",
    )
    parser.add_argument("--paired-rounds", type=int, default=8, help="with --paired")
    parser.add_argument(
        "--paired-control",
        type=int,
        default=1,
        help=f"with --paired: 1 adds an arm {CONTROL!r} of the base's options (its own "
        "Generator), and each arm's speed-up is called beyond or within the control's spread",
    )
    parser.add_argument(
        "--paired-batch",
        type=int,
        default=1,
        help="with --paired: sequences decoded at once in each run (tokens summed)",
    )
    parser.add_argument("--out")
    return parser


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    apply_switches(module_switches(args, parser))
    arms = paired_arms(args.paired, parser, args) if args.paired else {}
    if arms and args.paired_control:
        arms = with_control(arms, parser)
    if args.paired_batch < 1:
        parser.error(f"--paired-batch must be at least 1, got {args.paired_batch}")
    if args.ablate:
        print(f"ABLATED (times only, outputs meaningless): {sorted(args.ablate)}", flush=True)
        ablate(args.ablate)
    torch.backends.cuda.matmul.allow_tf32 = False
    bw = copy_bandwidth()
    report: dict = {
        "bench": "engine_speed",
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "copy_bandwidth_tb_s": bw / 1e12,
        "cuda_graphs": bool(args.graphs),
        "kernels": args.kernels,
        "prologue_rows": args.prologue_rows or "default",
        "prologue_max_k": args.prologue_max_k or "default",
        "ablated": sorted(args.ablate) or "none (outputs valid)",
        "pdl": args.pdl,
        "weight_prefetch": args.weight_prefetch,
        "l2_ahead": args.l2_ahead,
        "draft_vocab": f"synthetic: first {args.draft_vocab} ids" if args.draft_vocab else "all",
        "draft_head": args.draft_head,
        "draft_weights": args.draft_weights,
        "target_head": args.target_head,
        "attention_merge_rows": args.merge_rows if args.merge_rows >= 0 else "default",
        "swiglu_epilogue_min_rows": (
            args.swiglu_epilogue if args.swiglu_epilogue >= 0 else "default"
        ),
        "attention_min_keys": args.attention_min_keys or "default",
        "attention_min_keys_wide": args.attention_min_keys_wide or "default",
        "pdl_min_waves": args.pdl_min_waves or "default",
        "attention_warps": args.attention_warps or "default",
        "attention_stages": args.attention_stages or "default",
        "switches": [f"{path}.{name}={value}" for path, name, value in args.switch] or "none",
        **{
            flag: getattr(args, flag) if getattr(args, flag) >= 0 else "default"
            for flag in CHECKED_ATTENTION_OPTIONS
        },
        "new_tokens": args.new_tokens,
        "acceptance": "replayed (drafter forward real, proposals replayed)",
    }
    taus = tuple(sorted({float(t) for t in args.taus.split(",") if t} | {6.55}))
    presets = [p for p in args.models.split(",") if p] + (["llama3.1-8b"] if args.llama else [])
    contexts = {"llama3.1-8b": args.llama_contexts}
    contexts.update({p: args.contexts for p in presets if p != "llama3.1-8b"})
    for preset in presets:
        hf = preset_hf(preset)
        target = build(hf, "target", 0)
        draft_preset = "dflash-b16-l3" if preset == "smollm2-135m" else "dflash-b16"
        drafter = build(draft_hf_config(draft_preset, hf), "draft", 1)
        own = [int(c) for c in contexts[preset].split(",") if c]  # "": none (e.g. --llama only)
        if arms:  # instead of the report, at the first context
            if own:
                report[preset] = run_paired(arms, target, drafter, own[0], args)
                save(report, args.out)
            del target, drafter
            torch.cuda.empty_cache()
            continue
        config = engine_config(args, hf["vocab_size"])
        gen = Generator(target, drafter, config, torch.device("cuda"), torch.bfloat16)
        entry = {"weight_bytes": linear_bytes(target), "pdl": gen.pdl,
                 "certified_rows": certified_rows_of(gen), "contexts": []}  # fmt: skip
        if args.profile and own:
            entry["kernel_profile"] = kernel_profile(gen, own[0])
            print_kernel_profile(preset, own[0], entry["kernel_profile"])
        for context in own:
            entry["contexts"].append(
                measure_context(gen, context, args.new_tokens, bw, taus=taus, repeats=args.repeats)
            )
            c = entry["contexts"][-1]
            save(report | {preset: entry}, args.out)  # kept should a profile below fail
            if args.loop_profile:
                c["loop_profile"] = loop_profile(gen, context, args.new_tokens)
                print_loop_profile(preset, c["loop_profile"])
            if args.loop_profile == 2:  # the drafter's own proposals: no replay glue
                c["loop_profile_drafter"] = p = loop_profile(
                    gen, context, args.new_tokens, replay=False
                )
                print_loop_profile(preset, p)
            if args.loop_profile == 3:  # the AR loop: a token's step beyond its forward
                c["loop_profile_ar"] = p = loop_profile(
                    gen, context, args.new_tokens, speculative=False
                )
                print_loop_profile(f"{preset} AR", p)
            if args.host_profile:
                c["host_profile"] = h = host_profile(gen, context, args.new_tokens)
                top = ", ".join(
                    f"{k} {v['us']:.0f}us/{v['calls']:.1f}"
                    for k, v in list(h["top_self_cpu_us_per_step"].items())[:6]
                )
                print(
                    f"{preset} ctx {context} host per step ({h['steps']} steps): "
                    f"{h['host_us_per_step']:.0f} us, {top}"
                )
            save(report | {preset: entry}, args.out)  # partial results survive a timeout
            print(
                f"{preset} ctx {context}: AR {c['ar']['tok_s']:.1f} tok/s "
                f"[{c['ar']['tok_s_min']:.1f}-{c['ar']['tok_s_max']:.1f}] "
                f"({c['ar']['fraction_of_floor']:.0%} of floor), verify16/AR "
                f"{c['forward'][16]['ms'] / c['ar']['step_ms']:.2f}, draft/AR "
                f"{c['draft']['ratio_to_ar_step']:.2f}, spec@6.55 "
                f"{c['speculative']['6.55']['tok_s']:.0f} tok/s "
                f"[{c['speculative']['6.55']['tok_s_min']:.0f}-"
                f"{c['speculative']['6.55']['tok_s_max']:.0f}] (pipelined "
                f"{c['speculative_pipelined']['tok_s']:.0f}, pipelined AR "
                f"{c['speculative_pipelined']['ar_tok_s']:.1f}), forcing AR/spec "
                f"{(c['ar'].get('token_forcing') or {}).get('passed')}/"
                f"{(c['speculative']['6.55']['token_forcing'] or {}).get('passed')}",
                flush=True,
            )
        if args.prefill_tokens:
            entry["prefill"] = p = measure_prefill(gen, args.prefill_tokens)
            for mode in ("torch", "fused"):
                if mode in p:
                    t, c = p[mode]["target"], p[mode]["target_capture"]
                    print(
                        f"{preset} prefill of {p['tokens']} tokens, {mode} (wall / device ms): "
                        f"target {t['wall_ms']:.1f} / {t['device_ms']:.1f}, with captured "
                        f"layers {c['wall_ms']:.1f} / {c['device_ms']:.1f}",
                        flush=True,
                    )
            d = p["draft"]
            print(f"drafter context {d['wall_ms']:.1f} / {d['device_ms']:.1f} ms", flush=True)
        if args.batches and own:
            context = own[0]
            batches = [int(b) for b in args.batches.split(",")]
            entry["batched"] = measure_batched(gen, context, args.new_tokens, batches)
            for r in entry["batched"]:
                print(
                    f"{preset} ctx {context} batch {r['batch']}: verify "
                    f"{r['verify_forward_ms']:.2f} ms, draft {r['draft_forward_ms']:.2f} ms, "
                    f"AR {r['ar_tok_s']:.0f} tok/s "
                    f"({r['ar_step_ms']:.2f} ms/step), spec@6.55 {r['spec_tok_s']:.0f} tok/s "
                    f"({r['spec_step_ms']:.2f} ms/step) = {r['spec_over_ar']:.2f}x AR"
                    f"{forcing_text(r['token_forcing'])}",
                    flush=True,
                )
            save(report | {preset: entry}, args.out)
        if args.torch_baseline:
            context = int(args.contexts.split(",")[0])
            base = Generator(
                target,
                None,
                EngineConfig(cuda_graphs=bool(args.graphs), kernels="torch", pipeline=False),
                torch.device("cuda"),
                torch.bfloat16,
            )
            fresh = fresh_runs(context, target.config.vocab_size, args.new_tokens)
            base.run(fresh(), speculative=False)
            stats = base.run(fresh(), speculative=False)
            entry["torch_path_ar_tok_s"] = (args.new_tokens - 1) / stats.decode_s
            entry["torch_path_context"] = context
            del base
            torch.cuda.empty_cache()
        if args.hf_baseline:
            entry["transformers_eager_ar_tok_s"] = transformers_ar(target, hf, 32)
        report[preset] = entry
        del gen, target, drafter
        torch.cuda.empty_cache()
    print(
        f"{'model':<12} {'ctx':>6} {'AR tok/s':>9} {'%floor':>7} {'K=16/K=1':>9} "
        f"{'draft/AR':>9} " + " ".join(f"{'tau' + str(t):>9}" for t in taus)
    )
    for preset in presets:
        for c in report[preset].get("contexts", []):
            print(
                f"{preset:<12} {c['context']:>6} {c['ar']['tok_s']:>9.1f} "
                f"{c['ar']['fraction_of_floor']:>7.0%} {c['forward'][16]['ratio_to_k1']:>9.2f} "
                f"{c['draft']['ratio_to_ar_step']:>9.2f} "
                + " ".join(f"{c['speculative'][str(t)]['tok_s']:>9.0f}" for t in taus)
            )
        if "torch_path_ar_tok_s" in report[preset]:
            print(
                f"{preset}: our engine, PyTorch path (kernels=torch) AR "
                f"{report[preset]['torch_path_ar_tok_s']:.1f} tok/s"
            )
        for c in report[preset].get("contexts", []):
            b = c["speculative"]["6.55"]["breakdown_ms"]
            if b:
                print(
                    f"{preset} ctx {c['context']} step @6.55: host before {b['host_before_ms']:.2f}"
                    f" ms, draft+verify+accept graph {b['step_ms']:.2f} ms, host after "
                    f"{b['host_after_ms']:.2f} ms; drafter context write "
                    f"{b['draft_prefill_ms']:.2f} ms a run"
                )
        if "transformers_eager_ar_tok_s" in report[preset]:
            hf_tok_s = report[preset]["transformers_eager_ar_tok_s"]
            print(f"{preset}: transformers eager AR {hf_tok_s:.1f} tok/s")
    finish(report, args.out)


if __name__ == "__main__":
    main()
