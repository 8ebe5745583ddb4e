"""A draft vocabulary: the drafter proposes only tokens from a subset of the target's vocabulary.

The drafter turns each block row into a token with the target's LM head, which at the Qwen3-8B
shape is 1.24 GB of the ~3.3 GB a draft forward reads (151,936 rows of 4,096). Most of those rows
are tokens a drafter almost never gets right. With a draft vocabulary of the N tokens most frequent
in a corpus (ideally the target's own outputs), the draft head multiplies by those N rows only and
maps its argmax back to the token id. Verification is unchanged, so outputs stay the target's own
whatever the subset (lossless); only acceptance can fall, when the target's next token is outside
the subset. The mechanism follows frequency-ranked drafting (FR-Spec, Zhao et al. 2025).

The file is a safetensors file with one tensor, `ids` (int64, sorted, unique), and metadata
`vocab_size` (the target vocabulary it indexes) and `source` (how it was made). Build one with
`specpilot draft-vocab`; use it with EngineConfig.draft_vocab (`--draft-vocab PATH`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from specpilot.errors import ConfigError

log = logging.getLogger(__name__)
GENERATE_BATCH = 8  # prompts decoded together when counting the target's own outputs


def count_tokens(token_lists: Iterable[list[int]], vocab_size: int) -> torch.Tensor:
    """How often each id in [0, vocab_size) occurs in the lists -> int64 [vocab_size]."""
    counts = torch.zeros(vocab_size, dtype=torch.int64)
    for ids in token_lists:
        if not ids:
            continue
        t = torch.as_tensor(ids, dtype=torch.int64)
        if int(t.min()) < 0 or int(t.max()) >= vocab_size:
            raise ValueError(f"token ids outside [0, {vocab_size})")
        counts += torch.bincount(t, minlength=vocab_size)
    return counts


def select_ids(counts: torch.Tensor, size: int, keep: Iterable[int] = ()) -> torch.Tensor:
    """The `size` most frequent ids (ties: the lower id), always including `keep` (special
    tokens such as end-of-sequence, which a drafter must be able to propose), sorted."""
    vocab_size = counts.numel()
    keep = sorted({int(i) for i in keep})
    if not 1 <= size <= vocab_size:
        raise ValueError(f"draft vocabulary size must be in [1, {vocab_size}], got {size}")
    if any(not 0 <= i < vocab_size for i in keep):
        raise ValueError(f"kept ids must be in [0, {vocab_size})")
    if len(keep) > size:
        raise ValueError(f"{len(keep)} ids to keep do not fit a vocabulary of {size}")
    # NOTE: a stable sort of -counts ranks equal counts by id, so the choice is deterministic
    order = torch.sort(-counts, stable=True).indices.tolist()
    chosen = set(keep)
    for i in order:
        if len(chosen) == size:
            break
        chosen.add(i)
    return torch.tensor(sorted(chosen), dtype=torch.int64)


def save_ids(path: str | Path, ids: torch.Tensor, vocab_size: int, source: str) -> None:
    check_ids(ids, vocab_size, str(path))
    meta = {"vocab_size": str(vocab_size), "source": source}
    save_file({"ids": ids.to(torch.int64).contiguous()}, str(path), metadata=meta)


def load_ids(path: str | Path, vocab_size: int) -> torch.Tensor:
    """The ids of a draft vocabulary file, checked against the target's vocabulary size."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"draft vocabulary {path}: no such file")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            ids = f.get_tensor("ids")
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise ConfigError(f"draft vocabulary {path}: not a safetensors file with `ids`") from exc
    made_for = int(meta.get("vocab_size", vocab_size))
    if made_for != vocab_size:
        raise ConfigError(
            f"draft vocabulary {path} indexes a vocabulary of {made_for}, the target has "
            f"{vocab_size}"
        )
    check_ids(ids, vocab_size, str(path))
    return ids.to(torch.int64)


def check_ids(ids: torch.Tensor, vocab_size: int, where: str) -> None:
    if ids.dim() != 1 or ids.numel() == 0 or ids.dtype.is_floating_point:
        raise ConfigError(f"draft vocabulary {where}: ids must be a non-empty 1-D integer tensor")
    if int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
        raise ConfigError(f"draft vocabulary {where}: ids outside [0, {vocab_size})")
    if ids.numel() > 1 and not bool((ids[1:] > ids[:-1]).all()):
        raise ConfigError(f"draft vocabulary {where}: ids must be sorted and unique")


def corpus_texts(path: Path) -> Iterator[str]:
    """Every string in a JSONL file's records (chat messages' contents, prompts, completions:
    whatever the record holds; .jsonl or .jsonl.gz), or each line of any other text file."""
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        for rec in _records(path):
            yield from _strings(rec)
    else:
        for line in _lines(path):
            if line.strip():
                yield line.rstrip("\n")


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def corpus_counts(
    llm: Any, paths: list[Path], generate: int = 0, max_new_tokens: int = 256
) -> tuple[torch.Tensor, int, int]:
    """Token counts of the corpus files' texts (llm's tokenizer), plus the target's greedy
    outputs for the first `generate` user turns -> (counts, texts counted, tokens generated)."""
    tok, vocab_size = llm.tokenizer, llm.target.config.vocab_size
    lists: list[list[int]] = []
    for path in paths:
        lists.extend(tok.encode(text, add_special_tokens=False) for text in corpus_texts(path))
    texts, generated = len(lists), 0
    if generate > 0:
        prompts = _user_turns(paths, generate)
        log.info("generating the target's outputs for %d prompts", len(prompts))
        for start in range(0, len(prompts), GENERATE_BATCH):  # a batch's cache: its longest
            batch = prompts[start : start + GENERATE_BATCH]
            for out in llm.generate(
                batch, max_new_tokens=max_new_tokens, chat=True, speculative=False
            ):
                lists.append(out.output_ids)
                generated += len(out.output_ids)
    return count_tokens(lists, vocab_size), texts, generated


def special_ids(llm: Any) -> list[int]:
    """The tokenizer's special tokens (end of sequence among them), which a draft vocabulary
    always keeps."""
    vocab_size = llm.target.config.vocab_size
    return [i for i in llm.tokenizer.all_special_ids if 0 <= i < vocab_size]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "draft-vocab",
        help="build a draft vocabulary (the N most frequent tokens of a corpus)",
        description=(
            "Count the target tokenizer's tokens in corpus files (JSONL: every string in each "
            "record; other files: each line), optionally with the target's own greedy outputs "
            "for the first prompts, and write the N most frequent ids (plus the special tokens) "
            "as a draft vocabulary for --draft-vocab. Outputs stay lossless with any subset."
        ),
    )
    p.add_argument(
        "--model", help="target: HF dir, hub id or GGUF (default: the embedded SmolLM2 target)"
    )
    p.add_argument("--corpus", action="append", required=True, help="JSONL or text file")
    p.add_argument("--size", type=int, required=True, help="how many token ids to keep")
    p.add_argument("--out", required=True, help="output .safetensors file")
    p.add_argument(
        "--generate",
        type=int,
        default=0,
        help="also count the target's greedy outputs for the first N chat prompts of the corpus",
    )
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--device", default="auto")


def cmd_draft_vocab(args: argparse.Namespace) -> int:
    from specpilot.engine.llm import LLM

    paths = [Path(c) for c in args.corpus]
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"--corpus {path}: no such file")
    if args.size < 1 or args.generate < 0:
        raise ConfigError("--size must be >= 1 and --generate >= 0")
    if args.model is None:
        from specpilot.models.embedded import default_target

        args.model = str(default_target())
    llm = LLM(args.model, device=args.device)
    if llm.tokenizer is None:
        raise ConfigError(f"{args.model} ships no tokenizer: cannot count a text corpus")
    counts, texts, generated = corpus_counts(llm, paths, args.generate, args.max_new_tokens)
    vocab_size = llm.target.config.vocab_size
    if args.size > vocab_size:
        raise ConfigError(f"--size {args.size} exceeds the target's vocabulary ({vocab_size})")
    ids = select_ids(counts, args.size, special_ids(llm))
    covered = counts[ids].sum().item() / max(1, counts.sum().item())
    source = (
        f"{texts} texts from {', '.join(p.name for p in paths)}; "
        f"{generated} generated tokens; top {args.size} of {vocab_size}"
    )
    save_ids(args.out, ids, vocab_size, source)
    summary = {
        "out": args.out,
        "size": ids.numel(),
        "vocab_size": vocab_size,
        "tokens_counted": int(counts.sum()),
        "generated_tokens": generated,
        "coverage": covered,
    }
    print(f"draft vocabulary: {ids.numel()} of {vocab_size} ids cover {covered:.2%} of tokens")
    print(json.dumps(summary))
    return 0


def _user_turns(paths: list[Path], n: int) -> list[str]:
    """The first user turn of the first n chat records (a list of {role, content}, or a record
    with `messages`) in the JSONL files."""
    turns: list[str] = []
    for path in paths:
        if not path.name.endswith((".jsonl", ".jsonl.gz")):
            continue
        for rec in _records(path):
            msgs = rec.get("messages") if isinstance(rec, dict) else rec
            if not isinstance(msgs, list):
                continue
            users = [m["content"] for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
            if users and isinstance(users[0], str):
                turns.append(users[0])
                if len(turns) == n:
                    return turns
    return turns


def _lines(path: Path) -> Iterator[str]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            yield from f
    else:
        with open(path, encoding="utf-8") as f:
            yield from f


def _records(path: Path) -> Iterator[Any]:
    for line in _lines(path):
        if line.strip():
            yield json.loads(line)
