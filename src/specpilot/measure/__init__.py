"""Measurement toolkit: benchmark a server, compare runs, score answers.

- `datasets.py`  the five prompt sets (gsm8k, math500, humaneval, mbpp, mt-bench), each pinned to
                 one source and revision; a `Problem` is a first-turn prompt and what scoring needs.
- `bench.py`     `specpilot bench`: greedy streaming chat completions through the `openai` client,
                 one `RequestRecord` per prompt, written to one JSON file.
- `compare.py`   `specpilot compare speed`: tokens/s per arm, paired bootstrap speed-ups, output
                 identity, acceptance length; markdown + PNG.
- `answers.py`   \\boxed{} extraction and equivalence of math answers.
- `sandbox.py`   running untrusted generated code in a limited child process.
- `score.py`     `specpilot score`: accuracy per dataset.

The toolkit talks to any OpenAI-compatible server; it knows nothing about the engine.
"""
