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
