"""Configuration dataclasses, one per layer of the system, each validated once in `__post_init__`.

`ModelConfig` describes a target (Qwen3 or Llama family) and is parsed from a Hugging Face
config.json dict; `DraftConfig` describes a DFlash drafter in the z-lab format; `EngineConfig` holds
the mechanisms a tuner may switch (block size, CUDA graphs, kernels). Values are resolved before
construction: no "auto" survives into a constructed config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from specpilot.errors import CheckpointError, ConfigError

SUPPORTED_TARGETS = ("qwen3", "llama")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class RopeScaling:
    """Rotary scaling: `default`, `linear` or `llama3` (Llama-3.1 frequency-dependent scaling)."""

    rope_type: str = "default"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192

    def __post_init__(self) -> None:
        if self.rope_type not in ("default", "linear", "llama3"):
            raise ConfigError(
                f"unsupported rope_scaling type {self.rope_type!r} "
                "(supported: default, linear, llama3)"
            )
        if self.factor <= 0:
            raise ConfigError(f"rope_scaling factor must be > 0, got {self.factor}")


def _rope_from_hf(hf: dict[str, Any]) -> tuple[float, RopeScaling]:
    """Read rope theta and scaling from either config style (transformers 4 or 5)."""
    params = hf.get("rope_parameters") or {}
    scaling = hf.get("rope_scaling") or {}
    merged = {**params, **scaling}
    theta = float(merged.get("rope_theta", hf.get("rope_theta", 10000.0)))
    rope_type = merged.get("rope_type", merged.get("type", "default")) or "default"
    if rope_type == "default":
        return theta, RopeScaling()
    return theta, RopeScaling(
        rope_type=rope_type,
        factor=float(merged.get("factor", 1.0)),
        low_freq_factor=float(merged.get("low_freq_factor", 1.0)),
        high_freq_factor=float(merged.get("high_freq_factor", 4.0)),
        original_max_position_embeddings=int(merged.get("original_max_position_embeddings", 8192)),
    )


def _require(hf: dict[str, Any], key: str, where: str) -> Any:
    if key not in hf:
        raise CheckpointError(f"{where}: config is missing {key!r}")
    return hf[key]


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only target: Qwen3 dense (q/k RMSNorm) or Llama-3 family."""

    arch: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = field(default_factory=RopeScaling)
    max_position_embeddings: int = 4096
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    eos_token_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.arch not in SUPPORTED_TARGETS:
            raise ConfigError(
                f"unsupported target architecture {self.arch!r} (supported: qwen3, llama)"
            )
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "max_position_embeddings",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"num_attention_heads ({self.num_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_kv_heads})"
            )
        if self.head_dim % 2:
            raise ConfigError(f"head_dim must be even for rotary embeddings, got {self.head_dim}")

    @property
    def qk_norm(self) -> bool:
        return self.arch == "qwen3"

    @classmethod
    def from_hf(cls, hf: dict[str, Any], where: str = "config.json") -> ModelConfig:
        model_type = hf.get("model_type", "")
        if model_type not in SUPPORTED_TARGETS:
            raise CheckpointError(
                f"{where}: unsupported model_type {model_type!r} (supported: qwen3, llama)"
            )
        hidden = int(_require(hf, "hidden_size", where))
        heads = int(_require(hf, "num_attention_heads", where))
        theta, scaling = _rope_from_hf(hf)
        eos = hf.get("eos_token_id")
        eos_ids = tuple(eos) if isinstance(eos, list) else (() if eos is None else (int(eos),))
        return cls(
            arch=model_type,
            vocab_size=int(_require(hf, "vocab_size", where)),
            hidden_size=hidden,
            intermediate_size=int(_require(hf, "intermediate_size", where)),
            num_layers=int(_require(hf, "num_hidden_layers", where)),
            num_heads=heads,
            num_kv_heads=int(hf.get("num_key_value_heads") or heads),
            head_dim=int(hf.get("head_dim") or hidden // heads),
            rms_norm_eps=float(hf.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            rope_scaling=scaling,
            max_position_embeddings=int(hf.get("max_position_embeddings", 4096)),
            tie_word_embeddings=bool(hf.get("tie_word_embeddings", False)),
            attention_bias=bool(hf.get("attention_bias", False)),
            mlp_bias=bool(hf.get("mlp_bias", False)),
            eos_token_ids=eos_ids,
        )


@dataclass(frozen=True)
class DraftConfig:
    """A DFlash drafter (z-lab format): a few Qwen3-style layers fed by target hidden states."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    block_size: int
    num_target_layers: int
    target_layer_ids: tuple[int, ...]
    mask_token_id: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = field(default_factory=RopeScaling)
    attention_bias: bool = False
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    is_causal: bool | None = None

    def __post_init__(self) -> None:
        if self.block_size < 2:
            raise ConfigError(f"drafter block_size must be >= 2, got {self.block_size}")
        if not self.target_layer_ids:
            raise ConfigError("drafter config has no dflash_config.target_layer_ids")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(
                "drafter num_attention_heads must be a multiple of num_key_value_heads"
            )
        if self.layer_types and len(self.layer_types) != self.num_layers:
            raise ConfigError(
                f"drafter layer_types has {len(self.layer_types)} entries "
                f"for {self.num_layers} layers"
            )
        for kind in self.layer_types:
            if kind not in ("full_attention", "sliding_attention"):
                raise ConfigError(f"unsupported drafter layer type {kind!r}")
        if "sliding_attention" in self.layer_types and not self.sliding_window:
            raise ConfigError("drafter has sliding_attention layers but no sliding_window")

    def layer_window(self, layer: int) -> int | None:
        """Sliding window of one drafter layer, or None for full attention."""
        if self.layer_types and self.layer_types[layer] == "sliding_attention":
            return self.sliding_window
        return None

    def layer_is_causal(self, layer: int) -> bool:
        """Whether the block attends causally in one layer (z-lab default: sliding layers only)."""
        if self.is_causal is not None:
            return self.is_causal
        return self.layer_window(layer) is not None

    @classmethod
    def from_hf(cls, hf: dict[str, Any], where: str = "config.json") -> DraftConfig:
        dflash = hf.get("dflash_config") or {}
        hidden = int(_require(hf, "hidden_size", where))
        heads = int(_require(hf, "num_attention_heads", where))
        ids = dflash.get("target_layer_ids", hf.get("target_layer_ids"))
        if ids is None:
            raise CheckpointError(
                f"{where}: drafter config is missing dflash_config.target_layer_ids"
            )
        mask = dflash.get("mask_token_id", hf.get("mask_token_id"))
        if mask is None:
            raise CheckpointError(f"{where}: drafter config is missing dflash_config.mask_token_id")
        theta, scaling = _rope_from_hf(hf)
        return cls(
            hidden_size=hidden,
            intermediate_size=int(_require(hf, "intermediate_size", where)),
            num_layers=int(_require(hf, "num_hidden_layers", where)),
            num_heads=heads,
            num_kv_heads=int(hf.get("num_key_value_heads") or heads),
            head_dim=int(hf.get("head_dim") or hidden // heads),
            vocab_size=int(_require(hf, "vocab_size", where)),
            block_size=int(dflash.get("block_size", hf.get("block_size", 16))),
            num_target_layers=int(_require(hf, "num_target_layers", where)),
            target_layer_ids=tuple(int(i) for i in ids),
            mask_token_id=int(mask),
            rms_norm_eps=float(hf.get("rms_norm_eps", 1e-6)),
            rope_theta=theta,
            rope_scaling=scaling,
            attention_bias=bool(hf.get("attention_bias", False)),
            layer_types=tuple(hf.get("layer_types") or ()),
            sliding_window=hf.get("sliding_window"),
            is_causal=hf.get("is_causal"),
        )

    def check_fits(self, target: ModelConfig, where: str = "drafter") -> None:
        """Raise a one-line error when this drafter cannot run against `target`."""
        if self.hidden_size != target.hidden_size:
            raise CheckpointError(
                f"{where}: hidden size {self.hidden_size} does not match the target's "
                f"{target.hidden_size}"
            )
        if self.vocab_size != target.vocab_size:
            raise CheckpointError(
                f"{where}: vocabulary size {self.vocab_size} does not match the target's "
                f"{target.vocab_size}"
            )
        if self.num_target_layers != target.num_layers:
            raise CheckpointError(
                f"{where}: trained for a target with {self.num_target_layers} layers, "
                f"the target has {target.num_layers}"
            )
        bad = [i for i in self.target_layer_ids if not 0 <= i < target.num_layers]
        if bad:
            raise CheckpointError(
                f"{where}: target_layer_ids {bad} are outside the target's "
                f"{target.num_layers} layers"
            )
        if not 0 <= self.mask_token_id < target.vocab_size:
            raise CheckpointError(
                f"{where}: mask_token_id {self.mask_token_id} is outside the target's vocabulary "
                f"({target.vocab_size})"
            )


# EngineConfig.weight_prefetch's, l2_ahead's and pdl's values (kernels/launch.py)
WEIGHT_PREFETCH_MODES = ("off", "tile", "l2")
L2_AHEAD_MODES = ("off", "o", "all")
PDL_MODES = ("auto", "off", "decode", "all", "small", "kernels", "chain", "waves")
DRAFT_HEADS = ("auto", "target", "bfloat16", "fp8")  # EngineConfig.draft_head
DRAFT_WEIGHTS = ("auto", "model", "fp8")  # EngineConfig.draft_weights
TARGET_HEADS = ("auto", "exact", "certified", "certified-decode")  # EngineConfig.target_head


@dataclass(frozen=True)
class EngineConfig:
    """Mechanisms of the engine, each a knob a tuner can set.

    block_size: tokens per speculative block (anchor + block_size - 1 drafts); 0: the drafter's.
    cuda_graphs: replay decode, verify and draft forwards as CUDA graphs (CUDA only; no-op on CPU)
    kernels: "auto" runs decode/verify/draft forwards of <= 64 tokens through our Triton kernels
        on CUDA in bf16/fp16 (models/fused.py) and everything else through the PyTorch modules;
        "triton" insists (an error where they cannot run); "torch" never uses them.
    step_graph: with cuda_graphs, capture a whole speculative step (draft, verify, accept) as
        one graph instead of one graph each for draft and verify. Off by default: on the H200
        the single graph measured slower in runs 10-11 (854 vs 967 tok/s at tau 6.55), and in
        run 151 (paired, 1k) level in the pipelined loop (the default on CUDA: 1.062x against
        1.059x of the host-synchronous loop without it) and 1.026x [1.005-1.048] in the
        host-synchronous one; level again in run 173 (pipelined, with the booking at the
        launch: spec@6.55 0.998x [0.992-1.003]).
    decode_graph: with cuda_graphs and pipeline, each step of the AR loop is one CUDA graph
        that feeds itself: the forward, then the next step's token and position (+ 1, held at
        the row's limit) written into the graph's own inputs (kernels/tokens.next_decode),
        instead of a graph whose inputs are copied in and four launches around it (two input
        copies, an add and a minimum). The host still reads each step's token one step behind.
        Off: on the H200 (Qwen3-8B shape, 1k, paired, pipelined, 8 rounds) AR 1.001x
        [1.001-1.002] (docs/LOG.md run 212) and 1.000x [0.999-1.001] (run 213): the launches
        it saves cost ~1.5 us each. Its tokens written by the graph into a ring in mapped host
        memory instead of copied (run 213): 0.999x [0.998-0.999], taken out.
    weights: "bf16" keeps the checkpoint's weights; "w12" converts linear layers (those of
        w12_matrices, among the decoder layers', an untied lm_head, the drafter's fc) to the
        lossless 12-bit format on load (formats/w12.py; needs bf16); "auto" (default): "w12"
        where the target is a W12 checkpoint (`specpilot w12 convert`) loaded in bfloat16 (the
        CUDA default), else "bf16". A W12 checkpoint under "auto" or "w12" in bfloat16 loads its
        stored arrays as they are (no bf16 copy of its weights is made). LLM.engine_config holds
        the weights resolved ("bf16" or "w12").
    w12_matrices: with W12 weights, which matrices convert: "all" (every linear layer: the
        least memory), a comma-separated list of formats/w12_engine.MATRICES (qkv, o, gate_up,
        down, lm_head, fc; the others keep bf16), or "auto": gate_up, down and an untied
        lm_head, measured fastest at the Qwen3-8B shape on the H200 (AR 1.120-1.125x,
        speculative 1.031-1.055x bf16, against 1.118-1.126x / 0.993-0.996x for "all"; docs/LOG.md
        runs 120-121) and at the Llama-3.1-8B shape (1.157x / 1.067x against 1.079x / 0.947x,
        run 124), before certified heads; where target_head certifies verify blocks' heads
        (auto on a shape with a 16-row certified tile) "auto" leaves the head bf16 (run 255:
        AR 1.101x, spec 1.000x against 1.084x / 0.966x with it). `bench/cost_model.py
        --matrices` chooses from a deployment's kernel tables. Same tokens either way.
    pipeline: the host runs one step behind the device: step i + 1 is launched from inputs
        computed on the device (speculative: next positions, anchors, replayed drafts; AR: the
        argmax and position + 1) before the host reads step i's result back and books it, so the
        GPU never waits for the host between steps; a step that may be the last (every row
        within one step of its token limit) is booked before the next launch, so only a stop
        token leaves a launched step to discard. Same tokens as without it
        (tests/test_pipeline.py). True, False, or "auto" (the default): on with CUDA, off on a
        CPU (which would compute the discarded step: a CPU pays for every row). Measured on the
        H200: at the Qwen3-8B shape, 1k, AR 236.7 against 220.9 tok/s and spec@6.55 1,140
        against 1,128 (docs/LOG.md run 141: ~0.3 ms of host time a token that the synchronous
        loop leaves the GPU idle for); for the embedded SmolLM2 pair a speculative step
        1.15-1.20 ms against 1.23-1.38, AR 0.67 ms a token against 0.75 (runs 35, 38).
        The continuous-batching scheduler (server) keeps its own synchronous loop.
    batch_blocks: narrower speculative blocks for wide batches, "ROWS:BLOCK,..." (e.g. "24:8":
        from 24 running sequences on, verify anchor + 7 drafts instead of the full block).
        At batch 1 a verify block is as cheap as one token (the weights are read once either
        way); at 32 sequences x 16 tokens the verify is compute-bound and costs ~3x a decode
        step, so a narrower block that loses little acceptance gives more tokens per second
        (docs/LOG.md run 19). Used by the continuous-batching scheduler; lossless at any width.
    draft_head: the dtype of the LM head that turns the drafter's PyTorch-path output into
        proposals. "target": the target's own lm_head; "bfloat16": a bf16 copy (proposals are
        verified, so the drafter's rounding never changes an emitted token, only acceptance);
        "auto": on a CPU with a float32 target, whichever of the two measures faster at load
        (on the 2-core dev box: 6.5 vs 22.9 ms for 15 rows of SmolLM2's 49,152 x 576 head, a
        fifth of a speculative step); where the fused drafter runs on CUDA "fp8" for drafts
        of one block (engine/generator.FP8_DRAFT_MAX_ROWS; wider ones take the target's head,
        runs 182-183); elsewhere "target". "fp8": an e4m3 copy with a scale per row
        (formats/fp8.py), half the bytes of a bf16 head, in the fused path
        (kernels/linear.skinny_linear) and the PyTorch one alike; with a draft vocabulary, its
        rows. On the H200 (docs/LOG.md runs 177, 179): spec@6.55 1.022-1.023x; acceptance on
        the embedded pair HumanEval 2.611 -> 2.607, MT-Bench 1.613 -> 1.604.
    draft_weights: the drafter's linear layers. "model": as loaded; "fp8": an e4m3 copy with a
        scale per row (formats/fp8.quantized_drafter; the loaded drafter is left as it is, so
        the copy adds half its bytes of memory), half the bytes a draft reads in bf16; "auto"
        (default): fp8 where the fused kernels run the drafter (CUDA, bf16), else model; fp8
        only for drafts of one block (engine/generator.FP8_DRAFT_MAX_ROWS), wider drafts and
        the prompts' context writes on the loaded drafter (batched FP8 drafts lost: 0.71-0.95x
        at 2-32 sequences, runs 182-183).
        Proposals only: outputs stay the target's whatever the drafter's rounding; acceptance
        on the embedded pair (bench/draft_head_acceptance.py, CPU, 40 prompts each) HumanEval
        2.611 -> 2.613, MT-Bench 1.613 -> 1.607 with the FP8 head too. On the H200 (docs/LOG.md
        run 179, Qwen3-8B shape, 1k, paired, pipelined): spec@6.55 1.054x with the FP8 head,
        against 1.022x for the FP8 head alone.
    cpu_linear: float32 linear layers on a CPU. "torch": nn.Linear as is; "onednn": oneDNN on
        weights packed once at load (layers/onednn.py: 1.3-3x faster at 1-16 rows on the dev
        box); "auto": onednn where this torch build has it and the packed copies (the dense
        weights stay) take at most a quarter of physical memory. Applies to the target and the
        drafter, AR and speculative alike.
    prefill: the prompt forward. "torch": the PyTorch modules (masked SDPA, ~40 launches a
        layer); "fused": FusedTarget.prefill (the decode path's ~10 launches a layer, cuBLAS
        multiplies, causal FlashAttention), where the Triton kernels run and the cache rows are
        contiguous; "auto": fused on CUDA, torch elsewhere. Same tokens either way up to bf16
        summation order (AR and speculative share the prefill, so lossless either way; token
        forcing on the H200, run 41). Measured (docs/LOG.md runs 40-43): a 420-token prompt at
        the Qwen3-8B shape 25.6 ms against 57.2; the server at 32 requests 1.97x AR with it
        against 1.53x without (run 39, which also still ran a drafter block per admission).
    pdl: programmatic dependent launch of the Triton kernels (Hopper and later): each kernel may
        start while the one before it finishes, and waits for it before touching its results
        (kernels/launch.py). Same arithmetic, same tokens. "off"; "decode", only in target
        forwards of one token (AR decode steps); "all", every Triton kernel; "small", decode's
        and elsewhere every kernel but the multiplies (launched plainly); "kernels", that rule
        in one-row forwards too; "chain", small's, but a one-row multiply right after a
        multiply launched plainly too; "waves" (level with "chain", run 111), every kernel
        with PDL but a multiply right after a multiply or with a grid under
        launch.PDL_MIN_WAVES (1.5) programs an SM; "auto" (default): "all" for targets whose
        weights are under launch.PDL_ALL_BELOW_BYTES (1 GiB), where a step is bound by
        launches, else "chain".
        Measured on the H200 (docs/LOG.md): at the Qwen3-8B shape "all" made the one-token
        forward 1.3% faster and the 16-token verify 2.7% slower (speculative -5%, runs 50-52),
        "decode" AR 213.7 against 202.7 tok/s with speculative decoding unchanged, W12 AR +7%;
        "small" against "decode": verify 4.95 -> 4.82 and 4.87 -> 4.77 ms, draft 1.10 -> 1.06
        ms, pipelined spec@6.55 +2.3% and +3.0% (runs 93-94); "kernels" level with "small"
        alone, but with the SwiGLU epilogue at every row (which "small" slowed at one row) the
        16-token forward 4.65-4.77 against 4.70-4.80 ms and pipelined spec@6.55 1,116-1,133
        against 1,100-1,113, AR within 1% (runs 103-105); "chain" against "kernels" in one
        process (run 107): AR 1.023x [1.008-1.040], the speculative step's launches the same;
        at the SmolLM2-135M shape "all" took
        the speculative step graph from 1.24 to 1.01 ms and pipelined speculative decoding from
        4,961 to 5,871 tok/s (runs 60, 62). Nothing between the two sizes is measured yet.
    draft_vocab: "" (the drafter proposes from the whole vocabulary) or a draft vocabulary file
        (spec/draft_vocab.py, `specpilot draft-vocab`): the draft head multiplies by those
        rows of the LM head only. Lossless with any subset; acceptance falls where the target's
        token lies outside it.
    min_acceptance: once `generator.FALLBACK_PROBE_STEPS` (8) speculative steps have run,
        whenever the mean acceptance length so far (tokens a step) is below this (checked
        before each later step; pipelined, the step in flight is booked first), `Generator.run`
        finishes the sequences with plain AR decoding, which is then faster: a speculative step
        costs more than an AR step. The target's cache holds exactly the verified tokens at
        the switch, so the tokens are AR's either way. 0 (default): never. One-way (the
        drafter's context is not kept up while AR runs); the server's scheduler does not use
        it. On the H200 with the embedded pair (run 66) 2.2 lost: MT-Bench 1.14x -> 0.96x,
        HumanEval 1.48x -> 1.38x; at that size a speculative step now costs ~1.7x an AR step,
        so tau ~1.9 still wins, and 8 steps misjudge prompts whose acceptance grows later.
    weight_prefetch: how the skinny multiply reads weights ahead (kernels/launch.py): "off";
        "tile", its first weight tile before waiting for the kernel before it, then each next
        tile one step ahead; "l2", each program's rows into L2 in one bulk prefetch (Hopper;
        with pdl, during the previous kernel's tail). Same arithmetic. Off until measured.
    l2_ahead: weights asked for in L2 by the kernels before the ones that read them, while
        HBM would otherwise idle (kernels/launch.py): "off"; "o", each layer's attention
        programs ask for its output projection (bf16 or W12 planes, 25-34 MB at the 8B
        shapes) while they read the cache; "all", also the RMSNorm and SwiGLU kernels for the
        first rows of the multiply after them. Hopper only (a bulk prefetch); same arithmetic.
        Off: at the Qwen3-8B shape (1k) it lengthened the one-token forward from 4.34 to 4.39
        ("o") and 4.45 ms ("all"); at the SmolLM2-135M shape the 16-token forward read 0.77 ->
        0.75 / 0.71 ms in single processes, not yet repeated (docs/LOG.md runs 91, 93).
    target_head: how the target's LM head finds each decode and verify row's token, where the
        fused kernels run it (at most 64 rows a forward, a bf16/fp16 head). "exact": the whole
        head's logits, then their argmax; "certified": an int8 copy of the head (half its bytes;
        the copy adds them to memory: 0.62 GB at the Qwen3-8B shape) bounds every logit, and
        only the rows that the bounds cannot rule out are read in bf16 (formats/certified.py:
        the same argmax, proven; the logits themselves are never formed); "certified-decode":
        certified in one-row forwards (batch-1 decode), exact in the others. "auto" (default):
        on a GPU, certified in forwards of up to 16 rows (one verify block) where the head's
        shape has a measured 16-row certified tile (linear.CERTIFIED_TILES; Qwen3-8B's and
        Llama-3.1-8B's: spec 1.022x / 1.021x, docs/LOG.md run 251), else "certified-decode"
        where it has a one-row one (Qwen3-8B's one-row head: AR 1.022x, run 199), else exact.
        Prefill, token forcing and W12 heads keep the exact head.
    tiles: a tiles file (kernels/tiles.py; bench/w12_speed.py --tiles-out writes one from a
        deployment's own sweeps) whose multiply tiles go over the compiled-in H200 ones, for
        the whole process, when the engine runs its Triton kernels. Same tokens. "": none.
    """

    block_size: int = 0
    cuda_graphs: bool = False
    kernels: str = "auto"
    step_graph: bool = False
    decode_graph: bool = False
    weights: str = "auto"
    w12_matrices: str = "all"
    pipeline: bool | str = "auto"
    batch_blocks: str = ""
    draft_head: str = "auto"
    draft_weights: str = "auto"
    cpu_linear: str = "auto"
    prefill: str = "auto"
    pdl: str = "auto"
    weight_prefetch: str = "off"
    l2_ahead: str = "off"
    draft_vocab: str = ""
    min_acceptance: float = 0.0
    tiles: str = ""
    target_head: str = "auto"

    def __post_init__(self) -> None:
        self.batch_block_table()  # parse once, so a bad value fails at construction
        if self.block_size < 0 or self.block_size == 1:
            raise ConfigError(
                f"block_size must be 0 (drafter's own) or >= 2, got {self.block_size}"
            )
        if self.weights not in ("auto", "bf16", "w12"):
            raise ConfigError(f"weights must be auto, bf16 or w12, got {self.weights!r}")
        self.w12_matrix_set()  # parse once
        if self.weights == "bf16" and self.w12_matrices != "all":
            raise ConfigError(f"w12_matrices={self.w12_matrices!r} needs weights='w12'")
        if self.draft_head not in DRAFT_HEADS:
            raise ConfigError(f"draft_head must be one of {DRAFT_HEADS}, got {self.draft_head!r}")
        if self.target_head not in TARGET_HEADS:
            raise ConfigError(
                f"target_head must be one of {TARGET_HEADS}, got {self.target_head!r}"
            )
        if self.draft_weights not in DRAFT_WEIGHTS:
            raise ConfigError(
                f"draft_weights must be one of {DRAFT_WEIGHTS}, got {self.draft_weights!r}"
            )
        if not self.min_acceptance >= 0:  # also NaN
            raise ConfigError(f"min_acceptance must be >= 0, got {self.min_acceptance!r}")
        if self.pdl not in PDL_MODES:
            raise ConfigError(f"pdl must be one of {PDL_MODES}, got {self.pdl!r}")
        if self.weight_prefetch not in WEIGHT_PREFETCH_MODES:
            raise ConfigError(
                f"weight_prefetch must be off, tile or l2, got {self.weight_prefetch!r}"
            )
        if self.l2_ahead not in L2_AHEAD_MODES:
            raise ConfigError(f"l2_ahead must be one of {L2_AHEAD_MODES}, got {self.l2_ahead!r}")
        if self.prefill not in ("auto", "torch", "fused"):
            raise ConfigError(f"prefill must be auto, torch or fused, got {self.prefill!r}")
        if self.cpu_linear not in ("auto", "onednn", "torch"):
            raise ConfigError(f"cpu_linear must be auto, onednn or torch, got {self.cpu_linear!r}")
        if self.kernels not in ("auto", "triton", "torch"):
            raise ConfigError(f"kernels must be auto, triton or torch, got {self.kernels!r}")
        if not (isinstance(self.pipeline, bool) or self.pipeline == "auto"):
            raise ConfigError(f"pipeline must be True, False or 'auto', got {self.pipeline!r}")

    def pipelined(self, device: torch.device) -> bool:
        """`pipeline` as resolved for a generator on `device`: "auto" is on with CUDA."""
        return device.type == "cuda" if self.pipeline == "auto" else self.pipeline

    def w12_matrix_set(self, head_certified: bool = False) -> frozenset[str]:
        """`w12_matrices` as formats/w12_engine.MATRICES names (head_certified: the engine
        certifies verify blocks' heads, so "auto" leaves the LM head bf16)."""
        from specpilot.formats.w12_engine import parse_matrices

        try:
            return parse_matrices(self.w12_matrices, head_certified)
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def batch_block_table(self) -> tuple[tuple[int, int], ...]:
        """`batch_blocks` as ((min_rows, block), ...) sorted by rows."""
        table = []
        for item in filter(None, (part.strip() for part in self.batch_blocks.split(","))):
            try:
                rows, block = (int(x) for x in item.split(":"))
            except ValueError:
                raise ConfigError(
                    f"bad batch_blocks item {item!r}: give ROWS:BLOCK pairs like 24:8"
                ) from None
            if rows < 1 or block < 2:
                raise ConfigError(f"batch_blocks {item!r}: rows must be >= 1 and block >= 2")
            table.append((rows, block))
        return tuple(sorted(table))

    def block_for(self, rows: int, full: int) -> int:
        """The speculative block width for a step over `rows` sequences (full: the widest)."""
        block = full
        for min_rows, width in self.batch_block_table():
            if rows >= min_rows:
                block = min(width, full)
        return block


def resolve_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ConfigError(f"unknown dtype {name!r} (choose from {', '.join(DTYPES)})")
    return DTYPES[name]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.split(":")[0] not in ("cpu", "cuda"):
        raise ConfigError(f"unknown device {name!r} (choose cpu or cuda)")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device {name!r} requested but CUDA is not available on this machine")
    return torch.device(name)
