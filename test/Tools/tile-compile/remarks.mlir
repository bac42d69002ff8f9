// Which remarks tile-compile prints (--remarks=SPEC, like clang's -Rpass=): by
// default what costs speed or precision, and a target's assumed facts in one
// remark (--remarks=all says each); `all`,
// `none`, or a regular expression searched in the pass name.
// --verify-diagnostics checks every remark, printed or not. (An error makes
// the remarks before it moot: remarks-before-error.mlir.)
// RUN: tile-compile %s --emit tile -o /dev/null 2>&1 | filecheck %s --check-prefix=DEFAULT
// RUN: tile-compile %s --emit tile -o /dev/null --remarks=all 2>&1 | filecheck %s --check-prefix=ALL
// RUN: tile-compile %s --emit tile -o /dev/null --remarks=none 2>&1 | filecheck %s --check-prefix=NONE --allow-empty
// RUN: tile-compile %s --emit tile -o /dev/null --remarks='^tile-t' 2>&1 | filecheck %s --check-prefix=REGEX
// The regex is searched in the pass name, not in the message.
// RUN: tile-compile %s --emit tile -o /dev/null --remarks=workgroups 2>&1 | filecheck %s --check-prefix=NONE --allow-empty
// RUN: tile-compile %s --emit tile --remarks=none --verify-diagnostics
// Why this must fail: '(' opens a group it never closes.
// RUN: not tile-compile %s --remarks='(' 2>&1 | filecheck %s --check-prefix=BAD
// BAD: tile-compile: error: --remarks: '(' is not a valid regular expression

// A whole-problem gemm on gfx942: two assumed facts, what tile-tiling chose
// and the row padding tile-infer-layout swapped for a swizzle at no cost
// (shown only when asked for), and the CUs it leaves idle (a cost).
// DEFAULT: remark: tile-tiling: 2 facts of amdgpu:gfx942 are not publicly known and are assumed at their least favourable stated values: memory.latency_clocks, memory.loaded_latency_clocks (--remarks=all says each and why
// DEFAULT-NOT: tile-tiling: block
// DEFAULT: remark: tile-tiling: 16 workgroups leave CUs of gfx942 idle
// DEFAULT-NOT: remark:
// ALL: remark: tile-tiling: 'memory.latency_clocks' is not publicly known for amdgpu:gfx942
// ALL: remark: tile-tiling: 'memory.loaded_latency_clocks' is not publicly known for amdgpu:gfx942
// ALL: remark: tile-tiling: block 64x64x128
// ALL: remark: tile-tiling: 16 workgroups leave CUs of gfx942 idle
// ALL: remark: tile-infer-layout: row padding of 4 elements dropped
// REGEX: remark: tile-tiling: 'memory.latency_clocks'
// REGEX: remark: tile-tiling: block 64x64x128
// REGEX: remark: tile-tiling: 16 workgroups
// NONE-NOT: remark:
module attributes {tile.target = "amdgpu:gfx942"} {
  func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf16>) {
    %zero = arith.constant 0.0 : f16
    "tile.fill"(%C, %zero) : (memref<256x256xf16>, f16) -> ()
    "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf16>) -> ()
    // expected-remark@-1 {{tile-tiling: block 64x64x128}}
    // expected-remark@-2 {{'memory.latency_clocks' is not publicly known for amdgpu:gfx942}}
    // expected-remark@-3 {{'memory.loaded_latency_clocks' is not publicly known for amdgpu:gfx942}}
    // expected-remark@-4 {{16 workgroups leave CUs of gfx942 idle}}
    // expected-remark@-5 {{row padding of 4 elements dropped from the 64x128xf16 tile.alloc_shared}}
    // expected-remark@-6 {{row padding of 4 elements dropped from the 128x64xf16 tile.alloc_shared}}
    return
  }
}
