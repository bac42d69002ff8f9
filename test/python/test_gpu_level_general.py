"""GPU-level kernels beyond GEMMs, written by hand: the MACA printer and the emulator.

`ROWS_KERNEL` is what the generic lowering emits for general tile programs, in
upstream dialects: a row softmax-like reduction with wave shuffles (xor for the
max, down + idx for the sum, up for a prefix scan), `scf.for` with iter_args,
`scf.if` with and without results, math functions, conversions and bitcasts,
a 3-D global memref, workgroup memory through `memref.view` and
`memref.subview`, 128-bit `vector.load`/`vector.store` and vector element ops,
a barrier and a scalar kernel argument. It runs

* through the MetaX printer to MACA C++, compiled with g++ against
  test/metax/maca_host.h (whose `__shfl_*_sync` follow CUDA's documented
  meaning, written independently of the printer) and run;
* in the SIMT emulator (xcore1000 and gfx942, waves of 64);

and both must match NumPy. The emulator's `gpu.shuffle` (modes, width, the
`valid` flag) is also checked lane by lane against its definition.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

ROWS = 4
WG = "#gpu.address_space<workgroup>"

ROWS_KERNEL = f"""module attributes {{gpu.container_module}} {{
  func.func @rows(%X: memref<{ROWS}x2x32xf32>, %Y: memref<{ROWS}x64xf32>, %S: memref<{ROWS}xf32>,
                  %W: memref<{ROWS}x64xi32>, %scale: f32) {{
    %c1 = arith.constant 1 : index
    %rows = arith.constant {ROWS} : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@rows_kernel blocks in (%rows, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%X : memref<{ROWS}x2x32xf32>, %Y : memref<{ROWS}x64xf32>, %S : memref<{ROWS}xf32>,
             %W : memref<{ROWS}x64xi32>, %scale : f32)
    return
  }}
  gpu.module @k {{
    gpu.func @rows_kernel(%X: memref<{ROWS}x2x32xf32>, %Y: memref<{ROWS}x64xf32>, %S: memref<{ROWS}xf32>,
                          %W: memref<{ROWS}x64xi32>, %scale: f32)
        workgroup(%raw: memref<256xi8, {WG}>) kernel attributes {{known_block_size = array<i32: 64, 1, 1>}} {{
      %r = gpu.block_id x
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c6 = arith.constant 6 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %width = arith.constant 64 : i32
      %zero_i = arith.constant 0 : i32
      %one_i = arith.constant 1 : i32
      %c32_i = arith.constant 32 : i32
      %zero = arith.constant 0.0 : f32
      %half = arith.constant 0.5 : f32
      %hundredth = arith.constant 0.01 : f32
      %hi = arith.divui %t, %c32 : index
      %lo = arith.remui %t, %c32 : index
      %x = memref.load %X[%r, %hi, %lo] : memref<{ROWS}x2x32xf32>
      %max = scf.for %i = %c0 to %c6 step %c1 iter_args(%m = %x) -> (f32) {{
        %ii = arith.index_cast %i : index to i32
        %off = arith.shli %one_i, %ii : i32
        %o, %ok = gpu.shuffle xor %m, %off, %width : f32
        %n = arith.maximumf %m, %o : f32
        scf.yield %n : f32
      }}
      %d = arith.subf %x, %max : f32
      %e0 = math.exp %d : f32
      %e = arith.mulf %e0, %scale : f32
      %partial = scf.for %i = %c0 to %c6 step %c1 iter_args(%acc = %e) -> (f32) {{
        %ii = arith.index_cast %i : index to i32
        %off = arith.shrui %c32_i, %ii : i32
        %o, %ok = gpu.shuffle down %acc, %off, %width : f32
        %add = arith.select %ok, %o, %zero : f32
        %n = arith.addf %acc, %add : f32
        scf.yield %n : f32
      }}
      %sum, %ok0 = gpu.shuffle idx %partial, %zero_i, %width : f32
      %p = arith.divf %e, %sum : f32
      %ti = arith.index_cast %t : index to i32
      %bit = arith.andi %ti, %one_i : i32
      %even = arith.cmpi eq, %bit, %zero_i : i32
      %y = scf.if %even -> (f32) {{
        %a = math.tanh %p : f32
        %b = math.sqrt %p : f32
        %c = math.fma %a, %b, %p : f32
        scf.yield %c : f32
      }} else {{
        %a = math.erf %p : f32
        %l = math.log %sum : f32
        %rs = math.rsqrt %sum : f32
        %lr = arith.mulf %l, %rs : f32
        %l2 = math.log2 %sum : f32
        %ex = math.exp2 %p : f32
        %ab = math.absf %d : f32
        %abh = arith.mulf %ab, %hundredth : f32
        %pw = math.powf %sum, %half : f32
        %s1 = arith.addf %a, %lr : f32
        %s2 = arith.addf %s1, %l2 : f32
        %s3 = arith.subf %s2, %ex : f32
        %s4 = arith.addf %s3, %abh : f32
        %s5 = arith.addf %s4, %pw : f32
        %s6 = arith.minnumf %s5, %sum : f32
        scf.yield %s6 : f32
      }}
      %buf = memref.view %raw[%c0][] : memref<256xi8, {WG}> to memref<64xf32, {WG}>
      memref.store %y, %buf[%t] : memref<64xf32, {WG}>
      gpu.barrier
      %first = arith.cmpi ult, %t, %c16 : index
      scf.if %first {{
        %at = arith.muli %t, %c4 : index
        %v = vector.load %buf[%at] : memref<64xf32, {WG}>, vector<4xf32>
        %b = vector.broadcast %scale : f32 to vector<4xf32>
        %vs = arith.mulf %v, %b : vector<4xf32>
        %v0 = vector.extract %vs[0] : f32 from vector<4xf32>
        %v3 = vector.insert %v0, %vs [3] : f32 into vector<4xf32>
        vector.store %v3, %Y[%r, %at] : memref<{ROWS}x64xf32>, vector<4xf32>
      }}
      %tf = arith.sitofp %ti : i32 to f32
      %s0 = arith.mulf %tf, %half : f32
      %scan = scf.for %i = %c0 to %c6 step %c1 iter_args(%acc = %s0) -> (f32) {{
        %ii = arith.index_cast %i : index to i32
        %off = arith.shli %one_i, %ii : i32
        %o, %ok = gpu.shuffle up %acc, %off, %width : f32
        %add = arith.select %ok, %o, %zero : f32
        %n = arith.addf %acc, %add : f32
        scf.yield %n : f32
      }}
      %bits = arith.bitcast %scan : f32 to i32
      %back = arith.bitcast %bits : i32 to f32
      %h = arith.truncf %back : f32 to f16
      %hf = arith.extf %h : f16 to f32
      %q = arith.fptosi %hf : f32 to i32
      memref.store %q, %W[%r, %t] : memref<{ROWS}x64xi32>
      %lane0 = arith.cmpi eq, %t, %c0 : index
      scf.if %lane0 {{
        %sub = memref.subview %buf[32] [32] [1] : memref<64xf32, {WG}> to memref<32xf32, strided<[1], offset: 32>, {WG}>
        %b32 = memref.load %sub[%c0] : memref<32xf32, strided<[1], offset: 32>, {WG}>
        %tot = arith.addf %sum, %b32 : f32
        memref.store %tot, %S[%r] : memref<{ROWS}xf32>
      }}
      gpu.return
    }}
  }}
}}
"""


def _inputs(seed: int) -> list:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, (ROWS, 2, 32)).astype(np.float32)
    return [x, np.full((ROWS, 64), np.nan, np.float32), np.full(ROWS, np.nan, np.float32),
            np.full((ROWS, 64), -1, np.int32), float(np.float32(rng.uniform(0.5, 2)))]


def _expected(args: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = args[0].reshape(ROWS, 64).astype(np.float64)
    scale = args[4]
    d = x - x.max(axis=1, keepdims=True)
    e = np.exp(d) * scale
    total = e.sum(axis=1, keepdims=True)
    p = e / total
    erf = np.vectorize(math.erf)
    odd = (erf(p) + np.log(total) / np.sqrt(total) + np.log2(total) - np.exp2(p) + np.abs(d) * 0.01
           + np.sqrt(total))
    y = np.where(np.arange(64) % 2 == 0, np.tanh(p) * np.sqrt(p) + p, np.minimum(odd, total))
    out = y * scale
    out[:, 3::4] = out[:, 0::4]
    t = np.arange(64)
    scan = np.broadcast_to(np.trunc(t * (t + 1) / 4).astype(np.int32), (ROWS, 64))
    return out, total[:, 0] + y[:, 32], scan


def _check(args: list) -> None:
    out, sums, scan = _expected(args)
    # f32 arithmetic and math functions (a few ulp each) on values of order 1..64
    np.testing.assert_allclose(args[1], out, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(args[2], sums, rtol=2e-5)
    np.testing.assert_array_equal(args[3], scan)


@pytest.mark.parametrize("chip", ["xcore1000", "gfx942"])
def test_rows_kernel_in_the_emulator(chip):
    from tilemlir.runtime import run

    args = _inputs(1)
    family = "metax" if chip == "xcore1000" else "amdgpu"
    run(ROWS_KERNEL, "rows", args, engine="emulator", target=f"{family}:{chip}")
    _check(args)


def test_rows_kernel_as_maca_cpp(tmp_path):
    import maca_programs

    import tilemlir

    source = tilemlir.compile(ROWS_KERNEL, target="metax:xcore1000", emit="maca").artifact
    for call in ("__shfl_xor_sync(TM_WAVE_MASK,", "__shfl_down_sync(TM_WAVE_MASK,", "__shfl_sync(TM_WAVE_MASK,",
                 "__shfl_up_sync(TM_WAVE_MASK,", "tm_shuffle_valid(2,", "__syncthreads();", "tm_vload<tm_f32x4>("):
        assert call in source, call
    binary = maca_programs.build({"rows": source}, tmp_path, ("-O0",))
    args = _inputs(2)
    maca_programs.run(binary, "rows", args, tmp_path)
    _check(args)


def test_a_wrong_shuffle_is_caught():
    """The checks can fail: a sum that misses the shuffled partner (down by 2^i
    from 16 instead of 32) is not the row's sum."""
    from tilemlir.runtime import run

    broken = ROWS_KERNEL.replace("%c32_i = arith.constant 32 : i32", "%c32_i = arith.constant 16 : i32")
    assert broken != ROWS_KERNEL
    args = _inputs(3)
    run(broken, "rows", args, engine="emulator", target="metax:xcore1000")
    with pytest.raises(AssertionError):
        _check(args)


# -- gpu.shuffle in the emulator, lane by lane ------------------------------------------------

def _shuffle_kernel(mode: str, offset: str, width: int, threads: int = 64, guard: str = "") -> str:
    """out[t] = shuffle(mode, float(t), offset, width); valid[t] as i32. `offset`
    is an i32 expression of %ti (the lane); `guard` wraps the shuffle in scf.if."""
    body = f"""%o, %ok = gpu.shuffle {mode} %tf, %off, %w : f32
        %okw = arith.extui %ok : i1 to i32
        memref.store %o, %out[%t] : memref<{threads}xf32>
        memref.store %okw, %valid[%t] : memref<{threads}xi32>"""
    if guard:
        body = f"""%g = {guard}
        scf.if %g {{
          {body}
        }}"""
    return f"""module attributes {{gpu.container_module}} {{
  func.func @shuffle(%out: memref<{threads}xf32>, %valid: memref<{threads}xi32>) {{
    %c1 = arith.constant 1 : index
    %n = arith.constant {threads} : index
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1)
        args(%out : memref<{threads}xf32>, %valid : memref<{threads}xi32>)
    return
  }}
  gpu.module @m {{
    gpu.func @k(%out: memref<{threads}xf32>, %valid: memref<{threads}xi32>) kernel {{
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %tf = arith.sitofp %ti : i32 to f32
      %w = arith.constant {width} : i32
      %off = {offset}
      {body}
      gpu.return
    }}
  }}
}}
"""


def _expected_shuffle(mode: str, offsets: np.ndarray, width: int, threads: int = 64):
    """Lane t of each wave of 64 reads, inside its segment of `width` lanes from
    s = t - t % width: xor s + ((t - s) ^ o), idx s + o, down t + o, up t - o;
    valid when that lane is in [s, s + width), else the lane's own value."""
    t = np.arange(threads)
    start = t - t % width
    source = {"xor": start + ((t - start) ^ offsets), "idx": start + offsets, "down": t + offsets,
              "up": t - offsets}[mode]
    valid = (source >= start) & (source < start + width)
    return np.where(valid, source, t).astype(np.float32), valid.astype(np.int32)


@pytest.mark.parametrize(("mode", "offset", "offsets"), [
    ("xor", "arith.constant 5 : i32", np.full(64, 5)),
    ("idx", "arith.constant 3 : i32", np.full(64, 3)),
    # idx past the segment: invalid in every lane
    ("idx", "arith.constant 17 : i32", np.full(64, 17)),
    ("down", "arith.constant 6 : i32", np.full(64, 6)),
    ("up", "arith.constant 6 : i32", np.full(64, 6)),
    # per-lane offsets: lane t reads lane t // 16 of its segment
    ("idx", "arith.divui %ti, %w : i32", np.arange(64) // 16),
])
def test_shuffle_modes_width_and_valid(mode, offset, offsets):
    from tilemlir.runtime import run

    text = _shuffle_kernel(mode, offset, 16)
    out, valid = np.full(64, np.nan, np.float32), np.full(64, -1, np.int32)
    run(text, "shuffle", [out, valid], engine="emulator", target="amdgpu:gfx942")
    want_out, want_valid = _expected_shuffle(mode, offsets, 16)
    np.testing.assert_array_equal(valid, want_valid)
    np.testing.assert_array_equal(out, want_out)


def test_shuffle_width_must_be_a_power_of_two_up_to_the_wave():
    from tilemlir.diagnostics import UserError
    from tilemlir.runtime import run

    text = _shuffle_kernel("xor", "arith.constant 1 : i32", 48)
    with pytest.raises(UserError, match=r"emulator: gpu.shuffle width \[48\]: must be one power of two"):
        run(text, "shuffle", [np.zeros(64, np.float32), np.zeros(64, np.int32)], engine="emulator",
            target="amdgpu:gfx942")


def test_shuffle_reading_an_inactive_lane_is_reported():
    from tilemlir.runtime import run
    from tilemlir.runtime.emulator import SanitizerError

    # Only even lanes shuffle, and xor 1 reads the odd ones.
    text = _shuffle_kernel("xor", "arith.constant 1 : i32", 64,
                           guard="arith.cmpi eq, %tib, %zi : i32")
    text = text.replace("%off = arith.constant 1 : i32", "%off = arith.constant 1 : i32\n"
                        "      %zi = arith.constant 0 : i32\n      %tib = arith.andi %ti, %off : i32")
    with pytest.raises(SanitizerError, match="reads lane 1, which is inactive"):
        run(text, "shuffle", [np.zeros(64, np.float32), np.zeros(64, np.int32)], engine="emulator",
            target="amdgpu:gfx942")


I1_KERNEL = """module attributes {gpu.container_module} {
  func.func @bools(%out: memref<64x4xi32>) {
    %c1 = arith.constant 1 : index
    %n = arith.constant 64 : index
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%out : memref<64x4xi32>)
    return
  }
  gpu.module @m {
    gpu.func @k(%out: memref<64x4xi32>) kernel {
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %one = arith.constant 1 : i32
      %two = arith.constant 2 : i32
      %zero = arith.constant 0 : i32
      %a = arith.cmpi ne, %ti, %zero : i32
      %b2 = arith.andi %ti, %one : i32
      %b = arith.cmpi ne, %b2, %zero : i32
      %sgt = arith.cmpi sgt, %a, %b : i1
      %sle = arith.cmpi sle, %a, %b : i1
      %maxs = arith.maxsi %a, %b : i1
      %mins = arith.minsi %a, %b : i1
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %r0 = arith.extui %sgt : i1 to i32
      %r1 = arith.extui %sle : i1 to i32
      %r2 = arith.extui %maxs : i1 to i32
      %r3 = arith.extui %mins : i1 to i32
      memref.store %r0, %out[%t, %c0] : memref<64x4xi32>
      memref.store %r1, %out[%t, %c1] : memref<64x4xi32>
      memref.store %r2, %out[%t, %c2] : memref<64x4xi32>
      memref.store %r3, %out[%t, %c3] : memref<64x4xi32>
      gpu.return
    }
  }
}
"""


def test_i1_is_minus_one_signed_in_the_emulator():
    """As LLVM's i1 (and the reference engine): signed, true is -1, so
    true < false, and the signed max of two bools is their and."""
    from tilemlir.runtime import run

    out = np.zeros((64, 4), np.int32)
    run(I1_KERNEL, "bools", [out], engine="emulator", target="amdgpu:gfx942")
    a, b = np.arange(64) != 0, np.arange(64) % 2 == 1
    signed_a, signed_b = -a.astype(int), -b.astype(int)
    expected = np.stack([signed_a > signed_b, signed_a <= signed_b, a & b, a | b], 1)
    np.testing.assert_array_equal(out, expected.astype(np.int32))


def test_maca_refuses_a_shuffle_of_16_bit_values():
    from conftest import run_tool

    text = _shuffle_kernel("xor", "arith.constant 1 : i32", 64).replace(
        "%o, %ok = gpu.shuffle xor %tf, %off, %w : f32",
        "%th = arith.truncf %tf : f32 to f16\n        %oh, %ok = gpu.shuffle xor %th, %off, %w : f16\n"
        "        %o = arith.extf %oh : f16 to f32")
    result = run_tool("tile-compile", "-", "--target", "metax:xcore1000", stdin=text)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "error: MACA emitter: gpu.shuffle of f16: the wave shuffles move 32-bit values" in result.stderr
