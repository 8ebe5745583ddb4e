"""EngineConfig.pipeline: speculative steps launched one ahead of the host give the same tokens,
the same acceptance per step and the same step count as the synchronous loop (tiny target +
drafter, fp32 CPU: the same arithmetic, so equality is exact)."""

from __future__ import annotations

import pytest
import torch

from specpilot.config import EngineConfig
from specpilot.engine import generator
from specpilot.engine.generator import Generator
from specpilot.engine.llm import LLM
from specpilot.engine.sequence import Sequence
from specpilot.spec.replay import AcceptanceProfile, ReplayProposer, replay_drafts
from tests.eager_graphs import RecordingGraphs

CPU = torch.device("cpu")

PROMPTS = ([5, 9, 2, 7], [11, 3, 8, 8, 1, 40, 2, 9, 6], [30, 31])


@pytest.fixture(scope="module")
def models(qwen_dir, qwen_drafter_dir):
    llm = LLM(qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32")
    return llm.target, llm.drafter


def generators(models):
    target, drafter = models
    return [
        Generator(target, drafter, EngineConfig(pipeline=pipe), CPU, torch.float32)
        for pipe in (False, True)
    ]


def fresh(stop: int | None = None) -> list[Sequence]:
    stops = frozenset() if stop is None else frozenset({stop})
    return [Sequence(list(p), n, stops) for p, n in zip(PROMPTS, (40, 23, 31))]


def summary(seqs: list[Sequence]) -> list[tuple]:
    return [(s.output_ids, s.acceptance_lengths, s.finish_reason) for s in seqs]


@pytest.mark.parametrize("batch", [1, 3])
def test_pipelined_drafter_steps_equal_the_synchronous_loop(models, batch) -> None:
    plain, piped = generators(models)
    a, b = fresh()[:batch], fresh()[:batch]
    stats_a, stats_b = plain.run(a, speculative=True), piped.run(b, speculative=True)
    assert summary(a) == summary(b) and stats_a.num_steps == stats_b.num_steps
    # and both equal AR decoding
    ar = fresh()[:batch]
    plain.run(ar, speculative=False)
    assert [s.output_ids for s in ar] == [s.output_ids for s in b]


def test_pipelined_rows_finishing_early_on_a_stop_token(models) -> None:
    plain, piped = generators(models)
    probe = fresh()
    plain.run(probe, speculative=False)
    stop = probe[1].output_ids[5]  # row 1 stops early; the others may too
    a, b = fresh(stop), fresh(stop)
    plain.run(a, speculative=True)
    piped.run(b, speculative=True)
    assert summary(a) == summary(b) and b[1].finish_reason == "stop"


def test_pipelined_replay_follows_the_same_draws(models) -> None:
    plain, piped = generators(models)
    profile = AcceptanceProfile.from_mean(5.0, plain.block_size)
    (a, passes_a), (b, passes_b) = (
        gen.run_replay(fresh, profile, seed=3) for gen in (plain, piped)
    )
    assert summary(a) == summary(b) and passes_a == passes_b
    assert sum(map(sum, (s.acceptance_lengths for s in b))) > 2 * len(b[0].acceptance_lengths)


def test_device_replay_drafts_match_the_proposer() -> None:
    """replay_drafts (the proposer's and the pipelined loop's) against the rule written out:
    draft j is the continuation's token emitted + j (0 past its end) for j < length - 1, and
    a wrong token at j = length - 1."""
    conts = [[4, 5, 6, 7, 8, 9, 10], [1, 2, 3], [9] * 12]
    proposer = ReplayProposer(conts, AcceptanceProfile.from_mean(4.0, 8), 50, seed=1)
    twin = ReplayProposer(conts, AcceptanceProfile.from_mean(4.0, 8), 50, seed=1)
    cont = torch.zeros(3, 12, dtype=torch.long)
    for i, c in enumerate(conts):
        cont[i, : len(c)] = torch.tensor(c)
    lens = torch.tensor([len(c) for c in conts])
    for emitted in ([0, 0, 0], [2, 1, 5], [6, 3, 11]):
        lengths = [min(twin.profile.sample(twin.rng), 8) for _ in conts]
        expect = torch.empty(3, 7, dtype=torch.long)
        for b, (c, e, length) in enumerate(zip(conts, emitted, lengths)):
            for j in range(7):
                known = c[e + j] if e + j < len(c) else 0
                expect[b, j] = known if j < length - 1 else (known + 1) % 50
        got = replay_drafts(cont, lens, torch.tensor(emitted), lengths, 7, 50)
        assert torch.equal(got, expect)
        assert torch.equal(proposer.propose(emitted, 7), expect)


def test_pipelined_with_nothing_left_to_decode(models) -> None:
    plain, piped = generators(models)
    a, b = (
        [Sequence(list(PROMPTS[0]), 1, frozenset()), Sequence(list(PROMPTS[1]), 1, frozenset())]
        for _ in range(2)
    )
    assert plain.run(a, speculative=True).num_steps == piped.run(b, speculative=True).num_steps == 0
    assert summary(a) == summary(b)


@pytest.mark.parametrize("pipeline", [False, True])
def test_every_step_has_a_one_block_context(models, pipeline) -> None:
    """The prompts' drafter context is written before the loop (Generator._draft_prefill), so
    the first step's context is one block wide like every later one (graphable on CUDA), and
    the drafted tokens still equal AR decoding."""
    target, drafter = models
    gen = Generator(target, drafter, EngineConfig(pipeline=pipeline), CPU,
                    torch.float32)  # fmt: skip
    widths = []
    step = gen._spec_step

    def recording(hidden, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        widths.append(hidden.shape[1])
        return step(hidden, *args, **kwargs)

    gen._spec_step = recording
    seqs, ar = fresh(), fresh()
    gen.run(seqs, speculative=True)
    gen.run(ar, speculative=False)
    assert widths and set(widths) == {gen.block_size}
    assert [s.output_ids for s in seqs] == [s.output_ids for s in ar]


@pytest.mark.parametrize("decode_graph", [False, True])
def test_pipelined_ar_equals_the_synchronous_loop(models, decode_graph) -> None:
    """EngineConfig.pipeline also runs AR decoding one step ahead: same tokens, finish reasons
    and step count, with rows of different lengths and an early stop token; with decode_graph,
    each step through a graph that feeds itself (tests/eager_graphs.py's stand-in), over runs
    one after another (each run's first step copies its own inputs in)."""
    target, drafter = models
    plain = Generator(target, drafter, EngineConfig(pipeline=False), CPU, torch.float32)
    config = EngineConfig(pipeline=True, decode_graph=decode_graph)
    piped = Generator(target, drafter, config, CPU, torch.float32)
    if decode_graph:
        piped.use_graphs, piped.graphs = True, RecordingGraphs()
    probe = fresh()
    plain.run(probe, speculative=False)
    stop = probe[1].output_ids[5]
    for stops in (None, stop, None):
        a, b = fresh(stops), fresh(stops)
        stats_a = plain.run(a, speculative=False)
        stats_b = piped.run(b, speculative=False)
        assert summary(a) == summary(b) and stats_a.num_steps == stats_b.num_steps
    if decode_graph:
        assert ("decode", len(PROMPTS), 1) in piped.graphs.keys


@pytest.mark.parametrize(
    "speculative, graphs, book_at_launch, step_graph",
    [(False, False, True, False), (False, True, True, False), (True, False, True, False),
     (True, False, False, False), (True, True, True, False), (True, True, True, True),
     (True, True, False, False)],
)  # fmt: skip
def test_pipelined_loops_launch_no_step_after_the_last(
    models, monkeypatch, speculative, graphs, book_at_launch, step_graph
) -> None:
    """Rows that end at their token limit: the pipelined loop books a step that may be the
    last before the next one's first forward (generator.BOOK_AT_LAUNCH: once that step's
    inputs are queued, through the forwards' gate, with graphs as without; else before
    building them), so it runs exactly the forwards of the steps it books (the synchronous
    loop's count); with a stop token it may launch one more, which is discarded."""
    monkeypatch.setattr(generator, "BOOK_AT_LAUNCH", book_at_launch)
    target, drafter = models
    plain = Generator(target, drafter, EngineConfig(pipeline=False), CPU, torch.float32)
    # AR with graphs: each step one graph that feeds itself (EngineConfig.decode_graph)
    config = EngineConfig(pipeline=True, step_graph=step_graph, decode_graph=graphs)
    piped = Generator(target, drafter, config, CPU, torch.float32)
    if graphs:  # the graphed paths, run eagerly (tests/eager_graphs.py)
        piped.use_graphs, piped.graphs = True, RecordingGraphs()
    launches = []
    name = "_verify_fn" if speculative else "_fed_decode" if graphs else "_target_forward"
    forward = getattr(piped, name)

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        launches.append(1)
        return forward(*args, **kwargs)

    setattr(piped, name, counting)
    a, b = fresh(), fresh()
    stats_a = plain.run(a, speculative=speculative)
    launches.clear()  # the prefill's forward is not a decode step
    stats_b = piped.run(b, speculative=speculative)
    assert summary(a) == summary(b) and stats_a.num_steps == stats_b.num_steps
    assert len(launches) == stats_b.num_steps
    if graphs:
        kind = "step" if step_graph else "target" if speculative else "decode"
        assert any(key[0] == kind for key in piped.graphs.keys)


def test_profiled_run_times_the_drafter_context_write(models) -> None:
    """With profile_steps, a speculative run records how long the drafter's context write of
    the prompt took (it is inside the decode time); without, it is not measured."""
    plain, _ = generators(models)
    plain.profile_steps = True
    plain.run(fresh(), speculative=True)
    assert plain.draft_prefill_s > 0
    plain.profile_steps = False
    plain.draft_prefill_s = 0.0
    plain.run(fresh(), speculative=True)
    assert plain.draft_prefill_s == 0.0


@pytest.mark.parametrize("pipeline", [False, True])
def test_min_acceptance_falls_back_to_ar_with_the_same_tokens(models, pipeline) -> None:
    """EngineConfig.min_acceptance: a limit no drafter reaches (100) switches every sequence to
    AR decoding after FALLBACK_PROBE_STEPS speculative steps (pipelined: and the one in flight),
    with AR's tokens; a limit every step meets (1.0: a step emits at least one token) never
    switches."""
    from specpilot.engine.generator import FALLBACK_PROBE_STEPS

    target, drafter = models
    ar = fresh()
    Generator(target, drafter, EngineConfig(), CPU, torch.float32).run(ar, speculative=False)
    for limit, switches in ((100.0, True), (1.0, False)):
        config = EngineConfig(pipeline=pipeline, min_acceptance=limit)
        seqs = fresh()
        stats = Generator(target, drafter, config, CPU, torch.float32).run(seqs, speculative=True)
        assert [s.output_ids for s in seqs] == [s.output_ids for s in ar]
        assert stats.num_steps == max(len(s.acceptance_lengths) for s in seqs)
        for s in seqs:
            if not switches:
                assert s.ar_from_step is None
                continue
            # every prompt outlives the probe; pipelined, the step in flight is booked first
            assert s.ar_from_step == FALLBACK_PROBE_STEPS + pipeline
            assert set(s.acceptance_lengths[s.ar_from_step :]) == {1}  # AR: a token a step
            assert len(s.output_ids) == s.max_new_tokens


def test_min_acceptance_must_not_be_negative() -> None:
    from specpilot.errors import ConfigError

    for bad in (-1.0, float("nan")):
        with pytest.raises(ConfigError, match="min_acceptance"):
            EngineConfig(min_acceptance=bad)


def test_pipeline_auto_is_on_with_cuda_only(models, monkeypatch) -> None:
    """EngineConfig.pipeline defaults to "auto": the pipelined loops on CUDA, the synchronous
    ones on a CPU (where the step a pipelined loop discards is paid for); True / False as
    given; anything else is a ConfigError."""
    from specpilot.errors import ConfigError

    config = EngineConfig()
    assert config.pipeline == "auto"
    assert config.pipelined(torch.device("cuda")) and not config.pipelined(torch.device("cpu"))
    assert EngineConfig(pipeline=True).pipelined(torch.device("cpu"))
    assert not EngineConfig(pipeline=False).pipelined(torch.device("cuda"))
    for bad in (1, "on", None):
        with pytest.raises(ConfigError, match="pipeline"):
            EngineConfig(pipeline=bad)
    target, drafter = models
    gen = Generator(target, drafter, config, CPU, torch.float32)
    called = []
    monkeypatch.setattr(gen, "_decode_pipelined", lambda seqs: called.append(seqs) or 0)
    seqs = fresh()
    gen.run(seqs, speculative=False)  # on a CPU, "auto" takes the synchronous loop
    assert not called and all(s.finished for s in seqs)
    gen.device = torch.device("cuda")  # resolved per run, for the generator's device
    gen._decode(seqs)
    assert called == [seqs]
