"""Tiles files (kernels/tiles.py, EngineConfig.tiles): a deployment's own measured tiles over the
compiled-in ones, checked on read, written by bench/w12_speed.py --tiles-out."""

from __future__ import annotations

import json

import pytest
import torch

from tests.test_kernels import (  # sets TRITON_INTERPRET=1 without CUDA  # isort: skip
    BF16,
    DEVICE,
    _sequences,
    _tiny_pair,
    assert_forced,
)
from specpilot.config import EngineConfig
from specpilot.errors import ConfigError
from specpilot.formats import w12
from specpilot.kernels import linear, tiles, w12_linear

# the engine's generations and forwards: attention merged in blocks in the interpreter
pytestmark = pytest.mark.block_merge

LOOP_BF16 = dict(BLOCK_M=1, BLOCK_N=4, BLOCK_K=32, USE_DOT=False, num_warps=4, LOOP_STAGES=2)
LOOP_W12 = dict(BLOCK_M=1, BLOCK_N=4, UNROLL=1, SPLIT_K=1, USE_DOT=False, LOOP_STAGES=2)


@pytest.fixture
def tables():
    """The kernels' tile tables as they were, put back after the test (process-wide)."""
    before = tiles.tables()
    yield
    tiles.restore(before)


def test_write_read_install_restore(tmp_path, tables) -> None:
    path = tmp_path / "tiles.json"
    table = {
        "bf16": {(1, 96, 64): LOOP_BF16},
        "w12": {(16, 96, 512): dict(LOOP_W12, BLOCK_M=16)},
        "fp8": {(16, 96, 64): dict(BLOCK_N=32, W_LEFT=True)},
        "certified": {(1, 96, 64): dict(BLOCK_M=16, BLOCK_N=32, USE_DOT=True)},
    }
    tiles.write(path, table)
    assert tiles.read(path) == table
    compiled = linear.tile_config(1, 6144, 4096)
    before = tiles.install(tiles.read(path))
    cfg = linear.tile_config(1, 96, 64)
    assert {key: cfg[key] for key in LOOP_BF16} == LOOP_BF16
    cfg = w12_linear.tile_config(5, 96, 512)  # 2-16 rows: the 16-row entry, over the rules'
    assert {key: cfg[key] for key in LOOP_W12} == dict(LOOP_W12, BLOCK_M=16)
    assert linear.tile_config(1, 6144, 4096) == compiled  # the compiled-in tiles stay
    assert linear.FP8_TILES[16, 96, 64] == dict(BLOCK_N=32, W_LEFT=True)
    assert linear.certified_tile_config(1, 96, 64)["BLOCK_N"] == 32
    tiles.restore(before)
    assert "LOOP_STAGES" not in linear.tile_config(1, 96, 64)
    assert (16, 96, 512) not in w12_linear.MEASURED_TILES
    assert (16, 96, 64) not in linear.FP8_TILES
    assert (1, 96, 64) not in linear.CERTIFIED_TILES


def test_a_w12_entry_may_give_only_the_keys_it_changes(tables) -> None:
    """A W12 tiles-file entry goes over the rules' tile of its shape, as a bf16 one does: an
    entry of one key (run 228 stopped on a KeyError where the table's entry was taken whole)."""
    rule = w12_linear.tile_config(1, 4096, 4096)
    assert (1, 4096, 4096) not in w12_linear.MEASURED_TILES  # o: the rules' tile
    tiles.install({"w12": {(1, 4096, 4096): dict(UNROLL=8, LOOP_STAGES=2)}})
    assert w12_linear.tile_config(1, 4096, 4096) == rule | dict(UNROLL=8, LOOP_STAGES=2)
    x = torch.randn(1, 4096, dtype=BF16)
    w = w12.encode(torch.randn(8, 4096, dtype=BF16) * 0.02, 128)
    got = w12_linear.w12_linear(x, w, config=dict(rule, BLOCK_N=4, UNROLL=8, LOOP_STAGES=2))
    torch.testing.assert_close(got, w12_linear.w12_linear_reference(x, w), rtol=2e-2, atol=2e-2)


def test_a_tiles_file_goes_over_the_escape_tiles(tables) -> None:
    """The 16-row ESCAPE_TILES are MEASURED_TILES entries, so a deployment's tiles file (or
    bench/w12_speed.py's no_esc_rows arm, the table before them) decides over them; a file
    may set ESC_ROWS."""
    shape = (16, 4096, 12288)
    assert w12_linear.tile_config(*shape)["ESC_ROWS"] == 4
    assert "ESC_ROWS" not in w12_linear.MEASURED_TILES_BEFORE_ESCAPES.get(shape, {})
    tiles.install({"w12": {shape: dict(ESC_ROWS=2, SPLIT_K=8)}})
    assert w12_linear.tile_config(*shape)["ESC_ROWS"] == 2
    assert w12_linear.tile_config(*shape)["SPLIT_K"] == 8


def test_a_bf16_tile_leaves_the_fp8_tile_of_its_shape(tables) -> None:
    """A tiles file's bf16 tile (W_LEFT, LOOP_STAGES) for a shape that FP8_TILES also has must
    not reach the FP8 multiply of that shape (it did through tile_config: LOG run 184)."""
    shapes = list(linear.FP8_TILES)
    fp8_before = {s: linear.fp8_tile_config(*s) for s in shapes}
    for shape, tile in linear.FP8_TILES.items():  # the compiled-in tables: rules | FP8 tile
        assert fp8_before[shape] == linear.tile_config(*shape) | tile
    left = dict(W_LEFT=True, LOOP_STAGES=2, BLOCK_N=16, BLOCK_K=64)
    tiles.install({"bf16": {s: left for s in shapes}, "w12": {}, "fp8": {}})
    for shape in shapes:
        assert linear.tile_config(*shape)["W_LEFT"]  # the bf16 multiply takes the file's
        assert linear.fp8_tile_config(*shape) == fp8_before[shape]
    unmeasured = (16, 96, 64)  # no FP8 tile: the shape's bf16 tile, the file's included
    tiles.install({"bf16": {unmeasured: left}, "w12": {}, "fp8": {}})
    assert linear.fp8_tile_config(*unmeasured) == linear.tile_config(*unmeasured)


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "not a"),
        ('{"tile": []}', "not a"),
        ('{"tiles": {}}', "wants kernel"),
        ('{"tiles": [{"kernel": "int4", "rows": 1, "n": 8, "k": 8, "tile": {"BLOCK_N": 4}}]}',
         "wants kernel"),
        ('{"tiles": [{"kernel": "bf16", "rows": 5, "n": 8, "k": 8, "tile": {"BLOCK_N": 4}}]}',
         "not a table row count"),
        ('{"tiles": [{"kernel": "bf16", "rows": 1, "n": 0, "k": 8, "tile": {"BLOCK_N": 4}}]}',
         "positive integers"),
        ('{"tiles": [{"kernel": "bf16", "rows": 1, "n": 8, "k": true, "tile": {"BLOCK_N": 4}}]}',
         "positive integers"),
        ('{"tiles": [{"kernel": "bf16", "rows": 1, "n": 8, "k": 8, "tile": {}}]}', "non-empty"),
        ('{"tiles": [{"kernel": "bf16", "rows": 1, "n": 8, "k": 8, "tile": {"UNROLL": 2}}]}',
         "unknown bf16 tile keys"),
        ('{"tiles": [{"kernel": "fp8", "rows": 1, "n": 8, "k": 8, "tile": {"ACC_SCALE": 1}}]}',
         "unknown fp8 tile keys"),
    ],
)  # fmt: skip
def test_bad_tiles_files(tmp_path, content: str, message: str) -> None:
    path = tmp_path / "tiles.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        tiles.read(path)
    with pytest.raises(ConfigError, match="tiles file"):
        tiles.read(tmp_path / "missing.json")


def test_engine_takes_a_tiles_file(tmp_path, tables) -> None:
    """EngineConfig.tiles through the kernels (the interpreter on CPU): the engine installs the
    file's one-row tiles (here pipelined-loop tiles for every one-row multiply of the tiny
    target, fused ones included) and its AR outputs pass token forcing; a bad file fails at
    the engine's start."""
    from specpilot.engine.generator import Generator

    target, drafter, reference = _tiny_pair(tmp_path)
    shapes = {tuple(m.weight.shape) for m in target.modules() if isinstance(m, torch.nn.Linear)}
    layer = target.model.layers[0]
    fused = [layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj]
    shapes.add((sum(m.weight.shape[0] for m in fused), fused[0].weight.shape[1]))
    up = layer.mlp.up_proj.weight
    shapes.add((2 * up.shape[0], up.shape[1]))
    path = tmp_path / "tiles.json"
    tiles.write(path, {"bf16": {(1, n, k): LOOP_BF16 for n, k in shapes}, "w12": {}})
    gen = Generator(target, drafter, EngineConfig(kernels="triton", tiles=str(path)), DEVICE, BF16)
    assert all(linear.tile_config(1, n, k)["LOOP_STAGES"] == 2 for n, k in shapes)
    seqs = _sequences(target.config.vocab_size, 6)
    gen.run(seqs, speculative=False)  # one-row forwards: the file's tiles
    assert_forced(reference, seqs)
    path.write_text(json.dumps({"tiles": [{"kernel": "bf16"}]}))
    with pytest.raises(ConfigError, match="positive integers"):
        Generator(target, drafter, EngineConfig(kernels="triton", tiles=str(path)), DEVICE, BF16)


def test_the_committed_tiles_files_read() -> None:
    """bench/h200's tiles files (the device calls' --tiles arms, its folders' families
    included) pass `tiles.read`."""
    from pathlib import Path

    found = sorted((Path(__file__).resolve().parents[1] / "bench" / "h200").rglob("*.json"))
    assert found
    for path in found:
        assert any(tiles.read(path).values()), path
