"""bench/attention.py --prepare and bench/amd_attention_vs_triton.py's own side:
the flash-attention kernels they generate compile (sm_90a PTX with its launch
metadata; gfx942 ISA with its report), byte-identical candidates are recorded
once, and the candidate spaces are the issue's."""

from __future__ import annotations

import importlib.util
import json

import bench_modules
import pytest

needs_mlir = pytest.mark.skipif(importlib.util.find_spec("mlir") is None, reason="needs the MLIR bindings")


def _bench(name: str):
    return bench_modules.load(name)


def test_candidates_span_the_issue_space():
    bench = _bench("attention")
    assert sorted(bench.CANDIDATES) == sorted(
        (bm, bn, t, s, prefer) for bm in (64, 128) for bn in (64, 128) for t in (128, 256) for s in (1, 2)
        for prefer in ("", "mma.sync"))
    assert bench.candidate_name("k", 64, 64, 128, 2, "mma.sync") == "k_m64n64t128s2_mmasync"
    assert {(4, 32, 4096, 128), (8, 16, 2048, 64), (1, 32, 16384, 128), (16, 16, 1024, 128)} <= set(bench.SHAPES)
    assert all(config[0] % config[1] == 0 for configs in bench.TRITON_CONFIGS.values() for config in configs), \
        "flash_forward's causal split needs BLOCK_M to be a multiple of BLOCK_N"


@needs_mlir
def test_prepare_one_small_shape(tmp_path):
    bench = _bench("attention")
    batch, heads, seq, dim = 2, 2, 128, 64
    # The compiler's choice (wgmma where the loop is prefetched) and mma.sync.
    candidates = [(64, 64, 128, 2, ""), (64, 64, 128, 2, "mma.sync"), (64, 64, 128, 1, "")]
    manifest = bench.prepare(tmp_path, shapes=[(batch, heads, seq, dim)], candidates=candidates)
    assert manifest["refused"] == []
    assert manifest["bound"]["unit"]["f16"] == 2.0 ** -11
    entries = manifest["bench"]
    assert sorted((e["dtype"], e["causal"], e["stages"], e["prefer"]) for e in entries) == sorted(
        (dtype, causal, stages, prefer) for dtype in bench.DTYPES for causal in bench.CAUSAL
        for stages, prefer in ((2, ""), (2, "mma.sync"), (1, "")))
    saved = [e for e in entries if "json" in e]
    names = {e["name"] for e in saved}
    for entry in entries:
        assert ("json" in entry) != ("identical_to" in entry), entry["name"]
        if "identical_to" in entry:  # the same kernel: only its first candidate is on disk
            assert entry["identical_to"] in names
            assert not (tmp_path / f"{entry['name']}.ptx").exists()
        full = 4.0 * batch * heads * seq * seq * dim
        assert entry["flops"] == (full / 2 if entry["causal"] else full)
    for entry in saved:
        wgmma = entry["stages"] == 2 and not entry["prefer"]
        assert (entry["wgmma"] > 0, entry["mma_sync"] > 0) == (wgmma, not wgmma), entry["name"]
        metadata = json.loads((tmp_path / entry["json"]).read_text())
        (function,) = metadata["functions"]
        assert function["entry"] == entry["entry"]
        tensor = {"shape": [batch, seq, heads, dim], "dtype": entry["dtype"]}
        assert function["arguments"] == [tensor] * 4
        (launch,) = function["launches"]
        assert launch["grid"] == [seq // 64, heads, batch]
        assert launch["block"] == [128, 1, 1]
        assert launch["dynamic_shared_bytes"] == entry["dynamic_shared_bytes"] > 0


@needs_mlir
def test_prepare_compiles_the_torch_backends_default(tmp_path):
    """The default candidate: the torch backend's kernel for SDPA of
    transposed [B, S, H, D] views, read in place, its output in the layout the
    backend chose, one per case and never merged with a candidate."""
    pytest.importorskip("torch")
    bench = _bench("attention")
    batch, heads, seq, dim = 2, 2, 128, 64
    manifest = bench.prepare(tmp_path, only="full_*_f16_*", shapes=[(batch, heads, seq, dim)],
                             candidates=[(64, 64, 128, 2, ""), bench.DEFAULT])
    assert manifest["refused"] == []
    default, candidate = sorted(manifest["bench"], key=lambda e: not e.get("default"))
    assert default["name"] == "full_b2h2s128d64_f16_default" and "json" in default and "json" in candidate
    assert default["wgmma"] > 0 and default["ex2"] > 0
    tiling = (default["block_m"], default["block_n"], default["threads"], default["stages"])
    assert tiling == (64, 64, 128, 2)  # codegen.attention_tilings' first on sm_90a, d 64, no mask
    (function,) = json.loads((tmp_path / default["json"]).read_text())["functions"]
    assert function["entry"] == default["entry"]
    bshd, bhsd = [batch, seq, heads, dim], [batch, heads, seq, dim]
    out = bhsd if default["o_layout"] == "bhsd" else bshd
    assert [a["shape"] for a in function["arguments"]] == [bshd, bshd, bshd, out]
    assert default["flops"] == candidate["flops"] == 4.0 * batch * heads * seq * seq * dim


@needs_mlir
def test_amd_side_reports_our_kernel(tmp_path):
    amd = _bench("amd_attention_vs_triton")
    case = amd.Case("gfx942", 64, causal=True, heads=2, seq=256)
    found = {tiling: amd.ours(case, tiling, tmp_path) for tiling in [(64, 64, 256, 1), (128, 512, 256, 1)]}
    fits = found[(64, 64, 256, 1)]
    assert fits["spills"] == 0 and fits["mfma_per_iteration"] > 0 and fits["lds_bytes"] > 0
    assert fits["mfma_busy_ratio"] is None or 0 < fits["mfma_busy_ratio"] <= 1
    # K and V 512x64 tiles: 128 KiB > 64 KiB, with Q in LDS or not.
    assert "LDS" in found[(128, 512, 256, 1)]["error"]
    assert amd.best_of(found) == (64, 64, 256, 1)
    assert (tmp_path / f"{case.name}_64x64_w4_s1.tilemlir.s").exists()


@needs_mlir
def test_amd_side_reports_the_torch_backends_default(tmp_path):
    """The default row: the kernel torch.compile(backend="tilemlir") makes for
    scaled_dot_product_attention (traced on the meta device), at the first
    tiling of codegen.attention_tilings the compiler accepts."""
    pytest.importorskip("torch")
    amd = _bench("amd_attention_vs_triton")
    tiling, entry = amd.torch_default(amd.Case("gfx942", 128, causal=True, heads=2, seq=256), tmp_path)
    assert tiling == (128, 64, 256, 2)
    assert entry["spills"] == 0 and entry["mfma_per_iteration"] > 0 and 0 < entry["mfma_busy_ratio"] <= 1
    assert "v_exp_f32" in (tmp_path / "causal_b1h2s256d128_f16_gfx942_128x64_w4_s2.default.s").read_text()
