"""SpecPilot: lossless speculative decoding (DFlash) on our own compact PyTorch engine."""

from specpilot.engine.llm import LLM, GenerationOutput
from specpilot.errors import SpecPilotError

__all__ = ["LLM", "GenerationOutput", "SpecPilotError"]
__version__ = "0.1.0"
