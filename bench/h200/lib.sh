# Sourced by the device scripts (bench/h200/*.sh): what they share.
# card: the GPU's name and memory, printed and kept in $OUT/gpu.log (calls may land on another
# kind of card than asked for: numbers compare only within one call).
card() { nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.log"; }
# sw MODULE.NAME=INT: a variant's --switch of specpilot.kernels.MODULE (specpilot/switches.py)
sw() { echo "--switch kernels.$1"; }
# pack: the JSON, logs and CSVs under $OUT so far into one all.tgz (a call returns at most 8
# files; packed after each step, a call cut at the device's limit keeps what finished).
pack() {
    (cd "$OUT" && tar czf all.tgz --ignore-failed-read -- *.json *.log *.csv 2>/dev/null)
}
# archive_only: after the last pack, the packed files removed: only all.tgz comes back.
archive_only() { rm -f -- "$OUT"/*.json "$OUT"/*.log "$OUT"/*.csv; }
# gpu_tests FILE...: the tests of the FILEs that TESTS_K selects (pytest -k; the prototype
# marker's too, which CPU runs deselect), within TESTS_S seconds (else the caller's
# TESTS_S_DEFAULT, else 90); nothing when TESTS_K is empty.
gpu_tests() {
    [ -n "${TESTS_K:-}" ] || return 0
    timeout "${TESTS_S:-${TESTS_S_DEFAULT:-90}}" python3 -m pytest -q -p no:cacheprovider "$@" \
        -m "" -k "$TESTS_K" >"$OUT/gpu-tests.log" 2>&1
    echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"; pack
}
# tests_passed: whether the last gpu_tests' summary line says passed and none failed.
tests_passed() {
    local last; last=$(tail -1 "$OUT/gpu-tests.log")
    grep -q "passed" <<<"$last" && ! grep -q "failed" <<<"$last"
}
# gpu_tests_gate FILE...: gpu_tests, then, unless tests_passed, the failures printed, everything
# packed and 1 returned (the caller's `|| exit 0` stops there).
gpu_tests_gate() {
    gpu_tests "$@"
    if ! tests_passed; then
        grep -E "Error|assert|FAILED" "$OUT/gpu-tests.log" | head -20 | cut -c1-250
        pack; archive_only; return 1
    fi
}
# mma_table SECONDS [OPTIONS...]: bench/w12_mma_speed.py (kernels/w12_mma.py against w12_linear
# and bf16) within SECONDS into $OUT/mma-speed.{json,log}; prints its closing table, packs.
mma_table() {
    local seconds=$1; shift
    timeout "$seconds" python3 bench/w12_mma_speed.py "$@" --out "$OUT/mma-speed.json" \
        >"$OUT/mma-speed.log" 2>&1
    echo "mma speed rc=$?"; sed -n '/^shape    rows/,/^{/p' "$OUT/mma-speed.log" | grep -v '^{'
    pack
}
# decode_each ARMS: the per-kernel decode lines of the variants' timeline log for weight ARMS
# (a regex, e.g. "w12:all").
decode_each() {
    grep -E "^$1 \S+ decode:.*each" "$OUT/timeline-variants-1024.log" | cut -c1-330
}
# unpack: a nested script's all.tgz (timeline.sh packs and archives its own) opened under $OUT,
# so that the caller's next pack keeps its files.
unpack() { (cd "$OUT" && tar xzf all.tgz && rm all.tgz); }
# fastest_variant FORWARD MARGIN_MS NAME...: of the variants NAME... in the last timeline
# variants run at 1k (its JSON under $OUT, named for MODEL where that is set), the one whose
# FORWARD (decode, verify, draft) is fastest back to back, printed only if it beats the faster of
# base and base2 by MARGIN_MS (NAMEs the run did not reach left out).
fastest_variant() {
    python3 - "$OUT/timeline-variants-1024${MODEL:+-$MODEL}.json" "$@" <<'PY'
import json, sys
path, forward, margin, *names = sys.argv[1:]
arms = json.load(open(path))["arms"]
ms = {k.split()[1]: v[forward]["untraced_back_to_back_ms"] for k, v in arms.items()}
names = [name for name in names if name in ms]
best = min(names, key=ms.get, default=None)
print(best if best and ms[best] < min(ms["base"], ms["base2"]) - float(margin) else "")
PY
}
# engine CONTEXT NAME SECONDS [OPTIONS...]: bench/engine_speed.py at CONTEXT, Qwen3-8B shape
# only (no Llama, batches, baselines or profile), 3 repeats, within SECONDS, into
# $OUT/engine-NAME.{json,log}; prints its summary line.
engine() {
    local ctx=$1 name=$2 seconds=$3; shift 3
    timeout "$seconds" python3 bench/engine_speed.py --contexts "$ctx" --llama-contexts '' \
        --batches '' --repeats 3 --hf-baseline 0 --profile 0 --torch-baseline 0 "$@" \
        --out "$OUT/engine-$name.json" >"$OUT/engine-$name.log" 2>&1
    echo "engine $name rc=$?"; grep -E "ctx $ctx" "$OUT/engine-$name.log" | cut -c1-300
}
# llama CONTEXT NAME SECONDS [OPTIONS...]: engine's run at the Llama-3.1-8B shape only (its
# later --llama-contexts overrides engine's '').
llama() { engine "$1" "$2" "$3" --models llama3.1-8b --llama-contexts "$1" "${@:4}"; }
# variants ARMS VARIANTS SECONDS: timeline.sh's variants (bench/timeline.py --variants) of the
# weight ARMS at CONTEXT (1024), 15 replays, within SECONDS, no GPU tests; prints the closing
# table's rows and keeps its files under $OUT for the caller's next pack.
variants() {
    TESTS_K='' ARMS="$1" REPLAYS=15 TL_S="$3" VARIANTS="$2" CONTEXT="${CONTEXT:-1024}" \
        bash "$(dirname "${BASH_SOURCE[0]}")/timeline.sh" \
        | grep -E "^(bf16|w12\S*) .* (decode|verify|draft) +[0-9]"
    unpack
}
# ncu_table NAME RUN_ARGS...: Nsight Compute's raw counters of bench/ncu_kernels.py run RUN_ARGS
# into $OUT/NAME.csv (its log NAME.log), then ncu_kernels.py's table of them (NAME-table.log),
# whose head it prints.
ncu_table() {
    local name=$1; shift
    timeout 150 ncu --profile-from-start off --clock-control none --csv --page raw \
        --metrics "$(python3 bench/ncu_kernels.py metrics)" \
        python3 bench/ncu_kernels.py run "$@" >"$OUT/$name.csv" 2>"$OUT/$name.log"
    echo "$name ncu rc=$?"; tail -2 "$OUT/$name.log"
    python3 bench/ncu_kernels.py table "$OUT/$name.csv" >"$OUT/$name-table.log" 2>&1
    head -12 "$OUT/$name-table.log" | cut -c1-220
}
# ncu_source NAME KERNEL COMMAND...: Nsight Compute's SASS source view of one launch of the kernel
# named KERNEL (a regex's whole match) while COMMAND runs (its profiled range); the stall samples
# per opcode and instruction (bench/ncu_kernels.py source) into $OUT/NAME-source.log, whose head
# it prints; the raw CSV stays in $OUT, the report is removed.
ncu_source() {
    local name=$1 kernel=$2; shift 2
    timeout 150 ncu --profile-from-start off --clock-control none -k "regex:^${kernel}$" \
        --launch-count 1 --section SourceCounters --section WarpStateStats \
        --section LaunchStats --section Occupancy -f -o "$OUT/$name" "$@" >"$OUT/$name-ncu.log" 2>&1
    echo "$name source ncu rc=$?"
    ncu -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass >"$OUT/$name-sass.csv" 2>&1
    python3 bench/ncu_kernels.py source "$OUT/$name-sass.csv" >"$OUT/$name-source.log" 2>&1
    head -30 "$OUT/$name-source.log" | cut -c1-170
    rm -f "$OUT/$name.ncu-rep"
}
# ws_table JSON...: bench/w12_join.py --ws results, a line a w12_ws tile beside the best
# w12_linear tile and bf16 (all of the bf16 K and 3/4 of it: the 12-bit bytes), into
# $OUT/ws-table.log; row_table JSON...: the same of --row (kernels/w12_row.py) into
# $OUT/row-table.log, with the epilogues (SwiGLU, the residual) beside the baseline's
# (w12_linear's; skinny_linear's for the bf16 weights' rows); tc_table JSON...: --tc's
# (kernels/w12_tc.py) into $OUT/tc-table.log.
ws_table() { proto_table ws "$@" | tee "$OUT/ws-table.log"; }
tc_table() { proto_table tc "$@" | tee "$OUT/tc-table.log"; }
row_table() {
    { proto_table row "$@"; echo "bf16 weights (bf16_row_linear; baseline skinny_linear):"
      proto_table row_bf16 "$@"; } | tee "$OUT/row-table.log"
}
proto_table() {
    python3 - "$@" <<'PY'
import json, sys
key, paths = sys.argv[1], sys.argv[2:]
for path in paths:
    d = json.load(open(path))
    for s in d["shapes"]:
        best = min((t for t in s["tiles"] if "us" in t), key=lambda t: t["us"])
        print(d["rows"], s["shape"], "w12_linear", best["tile"], best["variant"],
              round(best["us"], 2), "bf16", round(s["bf16_us"], 2), "bf16 3/4 K",
              round(s["bf16_3q_us"], 2))
        for t in s.get(key, []):
            print(d["rows"], s["shape"], t["tile"], round(t["us"], 2) if "us" in t else t["error"])
        if f"{key}_noesc_us" in s:
            print(d["rows"], s["shape"], "default tile, escapes emptied",
                  round(s[f"{key}_noesc_us"], 2))
        for epilogue in ("swiglu", "residual"):
            if f"{key}_{epilogue}_us" in s:
                us = s[f"{key}_{epilogue}_us"]  # or the error of a run that failed its check
                print(d["rows"], s["shape"], epilogue, round(us, 2) if isinstance(us, float)
                      else us, "baseline", round(s[f"{key}_baseline_{epilogue}_us"], 2))
PY
}
# prototype_smoke: bench/wgmma_ra_probe.py's check, then one call each of w12_row_linear,
# bf16_row_linear and w12_tc_linear (1 and 16 rows, pair order) at Qwen3-8B's o shape against
# the references, within 90 s (a hang ends it; no timing); returns the smoke's status.
prototype_smoke() {
    timeout 45 python3 bench/wgmma_ra_probe.py --check >"$OUT/wgmma-probe.log" 2>&1
    echo "wgmma probe rc=$?"; tail -1 "$OUT/wgmma-probe.log" | cut -c1-300
    timeout 90 python3 - >"$OUT/smoke.log" 2>&1 <<'PY'
import torch
from specpilot.formats import w12
from specpilot.kernels import w12_row, w12_tc
from specpilot.kernels.w12_linear import w12_linear_reference
w = (torch.randn(4096, 4096, device="cuda") * 0.02).to(torch.bfloat16)
packed = w12.encode(w)
for m in (1, 16):
    x = torch.randn(m, 4096, device="cuda").to(torch.bfloat16)
    ref = w12_linear_reference(x, packed)
    runs = [("w12_tc", lambda: w12_tc.w12_tc_linear(x, packed))]
    if m == 1:
        runs = [("w12_row", lambda: w12_row.w12_row_linear(x, packed)),
                ("bf16_row", lambda: w12_row.bf16_row_linear(x, w))] + runs
    for name, run in runs:
        y = run()
        torch.cuda.synchronize()
        err = (y.float() - ref.float()).abs().max().item() / ref.float().abs().max().item()
        print(name, m, "relative error", err, "ok" if err < 2**-6 else "WRONG", flush=True)
PY
    local rc=$?; echo "smoke rc=$rc"; tail -6 "$OUT/smoke.log"; return $rc
}
# back_to_back FILE: a timeline variants JSON's decode and verify forwards back to back (ms), a
# line each, every variant.
back_to_back() {
    python3 - "$1" "$(dirname "${BASH_SOURCE[0]}")/.." <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])  # bench/
from exit_spacing import arm_names
arms = json.load(open(sys.argv[1]))["arms"]
for fwd in ("decode", "verify"):
    ms = {n: v[fwd]["untraced_back_to_back_ms"] for n, v in zip(arm_names(arms), arms.values())}
    print(fwd, "back to back, ms:", {k: round(v, 3) for k, v in ms.items()})
PY
}
# decode_table NAME: back_to_back and exit_spacing's decode table of the last Qwen3-8B timeline
# variants run at 1k into $OUT/spacing-decode-NAME.log (its first 13 lines printed), then that
# run's timeline files renamed with NAME (the next variants run writes the same names) and
# everything packed.
decode_table() {
    local tl="$OUT/timeline-variants-1024-qwen3-8b"
    back_to_back "$tl.json"
    python3 bench/exit_spacing.py --forward decode "$tl.json" >"$OUT/spacing-decode-$1.log"
    head -13 "$OUT/spacing-decode-$1.log" | cut -c1-175
    for f in "$tl".*; do mv "$f" "${f/qwen3-8b/qwen3-8b-$1}"; done
    pack
}
# spacing NAME ROWS: bench/exit_spacing.py's verify table of the last timeline variants run at 1k
# (its JSON under $OUT, named for MODEL where that is set) into $OUT/spacing-NAME.log; prints
# its first ROWS lines and the span.
spacing() {
    python3 bench/exit_spacing.py "$OUT/timeline-variants-1024${MODEL:+-$MODEL}.json" \
        >"$OUT/spacing-$1.log"
    head -"$2" "$OUT/spacing-$1.log" | cut -c1-175; grep "^span" "$OUT/spacing-$1.log" | cut -c1-175
}
# w12_e2e NAME MODEL ARMS PAIRED SECONDS [FLAGS...]: bench/w12_speed.py end to end at 1k, every
# matrix in W12, the W12_ARMS ARMS paired over bf16 for PAIRED rounds with the control (token
# forcing on every arm), within SECONDS, into $OUT/NAME.{json,log}, with w12_speed's FLAGS (e.g.
# --pipeline 1); prints its e2e lines.
w12_e2e() {
    timeout "$5" python3 bench/w12_speed.py --rows '' --e2e 1024 --model "$2" \
        --w12-base qkv,o,gate_up,down --w12-arms "$3" --paired "$4" "${@:6}" \
        --out "$OUT/$1.json" >"$OUT/$1.log" 2>&1
    echo "$1 rc=$?"; grep -E "^e2e" "$OUT/$1.log" | cut -c1-300 | tail -20
}
# probe NAME ARGS...: bench/w12_tokens_probe.py with ARGS (kernel, tokens, fences) over
# PROBE_SEEDS seeds (3) within PROBE_S seconds (100; the probe itself stops 30 s before) into
# $OUT/NAME.{json,log}; prints its summary lines.
probe() {
    local s=${PROBE_S:-100}
    timeout "$s" python3 bench/w12_tokens_probe.py --seeds "${PROBE_SEEDS:-3}" --pairs 5 \
        --seconds $((s - 30)) --out "$OUT/$1.json" "${@:2}" 2>&1 | tee "$OUT/$1.log" |
        grep -E "runs:|Error" | cut -c1-160
}
# paired NAME SWITCH...: timeline variants base, NAME (the sw SWITCHes), base2, NAME2: an arm
# and the baseline twice each, so that the arm's gain reads against base / base2's spread.
paired() {
    local name=$1 on="" s; shift
    for s in "$@"; do on="$on$(sw "$s") "; done
    echo "base|;$name|${on% };base2|;${name}2|${on% }"
}
# verify_table MODEL NAME VARIANTS SECONDS: the W12 verify graph of MODEL (every matrix W12) at
# 1k on VARIANTS within SECONDS: its verify lines, back to back, and the exit spacing into
# $OUT/spacing-NAME.log (its first 16 lines printed).
verify_table() {
    MODEL=$1 variants "w12:qkv,o,gate_up,down" "$3" "$4" | grep verify
    back_to_back "$OUT/timeline-variants-1024-$1.json"
    MODEL=$1 spacing "$2" 16
}
