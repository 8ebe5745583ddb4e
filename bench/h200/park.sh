#!/usr/bin/env bash
# Device call (seconds): park what the next calls need on the warm machine, in ~/sp: the first
# GGUF part (.carry/q1/g1), the shipped drafter (from the tracked tree) and the training prompts
# (.carry/q1/mix.jsonl.gz). Carry .carry/q1 (37 MB; with the tree ~62 MB of the 64 MiB).
# Then, while warm: embedded_probe.sh with .carry/q2, or train_embedded.sh with
# FIRST=~/sp/g1 SECOND=.carry/q2/g2 WHEELS=.carry/q2 PROMPTS=~/sp/mix.jsonl
# INIT_FROM=~/sp/drafter-shipped (move src/specpilot/data/smollm2-dflash-b16 out of the tree
# for those calls: .carry/q2 with the tree is ~65 MB without it).
set -u
mkdir -p ~/sp
cp .carry/q1/g1 ~/sp/g1
rm -rf ~/sp/drafter-shipped && cp -r src/specpilot/data/smollm2-dflash-b16 ~/sp/drafter-shipped
gunzip -c .carry/q1/mix.jsonl.gz >~/sp/mix.jsonl
ls -la ~/sp
