"""Where a decode step's time goes against its bound, from measurements already taken.

Reads a `w12_speed.py` report (its kernel table at one row count, and optionally its end-to-end
arms) and charges each multiply of a Qwen3-8B-shaped forward (q|k|v, o, gate|up and down once a
layer, the LM head once) its measured microseconds, next to its bound: its bytes over the
bandwidth. For each arm (bf16: our skinny kernel; W12: the default W12 tile) it prints the
multiplies' sum a token and the time each shape loses against its bound; with the end-to-end
arms, also the rest of the measured step (attention, norms, launches; it has no bound here, so
all of it counts as lost) and the component furthest from its bound. `--fraction F` predicts
the step with every W12 multiply at F of the bandwidth, the rest unchanged. Nothing is timed
here; the numbers are the report's. The last line is one JSON object.

    python bench/cost_model.py bench/results/2026-11-30-w12-one-row-run78/w12-table.json \
        --e2e bench/results/2026-11-30-w12-one-row-run78/w12-e2e.json

`--matrices` instead chooses EngineConfig.w12_matrices: from the tables' rows 1 and 16 (several
reports, comma-separated, merge: a later one's shape wins), each matrix's W12-minus-bf16 time
in an AR token (a one-row forward) and in a speculative step (a 16-row verify forward and a
16-row draft forward through the drafter's `--draft-layers`), and the matrices that save time
in each:

    python bench/cost_model.py --matrices \
        bench/results/2026-12-01-w12-loop-wide-run88/w12-loop-wide.json,\
bench/results/2026-12-01-w12-split-in-run119/sweep16.json

`--timeline` reads a bench/timeline.py report instead (the kernels timed inside the graphs) and
lists, per arm and forward, each component against its bound, the furthest first:

    python bench/cost_model.py --timeline \
        bench/results/2026-12-04-new-defaults-run134/timeline.json

With `--floors` a bench/read_floor.py report (run 227) bounds each multiply by the measured
read floor of its shape (a pure read of its bytes, fill and drain included) instead of the
bytes over `--bandwidth`: what no tile of it could beat.

    python bench/cost_model.py --timeline \
        --floors bench/results/2026-12-20-read-run227/read-floor.json \
        bench/results/2026-12-20-verify-run229/timeline-variants-1024.json.gz

With `--against NAME` on a report of `timeline.py --variants`, each variant is set against the
variant NAME of its own weights (arms "<weights> <variant>", one process): for each forward the
change of its back-to-back time and the components that changed most.

    python bench/cost_model.py --timeline --against base \
        bench/results/2026-12-05-variants-run142/timeline-variants-1024.json.gz

`--loop` reads an engine_speed.py report with `--loop-profile` instead: a pipelined speculative
step on the device against its floor, its parts (our kernels, PyTorch's work between them by
name, the idle time) the furthest from their bounds first:

    python bench/cost_model.py --loop bench/results/2026-12-07-tokens-run152/engine-loop.json

With `--ceiling BASE,ARM` (a report of two weight arms, e.g. `bf16,w12:all`), what ARM's
weights could give over BASE's on a GPU of `--bandwidth` (TB/s; default the H200's): each
forward's multiplies scaled from the report's own copy bandwidth to that one, the rest
(attention, norms, the head's exact pass, gaps: latency, not bytes) kept as measured; "now" with
ARM's multiplies as they ran, "ceiling" with ARM's multiply bytes read at BASE's bytes a second
and BASE's rest; a speculative step is the verify plus BASE's draft (session 58: run 306, W12
every matrix over bf16, H200 decode ceiling 1.260x, step 1.219x):

    python bench/cost_model.py --timeline --ceiling bf16,w12:qkv,o,gate_up,down \
        bench/results/2026-12-05-trace-run306/timeline-compiled.json.gz

With `--gaps`, where each forward's gaps between launches sit: its launches grouped by the
launch before each, with the mean gap and wait and the share launched early (PDL). Plain
launches show as ~1.3 us gaps entered late (how the verify's multiplies stood until run 145):

    python bench/cost_model.py --timeline --gaps \
        bench/results/2026-12-06-wide-defaults-run145/timeline-variants-1024.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json

# how many times a forward runs each multiply of kernel_sweep.SHAPES (Qwen3-8B: 36 layers)
LAYERS = 36
PER_FORWARD = {"qkv": LAYERS, "o": LAYERS, "gate_up": LAYERS, "down": LAYERS, "lm_head": 1}
ARMS = {"bf16": "skinny", "w12": "w12"}  # arm -> the table's column that arm's engine runs


def multiplies(table: dict, rows: int, bandwidth: float) -> dict:
    """arm -> shape -> measured and bound microseconds of one multiply, and its count a forward,
    from the kernel table's results at `rows` rows."""
    found = [r for r in table["results"] if r["m"] == rows]
    if {r["shape"] for r in found} != set(PER_FORWARD):
        raise ValueError(f"the table has no complete set of shapes at {rows} rows")
    out: dict = {arm: {} for arm in ARMS}
    for r in found:
        for arm, column in ARMS.items():
            us = r["us"][column]
            nbytes = r["tb_s"][column] * 1e12 * us * 1e-6  # the bytes that arm's kernel reads
            out[arm][r["shape"]] = {
                "us": us,
                "bound_us": nbytes / bandwidth * 1e6,
                "bytes": nbytes,
                "per_forward": PER_FORWARD[r["shape"]],
            }
    return out


def step_model(table: dict, e2e: dict | None, rows: int, bandwidth: float, fraction: float):
    """The model's numbers for every arm (see the module docstring)."""
    model = {}
    steps = {}
    if e2e is not None:
        steps = {arm: e2e["arms"][arm]["ar"]["step_ms"] * 1e3 for arm in ARMS}
    for arm, shapes in multiplies(table, rows, bandwidth).items():
        total = sum(s["us"] * s["per_forward"] for s in shapes.values())
        bound = sum(s["bound_us"] * s["per_forward"] for s in shapes.values())
        lost = {name: (s["us"] - s["bound_us"]) * s["per_forward"] for name, s in shapes.items()}
        entry = {
            "multiplies_us": total,
            "multiplies_bound_us": bound,
            "lost_us": dict(sorted(lost.items(), key=lambda kv: -kv[1])),
            "shapes": shapes,
        }
        if arm in steps:
            entry["step_us"] = steps[arm]
            entry["rest_us"] = steps[arm] - total  # everything but the multiplies
        model[arm] = entry
    out: dict = {"rows": rows, "bandwidth_tb_s": bandwidth / 1e12, "arms": model}
    if steps:
        bf16, w12 = model["bf16"], model["w12"]
        out["w12_over_bf16"] = {
            "multiplies": bf16["multiplies_us"] / w12["multiplies_us"],
            "measured_step": bf16["step_us"] / w12["step_us"],
        }
        at = w12["multiplies_bound_us"] / fraction + w12["rest_us"]
        out["w12_at_fraction"] = {
            "fraction": fraction,
            "step_us": at,
            "over_bf16": bf16["step_us"] / at,
        }
        parts = [
            (f"{arm} {name}", us) for arm in ARMS for name, us in model[arm]["lost_us"].items()
        ]
        parts += [(f"{arm} rest", model[arm]["rest_us"]) for arm in ARMS]
        out["furthest_from_bound"] = max(parts, key=lambda p: p[1])[0]
    return out


def read_report(path: str) -> dict:
    """A JSON report, gzipped where its name ends in .gz (the kernel timelines' variant reports
    are committed so: every launch of every forward, ~1-7 MB of text each)."""
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def load_tables(paths: list[str]) -> dict:
    """One kernel table from several w12_speed reports: their results by (rows, shape), a later
    report's entry replacing an earlier one's."""
    merged: dict = {}
    for path in paths:
        for r in read_report(path)["results"]:
            merged[(r["m"], r["shape"])] = r
    return {"results": list(merged.values())}


def choose_matrices(table: dict, draft_layers: int, verify_rows: int = 16) -> dict:
    """For each multiply: W12's time minus bf16's (the table's fastest W12 tile, its sweep's
    winner where it swept one, which a tiles file or MEASURED_TILES adopts, and the skinny
    column) in an AR
    token and in a speculative step (verify + draft at `verify_rows` rows; the drafter runs the
    decoder-layer shapes `draft_layers` times and the target's LM head once more), and the
    formats/w12_engine.MATRICES names whose W12 form saves time in each mode. The drafter's fc
    is not in the table: it stays out of both choices."""
    us = {
        m: {r["shape"]: r["us"] for r in table["results"] if r["m"] == m} for m in (1, verify_rows)
    }
    for m, shapes in us.items():
        if set(shapes) != set(PER_FORWARD):
            raise ValueError(f"the tables have no complete set of shapes at {m} rows")
    per_step = {
        name: count + (1 if name == "lm_head" else draft_layers)
        for name, count in PER_FORWARD.items()
    }
    saved: dict = {}
    for name in PER_FORWARD:
        one, block = us[1][name], us[verify_rows][name]
        ar = (min(one["w12"], one["w12_best"]) - one["skinny"]) * PER_FORWARD[name]
        spec = (min(block["w12"], block["w12_best"]) - block["skinny"]) * per_step[name]
        saved[name] = {"ar_us": ar, "spec_step_us": spec}
    choice = {
        mode: sorted(name for name, d in saved.items() if d[key] < 0)
        for mode, key in (("ar", "ar_us"), ("speculative", "spec_step_us"))
    }
    return {"verify_rows": verify_rows, "draft_layers": draft_layers, "w12_minus_bf16": saved,
            "w12_matrices": {mode: ",".join(names) for mode, names in choice.items()}}  # fmt: skip


def read_floors(report: dict) -> dict[tuple[int, int, str], float]:
    """A bench/read_floor.py report -> (N, K, format) -> the bytes/s of the fastest pure read
    of that multiply's weight bytes (cold, in a graph of 20 calls): the floor its one-row
    multiply could reach, fill and drain included."""
    from kernel_sweep import layer_shapes  # bench/ is on sys.path when run as a script

    shapes = layer_shapes(report["model"])
    return {
        (*shapes[name], fmt): b["bytes"] / (b["us"] * 1e-6)
        for name, formats in report["best"].items()
        for fmt, b in formats.items()
    }


def multiply_bandwidth(shape: str, bandwidth: float, floors: dict | None) -> float:
    """The bytes/s a timeline multiply `shape` ("<kind> <M>x<N>x<K>") is bound by: its read
    floor (W12's for w12_linear, bf16's for the others: the certified head's int8 bytes and an
    FP8 drafter's at the bf16 weight's read speed, an approximation, since smaller reads fill
    and drain a larger share) where `floors` has its N and K, else `bandwidth`."""
    kind, dims = shape.split()
    _, n, k = (int(v) for v in dims.split("x"))
    fmt = "w12" if kind.startswith("w12") else "bf16"
    return (floors or {}).get((n, k, fmt), bandwidth)


def timeline_losses(report: dict, bandwidth: float, floors: dict | None = None) -> dict:
    """A bench/timeline.py report as losses: for each arm and forward, every component's
    in-graph microseconds (the launches' runs, summed) against its bound (its bytes over
    `bandwidth` in bytes/s, or, with `floors` (`read_floors`), each multiply's bytes over its
    shape's measured read floor; the attention by the keys and values it reads; kernels without
    a byte count and the gaps between launches are bound by 0, all latency), sorted by what each
    loses, the first the furthest from its bound."""
    out: dict = {}
    for arm, forwards in report["arms"].items():
        for name, a in forwards.items():
            rows = {}
            for shape, sh in a["shapes"].items():
                speed = multiply_bandwidth(shape, bandwidth, floors)
                rows[shape] = (sh["run_us"], sh["bytes"] / speed * 1e6)
            by_shape = {shape.split()[0] for shape in a["shapes"]}
            for kind, k in a["kinds"].items():
                if kind in by_shape:
                    continue  # by shape, above
                rows[kind] = (
                    k["run_us"],
                    k["bytes"] / bandwidth * 1e6 if kind == "attention" else 0,
                )
            rows["gaps between launches"] = (a["gap_us"], 0.0)
            table = [
                {"component": c, "us": us, "bound_us": bound, "lost_us": us - bound}
                for c, (us, bound) in rows.items()
            ]
            table.sort(key=lambda r: -r["lost_us"])
            out.setdefault(arm, {})[name] = {
                "span_us": a["span_us"],
                "bound_us": sum(r["bound_us"] for r in table),
                "lost_us": sum(r["lost_us"] for r in table),
                "components": table,
                "furthest_from_bound": table[0]["component"],
            }
    return out


def timeline_ceiling(report: dict, base: str, arm: str, bandwidth: float) -> dict:
    """`--ceiling`: arm's weights against base's, projected to a GPU of `bandwidth` TB/s from a
    bench/timeline.py report (its `copy_bandwidth_tb_s` measured in the same call). Per forward
    (decode, verify; and "step": verify plus base's draft): base's span, arm's "now" (its own
    multiplies scaled by the bandwidths, its own rest) and "ceiling" (arm's multiply bytes at
    base's bytes a second, scaled, and base's rest), microseconds, and their ratios to base."""
    arms = report["arms"]
    for name in (base, arm):
        if name not in arms:
            raise ValueError(f"--ceiling: the report has no arm {name!r} (it has {list(arms)})")
    scale = bandwidth / report["copy_bandwidth_tb_s"]

    def parts(forward: dict) -> tuple[float, float, float]:
        # the weight multiplies: the kinds timed by shape, less the LM head (the same int8 reads
        # in both arms), which stays in the rest
        weights = {shape.split()[0] for shape in forward["shapes"]} - {"certified_head"}
        kinds = [k for name, k in forward["kinds"].items() if name in weights]
        us = sum(k["run_us"] for k in kinds)
        return us, sum(k["bytes"] for k in kinds), forward["span_us"] - us

    out: dict = {"bandwidth_tb_s": bandwidth, "measured_tb_s": report["copy_bandwidth_tb_s"]}
    spans: dict = {}
    for name in ("decode", "verify", "draft"):
        b_us, b_bytes, b_rest = parts(arms[base][name])
        a_us, a_bytes, a_rest = parts(arms[arm][name])
        spans[name] = (
            b_us / scale + b_rest,
            a_us / scale + a_rest,
            a_bytes * (b_us / b_bytes) / scale + b_rest,
        )
    draft = spans["draft"][0]
    spans["step"] = tuple(t + draft for t in spans["verify"])
    for name in ("decode", "verify", "step"):
        b, now, ceiling = spans[name]
        out[name] = {
            "base_us": b, "now_us": now, "ceiling_us": ceiling,
            "now": b / now, "ceiling": b / ceiling,
        }  # fmt: skip
    return out


def timeline_deltas(report: dict, losses: dict, base: str, most: int = 4) -> dict:
    """Each variant of a `timeline.py --variants` report against variant `base` of the same
    weights (arm "<weights> <variant>"): per forward, its back-to-back time and the change
    from base's (ms, and %), and the `most` components (timeline_losses') whose in-graph
    microseconds changed most, largest change first."""
    out: dict = {}
    for arm, forwards in report["arms"].items():
        weights, _, variant = arm.partition(" ")
        ref = f"{weights} {base}"
        if not variant or variant == base:
            continue
        if ref not in report["arms"]:
            raise ValueError(f"--against {base}: the report has no arm {ref!r} for {arm!r}")
        for name, a in forwards.items():
            b2b = a["untraced_back_to_back_ms"]
            b2b_base = report["arms"][ref][name]["untraced_back_to_back_ms"]
            before = {r["component"]: r["us"] for r in losses[ref][name]["components"]}
            now = {r["component"]: r["us"] for r in losses[arm][name]["components"]}
            changes = [
                {"component": c, "us": now.get(c, 0.0), "change_us": now.get(c, 0.0) - us}
                for c, us in before.items()
            ] + [{"component": c, "us": us, "change_us": us} for c, us in now.items()
                 if c not in before]  # fmt: skip
            changes.sort(key=lambda r: -abs(r["change_us"]))
            out.setdefault(arm, {})[name] = {
                "back_to_back_ms": b2b,
                "change_ms": b2b - b2b_base,
                "change": b2b / b2b_base - 1,
                "components": changes[:most],
            }
    return out


def loop_losses(report: dict) -> dict:
    """An engine_speed.py report's pipelined-loop profiles (`--loop-profile`) as losses: for
    each model, context and profile (replayed proposals, and the drafter's own with
    `--loop-profile 2`), a device step's components against their bounds: our kernels (the
    draft and verify forwards) against the step's floor (its weights and cache bytes over the
    copy bandwidth, engine_speed's step_floor_ms), PyTorch's work between them by name and the
    idle time, bound 0; sorted by what each loses, the first the furthest from its bound."""
    out: dict = {}
    for model, entry in report.items():
        if not isinstance(entry, dict) or "contexts" not in entry:
            continue
        for c in entry["contexts"]:
            floor_us = c["speculative"]["6.55"]["step_floor_ms"] * 1e3
            for key in ("loop_profile", "loop_profile_drafter"):
                p = c.get(key)
                if not p or not p["steps"]:
                    continue
                u = p["us_per_step"]
                rows = [("our kernels (the forwards)", u["ours"], floor_us), ("idle", u["idle"], 0)]
                rows += [(f"others: {k}", v["us"], 0) for k, v in p["others_per_step"].items()]
                table = [
                    {"component": name, "us": us, "bound_us": bound, "lost_us": us - bound}
                    for name, us, bound in rows
                ]
                table.sort(key=lambda r: -r["lost_us"])
                out[f"{model} ctx {c['context']} {p.get('proposals', 'replay')}"] = {
                    "steps": p["steps"],
                    "span_us": u["span"],
                    "bound_us": floor_us,
                    "lost_us": u["span"] - floor_us,
                    "components": table,
                    "furthest_from_bound": table[0]["component"],
                }
    return out


def print_losses(head: str, f: dict, width: int) -> None:
    """A line `head`, bound, lost and the furthest component of a timeline_losses or
    loop_losses entry, then its six furthest components (names cut to `width`)."""
    print(
        f"{head}, bound {f['bound_us'] / 1e3:.3f}, lost {f['lost_us'] / 1e3:.3f}; furthest: "
        f"{f['furthest_from_bound']}"
    )
    for r in f["components"][:6]:
        print(
            f"  {r['component'][:width]:<{width}} {r['us']:8.1f} us, bound {r['bound_us']:8.1f}, "
            f"lost {r['lost_us']:7.1f}"
        )


def launch_label(launch: dict) -> str:
    """A traced launch's component name: a multiply by its shape (rows x N x K), else its
    kernel (timeline_losses' names)."""
    if "n" in launch and "k" in launch:
        return f"{launch['kernel']} {launch['rows']}x{launch['n']}x{launch['k']}"
    return launch["kernel"]


def timeline_gaps(report: dict, most: int = 8) -> dict:
    """Where each forward's gaps between launches sit: its traced launches grouped by (launch,
    the launch before), each group's count, mean gap before it (from the exit of the launch
    before to its programs' start, microseconds), mean wait (from its first program's entry to
    its start), and the share of its launches that entered before the launch before had
    exited (launched early: PDL); the `most` groups with the most gap first. A group entered
    late with gaps of ~1.3 us is launched plainly; one entered early with ~0.45 us, by PDL."""
    out: dict = {}
    for arm, forwards in report["arms"].items():
        for name, a in forwards.items():
            groups: dict = {}
            launches = a["launches"]
            for before, now in zip(launches, launches[1:]):
                g = groups.setdefault((launch_label(now), launch_label(before)), [0, 0, 0, 0])
                g[0] += 1
                g[1] += now["gap"] / 1e3
                g[2] += now["wait"] / 1e3
                g[3] += now["entry"] < before["exit"]
            rows = [
                {"launch": k, "after": b, "launches": n, "gap_us": gap, "mean_gap_us": gap / n,
                 "mean_wait_us": wait / n, "early": early / n}
                for (k, b), (n, gap, wait, early) in groups.items()
            ]  # fmt: skip
            rows.sort(key=lambda r: -r["gap_us"])
            out.setdefault(arm, {})[name] = {"gap_us": a["gap_us"], "groups": rows[:most]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "table",
        help="a w12_speed.py JSON report with a kernel table (--matrices: several, comma-joined)",
    )
    parser.add_argument(
        "--matrices",
        action="store_true",
        help="choose EngineConfig.w12_matrices for AR and for speculative decoding (see above)",
    )
    parser.add_argument("--draft-layers", type=int, default=5, help="--matrices: the drafter's")
    parser.add_argument("--e2e", help="a w12_speed.py JSON report with end-to-end arms")
    parser.add_argument("--rows", type=int, default=1, help="the table's row count (1: decode)")
    parser.add_argument("--bandwidth", type=float, default=4.26, help="TB/s (ANCHORS.md)")
    parser.add_argument("--fraction", type=float, default=0.85, help="of the bandwidth")
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="the table is a bench/timeline.py report: each forward's in-graph losses",
    )
    parser.add_argument(
        "--against",
        default="",
        help="--timeline on a --variants report: each variant against this one (see above)",
    )
    parser.add_argument(
        "--loop",
        action="store_true",
        help="the table is an engine_speed.py report with --loop-profile: a device step's losses",
    )
    parser.add_argument(
        "--gaps",
        action="store_true",
        help="--timeline: where each forward's gaps sit, by launch and the launch before it",
    )
    parser.add_argument(
        "--ceiling",
        default="",
        help="--timeline: BASE,ARM (two of the report's weight arms): ARM's forwards over "
        "BASE's on a GPU of --bandwidth, as measured and at BASE's bandwidth (see above)",
    )
    parser.add_argument(
        "--floors",
        default="",
        help="--timeline: a bench/read_floor.py report; each multiply bound by its shape's "
        "measured read floor instead of --bandwidth",
    )
    args = parser.parse_args()
    if (args.against or args.gaps or args.floors or args.ceiling) and not args.timeline:
        parser.error("--against, --gaps, --floors and --ceiling go with --timeline")
    if not 0 < args.fraction <= 1 or args.bandwidth <= 0:
        parser.error("--fraction must be in (0, 1] and --bandwidth > 0")
    if args.loop:
        out = loop_losses(read_report(args.table))
        if not out:
            parser.error(f"{args.table} holds no --loop-profile measurements")
        for name, f in out.items():
            head = f"{name}: a pipelined step {f['span_us'] / 1e3:.3f} ms on the device"
            print_losses(f"{head} ({f['steps']} steps)", f, 60)
        print(json.dumps(out))
        return
    if args.timeline:
        report = read_report(args.table)
        floors = read_floors(read_report(args.floors)) if args.floors else None
        out = timeline_losses(report, args.bandwidth * 1e12, floors)
        if args.ceiling:
            base, _, arm = args.ceiling.partition(",")
            try:
                ceiling = timeline_ceiling(report, base, arm, args.bandwidth)
            except ValueError as exc:
                parser.error(str(exc))
            print(
                f"{arm} over {base} at {args.bandwidth:.2f} TB/s (measured at "
                f"{ceiling['measured_tb_s']:.2f}): multiplies scaled, the rest as measured"
            )
            for name in ("decode", "verify", "step"):
                c = ceiling[name]
                print(
                    f"  {name:<7} {base} {c['base_us']:7.0f} us; {arm} now {c['now_us']:7.0f} "
                    f"({c['now']:.3f}x), at {base}'s bandwidth {c['ceiling_us']:7.0f} "
                    f"({c['ceiling']:.3f}x)"
                )
            print(json.dumps(ceiling))
            return
        if args.gaps:
            gaps = timeline_gaps(report)
            for arm, forwards in gaps.items():
                for name, g in forwards.items():
                    print(f"{arm} {name}: gaps {g['gap_us']:.1f} us; most of them before")
                    for r in g["groups"]:
                        print(
                            f"  {r['launch']:<28} after {r['after']:<28} x{r['launches']:<4}"
                            f" gap {r['mean_gap_us']:.2f} us ({r['gap_us']:6.1f}), wait "
                            f"{r['mean_wait_us']:6.2f}, early {r['early']:4.0%}"
                        )
            print(json.dumps(gaps))
            return
        if args.against:
            try:
                deltas = timeline_deltas(report, out, args.against)
            except ValueError as exc:
                parser.error(str(exc))
            for arm, forwards in deltas.items():
                for name, d in forwards.items():
                    parts = ", ".join(
                        f"{c['component']} {c['change_us']:+.1f}" for c in d["components"]
                    )
                    print(
                        f"{arm} {name}: {d['back_to_back_ms']:.3f} ms back to back "
                        f"({d['change']:+.2%} against {args.against}); us: {parts}"
                    )
            print(json.dumps(deltas))
            return
        for arm, forwards in out.items():
            for name, f in forwards.items():
                print_losses(f"{arm} {name}: span {f['span_us'] / 1e3:.3f} ms", f, 28)
        print(json.dumps(out))
        return
    if args.matrices:
        out = choose_matrices(load_tables(args.table.split(",")), args.draft_layers)
        print(f"{'matrix':<8} {'W12 - bf16 an AR token':>23} {'a speculative step':>19}")
        for name, d in out["w12_minus_bf16"].items():
            print(f"{name:<8} {d['ar_us']:20.0f} us {d['spec_step_us']:16.0f} us")
        for mode, names in out["w12_matrices"].items():
            print(f"w12_matrices for {mode}: {names or '(none: bf16)'}")
        print(json.dumps(out))
        return
    table = read_report(args.table)
    e2e = read_report(args.e2e)["end_to_end"] if args.e2e else None
    out = step_model(table, e2e, args.rows, args.bandwidth * 1e12, args.fraction)
    print(f"{'arm':<5} {'shape':<8} {'us':>8} {'bound':>8} {'x count':>8} {'lost a token':>13}")
    for arm, m in out["arms"].items():
        for name, s in m["shapes"].items():
            lost = m["lost_us"][name]
            print(
                f"{arm:<5} {name:<8} {s['us']:8.1f} {s['bound_us']:8.1f} {s['per_forward']:8d} "
                f"{lost:10.0f} us"
            )
        line = f"{arm}: multiplies {m['multiplies_us'] / 1e3:.2f} ms a token "
        line += f"(bound {m['multiplies_bound_us'] / 1e3:.2f})"
        if "step_us" in m:
            line += f", step {m['step_us'] / 1e3:.2f} ms, rest {m['rest_us'] / 1e3:.2f}"
        print(line)
    if "w12_over_bf16" in out:
        r, at = out["w12_over_bf16"], out["w12_at_fraction"]
        print(
            f"W12 / bf16: multiplies {r['multiplies']:.3f}x, measured step "
            f"{r['measured_step']:.3f}x; every W12 multiply at {at['fraction']:.0%} of the "
            f"bandwidth: step {at['step_us'] / 1e3:.2f} ms = {at['over_bf16']:.3f}x; furthest "
            f"from its bound: {out['furthest_from_bound']}"
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
