"""`specpilot compare speed`: speed and output identity of bench runs, per dataset.

Arms: `ar` (our engine, speculation off), optional `stock` (another server, e.g. upstream), and
`final` (our speculative engine). Only prompts that every arm answered without error count, so
every comparison is paired by prompt. An arm's tokens/s is its summed output tokens over its
summed request latencies. Speed-up = tokens/s of final over tokens/s of the other arm; its 95%
interval is a paired bootstrap: resample prompts with replacement (the same indices for both
arms), recompute both ratios of sums, take the 2.5th and 97.5th percentiles (numpy, seeded).

Identity compares final's output with the other arm's: by token ids when both recorded them,
else by text; the first divergence is the first differing token (or character) position.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from specpilot.errors import ConfigError

BOOTSTRAP_SAMPLES = 10_000


@dataclass(frozen=True)
class SpeedUp:
    ratio: float
    low: float  # 2.5th percentile of the bootstrap
    high: float  # 97.5th percentile


@dataclass(frozen=True)
class Identity:
    unit: str  # "tokens" or "chars"
    identical_share: float
    num_divergent: int
    mean_first_divergence: float | None  # over divergent pairs
    min_first_divergence: int | None


@dataclass(frozen=True)
class DatasetComparison:
    dataset: str
    num_prompts: int
    tokens_per_s: dict[str, float]  # arm -> tokens/s
    speedup: dict[str, SpeedUp]  # "final/ar", "final/stock"
    identity: dict[str, Identity]  # "final vs ar", "final vs stock"
    mean_acceptance_length: float | None  # of final


def bootstrap_speedup(
    tokens_new: np.ndarray,
    time_new: np.ndarray,
    tokens_base: np.ndarray,
    time_base: np.ndarray,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> SpeedUp:
    """Speed-up of `new` over `base` (ratio of summed-token rates), 95% paired bootstrap interval.
    All arrays are per prompt, aligned: [num_prompts]."""
    n = len(tokens_new)
    if n == 0 or not (len(time_new) == len(tokens_base) == len(time_base) == n):
        raise ValueError("bootstrap_speedup needs aligned, non-empty per-prompt arrays")

    def ratio(tn: np.ndarray, sn: np.ndarray, tb: np.ndarray, sb: np.ndarray) -> np.ndarray:
        return (tn.sum(-1) / sn.sum(-1)) / (tb.sum(-1) / sb.sum(-1))

    idx = np.random.default_rng(seed).integers(0, n, size=(samples, n))  # [samples, n]
    resampled = ratio(tokens_new[idx], time_new[idx], tokens_base[idx], time_base[idx])
    low, high = np.percentile(resampled, [2.5, 97.5])
    return SpeedUp(
        float(ratio(tokens_new, time_new, tokens_base, time_base)), float(low), float(high)
    )


def first_divergence(a: list | str, b: list | str) -> int | None:
    """The first position where `a` and `b` differ (the shorter length if one is a prefix of the
    other); None if they are identical."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def identity(final: list[dict], other: list[dict]) -> Identity:
    by_ids = all(r.get("output_ids") is not None for r in final + other)
    key = "output_ids" if by_ids else "output_text"
    positions = [first_divergence(f[key], o[key]) for f, o in zip(final, other)]
    divergent = [p for p in positions if p is not None]
    return Identity(
        unit="tokens" if by_ids else "chars",
        identical_share=1 - len(divergent) / len(positions),
        num_divergent=len(divergent),
        mean_first_divergence=float(np.mean(divergent)) if divergent else None,
        min_first_divergence=min(divergent) if divergent else None,
    )


def _load_arm(paths: list[Path], arm: str) -> dict[str, dict[str, dict]]:
    """dataset -> problem id -> record, from bench JSON files; errored requests are left out."""
    out: dict[str, dict[str, dict]] = {}
    for path in paths:
        if not path.is_file():
            raise ConfigError(f"--{arm} {path}: file not found")
        try:
            records = json.loads(path.read_text())["records"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ConfigError(f"--{arm} {path}: not a specpilot bench JSON file") from None
        for r in records:
            if r.get("error") is None and r.get("num_output_tokens") and r.get("latency_s"):
                out.setdefault(r["problem"]["dataset"], {})[r["problem"]["problem_id"]] = r
    return out


def compare_arms(arms: dict[str, dict[str, dict[str, dict]]], seed: int = 0) -> list:
    """Per dataset present in every arm: a DatasetComparison over the prompts all arms share."""
    results = []
    datasets = set.intersection(*(set(a) for a in arms.values()))
    for dataset in sorted(datasets):
        ids = sorted(set.intersection(*(set(a[dataset]) for a in arms.values())))
        if not ids:
            continue
        recs = {arm: [arms[arm][dataset][i] for i in ids] for arm in arms}
        tokens = {a: np.array([r["num_output_tokens"] for r in recs[a]], float) for a in arms}
        times = {a: np.array([r["latency_s"] for r in recs[a]], float) for a in arms}
        speedup, ident = {}, {}
        for base in ("ar", "stock"):
            if base in arms:
                speedup[f"final/{base}"] = bootstrap_speedup(
                    tokens["final"], times["final"], tokens[base], times[base], seed=seed
                )
                ident[f"final vs {base}"] = identity(recs["final"], recs[base])
        accepts = [r["acceptance_length"] for r in recs["final"] if r.get("acceptance_length")]
        results.append(
            DatasetComparison(
                dataset=dataset,
                num_prompts=len(ids),
                tokens_per_s={a: float(tokens[a].sum() / times[a].sum()) for a in arms},
                speedup=speedup,
                identity=ident,
                mean_acceptance_length=float(np.mean(accepts)) if accepts else None,
            )
        )
    return results


def markdown(results: list[DatasetComparison], arms: list[str]) -> str:
    bases = [b for b in ("ar", "stock") if b in arms]
    head = ["dataset", "n", *(f"{a} tok/s" for a in arms)]
    head += [f"final/{b} [95% CI]" for b in bases]
    head += [f"identical to {b} (first divergence mean/min)" for b in bases]
    head += ["mean acceptance length"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        row = [r.dataset, str(r.num_prompts), *(f"{r.tokens_per_s[a]:.1f}" for a in arms)]
        for b in bases:
            s = r.speedup[f"final/{b}"]
            row.append(f"{s.ratio:.2f}x [{s.low:.2f}, {s.high:.2f}]")
        for b in bases:
            i = r.identity[f"final vs {b}"]
            div = (
                f" ({i.mean_first_divergence:.0f}/{i.min_first_divergence} {i.unit})"
                if i.num_divergent
                else ""
            )
            row.append(f"{i.identical_share:.0%}{div}")
        acc = r.mean_acceptance_length
        row.append("-" if acc is None else f"{acc:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def plot(results: list[DatasetComparison], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bases = [k for k in ("final/ar", "final/stock") if results and k in results[0].speedup]
    fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(results), 3.6))
    width = 0.8 / max(1, len(bases))
    x = np.arange(len(results))
    for j, key in enumerate(bases):
        ratios = np.array([r.speedup[key].ratio for r in results])
        errs = np.array(
            [[r.speedup[key].ratio - r.speedup[key].low for r in results],
             [r.speedup[key].high - r.speedup[key].ratio for r in results]]
        )  # fmt: skip
        pos = x + (j - (len(bases) - 1) / 2) * width
        ax.bar(pos, ratios, width, label=f"{key} (95% CI)")
        # NOTE: error bars drawn apart from bar(): bar(yerr=[2, n]) trips a numpy deprecation
        ax.errorbar(pos, ratios, yerr=errs, fmt="none", ecolor="black", capsize=3)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x, [r.dataset for r in results])
    ax.set_ylabel("speed-up (tokens/s ratio)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def cmd_compare(args: argparse.Namespace) -> int:
    paths = {"ar": args.ar, "stock": args.stock, "final": args.final}
    arms = {arm: _load_arm(p, arm) for arm, p in paths.items() if p}
    results = compare_arms(arms, seed=args.seed)
    if not results:
        raise ConfigError("the arms share no dataset with successful requests on common prompts")
    table = markdown(results, list(arms))
    print(table, end="")
    if args.out_md:
        args.out_md.write_text(table)
    if args.out_png:
        plot(results, args.out_png)
    print(json.dumps({"comparisons": [asdict(r) for r in results]}))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare bench runs")
    what = p.add_subparsers(dest="what", required=True)
    speed = what.add_parser("speed", help="speed-ups with paired bootstrap intervals, identity")
    speed.add_argument("--ar", nargs="+", type=Path, required=True, help="bench JSON, AR arm")
    speed.add_argument("--stock", nargs="+", type=Path, help="bench JSON, stock-engine arm")
    speed.add_argument("--final", nargs="+", type=Path, required=True, help="bench JSON, ours")
    speed.add_argument("--out-md", type=Path)
    speed.add_argument("--out-png", type=Path)
    speed.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
