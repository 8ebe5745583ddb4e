"""The continuous-batching scheduler (engine/scheduler.py) on the tiny target + drafter, fp32 CPU:
requests joining mid-run give the same tokens as one-at-a-time AR decoding, and a join never
widens the speculative step (the drafter context of a joining prompt is written at `add`)."""

from __future__ import annotations

import pytest
import torch

from specpilot.engine.llm import LLM
from specpilot.engine.scheduler import Scheduler
from specpilot.engine.sequence import Sequence
from tests.eager_graphs import RecordingGraphs

PROMPTS = ("Hello there", "The quick brown fox jumps over", "1 2 3 4 5 6 7 8 9")


@pytest.fixture(scope="module")
def llm(qwen_dir, qwen_drafter_dir) -> LLM:
    return LLM(qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32")


def test_joins_mid_run_equal_ar_and_keep_the_step_one_block_wide(llm) -> None:
    prompts = [llm.encode(t) for t in PROMPTS]
    expected = []
    for ids in prompts:
        seq = Sequence(list(ids), 24, frozenset())
        llm.generator.run([seq], speculative=False)
        expected.append(seq.output_ids)
    sched = Scheduler(llm.generator, max_running=4, max_len=128)
    widths: list[int] = []
    context = sched._draft_context

    def spy(rows):  # noqa: ANN001, ANN202
        hidden, counts = context(rows)
        widths.append(hidden.shape[1])
        return hidden, counts

    sched._draft_context = spy
    seqs = [Sequence(list(ids), 24, frozenset()) for ids in prompts]
    sched.add(seqs[0])
    sched.step()
    sched.step()
    sched.add_many([(seqs[1], None, 0), (seqs[2], None, 0)])  # join a running batch together
    while sched.running:
        sched.step()
    assert [s.output_ids for s in seqs] == expected
    assert widths and set(widths) == {llm.generator.block_size}


def test_draft_prefill_gives_the_drafts_of_the_whole_prompt_as_context(llm) -> None:
    gen = llm.generator
    k = gen.block_size
    sched = Scheduler(gen, max_running=3, max_len=128)
    seq = Sequence(list(llm.encode(PROMPTS[1])), 8, frozenset())
    hidden = sched._prefill([0], [seq])[0]
    n = hidden.shape[0]
    anchors = torch.tensor([seq.last_token])

    def drafts(slot: int, context: torch.Tensor, ctx_first: int) -> torch.Tensor:
        gen._buffers["draft"] = (sched.draft_cache.rows_view(slot, slot + 1), sched.draft_table)
        ctx_pos = gen._positions([ctx_first], context.shape[1])
        return gen._draft_fn(context, ctx_pos, anchors, gen._positions([n], k), n + k)

    sched._draft_prefill([0], [seq], hidden[None])
    padding = torch.zeros(1, k, hidden.shape[1])
    got = drafts(0, padding, n)  # no new context: everything from the cache
    reference = drafts(1, hidden[None], 0)  # the whole prompt as the step's context
    assert torch.equal(got, reference)
    # the cached context matters: slot 2 never saw the prompt
    assert not torch.equal(drafts(2, padding, n), reference)


def test_a_request_finished_by_its_prefill_takes_no_slot(llm) -> None:
    sched = Scheduler(llm.generator, max_running=3, max_len=128)
    done = Sequence(list(llm.encode(PROMPTS[0])), 1, frozenset())
    runs = Sequence(list(llm.encode(PROMPTS[2])), 12, frozenset())
    expected = Sequence(list(runs.prompt_ids), 12, frozenset())
    llm.generator.run([expected], speculative=False)
    sched.add_many([(done, None, 0), (runs, None, 0)])
    assert done.finished and len(done.output_ids) == 1 and sched.running == [runs]
    while sched.running:
        sched.step()
    assert runs.output_ids == expected.output_ids


@pytest.mark.parametrize("replay", [False, True])
def test_leaving_requests_compact_the_batch_and_tokens_stay_those_of_ar(llm, replay) -> None:
    """Requests of different lengths finish at different steps and one is aborted: the
    highest running rows move into the freed slots (caches, drafter context, replay state),
    every step runs exactly as many rows as are running, and the outputs equal AR."""
    from specpilot.spec.replay import AcceptanceProfile

    limits = (5, 30, 9, 24)
    prompts = [llm.encode(PROMPTS[i % len(PROMPTS)]) for i in range(len(limits))]
    expected = []
    for ids, limit in zip(prompts, limits):
        seq = Sequence(list(ids), limit, frozenset())
        llm.generator.run([seq], speculative=False)
        expected.append(seq.output_ids)
    profile = AcceptanceProfile.from_mean(3.5, llm.generator.block_size) if replay else None
    sched = Scheduler(llm.generator, max_running=5, max_len=128, replay=profile)
    seqs = [Sequence(list(ids), limit, frozenset()) for ids, limit in zip(prompts, limits)]
    extra = Sequence(list(prompts[1]), 40, frozenset())  # aborted after a few steps
    sched.add_many([(s, e, 0) for s, e in zip(seqs, expected)] + [(extra, None, 0)])
    moves, move = [], sched._move
    sched._move = lambda src, dst: (moves.append((src, dst)), move(src, dst))[1]
    steps = 0
    while sched.running:
        running = len(sched.running)
        assert sched.seqs[:running] == sched.running  # no holes
        result = sched.step()
        assert result.num_rows == running == len(result.acceptance_lengths)
        steps += 1
        if steps == 2:
            assert sched.abort(extra)
    assert [s.output_ids for s in seqs] == expected
    assert moves  # the short requests in low slots left while longer ones ran above them


@pytest.mark.parametrize("replay", [False, True])
def test_wide_batches_verify_narrower_blocks_with_the_same_tokens(
    qwen_dir, qwen_drafter_dir, replay
) -> None:
    """EngineConfig.batch_blocks="2:3": a step over >= 2 sequences drafts and verifies blocks
    of 3, a lone sequence the drafter's full block; the drafter's context then switches
    between widths, and the outputs stay AR's."""
    from specpilot.config import EngineConfig
    from specpilot.spec.replay import AcceptanceProfile

    llm = LLM(
        qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32",
        engine=EngineConfig(batch_blocks="2:3"),
    )  # fmt: skip
    gen = llm.generator
    limits = (6, 20, 14)
    prompts = [llm.encode(PROMPTS[i]) for i in range(len(limits))]
    expected = []
    for ids, limit in zip(prompts, limits):
        seq = Sequence(list(ids), limit, frozenset())
        gen.run([seq], speculative=False)
        expected.append(seq.output_ids)
    profile = AcceptanceProfile.geometric(2.5, gen.block_size) if replay else None
    sched = Scheduler(gen, max_running=3, max_len=128, replay=profile)
    widths, step = [], gen._spec_step
    gen._spec_step = lambda *a: (widths.append((a[1].shape[0], a[-1])), step(*a))[1]
    seqs = [Sequence(list(ids), limit, frozenset()) for ids, limit in zip(prompts, limits)]
    sched.add_many([(s, e, 0) for s, e in zip(seqs, expected)])
    while sched.running:
        sched.step()
    assert [s.output_ids for s in seqs] == expected
    assert {k for rows, k in widths if rows >= 2} == {3}
    assert {k for rows, k in widths if rows == 1} == {gen.block_size}


@pytest.mark.parametrize("batch_blocks", ["", "6:3"])
def test_warmup_captures_every_step_width_that_serving_meets(
    qwen_dir, qwen_drafter_dir, batch_blocks
) -> None:
    """Scheduler.warmup runs a step for every bucket width (and every drafter context width
    batch_blocks can leave); a run of requests joining and leaving afterwards uses no graph
    shape the warm-up did not capture, and its outputs equal AR's."""
    from specpilot.config import EngineConfig

    llm = LLM(
        qwen_dir, draft=str(qwen_drafter_dir), device="cpu", dtype="float32",
        engine=EngineConfig(batch_blocks=batch_blocks),
    )  # fmt: skip
    gen = llm.generator
    limits = (4, 18, 9, 30, 12, 6, 22, 15, 3, 11)
    prompts = [llm.encode(PROMPTS[i % len(PROMPTS)]) for i in range(len(limits))]
    expected = []
    for ids, limit in zip(prompts, limits):
        seq = Sequence(list(ids), limit, frozenset())
        gen.run([seq], speculative=False)
        expected.append(seq.output_ids)
    sched = Scheduler(gen, max_running=10, max_len=128)
    assert [sched.bucket(n) for n in (1, 8, 9, 10)] == [1, 8, 9, 10]  # no graphs, no padding
    gen.use_graphs, gen.graphs = True, RecordingGraphs()
    assert [sched.bucket(n) for n in (1, 8, 9, 10)] == [1, 8, 10, 10]  # capped at max_running
    assert sched.warmup() > 0
    warmed = set(gen.graphs.keys)
    seqs = [Sequence(list(ids), limit, frozenset()) for ids, limit in zip(prompts, limits)]
    sched.add_many([(s, None, 0) for s in seqs[:7]])
    steps = 0
    while sched.running:
        sched.step()
        steps += 1
        if steps == 3:
            sched.add_many([(s, None, 0) for s in seqs[7:]])
    assert [s.output_ids for s in seqs] == expected
    assert gen.graphs.keys <= warmed, gen.graphs.keys - warmed
