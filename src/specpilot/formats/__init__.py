"""Weight formats: W12 (lossless 12-bit bf16 weights) and its checkpoint tools."""
