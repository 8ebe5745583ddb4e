"""W12 checkpoints and the `specpilot w12 convert | stats` commands.

A W12 checkpoint directory is a safetensors checkpoint in which every projection weight of the
decoder layers (`...layers.<i>.self_attn.{q,k,v,o}_proj.weight`, `...layers.<i>.mlp.{gate,up,
down}_proj.weight`) is replaced by its six W12 arrays `<name>.w12.<array>` (formats/w12.py);
every other tensor and file is copied unchanged. config.json gains a `w12` section:
{"version": 2, "group_size": G, "source_dtype": ..., "tensors": [names], "columns": {name: K}}
(K: the weight's columns; the W12 planes are padded to whole blocks). A weight stored in
another dtype (float32, e.g. a dequantized GGUF) is first rounded to bf16 exactly as loading the
source in bf16 rounds it, so the W12 checkpoint decodes to the bf16 model bit for bit.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from specpilot.errors import CheckpointError, ConfigError
from specpilot.formats import w12
from specpilot.formats.w12 import ARRAYS, W12Weight

VERSION = 2  # 2: the block column order and exponent-pair codes of formats/w12.py
CONVERTED = re.compile(
    r"(^|\.)layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)\.weight$"
)
SUFFIX = ".w12."


def is_converted(name: str, tensor: torch.Tensor) -> bool:
    return bool(CONVERTED.search(name)) and tensor.dim() == 2 and tensor.is_floating_point()


def packed_weights(
    tensors: dict[str, torch.Tensor], section: dict[str, Any], device: torch.device | None = None
) -> dict[str, W12Weight]:
    """Take a checkpoint's W12 arrays out of its tensors (in place): each weight's W12Weight
    by weight name, its arrays on `device` (default: where they are)."""
    if section.get("tensors"):
        check_version(section)
    packed = {}
    for name in section.get("tensors", []):
        arrays = {a: tensors.pop(f"{name}{SUFFIX}{a}").to(device) for a in ARRAYS}
        packed[name] = W12Weight.from_tensors(
            arrays, section["group_size"], section["columns"][name]
        )
    return packed


def decode_tensors(
    tensors: dict[str, torch.Tensor], section: dict[str, Any], device: torch.device | None = None
) -> None:
    """Replace, in place, the W12 arrays of a checkpoint's tensors by the bf16 weights, decoded
    on `device` (default: where the arrays are; the model's device saves a CPU decode of every
    weight when the model loads onto a GPU)."""
    for name, packed in packed_weights(tensors, section, device).items():
        tensors[name] = w12.decode(packed)


def check_version(section: dict[str, Any]) -> None:
    if section.get("version") != VERSION:
        raise CheckpointError(
            f"W12 checkpoint version {section.get('version')}, this build reads version {VERSION}: "
            "convert the source checkpoint again (`specpilot w12 convert`)"
        )


def _weight_files(src: Path) -> list[Path]:
    files = sorted(src.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"{src}: no *.safetensors files")
    return files


def convert(
    src: Path, dst: Path, group_size: int, device: torch.device, log: bool = True
) -> dict[str, Any]:
    """Write the W12 form of checkpoint directory `src` to `dst`; returns the totals."""
    config_file = src / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"{config_file}: file not found")
    config = json.loads(config_file.read_text())
    if "w12" in config:
        raise CheckpointError(f"{src} is already a W12 checkpoint")
    if dst.exists() and any(dst.iterdir()):
        raise ConfigError(f"{dst} exists and is not empty")
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    names: list[str] = []
    columns: dict[str, int] = {}
    weight_map: dict[str, str] = {}
    totals = dict(num_weights=0, bf16_bytes=0, w12_bytes=0, num_escapes=0)
    source_dtypes: set[str] = set()
    start = time.perf_counter()
    for file in _weight_files(src):
        out: dict[str, torch.Tensor] = {}
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():
                tensor = handle.get_tensor(name)
                if not is_converted(name, tensor):
                    out[name] = tensor
                    continue
                source_dtypes.add(str(tensor.dtype).removeprefix("torch."))
                packed = w12.encode(tensor.to(device=device, dtype=torch.bfloat16), group_size)
                for array, value in packed.tensors().items():
                    out[f"{name}{SUFFIX}{array}"] = value.cpu().contiguous()
                names.append(name)
                columns[name] = packed.columns
                totals["num_weights"] += tensor.numel()
                totals["bf16_bytes"] += 2 * tensor.numel()
                totals["w12_bytes"] += packed.nbytes()
                totals["num_escapes"] += packed.num_escapes
                if log:
                    s = w12.stats(packed)
                    print(
                        f"  {name} {tuple(tensor.shape)}: {s.bits_per_weight:.3f} bits/weight, "
                        f"escape rate {s.escape_rate:.2e}",
                        flush=True,
                    )
        save_file(out, str(tmp / file.name), metadata={"format": "pt"})
        weight_map.update({name: file.name for name in out})
    for item in src.iterdir():
        if item.suffix == ".safetensors" or item.name in ("config.json",) or item.is_dir():
            continue
        if item.name == "model.safetensors.index.json":
            index = json.loads(item.read_text())
            index["weight_map"] = weight_map
            (tmp / item.name).write_text(json.dumps(index, indent=2))
        else:
            shutil.copy2(item, tmp / item.name)
    config["w12"] = dict(
        version=VERSION,
        group_size=group_size,
        source_dtype=sorted(source_dtypes),
        tensors=names,
        columns=columns,
    )
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    if dst.exists():
        dst.rmdir()
    tmp.rename(dst)
    return dict(totals, num_tensors=len(names), seconds=time.perf_counter() - start)


def _stored_weights(path: Path) -> tuple[dict[str, W12Weight], dict[str, Any]]:
    """The W12 tensors of a W12 checkpoint directory, or (for any other checkpoint the loader
    reads: directory or .gguf) its projection weights encoded now, in bf16."""
    from specpilot.models.loader import read_tensors, resolve

    ckpt = resolve(path)
    section = ckpt.hf_config.get("w12")
    if section is None:
        group = w12.DEFAULT_GROUP_SIZE
        weights = {
            name: w12.encode(t.to(torch.bfloat16), group)
            for name, t in read_tensors(ckpt).items()
            if is_converted(name, t)
        }
        return weights, dict(group_size=group, stored=False)
    check_version(section)
    weights = packed_weights(read_tensors(ckpt, decode_w12=False), section)
    return weights, dict(group_size=section["group_size"], stored=True)


def stats_report(path: Path) -> dict[str, Any]:
    weights, info = _stored_weights(path)
    if not weights:
        raise CheckpointError(f"{path}: no decoder-layer projection weights found")
    rows = []
    for name, w in weights.items():
        s = w12.stats(w)
        rows.append(
            dict(
                name=name,
                shape=list(w.shape),
                bytes=s.nbytes,
                bits_per_weight=s.bits_per_weight,
                escapes=s.num_escapes,
                escape_rate=s.escape_rate,
            )
        )
    numel = sum(r["shape"][0] * r["shape"][1] for r in rows)
    nbytes = sum(r["bytes"] for r in rows)
    escapes = sum(r["escapes"] for r in rows)
    total = dict(
        num_tensors=len(rows),
        num_weights=numel,
        bytes=nbytes,
        bf16_bytes=2 * numel,
        bits_per_weight=8 * nbytes / numel,
        escapes=escapes,
        escape_rate=escapes / numel,
    )
    return dict(path=str(path), **info, tensors=rows, total=total)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("w12", help="lossless 12-bit weights: convert a checkpoint, show stats")
    w12_sub = p.add_subparsers(dest="w12_command", required=True)
    conv = w12_sub.add_parser("convert", help="checkpoint directory -> W12 checkpoint directory")
    conv.add_argument("src", type=Path)
    conv.add_argument("dst", type=Path)
    conv.add_argument("--group-size", type=int, default=w12.DEFAULT_GROUP_SIZE)
    conv.add_argument("--device", default="cpu", help="where to encode (cuda is much faster)")
    st = w12_sub.add_parser("stats", help="bytes, bits per weight and escape rate per tensor")
    st.add_argument("path", type=Path, help="W12 checkpoint (or any checkpoint: encoded now)")


def cmd_w12(args: argparse.Namespace) -> int:
    if args.w12_command == "convert":
        if args.group_size < 1:
            raise ConfigError(f"--group-size must be >= 1, got {args.group_size}")
        if not args.src.is_dir():
            raise ConfigError(f"{args.src}: not a checkpoint directory")
        result = convert(args.src, args.dst, args.group_size, torch.device(args.device))
        print(
            f"{result['num_tensors']} tensors, {result['num_weights']} weights: "
            f"{result['bf16_bytes'] / 1e6:.1f} MB bf16 -> {result['w12_bytes'] / 1e6:.1f} MB W12 "
            f"({8 * result['w12_bytes'] / max(1, result['num_weights']):.3f} bits/weight), "
            f"escape rate {result['num_escapes'] / max(1, result['num_weights']):.2e}, "
            f"{result['seconds']:.1f} s"
        )
        print(json.dumps(dict(src=str(args.src), dst=str(args.dst), **result)))
        return 0
    report = stats_report(args.path)
    for r in report["tensors"]:
        print(
            f"{r['name']:<48} {str(tuple(r['shape'])):>14} {r['bytes']:>12} B "
            f"{r['bits_per_weight']:7.3f} bits/w  escapes {r['escape_rate']:.2e}"
        )
    t = report["total"]
    print(
        f"total: {t['num_tensors']} tensors, {t['num_weights']} weights, {t['bytes']} B "
        f"(bf16 {t['bf16_bytes']} B), {t['bits_per_weight']:.3f} bits/weight, "
        f"escape rate {t['escape_rate']:.2e}"
        + ("" if report["stored"] else " (encoded now from a non-W12 checkpoint, in bf16)")
    )
    print(json.dumps(report))
    return 0
