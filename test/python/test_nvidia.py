"""The nvidia backend: the sm_90a descriptor, instruction choice, PTX, and (where
a GPU exists) results on the device against float64.

The GPU tests skip cleanly without a GPU or without prepared PTX: the device
machine has no MLIR, so `bench/gemm.py --prepare DIR` compiles the cases here
and `TILEMLIR_NVIDIA_PTX=DIR pytest test/python/test_nvidia.py` runs them there.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PREPARED = os.environ.get("TILEMLIR_NVIDIA_PTX", "")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _gpu() -> bool:
    launcher = _load(REPO / "tilemlir" / "runtime" / "cuda_launch.py", "cuda_launch")
    return launcher.gpu_available()


def _has_mlir() -> bool:
    return importlib.util.find_spec("mlir") is not None


needs_mlir = pytest.mark.skipif(not _has_mlir(), reason="needs the MLIR bindings")
needs_gpu = pytest.mark.skipif(not _gpu() or not PREPARED,
                               reason="needs an NVIDIA GPU and TILEMLIR_NVIDIA_PTX (bench/gemm.py --prepare)")


@needs_mlir
def test_descriptor_facts():
    from tilemlir.targets import get_target

    target = get_target("nvidia:sm_90a")
    assert (target.compute.wave_size, target.compute.compute_units) == (32, 132)
    assert target.memory.shared_bytes_per_workgroup == 232448
    assert target.peak_tflops("f16") == 989.4 and target.peak_tflops("f8E4M3FN") == 1978.9
    first = target.mma_candidates("f8E4M3FN", "f8E4M3FN", "f32")[0]
    assert (first.m, first.n, first.k) == (16, 8, 32)


@needs_mlir
def test_select_mma_ranks_wgmma_only_when_preferred():
    from tilemlir.passes.gemm_facts import GemmShape
    from tilemlir.passes.select_mma import select_mma_for
    from tilemlir.targets import get_target

    target = get_target("nvidia:sm_90a")
    shape = GemmShape(128, 128, 64, "f16", "f16", "f32", "f32", False, False)
    choice, split = select_mma_for(target, shape, 128)
    assert (choice.m, choice.n, choice.k) == (16, 8, 16) and split == (2, 2)
    # Preferred and fitting: two warpgroups, one m64n128 each, warps stacked along M.
    choice, split = select_mma_for(target, shape, 256, prefer="wgmma")
    assert choice.name == "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" and split == (8, 1)
    # One warpgroup for 128 rows: a band of two m64n128 instructions.
    choice, split = select_mma_for(target, shape, 128, prefer="wgmma")
    assert choice.name == "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" and split == (4, 1)
    # Preferred but a warpgroup's band needs 64 rows: mma.sync.
    choice, split = select_mma_for(target, GemmShape(32, 128, 64, "f16", "f16", "f32", "f32", False, False),
                                   128, prefer="wgmma")
    assert choice.name.startswith("mma.sync")
    # Three warps fit nothing; the warpgroup rows say why they were rejected.
    reasons = select_mma_for(target, shape, 96, prefer="wgmma")
    assert isinstance(reasons, list)
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16: 3 waves are not whole groups of 4" \
        in reasons
    reasons = select_mma_for(target, GemmShape(128, 100, 64, "f16", "f16", "f32", "f32", False, False), 128,
                     prefer="wgmma")
    assert ("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16: needs the block to be a multiple of 64 "
            "rows per group of 4 waves by 128 columns (4 waves: 64x128, 128x128, ...), not 128x100") in reasons
    wide = GemmShape(128, 512, 64, "f16", "f16", "f32", "f32", False, False)
    choice, split = select_mma_for(target, wide, 256, prefer="wgmma")
    assert choice.name.startswith("mma.sync")  # n = 512 is past wgmma's 256 columns


@needs_mlir
def test_the_cost_model_chooses_the_instruction_too():
    """tile-tiling ranks the instructions tile-select-mma takes only when
    preferred (wgmma) beside its own choice: where the model predicts a wgmma
    configuration fastest (a 512x512x8192 f16 GEMM, matrix-bound), the kernel's
    tile.tiling records prefer = "wgmma", tile-select-mma takes it without an
    option, and the PTX issues wgmma. --select set by hand still decides."""
    import sys

    import tilemlir

    sys.path.insert(0, str(REPO / "bench"))
    try:
        import gemm as bench
    finally:
        sys.path.remove(str(REPO / "bench"))
    text = bench.gemm_text(512, 512, 8192, "f16", False)
    chosen = tilemlir.compile(text, target="nvidia:sm_90a", emit="ptx", options={"report": True})
    assert "cp.async.bulk.tensor" in chosen.artifacts["ptx"] and "wgmma.mma_async" in chosen.artifacts["ptx"]
    (decision,) = chosen.report["decisions"]
    assert decision["instruction"].startswith("wgmma") and decision["threads"] % 128 == 0
    tile_ir = tilemlir.compile(text, target="nvidia:sm_90a", emit="tile").artifacts["tile"]
    assert 'prefer = "wgmma", source = "model"' in tile_ir
    forced = tilemlir.compile(text, target="nvidia:sm_90a", emit="ptx", options={"select": "prefer=mma.sync"})
    assert "wgmma.mma_async" not in forced.artifacts["ptx"] and "mma.sync" in forced.artifacts["ptx"]


@needs_mlir
def test_wgmma_kernel_takes_tensor_maps():
    from mlir import ir

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    bench = _load(REPO / "bench" / "gemm.py", "bench_gemm")
    context = tile.make_context()
    module = ir.Module.parse(bench.gemm_text(200, 328, 160, "fp8", True), context)
    kernel = compile_to_ptx(module.operation, get_target("nvidia:sm_90a"),
                            "block=128,128,128 threads=256 stages=2", "prefer=wgmma")
    (launch,) = kernel.metadata["functions"][0]["launches"]
    assert launch["arguments"][:3] == [0, 1, 2]
    maps = [argument["tensor_map"] for argument in launch["arguments"][3:]]
    # A (200 x 160) and B (328 x 160, N x K): boxes of 128 rows x 128 bytes;
    # C (200 x 328 f16), written by TMA: chunks of 128 rows x 64 columns.
    assert maps == [
        {"source": {"argument": 0}, "dtype": "f8E4M3FN", "shape": [200, 160], "box": [128, 128],
         "swizzle": 128},
        {"source": {"argument": 1}, "dtype": "f8E4M3FN", "shape": [328, 160], "box": [128, 128],
         "swizzle": 128},
        {"source": {"argument": 2}, "dtype": "f16", "shape": [200, 328], "box": [128, 64],
         "swizzle": 128}]
    # Each map is a 128-byte grid-constant parameter (nvidia-tensor-maps-by-value),
    # which the TMA instructions address through cvta.param.
    assert launch["params"] == ["u64.ptr"] * 3 + ["b8[128]"] * 3
    assert kernel.ptx.count(".param .align 64 .b8") == 3 and "cvta.param.u64" in kernel.ptx
    assert kernel.ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3") >= 4
    assert "cp.async.bulk.tensor.2d" in kernel.ptx and "mma.sync" not in kernel.ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in kernel.ptx and "st.global" not in kernel.ptx


def test_bench_candidates_and_fp8_tolerance():
    bench = _load(REPO / "bench" / "gemm.py", "bench_gemm")
    assert bench.sum_bits_of("fp8", {"path": bench.WGMMA}) == bench.FP8_WGMMA_SUM_BITS
    assert bench.sum_bits_of("fp8") == bench.FP8_WGMMA_SUM_BITS  # cuBLAS and Triton use wgmma
    assert bench.sum_bits_of("fp8", {"path": bench.MMA_SYNC}) is None
    assert bench.sum_bits_of("f16", {"path": bench.WGMMA}) is None
    if _has_mlir():
        paths = {c[3] for c in bench.candidates(4096, 4096, "f16")}
        assert paths == {bench.MMA_SYNC, bench.MMA_SYNC_TMA, bench.WGMMA}
        assert {c[3] for c in bench.candidates(16, 8192, "f16")} == {bench.MMA_SYNC}


@needs_mlir
def test_compile_ptx_and_metadata():
    import tilemlir

    text = (REPO / "test" / "Backends" / "nvidia" / "mma-sync-f16.mlir").read_text()
    result = tilemlir.compile(text, target="nvidia:sm_90a", emit="ptx", options={"report": True})
    (launch,) = result.report["functions"][0]["launches"]
    (decision,) = result.report["decisions"]
    # The cost model chooses the blocks (the lit test gives 128x128 ones);
    # the launch, the report and the PTX agree on what it chose.
    assert decision["instruction"] in result.artifact
    block = decision["block"]
    tiles = (256 // block["n"]) * (256 // block["m"])
    if decision["instruction"].startswith("wgmma"):
        # Warp-specialized and persistent: a producer warpgroup more, at most
        # one workgroup per tile, in a 1-D grid.
        assert launch["block"] == [decision["threads"] + 128, 1, 1]
        assert launch["grid"][1:] == [1, 1] and 1 <= launch["grid"][0] <= tiles
    else:
        assert launch["block"] == [decision["threads"], 1, 1]
        assert launch["grid"] == [256 // block["n"], 256 // block["m"], 1]
    (kernel,) = result.report["kernels"]
    assert kernel["workgroups"] == tiles
    assert kernel["config_source"] == "model"
    assert launch["arguments"][:3] == [0, 1, 2] and launch["dynamic_shared_bytes"] > 0


def test_device_engine_without_gpu_is_a_clear_error():
    if _gpu() or not _has_mlir():
        pytest.skip("a GPU is present (or no MLIR)")
    from tilemlir import runtime
    from tilemlir.diagnostics import UserError

    text = (REPO / "test" / "Backends" / "nvidia" / "mma-sync-f16.mlir").read_text()
    with pytest.raises(UserError, match="needs an NVIDIA GPU"):
        runtime.run(text, "gemm", [], engine="device")


def _cases():
    if not PREPARED:
        return []
    manifest = json.loads((Path(PREPARED) / "manifest.json").read_text())
    return manifest["tests"]


@needs_gpu
@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["name"])
def test_gemm_on_the_gpu(case):
    import torch

    bench = _load(REPO / "bench" / "gemm.py", "bench_gemm")
    launcher = bench.load_launcher()
    module = launcher.CudaModule.load(Path(PREPARED) / case["json"])
    for seed in (1, 2):  # fresh inputs each time; output poisoned with NaN
        a, b = bench.make_inputs(case["m"], case["n"], case["k"], case["dtype"], case["transpose_b"], seed)
        c = torch.full((case["m"], case["n"]), float("nan"), device="cuda", dtype=torch.float16)
        module.launch("gemm", [a, b, c])
        torch.cuda.synchronize()
        ok, worst, _ = bench.check(c, a, b, case["transpose_b"], seed,
                                   bench.sum_bits_of(case["dtype"], case))
        assert ok, f"worst err/tolerance {worst:.3f}"


@needs_mlir
@pytest.mark.parametrize(("element", "row", "col", "expected"), [
    # f16, 64 x 128: two boxes of 64 rows x 64 columns (128 bytes), 8 per chunk.
    ("f16", 3, 8, 3 * 64 + (1 ^ 3) * 8),             # chunk 1 of row 3 -> chunk 2
    ("f16", 9, 72, 64 * 64 + 9 * 64 + (1 ^ 1) * 8),  # box 1, chunk 1 of row 9 -> chunk 0
    ("f16", 7, 56, 7 * 64 + (7 ^ 7) * 8),            # last chunk of row 7 -> chunk 0
    ("f16", 3, 11, 3 * 64 + (1 ^ 3) * 8 + 3),        # inside a chunk: the place in it kept
    # 8-bit, 64 x 128: one box of 128-byte rows, 16 per chunk.
    ("i8", 5, 96, 5 * 128 + (6 ^ 5) * 16),
])
def test_box_index_is_the_128_byte_tma_swizzle(element, row, col, expected):
    from mlir import ir
    from mlir.dialects import arith, func

    from tilemlir.dialects import tile
    from tilemlir.passes import build_pipeline
    from tilemlir.passes.gpu_builders import box_index

    context = tile.make_context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        cols = 128
        memref_type = ir.MemRefType.get([64, cols], ir.Type.parse(element),
                                        memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("f", ([memref_type], [ir.IndexType.get()]))
            with ir.InsertionPoint(function.add_entry_block()):
                constant = lambda v: arith.ConstantOp(ir.IndexType.get(), v).result
                _, index = box_index(function.arguments[0], constant(row), constant(col),
                                     chunk_start=col % (16 // (2 if element == "f16" else 1)) == 0)
                func.ReturnOp([index])
        build_pipeline("canonicalize", context=context).run(module.operation)
        returned = function.regions[0].blocks[0].operations[-1].operands[0]
        assert ir.IntegerAttr(returned.owner.attributes["value"]).value == expected


@needs_mlir
@pytest.mark.parametrize(("shape", "warps"), [((128, 128), (4, 1)), ((256, 64), (8, 1)), ((64, 128), (4, 1))])
def test_warpgroup_band_layout_covers_the_block_as_wgmma_writes_it(shape, warps):
    """A warpgroup whose band is several m64 instructions high: warp w of
    group g holds rows 16w + lane/4 (+ 8) of each of its instructions (PTX
    ISA, wgmma D fragment), columns 8j + 2(lane % 4) (+ 1). Every element of
    the block is held by exactly one thread."""
    from tilemlir.backends.nvidia.wgmma import WarpgroupAccumulator
    from tilemlir.passes.fragment_layout import accumulator_layout

    lanes = WarpgroupAccumulator()
    threads = 32 * warps[0]
    layout = accumulator_layout(shape, lanes, warps, 32, threads, (64, shape[1], 16))

    def index(part, t):
        return sum((t // div) % mod * scale for div, mod, scale in part.terms)

    band = shape[0] // (warps[0] // 4)
    seen = {}
    for t in range(threads):
        group, warp, lane = t // 128, (t // 32) % 4, t % 32
        for s, (dr, dc) in enumerate(layout.slots):
            row, col = index(layout.parts[0], t) + dr, index(layout.parts[1], t) + dc
            instruction, j = divmod(s, 4)
            tm, tn = divmod(instruction, shape[1] // 8)
            expected_row = group * band + tm * 64 + 16 * warp + lane // 4 + 8 * (j // 2)
            assert (row, col) == (expected_row, 8 * tn + 2 * (lane % 4) + j % 2)
            assert (row, col) not in seen
            seen[(row, col)] = t
    assert len(seen) == shape[0] * shape[1]


@needs_mlir
def test_tma_tiles_take_128_and_64_byte_rows_only():
    """Rows of whole 128-byte boxes or one 64-byte box (both run on the H200:
    bench/gemm.py's cases); 32-byte rows (the 32-byte swizzle, not yet run
    there) and others are refused, so a kernel with them keeps mma.sync."""
    import tilemlir
    from tilemlir.backends.nvidia.wgmma import tma_tile_misfit

    assert tma_tile_misfit(128, 64, 4096, 2) is None
    assert tma_tile_misfit(128, 32, 4096, 2) is None
    assert tma_tile_misfit(128, 16, 4096, 2).startswith("a 128x16 tile's rows of 32 bytes are neither")
    assert tma_tile_misfit(128, 48, 4096, 2).startswith("a 128x48 tile's rows of 96 bytes are neither")
    assert "1024-byte atoms" in tma_tile_misfit(8, 32, 4096, 2)
    text = (REPO / "test" / "Backends" / "nvidia" / "wgmma-band.mlir").read_text()
    narrow = text.replace("128x32xf16", "128x16xf16").replace("32x128xf16", "16x128xf16") \
        .replace("%c32 = arith.constant 32", "%c32 = arith.constant 16").replace("%c8 = arith.constant 8", "%c8 = arith.constant 16")
    ptx = tilemlir.compile(narrow, target="nvidia:sm_90a", emit="ptx").artifact
    assert "mma.sync.aligned.m16n8k16" in ptx and "wgmma" not in ptx


@needs_mlir
@pytest.mark.parametrize("consumers, shared, need, instruction, expected", [
    # One consumer warpgroup of a 128x128 block (128 accumulator registers), 64 KiB
    # of slots: three blocks fit by shared memory, but 3 x 256 threads leave 80
    # registers at launch; two blocks give the consumers 216 (2 x (128 x 216 + 128 x 40) = 65536).
    (128, 65536 + 1024, 154, 90, (2, 128, 40, 216)),
    # CUTLASS's cooperative shape: 384 threads, 168 at launch, 40 / 232.
    (256, 196608 + 1024, 154, 154, (1, 168, 40, 232)),
    # The launch count must hold one instruction's operands (ptxas's C7602):
    # 3 blocks would give the consumers enough (120) but only 80 at launch.
    (128, 49152 + 1024, 90, 90, (2, 128, 40, 216)),
    # One block of 256 threads: every thread has the most already, no setmaxnreg.
    (128, 200000, 60, 50, (1, 248, 0, 0)),
    # Four consumer warpgroups of m64n256 (154 registers for one instruction):
    # 640 threads get 96 at launch, too few; the kernel keeps one role.
    (512, 100000, 154, 154, None),
])
def test_warp_specialized_register_split(consumers, shared, need, instruction, expected):
    from tilemlir.backends.nvidia.warp_specialize import RegisterSplit, register_split
    from tilemlir.targets import get_target

    split = register_split(get_target("nvidia:sm_90a"), consumers, shared, need, instruction)
    assert split == (RegisterSplit(*expected) if expected else None)
    if split and split.consumer:
        # setmaxnreg only moves the registers the block got at launch, and the
        # blocks' launch counts fit the SM's 65536.
        assert consumers * split.consumer + 128 * split.producer <= split.entry * (consumers + 128)
    if split:
        assert split.entry * (consumers + 128) * split.blocks_per_sm <= 65536


@needs_mlir
@pytest.mark.parametrize("grid", [[5, 11], [16, 16], [7, 1], [9]])
def test_persistent_tile_order_visits_every_tile_once(grid):
    """tile_order's arithmetic, folded by the canonicalizer for every t, is a
    bijection of the grid, and walks 8 rows of tiles column by column."""
    import math

    from mlir import ir
    from mlir.dialects import arith, func
    from mlir.passmanager import PassManager

    from tilemlir.backends.nvidia.warp_specialize import GROUP_ROWS, tile_order

    tiles = math.prod(grid)
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        index = ir.IndexType.get()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("order", ([], [index] * len(grid) * tiles))
            with ir.InsertionPoint(function.add_entry_block()):
                ids = [v for t in range(tiles) for v in tile_order(arith.ConstantOp(index, t).result, grid)]
                func.ReturnOp(ids)
        PassManager.parse("builtin.module(canonicalize)").run(module.operation)
        returned = list(function.entry_block.operations)[-1].operands
        values = [ir.IntegerAttr(v.owner.attributes["value"]).value for v in returned]
    visited = [tuple(values[i:i + len(grid)]) for i in range(0, len(values), len(grid))]
    if len(grid) == 1:
        assert visited == [(t,) for t in range(tiles)]
        return
    assert sorted(visited) == sorted((x, y) for x in range(grid[0]) for y in range(grid[1]))
    if grid[1] >= GROUP_ROWS:
        assert visited[:GROUP_ROWS] == [(0, y) for y in range(GROUP_ROWS)]


@needs_mlir
@pytest.mark.parametrize("block, launched", [
    # 128x128 fp8 blocks of two warpgroups: 64 + 64 (partial sums) accumulator
    # registers fit the consumers' 232; a producer warpgroup is added.
    ((128, 128, 128), 384),
    # 128x256: 128 + 128 would need 282 with the addresses, more than any
    # split gives the consumers: the kernel keeps one role.
    ((128, 256, 128), 256),
])
def test_fp8_kernels_keep_one_role_when_no_register_split_holds_them(block, launched):
    import sys

    import tilemlir

    sys.path.insert(0, str(REPO / "bench"))
    try:
        import gemm as bench
    finally:
        sys.path.remove(str(REPO / "bench"))
    text = bench.gemm_text(512, 512, 512, "fp8", True)
    tiling = f"block={block[0]},{block[1]},{block[2]} threads=256 stages=3"
    result = tilemlir.compile(text, target="nvidia:sm_90a", emit="ptx",
                              options={"tiling": tiling, "select": "prefer=wgmma", "report": True})
    (launch,) = result.report["functions"][0]["launches"][-1:]
    assert launch["block"] == [launched, 1, 1]
    assert ("setmaxnreg" in result.artifact) == (launched == 384)
    assert "wgmma.mma_async" in result.artifact


@needs_mlir
def test_fp8_partial_sums_are_promoted_late_where_a_run_divides_the_loop_and_registers_allow():
    """TmaLoop.deferred_loop: 12 iterations run as trips of 4 (wait_group 1 in
    each iteration, wait_group 0 once a trip); 6 iterations, which 4 does not
    divide, promote at once; a 64x128 block of one warpgroup would
    need a third accumulator copy that halves its blocks per SM, and keeps
    promoting at once with its register split."""
    from mlir import ir

    from tilemlir.backends.nvidia.toolchain import compile_to_ptx
    from tilemlir.dialects import tile
    from tilemlir.targets import get_target

    bench = _load(REPO / "bench" / "gemm.py", "bench_gemm")

    def ptx(m, n, k, tiling):
        module = ir.Module.parse(bench.gemm_text(m, n, k, "fp8", True), tile.make_context())
        return compile_to_ptx(module.operation, get_target("nvidia:sm_90a"), tiling, "prefer=wgmma").ptx

    twelve = ptx(256, 256, 1536, "block=128,128,128 threads=256 stages=3")
    assert twelve.count("wgmma.wait_group.sync.aligned 	1") == 4
    assert twelve.count("wgmma.wait_group.sync.aligned 	0") == 1
    six = ptx(256, 256, 768, "block=128,128,128 threads=256 stages=3")
    assert "wgmma.wait_group.sync.aligned 	1" not in six
    one_group = ptx(4096, 4096, 4096, "block=64,128,128 threads=128 stages=4")
    assert "wgmma.wait_group.sync.aligned 	1" not in one_group and "setmaxnreg" in one_group


@needs_mlir
@pytest.mark.parametrize("k, tiling, slots, shared", [
    # The docs' matmul: 3 asked, 4 placed (16 KiB each, 32 KiB of C staging):
    # two blocks per SM either way.
    (4096, "block=128,128,32 threads=128 stages=3", 4, 98304),
    # 2 asked, 3 placed (unmeasured on a GPU: the same count of copies ahead).
    (4096, "block=128,128,32 threads=128 stages=2", 3, 81920),
    # Three iterations: every copy is issued before the first gemm anyway.
    (96, "block=128,128,32 threads=128 stages=3", 3, 81920),
    # 32 KiB slots: a fourth would leave one block per SM where three leave two.
    (4096, "block=128,128,64 threads=128 stages=3", 3, 98304),
    # Four asked leave two copies ahead: no fifth (IN_FLIGHT_SLOT_STAGES).
    (4096, "block=128,128,32 threads=128 stages=4", 4, 98304),
])
def test_a_wgmma_loop_gets_a_slot_for_the_group_in_flight_where_it_costs_no_block(k, tiling, slots, shared):
    """wgmma.py's module docstring: the consumers hold two slots (the group
    issued and the one wait_group 1 lets run), so a loop asking for S stages
    gets S+1 slots (for S of 2 or 3) where they fit at the same blocks per
    SM and epilogue."""
    import tilemlir

    bench = _load(REPO / "bench" / "gemm.py", "bench_gemm")
    result = tilemlir.compile(bench.gemm_text(4096, 4096, k, "f16", False), target="nvidia:sm_90a", emit="ptx",
                              options={"tiling": tiling, "select": "prefer=wgmma", "report": True})
    (decision,) = result.report["decisions"]
    assert decision["stages"] == int(tiling[-1])  # as asked
    assert [b["stages"] for b in decision["shared_buffers"]] == [slots, slots]
    assert result.report["functions"][0]["launches"][-1]["dynamic_shared_bytes"] == shared
    assert f"__mbarrier[{8 * slots}]" in result.artifact  # one full and one empty barrier per slot


@needs_mlir
def test_an_epilogue_fragment_counts_only_while_it_lives():
    """A GEMM's element-wise epilogue (F[i, j] from C[i, j], the torch
    backend's bias and activation) makes F as C's elements die: a 128x128
    f32 accumulator and its 128x128 f32 epilogue are 128 registers a thread
    at once, so the kernel keeps its producer warpgroup (256 threads, 26
    registers of addresses: 154 of the consumers' at most 240). Where C is
    stored after F is made, both live at once (282): one role, 128 threads."""
    import tilemlir
    import tilemlir.language as T

    @T.macro
    def relu_of_product(A, B, O, S, bx, by, keep_sum):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for k in T.Pipelined(4, num_stages=4):
            T.copy(A[by * 128, k * 64], A_s)
            T.copy(B[k * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        F = T.alloc_fragment((128, 128), "float32")
        for i, j in T.Parallel(128, 128):
            F[i, j] = T.max(C_l[i, j], 0.0)
        T.copy(F, O[by * 128, bx * 128])
        if keep_sum:
            T.copy(C_l, S[by * 128, bx * 128])

    @T.prim_func
    def relu_epilogue(A: T.Tensor((512, 256), "float16"), B: T.Tensor((256, 512), "float16"),
                      O: T.Tensor((512, 512), "float16"), S: T.Tensor((512, 512), "float16")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            relu_of_product(A, B, O, S, bx, by, False)

    @T.prim_func
    def both_stored(A: T.Tensor((512, 256), "float16"), B: T.Tensor((256, 512), "float16"),
                    O: T.Tensor((512, 512), "float16"), S: T.Tensor((512, 512), "float16")):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            relu_of_product(A, B, O, S, bx, by, True)

    for kernel, launched in ((relu_epilogue, 256), (both_stored, 128)):
        result = tilemlir.compile(kernel.script(), target="nvidia:sm_90a", emit="ptx", options={"report": True})
        (launch,) = result.report["functions"][0]["launches"]
        assert launch["block"] == [launched, 1, 1], kernel
        assert "wgmma.mma_async" in result.artifact


# Two 64x64 f16 operands (rows of one 128-byte line) of a 2-stage cp.async
# loop of 8 iterations; {extra} may add another use of B's buffer after the loop.
BOXING_KERNEL = """
func.func @k(%A: memref<128x512xf16>, %B: memref<512x64xf16>, %C: memref<128x64xf16>, %D: memref<64x64xf16>) {
  "tile.kernel"() ({
  ^bb0(%bx: index, %by: index, %bz: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %a_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %b_s = "tile.alloc_shared"() : () -> memref<64x64xf16, #gpu.address_space<workgroup>>
    %acc = "tile.alloc_fragment"() : () -> memref<64x64xf32, #gpu.address_space<private>>
    "tile.fill"(%acc, %zero) : (memref<64x64xf32, #gpu.address_space<private>>, f32) -> ()
    %row0 = arith.muli %by, %c64 : index
    scf.for %kb = %c0 to %c8 step %c1 {
      %k0 = arith.muli %kb, %c64 : index
      "tile.copy"(%A, %a_s, %row0, %k0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<128x512xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.copy"(%B, %b_s, %k0, %c0) {operandSegmentSizes = array<i32: 1, 1, 2, 0>} : (memref<512x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, index, index) -> ()
      "tile.gemm"(%a_s, %b_s, %acc) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf32, #gpu.address_space<private>>) -> ()
    } {tile.num_stages = 2 : i64}
    "tile.copy"(%acc, %C, %row0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : (memref<64x64xf32, #gpu.address_space<private>>, memref<128x64xf16>, index, index) -> ()
    {extra}
    gpu.yield
  }) {grid = array<i64: 1, 2, 1>, threads = 128 : i64} : () -> ()
  return
}
"""


def _shared_storage(text: str, **options) -> tuple[list[dict], list[str]]:
    """The tile.shared_storage entries of the kernel `text` compiles to
    (GPU-level IR), and the memref type each of its ldmatrix ops reads."""
    import re

    import tilemlir

    gpu = tilemlir.compile(text, target="nvidia:sm_90a", emit="gpu", options=options).artifact
    (storage,) = re.findall(r"tile\.shared_storage = (\[[^\]]*\])", gpu)
    # MLIR prints each entry's quotes as \22.
    entries = [json.loads(entry.replace("\\22", '"')) for entry in re.findall(r'"([^"]*)"', storage)]
    return entries, re.findall(r"nvgpu\.ldmatrix .* : (memref<[0-9x]+x?[a-z0-9]+)", gpu)


@needs_mlir
def test_cp_async_operands_in_whole_lines_are_boxed():
    """A pipelined operand written only by the loop's cp.async and read only
    by ldmatrix, in rows of whole 128-byte lines, is stored as 128-byte-swizzled
    boxes (no padding). Once the program also reads B after the loop, the loop
    is not pipelined and both keep logical rows, padded, which the read-back's
    own indices address."""
    mma_sync = {"select": "prefer=mma.sync"}
    boxed, reads = _shared_storage(BOXING_KERNEL.replace("{extra}", ""), **mma_sync)
    assert [(e["buffer"], e["pad"], e.get("swizzle")) for e in boxed] == \
        [(0, 0, "128-byte (boxes)"), (1, 0, "128-byte (boxes)")]
    assert [e["bytes"] for e in boxed] == [2 * 64 * 64 * 2] * 2
    # Every ldmatrix reads the flattened slot through box_index's swizzled
    # index, where the copies wrote (64 x 64 = 4096), never at logical indices.
    assert reads and set(reads) == {"memref<4096xf16"}
    read_back = ('"tile.copy"(%b_s, %D, %c0, %c0) {operandSegmentSizes = array<i32: 1, 1, 0, 2>} : '
                 '(memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16>, index, index) -> ()')
    both, reads = _shared_storage(BOXING_KERNEL.replace("{extra}", read_back), **mma_sync)
    assert [(e["buffer"], e["pad"], e.get("swizzle")) for e in both] == \
        [(0, 8, None), (1, 8, None)]
    assert reads and set(reads) == {"memref<64x72xf16"}


@needs_mlir
def test_eight_bit_operands_boxed_only_where_ldmatrix_reads_them():
    """8-bit operands with K contiguous are read by ldmatrix and boxed; an
    8-bit B stored K x N is read with plain byte loads at logical indices and
    keeps padded rows."""
    bench = _load(REPO / "bench" / "gemm.py", "bench_gemm")
    for transpose_b, b_swizzle, b_reads in ((True, "128-byte (boxes)", 2), (False, None, 0)):
        entries, reads = _shared_storage(bench.gemm_text(16, 1024, 1024, "fp8", transpose_b),
                                         tiling="block=32,128,128 threads=128 stages=3", select="prefer=mma.sync")
        assert [e.get("swizzle") for e in entries] == ["128-byte (boxes)", b_swizzle], entries
        # ldmatrix reads the 8-bit boxes as bytes, flattened: A's 32 x 128 and,
        # boxed, B's 128 x 128 (N x K); a B stored K x N is read by byte loads.
        assert reads.count("memref<4096xi8") >= 1 and reads.count("memref<16384xi8") >= b_reads, reads
        assert set(reads) <= {"memref<4096xi8", "memref<16384xi8"}, reads
