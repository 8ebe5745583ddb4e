"""Triton kernels for the decode and verify forwards, each beside a launcher that checks its inputs.

Every kernel has a plain-PyTorch reference (`*_reference`) with the same contract; tests compare
the two on CPU through Triton's interpreter (TRITON_INTERPRET=1) and on CUDA. The engine calls the
kernels only on CUDA, for bf16/fp16 models, when Triton is importable (`available()`).
"""

from __future__ import annotations

import importlib.util
import os


def interpreted() -> bool:
    """Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1, the tests)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def available() -> bool:
    """Triton importable and able to launch here (a GPU, or the interpreter for tests)."""
    if importlib.util.find_spec("triton") is None:
        return False
    import torch

    return torch.cuda.is_available() or interpreted()
