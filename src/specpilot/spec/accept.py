"""Greedy acceptance: the longest prefix of drafts equal to the target's argmax, on device."""

import torch


def accept_greedy(drafts: torch.Tensor, posterior: torch.Tensor) -> torch.Tensor:
    """drafts [B, K - 1], posterior [B, K] (target argmax at each block row) -> accepted [B].

    Row j of the verify block predicts the token after block token j, so draft j (block token
    j + 1) is accepted when it equals posterior[:, j] and every earlier draft was accepted. The
    target's own next token is then posterior[b, accepted[b]].
    """
    matches = (drafts == posterior[:, :-1]).to(torch.int64)
    return matches.cumprod(dim=1).sum(dim=1)


def next_step_meta(packed: torch.Tensor, meta: torch.Tensor, limits: torch.Tensor) -> torch.Tensor:
    """The pipelined loop's next step inputs [B, 3] from a step's packed result [B, 2K + 1]
    (block, the target's token at each block row, accepted count) and its meta [B, 3] (start,
    context start, anchor): (start + accepted + 1, held at limits [B]; start, where the next
    context begins; the target's token after the accepted drafts, the next anchor)."""
    width = packed.shape[1] // 2
    accepted = packed[:, 2 * width]
    bonus = packed[:, width:].gather(1, accepted[:, None])[:, 0]
    starts = meta[:, 0]
    return torch.stack([torch.minimum(starts + accepted + 1, limits), starts, bonus], 1)


def next_decode_inputs(
    tokens: torch.Tensor, ids: torch.Tensor, positions: torch.Tensor, limits: torch.Tensor
) -> None:
    """The pipelined AR loop's next step inputs, in place: ids [B, 1] = the last column of
    tokens [B, T] (each row's argmax), positions [B, 1] + 1 held at limits [B, 1] (a finished
    row's position stays at its last one, so it never runs past its cache)."""
    ids.copy_(tokens[:, -1:])
    torch.minimum(positions + 1, limits, out=positions)
