"""`specpilot serve`: the OpenAI-compatible / SGLang server, started with one command.

    specpilot serve [--target PATH] [--draft PATH|replay:TAU] [--host 127.0.0.1] [--port 30000]
                    [--api-key KEY] [--max-running N] [--max-queue N] [--context-length N]
                    [--device cpu|cuda] [--dtype float32|bfloat16] [--cuda-graphs]

Without --target it serves the embedded default pair: SmolLM2-135M-Instruct with the DFlash
drafter we trained for it (package data; --draft overrides it). The socket is bound before the
model loads (a busy port is a one-line error); --port 0 picks a free port, printed in the
"serving" line. SIGINT/SIGTERM stop it gracefully: new connections are refused, running requests
get --shutdown-timeout seconds to finish, then they are cancelled (streams end, slots are freed)
and the engine thread stops.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

from specpilot import switches
from specpilot.errors import ConfigError

DEFAULT_CONTEXT = 8192  # cache rows are allocated for max_running x context positions up front
log = logging.getLogger("specpilot.server")


def add_cuda_graphs_argument(parser: argparse.ArgumentParser) -> None:
    """--cuda-graphs / --no-cuda-graphs, shared by `serve` and `generate`."""
    parser.add_argument(
        "--cuda-graphs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="replay forwards as CUDA graphs (default on; no effect on CPU)",
    )


def add_draft_arguments(parser: argparse.ArgumentParser) -> None:
    """--draft-vocab, --draft-head and --draft-weights, shared by `serve` and `generate`
    (EngineConfig's): what the drafter proposes from, and in which precision."""
    from specpilot.config import DRAFT_HEADS, DRAFT_WEIGHTS

    parser.add_argument(
        "--draft-vocab",
        default="",
        help="draft vocabulary file from `specpilot draft-vocab`: the drafter proposes only "
        "those tokens (a smaller draft head; outputs unchanged)",
    )
    parser.add_argument(
        "--draft-head",
        default="auto",
        choices=DRAFT_HEADS,
        help="the drafter's LM head: the target's, a bf16 copy, or FP8 (e4m3, half the bytes; "
        "auto: FP8 where the fused drafter runs on CUDA, for one sequence's block; outputs "
        "unchanged, acceptance may move slightly)",
    )
    parser.add_argument(
        "--draft-weights",
        default="auto",
        choices=DRAFT_WEIGHTS,
        help="the drafter's linear layers as loaded, or in FP8 (auto: FP8 where the fused "
        "kernels run, on CUDA, for one sequence's block; outputs unchanged)",
    )


def add_tiles_argument(parser: argparse.ArgumentParser) -> None:
    """--tiles and --target-head, shared by `serve` and `generate` (EngineConfig's)."""
    from specpilot.config import TARGET_HEADS

    parser.add_argument(
        "--target-head",
        default="auto",
        choices=TARGET_HEADS,
        help="how decode and verify find the target's argmax where the fused kernels run: "
        "exact (all logits) or certified (an int8 copy of the LM head bounds the logits, the "
        "rows it cannot rule out are read in bf16: the same tokens, proven; +half the head's "
        "bytes of memory); certified-decode: certified in one-row forwards only; auto: "
        "certified-decode on a GPU where the head's shape has a measured tile, else exact",
    )
    parser.add_argument(
        "--tiles",
        default="",
        help="tiles file of this GPU's own sweep winners (bench/w12_speed.py --tiles-out), "
        "used over the built-in H200 tiles (same tokens)",
    )


def add_weights_arguments(parser: argparse.ArgumentParser) -> None:
    """--weights and --w12-matrices, shared by `serve` and `generate` (EngineConfig.weights,
    EngineConfig.w12_matrices)."""
    parser.add_argument(
        "--weights",
        default="auto",
        choices=["auto", "bf16", "w12"],
        help="w12: convert on load; auto (default): w12 for a W12 checkpoint (specpilot w12 "
        "convert) in bfloat16, else bf16",
    )
    parser.add_argument(
        "--w12-matrices",
        default="all",
        help="with W12 weights, which matrices convert: all (every linear layer, the least "
        "memory), auto (gate_up, down, and lm_head unless the engine certifies verify blocks' "
        "heads: the fastest at the Qwen3-8B and Llama-3.1-8B shapes on the H200), "
        "or a comma-separated list of qkv, o, gate_up, down, lm_head, fc (the others stay "
        "bf16; same tokens)",
    )


def add_pdl_argument(parser: argparse.ArgumentParser) -> None:
    """--pdl, shared by `serve` and `generate` (EngineConfig.pdl)."""
    from specpilot.config import PDL_MODES

    parser.add_argument(
        "--pdl",
        default="auto",
        choices=PDL_MODES,
        help="programmatic dependent launch of the GPU kernels (Hopper; same tokens): auto "
        "(every kernel for targets under 1 GiB, else kernels), off, decode (one-token target "
        "forwards only), all, small (decode's, and every kernel but the multi-row multiplies), "
        "kernels (every kernel but the multiplies, one-row forwards too), chain (small's, but "
        "a one-row multiply right after a multiply plainly), waves (every kernel but a multiply "
        "right after a multiply or with a grid under 1.5 programs an SM)",
    )


def add_switch_argument(parser: argparse.ArgumentParser) -> None:
    """--switch, shared by `serve` and `generate` (specpilot.switches: process-wide)."""
    parser.add_argument(
        "--switch",
        action="append",
        default=[],
        metavar="MODULE.NAME=INT",
        help="set a kernel or model switch for this process, e.g. kernels.w12_tc.VERIFY=0 "
        "(repeatable; specpilot/switches.py): a mechanism's knob, same tokens",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="OpenAI-compatible and SGLang HTTP server (greedy)")
    p.add_argument("--target", help="checkpoint dir, .gguf or hub id (default: embedded SmolLM2)")
    p.add_argument("--draft", help="DFlash drafter checkpoint, or replay:TAU (benchmarks only)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000, help="0 picks a free port")
    p.add_argument("--api-key", help="require Authorization: Bearer KEY (all routes but /health)")
    p.add_argument("--max-running", type=int, default=32, help="batch slots (running requests)")
    p.add_argument("--max-queue", type=int, default=256, help="waiting requests before HTTP 429")
    p.add_argument(
        "--context-length",
        type=int,
        default=0,
        help=f"prompt + output tokens per request (0: the model's, at most {DEFAULT_CONTEXT})",
    )
    p.add_argument("--served-model-name", help="model id in the API (default: the target's name)")
    p.add_argument(
        "--block-size", type=int, default=0, help="0: the drafter's own (embedded pair on a CPU: 8)"
    )
    p.add_argument(
        "--batch-blocks",
        default="16:8",
        help="narrower speculative blocks for wide batches, ROWS:BLOCK,...; the default 16:8 "
        "verifies anchor + 7 drafts once 16 requests run (H200, 32 requests: 2.06x AR against "
        "1.86x with full blocks, docs/LOG.md run 42); '' keeps the drafter's block",
    )
    p.add_argument(
        "--admit-delay-factor",
        type=float,
        default=2.0,
        help="let arriving requests wait up to F x the last prefill's time while others run, so "
        "that one prefill takes several (0: prefill each at the next step, the lowest "
        "time to first token). H200, 32 requests: 2.05x / 2.06x AR with 2, 1.92-2.06x with 1, "
        "1.97x with 0, at 0.43 / 0.39 / 0.24 s to first token (docs/LOG.md runs 41-47)",
    )
    p.add_argument(
        "--prefill",
        default="auto",
        choices=["auto", "torch", "fused"],
        help="prompt forward: PyTorch modules, or the fused kernels; auto: fused on CUDA "
        "(EngineConfig.prefill)",
    )
    add_cuda_graphs_argument(p)
    add_draft_arguments(p)
    add_tiles_argument(p)
    add_pdl_argument(p)
    add_switch_argument(p)
    add_weights_arguments(p)
    p.add_argument("--seed", type=int, default=0, help="default seed of replayed acceptance")
    p.add_argument("--shutdown-timeout", type=float, default=30.0, help="seconds for draining")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    p.add_argument("--dtype", default="auto", help="float32, bfloat16 or auto (bf16 on cuda)")


def bind(host: str, port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {port}")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_server(app: object, sock: socket.socket, log_level: str, shutdown_timeout: float) -> None:
    """uvicorn on an already bound socket; returns after a graceful shutdown (SIGINT/SIGTERM)."""
    import uvicorn

    class Server(uvicorn.Server):
        """After a graceful shutdown uvicorn raises the signal it caught once more; SIGINT then
        interrupts asyncio.run, whose cancellation of the app's lifespan task printed a
        CancelledError traceback on every Ctrl-C. The shutdown is complete by then, so the
        signal is dropped and `specpilot serve` returns 0."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                try:
                    yield
                finally:
                    getattr(self, "_captured_signals", []).clear()

    config = uvicorn.Config(
        app,
        log_level=log_level,
        timeout_graceful_shutdown=shutdown_timeout,
        access_log=log_level == "debug",
    )
    Server(config).run(sockets=[sock])


def cmd_serve(args: argparse.Namespace) -> int:
    from specpilot.config import EngineConfig
    from specpilot.engine.llm import LLM
    from specpilot.engine.scheduler import Scheduler
    from specpilot.server.app import create_app
    from specpilot.server.engine import ServingEngine

    for flag in ("max_running", "max_queue"):
        if getattr(args, flag) <= 0:
            flag_name = "--" + flag.replace("_", "-")
            raise ConfigError(f"{flag_name} must be > 0, got {getattr(args, flag)}")
    if args.context_length < 0:
        raise ConfigError(f"--context-length must be >= 0, got {args.context_length}")
    if args.admit_delay_factor < 0:
        raise ConfigError(f"--admit-delay-factor must be >= 0, got {args.admit_delay_factor}")
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    switched = switches.from_texts(args.switch)  # a bad one fails before the port is bound
    sock = bind(args.host, args.port)
    note = None
    from specpilot.models.embedded import resolve_pair

    target, args.draft, defaults = resolve_pair(args.target, args.draft, args.device)
    block_size = args.block_size or int(defaults["block_size"])
    llm = LLM(
        target,
        draft=args.draft,
        device=args.device,
        dtype=args.dtype,
        engine=EngineConfig(
            block_size=block_size,
            cuda_graphs=args.cuda_graphs,
            batch_blocks=args.batch_blocks,
            prefill=args.prefill,
            draft_vocab=args.draft_vocab,
            draft_head=args.draft_head,
            draft_weights=args.draft_weights,
            pdl=args.pdl,
            tiles=args.tiles,
            target_head=args.target_head,
            weights=args.weights,
            w12_matrices=args.w12_matrices,
        ),
        seed=args.seed,
    )
    limit = llm.target.config.max_position_embeddings
    context = args.context_length or min(limit, DEFAULT_CONTEXT)
    if context > limit:
        raise ConfigError(f"--context-length {context} exceeds the model's {limit} positions")
    name = args.served_model_name or Path(str(target).rstrip("/")).name
    engine = ServingEngine(
        Scheduler(llm.generator, args.max_running, context, replay=llm.replay),
        llm.tokenizer,
        model_name=name,
        drafter_kind=llm.drafter_kind,
        context_length=context,
        max_queue=args.max_queue,
        default_stop_ids=llm.default_stop_ids(),
        seed=args.seed,
        note=note,
        admit_delay=args.admit_delay_factor,
    )
    host, port = sock.getsockname()[:2]
    if note:
        log.warning(note)
    weights = "bf16 weights"
    if llm.engine_config.weights == "w12":
        from specpilot.formats.w12_engine import converted_matrices

        weights = f"W12 weights ({', '.join(converted_matrices(llm.target)) or 'none'})"
    log.info(
        "serving %s (drafter %s, block %d, %d slots x %d tokens, %s %s, %s) at http://%s:%d",
        name,
        llm.drafter_kind,
        llm.generator.block_size,
        args.max_running,
        context,
        llm.device,
        str(llm.dtype).removeprefix("torch."),
        weights,
        host,
        port,
    )
    if switched:
        log.info("switches: %s", ", ".join(f"{k}={v}" for k, v in switched.items()))
    sys.stderr.flush()
    run_server(create_app(engine, args.api_key), sock, args.log_level, args.shutdown_timeout)
    log.info("stopped")
    return 0
