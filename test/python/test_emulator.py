"""The SIMT emulator on whole kernels: a tiled LDS GEMM, the sanitizer on
planted bugs, divergent control flow under lane masks, vector transfers with
padding and masks, and precise errors for what it does not run."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from emulator_kernels import gemm_kernel, mfma_kernel
from mlir import ir

from tilemlir.diagnostics import UserError
from tilemlir.dialects.tile import make_context
from tilemlir.runtime import mfma_layouts
from tilemlir.runtime.emulator import SanitizerError, UnsupportedOp, emulate

MLIR_OPT = Path(__file__).resolve().parents[2] / ".venv/lib/python3.11/site-packages/mlir/bin/mlir-opt"


def _run(text: str, args: list, **options) -> None:
    with make_context():
        module = ir.Operation.parse(text, source_name="kernel.mlir")
        emulate(module, "entry", args, **options)


def _gemm_inputs(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.zeros((m, n), np.float32)


def _check_gemm(a, b, c):
    """f16 products are exact; K f32 additions bound the error."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = (a.shape[1] + 1) * 2.0**-24 * (np.abs(a.astype(np.float64)) @
                                            np.abs(b.astype(np.float64)))
    assert (np.abs(c - exact) <= bound).all()


@pytest.mark.parametrize("m,n,k,block", [(128, 128, 64, (64, 64, 32)),
                                         (128, 256, 96, (128, 128, 32))])
def test_tiled_gemm_with_lds_and_barriers(m, n, k, block):
    a, b, c = _gemm_inputs(m, n, k)
    _run(gemm_kernel(m, n, k, block=block), [a, b, c])
    _check_gemm(a, b, c)


def test_gemm_256_cubed_f16_is_fast():
    """The issue's performance target: 256^3 f16, 128x128 tiles, 256 threads, < 30 s."""
    a, b, c = _gemm_inputs(256, 256, 256, seed=1)
    start = time.perf_counter()
    _run(gemm_kernel(256, 256, 256), [a, b, c])
    elapsed = time.perf_counter() - start
    _check_gemm(a, b, c)
    assert elapsed < 30, elapsed


# --------------------------------------------------------------------------
# Sanitizer: each planted bug must be reported with location, workgroup, lane.
# --------------------------------------------------------------------------

@pytest.mark.parametrize("planted,extra_grid,message", [
    # the compute phase reads LDS that other lanes wrote, with no barrier between
    ("no-barrier-after-copy", 0, "data race: lane 4 wrote and another lane reads"),
    # the next iteration's copy overwrites LDS other lanes read in this one
    ("no-barrier-after-compute", 0, "data race: several lanes read and another lane writes"),
    # B's LDS tile is never written, then read
    ("skip-copy-b", 0, "read of uninitialized memory at byte 4096 of LDS"),
    # one workgroup too many along M reads past the end of A
    ("", 1, ("out-of-bounds load of global memory (argument 0 of @entry) at index [128, 0]: "
             "dimension 0 has size 128, in workgroup (2, 0, 0), lane 0")),
])
def test_sanitizer_catches_planted_bugs(planted, extra_grid, message):
    a, b, c = _gemm_inputs(128, 128, 64)
    text = gemm_kernel(128, 128, 64, block=(64, 64, 32), planted=planted, extra_grid=extra_grid)
    with pytest.raises(SanitizerError) as caught:
        _run(text, [a, b, c])
    text = str(caught.value)
    assert text.startswith("kernel.mlir:") and ": error: emulator: " in text
    assert message in text
    assert "in workgroup (" in text and "lane " in text


def test_sanitize_false_skips_lds_shadows_but_not_bounds():
    a, b, c = _gemm_inputs(128, 128, 64)
    _run(gemm_kernel(128, 128, 64, block=(64, 64, 32), planted="no-barrier-after-copy"),
         [a, b, c], sanitize=False)  # sequential lanes happen to compute the right thing
    _check_gemm(a, b, c)
    with pytest.raises(SanitizerError, match="out-of-bounds"):
        _run(gemm_kernel(128, 128, 64, block=(64, 64, 32), extra_grid=1), [a, b, c],
             sanitize=False)


LDS_KERNEL = """#wg = #gpu.address_space<workgroup>
module attributes {{gpu.container_module}} {{
  func.func @entry(%out: memref<64xf32>) {{
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%out : memref<64xf32>)
    return
  }}
  gpu.module @mod {{
    gpu.func @k(%out: memref<64xf32>) workgroup(%lds: memref<64xf32, #wg>) kernel {{
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c63 = arith.constant 63 : index
      %f = arith.constant 1.0 : f32
{body}
      gpu.return
    }}
  }}
}}
"""


@pytest.mark.parametrize("body,message", [
    # every lane writes its own value into the same LDS word in one store
    (("      %ti = arith.index_cast %t : index to i32\n"
      "      %g = arith.sitofp %ti : i32 to f32\n"
      "      memref.store %g, %lds[%c0] : memref<64xf32, #wg>"),
     "data race: lanes 0 and 1 write the same byte 2 of LDS"),  # 0.0 and 1.0 differ in bytes 2 and 3
    # each lane overwrites its neighbour's element with another value, no barrier between
    (("      %ti = arith.index_cast %t : index to i32\n"
      "      %g = arith.sitofp %ti : i32 to f32\n"
      "      memref.store %g, %lds[%t] : memref<64xf32, #wg>\n"
      "      %c1 = arith.constant 1 : index\n"
      "      %c64 = arith.constant 64 : index\n"
      "      %t1 = arith.addi %t, %c1 : index\n"
      "      %n = arith.remui %t1, %c64 : index\n"
      "      memref.store %f, %lds[%n] : memref<64xf32, #wg>"),
     "wrote the same byte with no gpu.barrier between (write-write)"),
    # lane 63 reads what lane 0 wrote before the barrier was reached
    (("      memref.store %f, %lds[%t] : memref<64xf32, #wg>\n"
      "      %r = arith.subi %c63, %t : index\n"
      "      %x = memref.load %lds[%r] : memref<64xf32, #wg>"),
     "data race: lane 63 wrote and another lane reads"),
    # a barrier only half of the lanes reach
    (("      %c32 = arith.constant 32 : index\n"
      "      %low = arith.cmpi ult, %t, %c32 : index\n"
      "      scf.if %low {\n        gpu.barrier\n      }"),
     "gpu.barrier in divergent control flow: not reached by workgroup (0, 0, 0), lane 32"),
    # an LDS index one past the end
    (("      %c1 = arith.constant 1 : index\n"
      "      %i = arith.addi %t, %c1 : index\n"
      "      memref.store %f, %lds[%i] : memref<64xf32, #wg>"),
     ("out-of-bounds store of LDS (workgroup attribution 0) at index [64]: dimension 0 has "
      "size 64, in workgroup (0, 0, 0), lane 63 (thread (63, 0, 0), wave 0)")),
    # a reinterpret_cast whose view reaches past the allocation
    (("      %v = memref.reinterpret_cast %out to offset: [0], sizes: [8, 16], strides: [16, 1]"
      " : memref<64xf32> to memref<8x16xf32>\n"
      "      %c7 = arith.constant 7 : index\n"
      "      %x = memref.load %v[%c7, %c0] : memref<8x16xf32>"),
     ("out-of-bounds load of global memory (argument 0 of @entry): element 112 of an "
      "allocation of 64, in workgroup (0, 0, 0), lane 0")),
    # a private array indexed past its end by the last lanes only, through a subview
    (("      %p = memref.alloca() : memref<8xf32, #gpu.address_space<private>>\n"
      "      %s = memref.subview %p[4] [4] [1] : memref<8xf32, #gpu.address_space<private>> to "
      "memref<4xf32, strided<[1], offset: 4>, #gpu.address_space<private>>\n"
      "      %c60 = arith.constant 60 : index\n"
      "      %i = arith.subi %t, %c60 : index\n"
      "      memref.store %f, %s[%i] : memref<4xf32, strided<[1], offset: 4>, "
      "#gpu.address_space<private>>"),
     ("out-of-bounds store of private memory (alloca) at index [-60]: dimension 0 has size 4, "
      "in workgroup (0, 0, 0), lane 0")),
])
def test_sanitizer_on_small_kernels(body, message):
    with pytest.raises(SanitizerError) as caught:
        _run(LDS_KERNEL.format(body=body), [np.zeros(64, np.float32)])
    assert message in str(caught.value)


def test_barrier_separates_write_and_read():
    body = ("      memref.store %f, %lds[%t] : memref<64xf32, #wg>\n"
            "      gpu.barrier\n"
            "      %r = arith.subi %c63, %t : index\n"
            "      %x = memref.load %lds[%r] : memref<64xf32, #wg>\n"
            "      %y = arith.addf %x, %f : f32\n"
            "      memref.store %y, %out[%t] : memref<64xf32>")
    out = np.zeros(64, np.float32)
    _run(LDS_KERNEL.format(body=body), [out])
    assert (out == 2.0).all()


# --------------------------------------------------------------------------
# Races on global memory: between lanes (ordered by gpu.barrier) and between
# the workgroups of one launch (never ordered); launches are ordered.
# --------------------------------------------------------------------------

GLOBAL_KERNEL = """module attributes {{gpu.container_module}} {{
  func.func @entry(%out: memref<64xf32>, %in: memref<64xf32>) {{
    %c1 = arith.constant 1 : index
    %grid = arith.constant {grid} : index
    %c64 = arith.constant 64 : index
{launches}
    return
  }}
  gpu.module @mod {{
    gpu.func @k(%out: memref<64xf32>, %in: memref<64xf32>) kernel {{
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c63 = arith.constant 63 : index
      %f = arith.constant 1.0 : f32
      %r = arith.subi %c63, %t : index
      %first = arith.cmpi eq, %b, %c0 : index
{body}
      gpu.return
    }}
  }}
}}
"""
LAUNCH = """    gpu.launch_func @mod::@k blocks in (%grid, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%out : memref<64xf32>, %in : memref<64xf32>)"""


def _run_global(body: str, grid: int = 1, launches: int = 1, **options) -> np.ndarray:
    out = np.zeros(64, np.float32)
    text = GLOBAL_KERNEL.format(grid=grid, launches="\n".join([LAUNCH] * launches), body=body)
    _run(text, [out, np.arange(64, dtype=np.float32)], **options)
    return out


@pytest.mark.parametrize("body,grid,message", [
    # lanes 2i and 2i+1 store their own values to element i in one op
    (("      %ti = arith.index_cast %t : index to i32\n"
      "      %g = arith.sitofp %ti : i32 to f32\n"
      "      %h = arith.divui %t, %c2 : index\n"
      "      memref.store %g, %out[%h] : memref<64xf32>"), 1,
     ("data race: lanes 0 and 1 write different values in one op at element 0 (byte 0) of global "
      "memory (argument 0 of @entry), in workgroup (0, 0, 0), lane 0 (thread (0, 0, 0), wave 0)")),
    # every lane stores its own value into the same (lane-uniform) element
    (("      %ti = arith.index_cast %t : index to i32\n"
      "      %g = arith.sitofp %ti : i32 to f32\n"
      "      memref.store %g, %out[%c0] : memref<64xf32>"), 1,
     "write different values in one op at element 0 (byte 0) of global memory"),
    # lane 0 reads element 63 that lane 63 stored, with no barrier between
    (("      memref.store %f, %out[%t] : memref<64xf32>\n"
      "      %x = memref.load %out[%r] : memref<64xf32>"), 1,
     ("data race: lane 63 wrote and another lane reads with no gpu.barrier between (read after "
      "write) at element 63 (byte 252) of global memory (argument 0 of @entry), in workgroup "
      "(0, 0, 0), lane 0")),
    # lane 0 stores element 0 and every lane then loads it (one uniform address), no barrier between
    (("      %z = arith.cmpi eq, %t, %c0 : index\n"
      "      scf.if %z {\n        memref.store %f, %out[%c0] : memref<64xf32>\n      }\n"
      "      %x = memref.load %out[%c0] : memref<64xf32>"), 1,
     "data race: lane 0 wrote and another lane reads with no gpu.barrier between (read after write)"),
    # lane 0 overwrites element 0 that lane 63 read, with no barrier between
    (("      %x = memref.load %out[%r] : memref<64xf32>\n"
      "      memref.store %x, %out[%t] : memref<64xf32>"), 1,
     ("data race: lane 63 read and another lane writes with no gpu.barrier between (write after "
      "read) at element 0 (byte 0) of global memory (argument 0 of @entry), in workgroup "
      "(0, 0, 0), lane 0")),
    # a vector store overlapping the next lane's: lane 1 writes what lane 0 wrote
    (("      %ti = arith.index_cast %t : index to i32\n"
      "      %g = arith.sitofp %ti : i32 to f32\n"
      "      %v = vector.broadcast %g : f32 to vector<2xf32>\n"
      "      %c62 = arith.constant 62 : index\n"
      "      %i = arith.minui %t, %c62 : index\n"
      "      vector.store %v, %out[%i] : memref<64xf32>, vector<2xf32>"), 1,
     "data race: lanes "),
    # both workgroups of the launch store the same output
    ("      memref.store %f, %out[%t] : memref<64xf32>", 2,
     ("data race: workgroup (0, 0, 0) wrote and workgroup (1, 0, 0) writes in one launch of "
      "@mod::@k (workgroups are not ordered) at element 0 (byte 0) of global memory (argument 0 "
      "of @entry), in workgroup (1, 0, 0), lane 0")),
    # each lane increments its own element, in both workgroups: the second reads the first's
    (("      %x = memref.load %out[%t] : memref<64xf32>\n"
      "      %y = arith.addf %x, %f : f32\n"
      "      memref.store %y, %out[%t] : memref<64xf32>"), 2,
     "data race: workgroup (0, 0, 0) wrote and workgroup (1, 0, 0) reads in one launch"),
    # workgroup 0 reads what workgroup 2 writes (one between them reads nothing)
    (("      %two = arith.cmpi eq, %b, %c2 : index\n"
      "      scf.if %first {\n"
      "        %x = memref.load %out[%t] : memref<64xf32>\n"
      "      }\n"
      "      scf.if %two {\n"
      "        memref.store %f, %out[%r] : memref<64xf32>\n"
      "      }"), 3,
     ("data race: workgroup (0, 0, 0) read and workgroup (2, 0, 0) writes in one launch of "
      "@mod::@k (workgroups are not ordered) at element 63")),
    # all three read, the last also writes: the earlier readers are remembered
    (("      %x = memref.load %out[%t] : memref<64xf32>\n"
      "      %two = arith.cmpi eq, %b, %c2 : index\n"
      "      scf.if %two {\n"
      "        memref.store %f, %out[%t] : memref<64xf32>\n"
      "      }"), 3,
     "data race: workgroup (1, 0, 0) read and workgroup (2, 0, 0) writes in one launch"),
])
def test_global_memory_races(body, grid, message):
    with pytest.raises(SanitizerError) as caught:
        _run_global(body, grid)
    assert message in str(caught.value)
    assert str(caught.value).startswith("kernel.mlir:")


def test_lanes_storing_the_same_value_are_not_races():
    """Every lane storing the value the others store (TileLang's per-thread
    code stages shared data so), in one op or over a value already there, in
    LDS and in global memory: what any GPU leaves is that value."""
    lds = ("      memref.store %f, %lds[%c0] : memref<64xf32, #wg>\n"
           "      memref.store %f, %lds[%c0] : memref<64xf32, #wg>\n"
           "      gpu.barrier\n"
           "      %x = memref.load %lds[%c0] : memref<64xf32, #wg>\n"
           "      memref.store %x, %out[%t] : memref<64xf32>")
    out = np.zeros(64, np.float32)
    _run(LDS_KERNEL.format(body=lds), [out])
    np.testing.assert_array_equal(out, 1.0)
    body = ("      memref.store %f, %out[%c0] : memref<64xf32>\n"
            "      %h = arith.divui %t, %c2 : index\n"
            "      %c1 = arith.constant 1 : index\n"
            "      %h1 = arith.addi %h, %c1 : index\n"
            "      memref.store %f, %out[%h1] : memref<64xf32>")
    expected = np.zeros(64, np.float32)
    expected[:33] = 1.0
    np.testing.assert_array_equal(_run_global(body), expected)


def test_ordered_global_accesses_are_not_races():
    """A barrier orders one workgroup's lanes; a lane re-reading and re-writing
    its own element, and several workgroups reading an input, are fine; the
    second launch follows the first."""
    body = ("      %x = memref.load %in[%t] : memref<64xf32>\n"
            "      %bf = arith.index_cast %b : index to i32\n"
            "      scf.if %first {\n"
            "        memref.store %x, %out[%t] : memref<64xf32>\n"
            "        %again = memref.load %out[%t] : memref<64xf32>\n"
            "        %y = arith.addf %again, %f : f32\n"
            "        memref.store %y, %out[%t] : memref<64xf32>\n"
            "        gpu.barrier\n"
            "        %z = memref.load %out[%r] : memref<64xf32>\n"
            "        gpu.barrier\n"
            "        memref.store %z, %out[%t] : memref<64xf32>\n"
            "      }")
    out = _run_global(body, grid=3, launches=2)
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32)[::-1] + 1)


def test_sanitize_false_skips_the_global_race_check():
    out = _run_global("      memref.store %f, %out[%t] : memref<64xf32>", grid=2, sanitize=False)
    assert (out == 1.0).all()


# --------------------------------------------------------------------------
# Divergent control flow and masked vector transfers
# --------------------------------------------------------------------------

DIVERGENT = """module attributes {gpu.container_module} {
  func.func @entry(%out: memref<?xi32>, %roots: memref<?xf32>, %steps: memref<?xi32>,
                   %win: memref<?x4xf32>, %in: memref<100xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %grid = arith.ceildivui %n, %c64 : index
    gpu.launch_func @mod::@k blocks in (%grid, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%out : memref<?xi32>, %roots : memref<?xf32>, %steps : memref<?xi32>,
             %win : memref<?x4xf32>, %in : memref<100xf32>)
    return
  }
  gpu.module @mod {
    gpu.func @k(%out: memref<?xi32>, %roots: memref<?xf32>, %steps: memref<?xi32>,
                %win: memref<?x4xf32>, %in: memref<100xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c5 = arith.constant 5 : index
      %c100 = arith.constant 100 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %i2 = arith.constant 2 : i32
      %i3 = arith.constant 3 : i32
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %t = arith.addi %base, %tid : index
      %ti = arith.index_cast %t : index to i32
      // scf.if with results, lane-dependent: multiples of 3 double, others sum 0..t%5-1
      %r = arith.remui %t, %c3 : index
      %is0 = arith.cmpi eq, %r, %c0 : index
      %v = scf.if %is0 -> (i32) {
        %x = arith.muli %ti, %i2 : i32
        scf.yield %x : i32
      } else {
        %ub = arith.remui %t, %c5 : index
        %s = scf.for %i = %c0 to %ub step %c1 iter_args(%acc = %i0) -> (i32) {
          %ii = arith.index_cast %i : index to i32
          %nx = arith.addi %acc, %ii : i32
          scf.yield %nx : i32
        }
        scf.yield %s : i32
      }
      memref.store %v, %out[%t] : memref<?xi32>
      // a guarded load: lanes >= 100 would read out of bounds
      %inb = arith.cmpi ult, %t, %c100 : index
      scf.if %inb {
        %x = memref.load %in[%t] : memref<100xf32>
        %y = math.sqrt %x : f32
        memref.store %y, %roots[%t] : memref<?xf32>
      }
      // scf.while with a lane-dependent trip count: Collatz steps of t + 1
      %start = arith.addi %ti, %i1 : i32
      %res:2 = scf.while (%x = %start, %k = %i0) : (i32, i32) -> (i32, i32) {
        %more = arith.cmpi ne, %x, %i1 : i32
        scf.condition(%more) %x, %k : i32, i32
      } do {
      ^bb0(%x: i32, %k: i32):
        %odd = arith.andi %x, %i1 : i32
        %isodd = arith.cmpi ne, %odd, %i0 : i32
        %up = arith.muli %x, %i3 : i32
        %up1 = arith.addi %up, %i1 : i32
        %down = arith.shrui %x, %i1 : i32
        %nx = arith.select %isodd, %up1, %down : i32
        %nk = arith.addi %k, %i1 : i32
        scf.yield %nx, %nk : i32, i32
      }
      memref.store %res#1, %steps[%t] : memref<?xi32>
      // a window of 4 that runs past the end: padded with -1, not an error
      %pad = arith.constant -1.0 : f32
      %w = vector.transfer_read %in[%t], %pad : memref<100xf32>, vector<4xf32>
      vector.store %w, %win[%t, %c0] : memref<?x4xf32>, vector<4xf32>
      gpu.return
    }
  }
}
"""


def _collatz_steps(x: int) -> int:
    steps = 0
    while x != 1:
        x = 3 * x + 1 if x % 2 else x // 2
        steps += 1
    return steps


def test_divergent_control_flow_is_masked_per_lane():
    n = 128
    data = np.arange(100, dtype=np.float32) ** 2
    out, roots = np.zeros(n, np.int32), np.full(n, -7.0, np.float32)
    steps, window = np.zeros(n, np.int32), np.zeros((n, 4), np.float32)
    _run(DIVERGENT, [out, roots, steps, window, data, n])
    t = np.arange(n)
    expected = np.where(t % 3 == 0, 2 * t, [sum(range(x % 5)) for x in t])
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(roots[:100], np.arange(100, dtype=np.float32))
    assert (roots[100:] == -7.0).all()  # inactive lanes stored nothing
    np.testing.assert_array_equal(steps, [_collatz_steps(x + 1) for x in t])
    padded = np.concatenate([data, np.full(n + 4, -1.0, np.float32)])
    np.testing.assert_array_equal(window, [padded[i:i + 4] for i in t])


MASKED = """module attributes {gpu.container_module} {
  func.func @entry(%in: memref<8x8xf32>, %out: memref<64x8xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%in : memref<8x8xf32>, %out : memref<64x8xf32>)
    return
  }
  gpu.module @mod {
    gpu.func @k(%in: memref<8x8xf32>, %out: memref<64x8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %t = gpu.thread_id x
      %col = arith.remui %t, %c8 : index
      %n = arith.divui %t, %c8 : index
      // a column of `in` read through a transposing map, masked to its first n rows
      %mask = vector.create_mask %n : vector<8xi1>
      %pad = arith.constant 0.5 : f32
      %v = vector.transfer_read %in[%c0, %col], %pad, %mask
          {permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<8x8xf32>, vector<8xf32>
      %zero = arith.constant dense<0.0> : vector<8xf32>
      %m = vector.maskedload %in[%col, %c0], %mask, %zero
          : memref<8x8xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
      %s = arith.addf %v, %m : vector<8xf32>
      %e = vector.extract %s[%col] : f32 from vector<8xf32>
      %b = vector.broadcast %e : f32 to vector<8xf32>
      %r = vector.insert %e, %s[%n] : f32 into vector<8xf32>
      %sum = vector.reduction <add>, %r : vector<8xf32> into f32
      %h = vector.extract_strided_slice %r {offsets = [2], sizes = [4], strides = [1]}
          : vector<8xf32> to vector<4xf32>
      %g = vector.insert_strided_slice %h, %b {offsets = [4], strides = [1]}
          : vector<4xf32> into vector<8xf32>
      %last = vector.insert %sum, %g[7] : f32 into vector<8xf32>
      vector.store %last, %out[%t, %c0] : memref<64x8xf32>, vector<8xf32>
      gpu.return
    }
  }
}
"""


def test_masked_and_permuted_vector_transfers():
    rng = np.random.default_rng(3)
    data = rng.integers(-8, 8, (8, 8)).astype(np.float32)
    out = np.zeros((64, 8), np.float32)
    _run(MASKED, [data, out])
    for t in range(64):
        col, n = t % 8, t // 8
        mask = np.arange(8) < n
        v = np.where(mask, data[:, col], 0.5)
        m = np.where(mask, data[col, :], 0.0)
        s = v + m
        r = s.copy()
        r[n] = s[col]
        g = np.full(8, s[col], np.float32)
        g[4:8] = r[2:6]
        g[7] = r.sum()
        np.testing.assert_array_equal(out[t], g, err_msg=f"lane {t}")


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

def test_unsupported_op_is_a_located_user_error():
    body = "      %x = math.ctlz %t : index"
    with pytest.raises(UnsupportedOp) as caught:
        _run(LDS_KERNEL.format(body=body), [np.zeros(64, np.float32)])
    assert isinstance(caught.value, UserError)
    assert str(caught.value) == "kernel.mlir:16:12: error: emulator: unsupported op 'math.ctlz'"


def test_an_intrinsic_the_emulator_does_not_know_is_refused():
    body = ("      %i = arith.index_cast %t : index to i32\n"
            "      %x = llvm.call_intrinsic \"llvm.amdgcn.ubfe\"(%i, %i, %i) : (i32, i32, i32) -> i32")
    with pytest.raises(UnsupportedOp, match=r"kernel.mlir:17:12: error: emulator: unsupported intrinsic "
                                            r"'llvm.amdgcn.ubfe' \(llvm.call_intrinsic\)"):
        _run(LDS_KERNEL.format(body=body), [np.zeros(64, np.float32)])


def test_unstructured_control_flow_is_reported():
    body = "      cf.br ^next\n    ^next:"
    with pytest.raises(UnsupportedOp, match=r"kernel.mlir:16:7: error: emulator: unsupported "
                                            r"op 'cf.br'"):
        _run(LDS_KERNEL.format(body=body), [np.zeros(64, np.float32)])


def test_mfma_that_the_chip_lacks_is_an_error():
    instr = next(i for i in mfma_layouts.INSTRUCTIONS["gfx950"] if i.name.endswith("16x16x32_f16"))
    a = np.zeros((4, 1, 16, 32), np.float16)
    c = np.zeros((4, 1, 16, 16), np.float32)
    with pytest.raises(UserError, match="no MFMA instruction 16x16x32 with 1 block.* on gfx942"):
        _run(mfma_kernel(instr, "gfx950"), [a, a, c, c, 2], chip="gfx942")


def test_argument_mismatch_is_an_error():
    a, b, c = _gemm_inputs(128, 128, 64)
    with pytest.raises(UserError, match="argument 1 of @entry has dtype float32"):
        _run(gemm_kernel(128, 128, 64, block=(64, 64, 32)), [a, b.astype(np.float32), c])


# --------------------------------------------------------------------------
# The same kernel text is accepted by upstream MLIR's ROCDL lowering.
# --------------------------------------------------------------------------

def _lower(text: str, chip: str) -> str:
    pipeline = ("builtin.module(gpu.module(convert-vector-to-scf,lower-affine,convert-scf-to-cf,"
                f"convert-amdgpu-to-rocdl{{chipset={chip}}},"
                f"convert-gpu-to-rocdl{{chipset={chip} index-bitwidth=64}},"
                "reconcile-unrealized-casts))")
    done = subprocess.run([str(MLIR_OPT), f"--pass-pipeline={pipeline}"], input=text,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("chip,name,intrinsic", [
    ("gfx942", "v_mfma_f32_32x32x8_f16", "rocdl.mfma.f32.32x32x8f16"),
    ("gfx942", "v_mfma_f32_16x16x32_fp8_bf8", "rocdl.mfma.f32.16x16x32.fp8.bf8"),
    ("gfx90a", "v_mfma_f64_4x4x4_4b_f64", "rocdl.mfma.f64.4x4x4f64"),
    ("gfx950", "v_mfma_f32_32x32x64_f8f6f4", "rocdl.mfma.scale.f32.32x32x64.f8f6f4"),
])
def test_mfma_kernels_lower_to_rocdl(chip, name, intrinsic):
    instr = next(i for i in mfma_layouts.INSTRUCTIONS[chip] if i.name == name)
    assert intrinsic in _lower(mfma_kernel(instr, chip), chip)


def test_gemm_kernel_lowers_to_rocdl():
    lowered = _lower(gemm_kernel(128, 128, 64, block=(64, 64, 32)), "gfx942")
    assert "rocdl.mfma.f32.32x32x8f16" in lowered and "rocdl.barrier" in lowered


# --------------------------------------------------------------------------
# Scalar semantics (host code runs on the same machinery with one lane)
# --------------------------------------------------------------------------

def _evaluate(constants: str, expr: str, result_type: str, dtype) -> np.ndarray:
    """Runs `%r = expr` after `constants` and returns the stored result."""
    text = f"""module {{ func.func @entry(%out: memref<1x{result_type}>) {{
{constants}
  %c0 = arith.constant 0 : index
  %r = {expr}
  memref.store %r, %out[%c0] : memref<1x{result_type}>
  return
}} }}"""
    out = np.zeros(1, dtype)
    _run(text, [out])
    return out


@pytest.mark.parametrize("expr,result_type,expected", [
    ("arith.divsi %a, %b : i32", "i32", -2),  # -7 / 3 truncates
    ("arith.remsi %a, %b : i32", "i32", -1),
    ("arith.floordivsi %a, %b : i32", "i32", -3),
    ("arith.ceildivsi %a, %b : i32", "i32", -2),
    ("arith.divui %a, %b : i32", "i32", (2**32 - 7) // 3),
    ("arith.shrui %a, %b : i32", "i32", (2**32 - 7) >> 3),
    ("arith.shrsi %a, %b : i32", "i32", -1),
    ("arith.maxui %a, %b : i32", "i32", -7),
    ("arith.cmpi ult, %a, %b : i32", "i1", False),
    ("arith.cmpi slt, %a, %b : i32", "i1", True),
])
def test_integer_semantics(expr, result_type, expected):
    constants = "  %a = arith.constant -7 : i32\n  %b = arith.constant 3 : i32"
    out = _evaluate(constants, expr, result_type, bool if result_type == "i1" else np.int32)
    assert out[0] == expected


@pytest.mark.parametrize("expr,out_type,expected", [
    # f32 -> bf16 rounds to nearest even: 1 + 2**-8 is a tie between 1 and 1 + 2**-7
    ("arith.truncf %x : f32 to bf16", "bf16", 1.0),
    ("arith.truncf %y : f32 to f8E4M3FNUZ", "f8E4M3FNUZ", 1.0),  # a tie, to even
    ("arith.fptosi %z : f32 to i32", "i32", -2),
    ("arith.cmpf une, %n, %n : f32", "i1", True),
    ("arith.cmpf oeq, %n, %n : f32", "i1", False),
    ("arith.maxnumf %n, %x : f32", "f32", 1.00390625),
    ("arith.maximumf %n, %x : f32", "f32", np.nan),
    ("math.fma %x, %x, %z : f32", "f32", 1.00390625**2 - 2.5),
])
def test_float_semantics(expr, out_type, expected):
    from emulator_kernels import NUMPY
    constants = ("  %x = arith.constant 1.00390625 : f32\n  %y = arith.constant 1.0625 : f32\n"
                 "  %z = arith.constant -2.5 : f32\n  %n = arith.constant 0x7FC00000 : f32")
    out = _evaluate(constants, expr, out_type, bool if out_type == "i1" else NUMPY[out_type])
    if isinstance(expected, float) and np.isnan(expected):
        assert np.isnan(out[0].astype(np.float32))
    else:
        assert out[0].astype(np.float64) == np.float64(expected)


@pytest.mark.parametrize("flags,x,expected", [
    ("", -130.0, 2.0**-130),                   # a subnormal result, kept
    (" fastmath<afn>", -130.0, 0.0),           # the exp2 unit flushes it (v_exp_f32)
    (" fastmath<fast>", -130.0, 0.0),
    (" fastmath<contract>", -130.0, 2.0**-130),  # no afn: exact
    (" fastmath<afn>", -126.0, 2.0**-126),     # the smallest normal stays
    (" fastmath<afn>", 3.0, 8.0),
])
def test_exp2_on_the_function_unit(flags, x, expected):
    """math.exp2 with fastmath<afn> is the hardware's exp2 unit (docs/kernels.md):
    the emulator models its flush of subnormal results to zero."""
    out = _evaluate(f"  %x = arith.constant {x} : f32", f"math.exp2 %x{flags} : f32", "f32", np.float32)
    assert out[0] == np.float32(expected)


def test_an_lds_barrier_orders_lds_but_not_global_memory():
    """amdgpu.lds_barrier (the amdgpu family's pipelined-loop barrier, whose
    fences are restricted to LDS) orders the workgroup's LDS accesses as
    gpu.barrier does, but a lane reading global memory another lane wrote
    before it is still a race; gpu.barrier orders both."""
    through_global = ("      memref.store %f, %out[%t] : memref<64xf32>\n"
                      "      {barrier}\n"
                      "      %x = memref.load %out[%r] : memref<64xf32>")
    _run_global(through_global.format(barrier="gpu.barrier"), 1)
    with pytest.raises(SanitizerError, match="no gpu.barrier between"):
        _run_global(through_global.format(barrier="amdgpu.lds_barrier"), 1)
    through_lds = ("      %r = arith.subi %c63, %t : index\n"
                   "      memref.store %f, %lds[%t] : memref<64xf32, #wg>\n"
                   "      amdgpu.lds_barrier\n"
                   "      %x = memref.load %lds[%r] : memref<64xf32, #wg>\n"
                   "      memref.store %x, %out[%t] : memref<64xf32>")
    out = np.zeros(64, np.float32)
    _run(LDS_KERNEL.format(body=through_lds), [out])
    np.testing.assert_array_equal(out, 1.0)


# --------------------------------------------------------------------------
# llvm.amdgcn.perm (AMD's v_perm_b32, the lowering's byte permutation)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("high, low, selector, expected", [
    # Bytes 0-3 from low, 4-7 from high: the interleavings of gpu_builders._byte_columns.
    (0x44332211, 0x88776655, 0x05010400, 0x22661155),
    (0x44332211, 0x88776655, 0x07030602, 0x44883377),
    (0x44332211, 0x88776655, 0x05040100, 0x22116655),
    (0x44332211, 0x88776655, 0x07060302, 0x44338877),
    # 8-11: a sign bit repeated (bits 15 and 31 of low, then of high); 12: 0x00; 13 and up: 0xFF.
    (0x80008000, 0x00008000, 0x0B0A0908, 0xFFFF00FF),
    (0x00000000, 0x00000000, 0xFF0D0C0C, 0xFFFF0000),
])
def test_byte_permute_follows_v_perm_b32(high, low, selector, expected):
    from tilemlir.runtime.emu_arith import _byte_permute

    def i32(value):
        return np.array([value], np.uint32).view(np.int32)

    assert _byte_permute(i32(high), i32(low), i32(selector)).view(np.uint32)[0] == expected


def test_byte_permute_in_a_kernel():
    """Each lane permutes its index (low) with a constant (high)."""
    body = ("      %lo = arith.index_cast %t : index to i32\n"
            "      %hi = arith.constant 1144201745 : i32\n"  # 0x44332211
            "      %sel = arith.constant 202179584 : i32\n"  # 0x0C0D0400: low.b0, high.b0, 0xFF, 0x00
            "      %p = llvm.call_intrinsic \"llvm.amdgcn.perm\"(%hi, %lo, %sel) : (i32, i32, i32) -> i32\n"
            "      %f = arith.bitcast %p : i32 to f32\n"
            "      memref.store %f, %out[%t] : memref<64xf32>")
    out = np.zeros(64, np.float32)
    _run(LDS_KERNEL.format(body=body).replace("      %f = arith.constant 1.0 : f32\n", ""), [out])
    np.testing.assert_array_equal(out.view(np.uint32), 0x00FF1100 | np.arange(64, dtype=np.uint32))
