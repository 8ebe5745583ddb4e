# Sourced by the device scripts (bench/h200/*.sh): what they share.
# pack: the JSON, logs and CSVs under $OUT so far into one all.tgz (a call returns at most 8
# files; packed after each step, a call cut at the device's limit keeps what finished).
pack() {
    (cd "$OUT" && tar czf all.tgz --ignore-failed-read -- *.json *.log *.csv 2>/dev/null)
}
# archive_only: after the last pack, the packed files removed: only all.tgz comes back.
archive_only() { rm -f -- "$OUT"/*.json "$OUT"/*.log "$OUT"/*.csv; }
# gpu_tests FILE: the tests of FILE that TESTS_K selects (pytest -k), within TESTS_S seconds
# (else the caller's TESTS_S_DEFAULT, else 90); nothing when TESTS_K is empty.
gpu_tests() {
    [ -n "${TESTS_K:-}" ] || return 0
    timeout "${TESTS_S:-${TESTS_S_DEFAULT:-90}}" python3 -m pytest -q -p no:cacheprovider "$1" \
        -k "$TESTS_K" >"$OUT/gpu-tests.log" 2>&1
    echo "pytest rc=$?"; tail -1 "$OUT/gpu-tests.log"; pack
}
