#!/usr/bin/env bash
# Device call (seconds): park what the next calls need on the warm machine, in ~/sp: the first
# GGUF part (.carry/q1/g1, 35.5 MB), the shipped drafter (from the tracked tree) and the training
# prompts (.carry/q3/mix.jsonl.gz, 5.9 MB: `python -m specpilot.train.prompts mix.jsonl
# --synthetic --code-packages default`). Carry .carry/q1 and .carry/q3 together only while the
# tree is small enough (~26 MB with the drafter: 67.0 of the 67.1 MB allowed); otherwise carry
# .carry/q3 with an earlier call (e.g. beside .carry/srv for serve.sh) and run this again with q1.
# Then, while warm: embedded_probe.sh with .carry/q2, or train_embedded.sh with
# FIRST=~/sp/g1 SECOND=.carry/q2/g2 WHEELS=.carry/q2 PROMPTS=~/sp/mix.jsonl
# INIT_FROM=~/sp/drafter-shipped (move src/specpilot/data/smollm2-dflash-b16 out of the tree
# for those calls: .carry/q2 with the tree is ~65 MB without it).
set -u
mkdir -p ~/sp
[ -f .carry/q1/g1 ] && cp .carry/q1/g1 ~/sp/g1
rm -rf ~/sp/drafter-shipped && cp -r src/specpilot/data/smollm2-dflash-b16 ~/sp/drafter-shipped
[ -f .carry/q3/mix.jsonl.gz ] && gunzip -c .carry/q3/mix.jsonl.gz >~/sp/mix.jsonl
ls -la ~/sp
