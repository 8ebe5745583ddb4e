"""Compile every Triton kernel for the H200 (sm_90) without a GPU, at the engine's configurations.

Run by tests/test_kernels_compile.py in a fresh process (the kernel tests put Triton in interpreter
mode, where kernels cannot be compiled) with --engine-only: the engine's own configurations, not
the candidate tiles that device scripts try (bench/h200/certified*/) nor the timeline's traced
builds (session 41, one core, cold Triton cache: 275 cases took 260 s); run it without after
changing a kernel.
Prints one line per kernel and exits 1 if any fails: it catches code that runs in the
interpreter but does not compile for the GPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import triton

from specpilot.formats.w12 import SLICE
from specpilot.kernels import (
    aot,
    attention,
    certified,
    elementwise,
    linear,
    rope,
    tokens,
    w12_linear,
    w12_mma,
)


def compile_for_hopper(fn, types: dict[str, str], consts: dict) -> None:
    ptx = aot.compile_kernel(fn, types, consts).asm["ptx"]
    if consts.get("PDL") and "griddepcontrol.wait" not in ptx:
        raise AssertionError("PDL=True but no griddepcontrol.wait in the PTX")
    if consts.get("PDL") and ("launch_dependents" in ptx) == bool(consts.get("LATE")):
        raise AssertionError("PDL=True: launch_dependents in the PTX unless LATE (and not with)")
    elementwise = not consts.get("USE_DOT", True)
    if elementwise and consts.get("LOOP_STAGES", 1) > 1 and "cp.async" not in ptx:
        raise AssertionError("LOOP_STAGES > 1 but no cp.async in the PTX: the loads not pipelined")
    if consts.get("PDL") and consts.get("EARLY_TRIGGER"):  # the next kernel let in first
        if not 0 <= ptx.find("launch_dependents") < ptx.find("griddepcontrol.wait"):
            raise AssertionError("EARLY_TRIGGER but launch_dependents not before the wait")
    if consts.get("EARLY_POS"):  # the positions' loads (.cg) stay ahead of the PDL wait
        wait, early = ptx.find("griddepcontrol.wait"), ptx.find("ld.global.cg")
        if not 0 <= early < wait:
            raise AssertionError("EARLY_POS but no .cg position load before griddepcontrol.wait")
    if consts.get("EARLY_WEIGHT"):  # the norm weight's load stays ahead of the PDL wait
        wait, load = ptx.find("griddepcontrol.wait"), ptx.find("ld.global")
        if not 0 <= load < wait:
            raise AssertionError("EARLY_WEIGHT but no global load before griddepcontrol.wait")
    if consts.get("PREFETCH") == 2 and "cp.async.bulk.prefetch.L2" not in ptx:
        raise AssertionError("PREFETCH=2 but no bulk L2 prefetch in the PTX")
    if ptx.count("cp.async.bulk.prefetch.L2") < consts.get("AHEAD", 0):
        raise AssertionError("AHEAD regions but fewer bulk L2 prefetches in the PTX")
    if consts.get("W_LEFT") and consts.get("BLOCK_N", 0) >= 64 and "wgmma" not in ptx:
        raise AssertionError("W_LEFT with 64 or more weight rows but no wgmma in the PTX")
    if consts.get("SCALE") and "cvt.rn.f16x2.e4m3x2" not in ptx:  # FP8 weights, two at once
        raise AssertionError("SCALE (FP8 weights) but no cvt.rn.f16x2.e4m3x2 in the PTX")
    if consts.get("TRACE") and not ("%globaltimer" in ptx and "atom.global" in ptx):
        raise AssertionError("TRACE=1 but no global timer read or atomic in the PTX")


def with_pdl(cases: list[tuple[str, object, dict, dict]]) -> list[tuple[str, object, dict, dict]]:
    """The first case of every kernel (and tile kind) again with programmatic dependent launch
    (and the skinny multiply's weight prefetch)."""
    seen, out = set(), []
    for label, fn, types, consts in cases:
        key = (fn, consts.get("USE_DOT"))  # the skinny multiply both without and with MMA
        if key not in seen and "PDL" in fn.arg_names:  # (w12 decode: outside decode steps)
            seen.add(key)
            for ahead in (1, 2) if fn is linear._skinny_kernel else (0,):
                extra = {"PDL": True} | ({"PREFETCH": ahead} if ahead else {})
                out.append((f"{label} {extra}", fn, types, consts | extra))
    return out


def with_trace(cases: list[tuple[str, object, dict, dict]]) -> list[tuple[str, object, dict, dict]]:
    """The first case of every kernel that the timeline traces (kernels/trace.py) again with
    TRACE=1 and PDL: the global timer and the atomics of kernels/common.trace_mark."""
    seen, out = set(), []
    for label, fn, types, consts in cases:
        if fn not in seen and "TRACE" in fn.arg_names:
            seen.add(fn)
            ptrs = {"trace_ptr": "*i64", "clock_ptr": "*i64"}
            out.append((f"{label} TRACE", fn, types | ptrs, consts | {"TRACE": 1, "PDL": True}))
    return out


def cases(candidates: bool = True) -> list[tuple[str, object, dict, dict]]:
    bf16 = "*bf16"
    out = []
    lin = {n: bf16 for n in ("x_ptr", "w_ptr", "y_ptr", "res_ptr", "nw_ptr")} | {"eps": "fp32"}
    w12 = {
        "x_ptr": bf16, "low_ptr": "*i32", "code_ptr": "*i32", "base_ptr": "*u8",
        "row_ptr": "*i32", "esc_col_ptr": "*i32", "esc_bits_ptr": "*i16", "y_ptr": bf16,
        "res_ptr": bf16, "nw_ptr": bf16, "part_ptr": "*fp32", "eps": "fp32",
    }  # fmt: skip
    for m in (1, 16, 64):
        for norm, glu, res in ((True, False, False), (False, True, True), (False, False, True)):
            flags = dict(NORM=norm, GLU=glu, RESIDUAL=res, F32_DOT=False)
            # one row: q|k|v's element-wise tile (gate|up's is the 16-row tensor-core tile)
            n = 6144 if m == 1 else 24576
            cfg = {k: v for k, v in linear.tile_config(m, n, 4096).items() if k.isupper()}
            out.append((f"skinny_linear M={m} {flags}", linear._skinny_kernel, lin, flags | cfg))
            if m == 1:  # the loop's loads pipelined through shared memory
                loop = flags | cfg | dict(LOOP_STAGES=3)
                label = f"skinny_linear M=1 LOOP_STAGES=3 {flags}"
                out.append((label, linear._skinny_kernel, lin, loop))
                # the weight tiles by bulk copies (TMA), 16 rows x 256 columns, 4 stages
                tma = flags | cfg | dict(BLOCK_N=16, BLOCK_K=256, LOOP_STAGES=4, TMA=True)
                types = lin | {"w_desc": "tensordesc<bf16[16, 256]>"}
                label = f"skinny_linear M=1 TMA {flags}"
                out.append((label, linear._skinny_kernel, types, tma))
            if m > 1:  # K split over programs, the last adding the slices (counter, fence)
                split = flags | cfg | dict(SPLIT_K=4, FENCE=True)
                types = lin | {"part_ptr": "*fp32", "count_ptr": "*i32"}
                label = f"skinny_linear M={m} SPLIT_K=4 {flags}"
                out.append((label, linear._skinny_kernel, types, split))
            if res is False and m in (1, 16):  # gate|up ending in silu(gate) * up
                swiglu = flags | cfg | dict(SWIGLU=True)
                label = f"skinny_linear M={m} SWIGLU {flags}"
                out.append((label, linear._skinny_kernel, lin, swiglu))
                # ... from a handed-on norm (fused.NORM_HANDOFF_MAX_ROWS)
                handed = swiglu | dict(NORM=False, HAND_IN=True, SLOTS_IN=512)
                label = f"skinny_linear M={m} SWIGLU HAND_IN"
                out.append((label, linear._skinny_kernel, lin | {"sq_in_ptr": "*fp32"}, handed))
            if norm and m in (1, 16):  # q|k|v doing the rope kernel's work (rope.EPILOGUE)
                qkv = {k: v for k, v in linear.tile_config(m, 6144, 4096).items() if k.isupper()}
                on = dict(NORM=False, HAND_IN=True, SLOTS_IN=512, RESIDUAL=False, GLU=False,
                            F32_DOT=False, ROPE=True, HEADS=32, KV_HEADS=8, HEAD_DIM=128,
                            QK_NORM=True, ROPE_FENCE=True, PDL=True)  # fmt: skip
                types = lin | {"sq_in_ptr": "*fp32", "rope_count_ptr": "*i32", "q_out_ptr": bf16,
                               "k_cache_ptr": bf16, "v_cache_ptr": bf16, "pos_ptr": "*i64",
                               "cos_ptr": bf16, "sin_ptr": bf16, "qn_ptr": bf16,
                               "kn_ptr": bf16, "rope_eps": "fp32"}  # fmt: skip
                label = f"skinny_linear M={m} ROPE BLOCK_N={qkv['BLOCK_N']}"
                out.append((label, linear._skinny_kernel, types, qkv | on))
                if m == 16:  # two heads a program
                    wide = qkv | on | dict(BLOCK_N=256)
                    out.append((f"{label} BLOCK_N=256", linear._skinny_kernel, types, wide))
            if res and not glu and m in (1, 16):  # o / down handing the next norm on
                hand = flags | cfg | dict(HAND_OUT=True, PDL=True, LATE=True)
                types = lin | {"u_ptr": bf16, "hw_ptr": bf16, "sq_out_ptr": "*fp32"}
                out.append((f"skinny_linear M={m} HAND_OUT", linear._skinny_kernel, types, hand))
            if m == 16:  # the weights as the MMA's left operand (W_LEFT), bf16 too
                left = dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, USE_DOT=True, W_LEFT=True)
                types = lin | {"part_ptr": "*fp32", "count_ptr": "*i32", "sq_in_ptr": "*fp32",
                               "u_ptr": bf16, "hw_ptr": bf16, "sq_out_ptr": "*fp32"}  # fmt: skip
                label = f"skinny_linear M=16 W_LEFT {flags}"
                out.append((label, linear._skinny_kernel, types, flags | left))
                split = flags | left | dict(SPLIT_K=4, FENCE=True)
                out.append((f"{label} SPLIT_K=4", linear._skinny_kernel, types, split))
                if res is False:  # gate|up from a handed-on norm, ending in silu(gate) * up
                    handed = flags | left | dict(SWIGLU=True, NORM=False, HAND_IN=True,
                                                 SLOTS_IN=512)  # fmt: skip
                    out.append((f"{label} SWIGLU HAND_IN", linear._skinny_kernel, types, handed))
                else:  # o / down handing the next norm on
                    hand = flags | left | dict(HAND_OUT=True, PDL=True, LATE=True)
                    out.append((f"{label} HAND_OUT", linear._skinny_kernel, types, hand))
            if norm and m in (1, 16):  # an FP8 draft head (formats/fp8.py)
                head = {k: v for k, v in linear.tile_config(m, 151936, 4096).items() if k.isupper()}
                types = lin | {"w_ptr": "*fp8e4nv", "scale_ptr": "*fp32"}
                label = f"skinny_linear M={m} FP8 {flags}"
                out.append((label, linear._skinny_kernel, types, flags | head | dict(SCALE=True)))
                left = flags | head | dict(SCALE=True, W_LEFT=True)  # the weights wgmma's A
                out.append((f"{label} W_LEFT", linear._skinny_kernel, types, left))
            w12_cfg = w12_linear.tile_config(m, 24576, 4096)
            w12_cfg = {k: v for k, v in w12_cfg.items() if k.isupper()}
            consts = (
                flags | w12_cfg | dict(GROUP=128, ASM=True, EVEN_K=True, EVEN_N=True, SLICE=SLICE)
            )
            out.append((f"w12_linear M={m} {flags}", w12_linear._w12_kernel, w12, consts))
            esc = consts | dict(ESC_IN_LOOP=True)  # the first escapes in the first step
            out.append((f"w12_linear M={m} ESC_IN_LOOP {flags}", w12_linear._w12_kernel, w12, esc))
            if m == 1:  # an element-wise tile with its loads pipelined
                tile = dict(BLOCK_M=1, BLOCK_N=4, UNROLL=4, SPLIT_K=1, USE_DOT=False)
                loop = esc | tile | dict(LOOP_STAGES=3)
                label = f"w12_linear M=1 LOOP_STAGES=3 {flags}"
                out.append((label, w12_linear._w12_kernel, w12, loop))
            if res is False and m in (1, 16):
                label = f"w12_linear M={m} SWIGLU {flags}"
                out.append((label, w12_linear._w12_kernel, w12, esc | dict(SWIGLU=True)))
                # ... from a handed-on norm (fused.NORM_HANDOFF_W12)
                handed = esc | dict(SWIGLU=True, NORM=False, HAND_IN=True, SLOTS_IN=512)
                types = w12 | {"sq_in_ptr": "*fp32"}
                out.append((f"w12_linear M={m} SWIGLU HAND_IN", w12_linear._w12_kernel, types,
                            handed))  # fmt: skip
            if res and not glu and m == 1:  # down handing the next norm on, triggering late
                hand = esc | dict(HAND_OUT=True, PDL=True, LATE=True, SPLIT_K=1)
                types = w12 | {"u_ptr": bf16, "hw_ptr": bf16, "sq_out_ptr": "*fp32"}
                out.append(("w12_linear M=1 HAND_OUT", w12_linear._w12_kernel, types, hand))
            if w12_cfg["USE_DOT"]:  # the group scales on each half block's sum; bf16 halves
                acc = consts | dict(ACC_SCALE=True, HALVES=True)
                out.append(
                    (f"w12_linear M={m} ACC_SCALE HALVES {flags}", w12_linear._w12_kernel, w12, acc)
                )
                # K in 4 ranges inside the program (SPLIT_IN), with and without ACC_SCALE
                for scaled in (True, False):
                    inside = acc | dict(SPLIT_IN=4, SPLIT_K=1, BLOCK_N=16, num_warps=4,
                                        ACC_SCALE=scaled, ESC_IN_LOOP=True)  # fmt: skip
                    label = f"w12_linear M={m} SPLIT_IN=4 ACC_SCALE={scaled} {flags}"
                    out.append((label, w12_linear._w12_kernel, w12, inside))
        # the plain-Triton decode (ASM=False), a group size that is not a multiple of 32, tails
        for asm, group, even in ((False, 128, True), (True, 48, False), (True, 64, False)):
            w12_cfg = w12_linear.tile_config(m, 4096, 4096)
            w12_cfg = {k: v for k, v in w12_cfg.items() if k.isupper()}
            consts = dict(NORM=False, GLU=False, RESIDUAL=False, F32_DOT=False) | w12_cfg
            consts |= dict(GROUP=group, ASM=asm, EVEN_K=even, EVEN_N=even, SLICE=SLICE)
            label = f"w12_linear M={m} ASM={asm} GROUP={group} EVEN={even}"
            label += f" SPLIT_K={consts['SPLIT_K']}"
            out.append((label, w12_linear._w12_kernel, w12, consts))
            if consts["SPLIT_K"] > 1 and asm:  # the slices added by the last program
                summed = consts | dict(SUM_IN_KERNEL=True, FENCE=True)
                types = w12 | {"count_ptr": "*i32"}
                out.append((label + " in-kernel sum", w12_linear._w12_kernel, types, summed))
    mma_types = {"x_ptr": bf16, "xw_ptr": "*i32", "low_ptr": "*i32", "code_ptr": "*i32"}
    mma_types |= {"base_ptr": "*u8", "row_ptr": "*i32", "esc_col_ptr": "*i32"}
    mma_types |= {"esc_bits_ptr": "*i16", "y_ptr": bf16, "res_ptr": bf16}
    for n, k in ((4096, 4096), (24576, 4096), (4096, 12288)):  # o, gate|up, down: default tiles
        tile = w12_mma.mma_tile(n, k)
        consts = tile | dict(GROUP=128, RESIDUAL=True, BLOCKS=k // 256 // tile["WARPS_K"])
        consts |= dict(num_warps=tile["WARPS_N"] * tile["WARPS_K"])
        out.append((f"w12_mma {n}x{k} {tile}", w12_mma._mma_kernel, mma_types, consts))
        sixteen = consts | dict(GROUPS=2)  # 9-16 rows: a second mma a fragment
        out.append((f"w12_mma {n}x{k} GROUPS=2", w12_mma._mma_kernel, mma_types, sixteen))
    decode_types = {k: w12[k] for k in ("low_ptr", "code_ptr", "base_ptr", "row_ptr")}
    decode_types |= {"esc_col_ptr": "*i32", "esc_bits_ptr": "*i16", "out_ptr": bf16}
    consts = dict(GROUP=128, BLOCK_N=16, SLICE=SLICE)
    out.append(("w12 decode", w12_linear._w12_decode_kernel, decode_types, consts))
    split_types = {"part_ptr": "*fp32", "y_ptr": bf16, "res_ptr": bf16}
    consts = dict(SPLIT_K=4, RESIDUAL=True, BLOCK_N=1024)
    out.append(("w12 split sum", w12_linear._split_sum_kernel, split_types, consts))
    out.append(("w12 split sum EARLY (launch.WIDE_EARLY), 256 columns",
                w12_linear._split_sum_kernel, split_types,
                consts | dict(PDL=True, EARLY_TRIGGER=True, BLOCK_N=256)))  # fmt: skip
    hand_types = split_types | {"u_ptr": bf16, "hw_ptr": bf16, "sq_ptr": "*fp32"}
    hand = dict(SPLIT_K=2, RESIDUAL=True, BLOCK_N=128, HAND_OUT=True, PAIR=True, PDL=True,
                EARLY_TRIGGER=True)  # fmt: skip
    out.append(("w12 split sum handing the norm on (fused.SPLIT_SUM_HAND)",
                w12_linear._split_sum_kernel, hand_types, hand))  # fmt: skip
    early = hand | dict(EARLY_WEIGHT=True)
    out.append(("w12 split sum handing the norm on, its weight read early",
                w12_linear._split_sum_kernel, hand_types, early))  # fmt: skip
    ptrs = ("qkv_ptr", "q_out_ptr", "k_cache_ptr", "v_cache_ptr", "cos_ptr", "sin_ptr", "qn_ptr")
    rope_types = {n: bf16 for n in (*ptrs, "kn_ptr")} | {"pos_ptr": "*i64", "eps": "fp32"}
    for heads in (32, 0):  # target q|k|v, drafter context k|v
        consts = dict(HEADS=heads, KV_HEADS=8, HEAD_DIM=128, QK_NORM=True)
        consts["ROWS"] = triton.next_power_of_2(heads + 16)
        out.append((f"qk_rope_write heads={heads}", rope._qk_rope_kernel, rope_types, consts))
        out.append((f"qk_rope_write heads={heads} early tables", rope._qk_rope_kernel, rope_types,
                    consts | dict(EARLY=True, PDL=True)))  # fmt: skip
    split_types = {"q_ptr": bf16, "k_ptr": bf16, "v_ptr": bf16, "pos_ptr": "*i64"}
    split_types |= {"part_ptr": "*fp32", "stats_ptr": "*fp32", "scale_log2": "fp32"}
    for t, causal in ((1, True), (16, True), (16, False)):
        block_q = max(16, triton.next_power_of_2(4 * t))
        consts = dict(HEADS=32, GROUP=4, HEAD_DIM=128, NUM_SPLITS=33, SLOTS=33, BLOCK_Q=block_q)
        consts |= dict(BLOCK_KV=attention.BLOCK_KV, F32_DOT=False, CAUSAL=causal, Q_ROWS=block_q,
                       KV_STEP=attention.BLOCK_KV)  # fmt: skip
        out.append((f"attention split T={t}", attention._split_kernel, split_types, consts))
        if t == 16:  # a program for each 16 of the 64 query rows (attention.WIDE_Q_ROWS), and
            # 32 keys a loop step (attention.SPLIT_KV_STEP)
            out.append((f"attention split T={t} Q_ROWS=16", attention._split_kernel,
                        split_types, consts | dict(Q_ROWS=16)))  # fmt: skip
            out.append((f"attention split T={t} Q_ROWS=16 KV_STEP=32", attention._split_kernel,
                        split_types, consts | dict(Q_ROWS=16, KV_STEP=32)))  # fmt: skip
        ahead = consts | dict(AHEAD=2)  # the o weight's two W12 planes asked for in L2
        types = split_types | {"ahead0_ptr": "*u8", "ahead1_ptr": "*u8"}
        out.append((f"attention split T={t} AHEAD=2", attention._split_kernel, types, ahead))
        late = ahead | dict(LATE_AHEAD=True)  # asked for after the partials (LATE_AHEAD)
        out.append((f"attention split T={t} AHEAD=2 LATE", attention._split_kernel, types, late))
        kv = consts | dict(KV_AHEAD=128)  # the slice's keys and values asked for before the wait
        out.append((f"attention split T={t} KV_AHEAD=128", attention._split_kernel, split_types,
                    kv))  # fmt: skip
        if t == 1:  # decode: the last split program merges (fence, counter, L2 reads)
            fused_types = split_types | {"out_ptr": bf16, "count_ptr": "*i32"}
            fused = consts | dict(MERGE_ROWS=4, FENCE=True)
            out.append(("attention split+merge T=1", attention._split_kernel, fused_types, fused))
        merge = {k: consts[k] for k in ("HEADS", "GROUP", "HEAD_DIM", "BLOCK_Q")}
        merge |= dict(NUM_SPLITS=32, SLOTS=32, SPLITS_P2=32, BLOCK_KV=attention.BLOCK_KV)
        merge |= dict(num_warps=attention.MERGE_WARPS)  # as launched (MAX_SPLITS 32, 1 warp)
        types = {"part_ptr": "*fp32", "stats_ptr": "*fp32", "out_ptr": bf16, "pos_ptr": "*i64"}
        out.append((f"attention merge T={t}", attention._merge_kernel, types, merge))
        if t == 1:  # launch.O_EARLY: the next kernel (o) let in before the merge's wait
            out.append(("attention merge T=1 EARLY_TRIGGER", attention._merge_kernel, types,
                        merge | dict(PDL=True, EARLY_TRIGGER=True)))  # fmt: skip
        wide = merge | dict(NUM_SPLITS=33, SLOTS=33, SPLITS_P2=64)  # no MAX_SPLITS: 33 slices
        for chunk, warps in ((32, 1), (16, 1), (32, 2)):  # MERGE_SPLIT_CHUNK, MERGE_WARPS
            out.append((f"attention merge T={t} 33 slices, chunk {chunk}, {warps} warps",
                        attention._merge_kernel, types,
                        wide | dict(CHUNK=chunk, num_warps=warps)))  # fmt: skip
        out.append((f"attention merge T={t} 33 slices, 4 warps", attention._merge_kernel, types,
                    wide | dict(num_warps=4)))  # fmt: skip
        rows = merge | dict(MERGE_BLOCK=min(16, block_q))  # MERGE_PROGRAM_ROWS
        out.append((f"attention merge T={t} rows a program", attention._merge_kernel, types, rows))
        if causal:  # 8 warps a program (attention.SPLIT_WARPS / MERGE_WARPS)
            eight = dict(num_warps=8)
            out.append((f"attention split T={t} 8 warps", attention._split_kernel, split_types,
                        consts | eight))  # fmt: skip
            out.append((f"attention merge T={t} 8 warps", attention._merge_kernel, types,
                        merge | eight))  # fmt: skip
            early = dict(EARLY_POS=True, PDL=True)  # positions before the wait
            out.append((f"attention split T={t} early positions", attention._split_kernel,
                        split_types, consts | early))  # fmt: skip
            out.append((f"attention merge T={t} early positions", attention._merge_kernel, types,
                        merge | early))  # fmt: skip
            for stages in (1, 2):  # the loop's pipeline depth (attention.SPLIT_STAGES)
                out.append((f"attention split T={t} {stages} stages", attention._split_kernel,
                            split_types, consts | dict(num_stages=stages)))  # fmt: skip
    norm_types = {"x_ptr": bf16, "w_ptr": bf16, "y_ptr": bf16, "eps": "fp32"}
    out.append(("rmsnorm", elementwise._rmsnorm_kernel, norm_types, dict(BLOCK=4096)))
    out.append(("rmsnorm 1 warp", elementwise._rmsnorm_kernel, norm_types,
                dict(BLOCK=4096, num_warps=1)))  # fmt: skip
    out.append(("rmsnorm EARLY (launch.WIDE_EARLY)", elementwise._rmsnorm_kernel, norm_types,
                dict(BLOCK=4096, PDL=True, EARLY_TRIGGER=True)))  # fmt: skip
    glu_types = {"x_ptr": bf16, "y_ptr": bf16}
    out.append(("silu_mul", elementwise._silu_mul_kernel, glu_types, dict(BLOCK=1024)))
    regions = {"ahead0_ptr": "*u8", "ahead1_ptr": "*u8"}  # extra programs ask L2 for a head
    out.append(("rmsnorm AHEAD=2", elementwise._rmsnorm_kernel, norm_types | regions,
                dict(BLOCK=4096, AHEAD=2)))  # fmt: skip
    out.append(("silu_mul AHEAD=2", elementwise._silu_mul_kernel, glu_types | regions,
                dict(BLOCK=1024, AHEAD=2)))  # fmt: skip
    prefetch_types = {"ahead0_ptr": "*u8", "ahead0_bytes": "i32"}  # a bf16 weight's one region
    out.append(("prefetch AHEAD=1", elementwise._prefetch_kernel, prefetch_types,
                dict(AHEAD=1)))  # fmt: skip
    prefetch_types |= {"ahead1_ptr": "*u8", "ahead1_bytes": "i32"}  # a W12 weight's two planes
    out.append(("prefetch AHEAD=2", elementwise._prefetch_kernel, prefetch_types,
                dict(AHEAD=2)))  # fmt: skip
    embed_types = {"ids_ptr": "*i64", "table_ptr": bf16, "y_ptr": bf16}
    for anchors in (False, True):
        out.append((f"embed ANCHORS={anchors}", tokens._embed_kernel, embed_types,
                    dict(BLOCK=tokens.EMBED_BLOCK, ANCHORS=anchors)))  # fmt: skip
    fp8_types = lin | {"w_ptr": "*fp8e4nv", "scale_ptr": "*fp32", "part_ptr": "*fp32",
                       "count_ptr": "*i32"}  # fmt: skip
    for m, n, k in linear.FP8_TILES:  # the FP8 drafter's measured tiles
        cfg = linear.fp8_tile_config(m, n, k)
        consts = {key: v for key, v in cfg.items() if key.isupper() or key.startswith("num_")}
        consts |= dict(NORM=False, GLU=False, RESIDUAL=n == 4096, F32_DOT=False, SCALE=True)
        consts |= dict(FENCE=True) if consts.get("SPLIT_K", 1) > 1 else {}
        out.append((f"skinny_linear FP8 {m}x{n}x{k}", linear._skinny_kernel, fp8_types, consts))
    # a certified head (kernels/certified.py): its int8 multiply and epilogue, one row and a
    # verify block of 16 (packing), after the RMSNorm prologue or a handed norm; the rules'
    # tiles and the candidates of runs 197 and 199 (bench/h200/certified*)
    cert_types = lin | {"w_ptr": "*i8", "scale_ptr": "*fp32", "radius_ptr": "*fp32",
                        "exact_ptr": bf16, "floor_ptr": "*fp32", "key_ptr": "*i64",
                        "count_ptr": "*i32", "token_ptr": "*i64", "ids_ptr": "*i64",
                        "packed_ptr": "*i64", "sq_in_ptr": "*fp32", "upper_ptr": "*fp32",
                        "flag_ptr": "*i32", "deferred": "i32",
                        "stats_ptr": "*fp32"}  # fmt: skip
    cert_tiles = [linear.certified_tile_config(m, 151936, 4096) for m in (1, 16)]
    paths = Path(__file__).parents[1].glob("bench/h200/certified*/*.json") if candidates else ()
    for path in sorted(paths):
        cert_tiles += [e["tile"] for e in json.loads(path.read_text())["tiles"]]
    for tile in cert_tiles:
        rows = 16 if tile["USE_DOT"] else 1
        consts = {key: v for key, v in tile.items()
                  if key.isupper() or key.startswith("num_") or key == "maxnreg"}  # fmt: skip
        tiles_n = triton.cdiv(151936, tile["BLOCK_N"])
        consts |= dict(NORM=True, GLU=False, RESIDUAL=False, F32_DOT=False, CERTIFY=True,
                       FENCE=True, TILES_N=tiles_n, TILES_M=1, DEFER=True,
                       STAT_ROWS=tile["BLOCK_M"])  # fmt: skip
        consts["LOOP_STAGES"] = linear.loop_stages(tile)
        label = f"skinny_linear CERTIFY {tile}"
        out.append((label, linear._skinny_kernel, cert_types, consts))
        compact = consts | dict(COMPACT=True)  # the candidates gathered (certified.COMPACT)
        out.append((f"{label} COMPACT", linear._skinny_kernel, cert_types, compact))
        if rows == 16:  # a verify block, after a handed norm; one row on the taller tile
            verify = consts | dict(NORM=False, HAND_IN=True, SLOTS_IN=512, ACCEPT=True,
                                   WIDTH=16, WIDTH_POW2=16)  # fmt: skip
            out.append((f"{label} HAND_IN ACCEPT", linear._skinny_kernel, cert_types, verify))
            # the rows' sums summed before (certified.ROW_STATS), with TWO_PASS's bounds
            stats = verify | dict(STATS_IN=True, COMPACT=True)
            out.append((f"{label} HAND_IN ACCEPT STATS_IN", linear._skinny_kernel, cert_types,
                        stats))  # fmt: skip
            out.append((f"{label} STATS_IN UPPERS_OUT", linear._skinny_kernel, cert_types,
                        stats | dict(UPPERS_OUT=True, DEFER=False, ACCEPT=False)))  # fmt: skip
            if tile.get("F16"):  # and its input rounded to fp16 by row_stats (certified.X16)
                out.append((f"{label} STATS_IN A16", linear._skinny_kernel,
                            cert_types | {"a16_ptr": "*fp16"},
                            stats | dict(A16=True, UPPERS_OUT=True, DEFER=False,
                                         ACCEPT=False)))  # fmt: skip
            one = compact | dict(NORM=False, HAND_IN=True, SLOTS_IN=512, HAND_ROWS=1,
                                 STAT_ROWS=1, DEFER=False)  # fmt: skip
            out.append((f"{label} HAND_IN one row", linear._skinny_kernel, cert_types, one))
            # TWO_PASS's multiply: the upper bounds stored, no check
            bounds = one | dict(UPPERS_OUT=True)
            out.append((f"{label} UPPERS_OUT", linear._skinny_kernel, cert_types, bounds))
            if tile.get("F16"):  # one row's sums and fp16 input from row_stats (ROW_STATS 2, X16)
                out.append((f"{label} one row STATS_IN A16", linear._skinny_kernel,
                            cert_types | {"a16_ptr": "*fp16"},
                            one | dict(STATS_IN=True, A16=True)))  # fmt: skip
    # TWO_PASS's second launch (certified.exact_pass): one row element-wise; 16 rows on tensor
    # cores after a handed norm, packing verify blocks
    exact_types = {"x_ptr": bf16, "nw_ptr": bf16, "exact_ptr": bf16, "upper_ptr": "*fp32",
                   "floor_ptr": "*fp32", "key_ptr": "*i64", "count_ptr": "*i32",
                   "token_ptr": "*i64", "ids_ptr": "*i64", "packed_ptr": "*i64",
                   "sq_in_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_xm": "i32",
                   "stride_en": "i32", "stride_ids": "i32", "stride_packed": "i32",
                   "stride_sq_in": "i32", "slots_in": "i32", "eps": "fp32"}  # fmt: skip
    exact = dict(NORM=False, HAND_IN=True, SLOTS_IN=512, BLOCK_K=256, F32_DOT=False,
                 FENCE=True, COMPACT=True, SLOTS_N=certified.EXACT_SLOTS,
                 STEP=certified.EXACT_STEP, num_warps=4)  # fmt: skip
    for rows, block_n in ((1, certified.EXACT_ROWS_ONE), (16, certified.EXACT_ROWS)):
        consts = exact | dict(BLOCK_M=rows, BLOCK_N=block_n, USE_DOT=rows > 1,
                              TILES_N=triton.cdiv(151936, block_n), TILES_M=1,
                              ACCEPT=rows > 1, WIDTH=16 if rows > 1 else 1,
                              WIDTH_POW2=16 if rows > 1 else 1)  # fmt: skip
        out.append((f"certified exact pass {rows} rows", certified._exact_kernel, exact_types,
                    consts))  # fmt: skip
    for f16, x16 in ((False, False), (True, False), (True, True)):  # certified.row_stats
        out.append((f"certified row stats F16={f16} X16={x16}", certified._row_stats_kernel,
                    {"x_ptr": bf16, "out_ptr": "*fp32", "K": "i32", "stride_xm": "i32",
                     "x16_ptr": "*fp16"},
                    dict(F16=f16, X16_OUT=x16, BLOCK=1024, num_warps=4)))  # fmt: skip
    argmax_types = {"x_ptr": bf16, "part_v_ptr": "*fp32", "part_i_ptr": "*i32",
                    "count_ptr": "*i32", "out_ptr": "*i64", "ids_ptr": "*i64",
                    "packed_ptr": "*i64"}  # fmt: skip
    for chunks in (75, 1):  # Qwen3's 151,936 logits a row; a row of one chunk
        for accept in ({}, dict(ACCEPT=True, WIDTH=16, WIDTH_POW2=16)):  # a verify block's end
            out.append((f"argmax CHUNKS={chunks} {accept}", tokens._argmax_kernel, argmax_types,
                        dict(CHUNKS=chunks, CHUNKS_POW2=triton.next_power_of_2(chunks),
                             BLOCK=tokens.ARGMAX_BLOCK, FENCE=True) | accept))  # fmt: skip
    meta_types = {"packed_ptr": "*i64", "meta_ptr": "*i64", "limit_ptr": "*i64", "out_ptr": "*i64"}
    out.append(("next_meta", tokens._next_meta_kernel, meta_types, dict(WIDTH=16)))
    decode_types = {"tokens_ptr": "*i64", "ids_ptr": "*i64", "pos_ptr": "*i64", "limit_ptr": "*i64"}
    out.append(("next_decode", tokens._next_decode_kernel, decode_types, dict(LAST=0)))
    replay_types = {n: "*i64" for n in ("table_ptr", "table_len_ptr", "meta_ptr", "prompt_ptr",
                                        "counts_ptr", "out_ptr")}  # fmt: skip
    out.append(("replay", tokens._replay_kernel, replay_types, dict(D=15, D_POW2=16)))
    return out


def main(argv: list[str]) -> int:
    failed = 0
    engine_only = "--engine-only" in argv  # no candidate tiles, no timeline (TRACE) builds
    every = cases(candidates=not engine_only)
    for label, fn, types, consts in (
        every + with_pdl(every) + ([] if engine_only else with_trace(every))
    ):
        try:
            compile_for_hopper(fn, types, consts)
            print(f"ok   {label}")
        except Exception as exc:  # noqa: BLE001 - report every kernel, then fail
            failed += 1
            print(f"FAIL {label}: {type(exc).__name__}: {str(exc)[:300]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
