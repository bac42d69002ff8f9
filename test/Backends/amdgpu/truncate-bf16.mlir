// amdgpu-truncate-bf16: f32 -> bf16 rounded with integer arithmetic where the
// chip has no conversion instruction (gfx942), scalars and vectors alike: a
// NaN is replaced by the canonical quiet NaN first, then the rounding bias
// (0x7fff plus the kept part's lowest bit) is added and the high half kept.
// gfx950 converts in hardware (its descriptor's amdgpu.bf16_conversions):
// nothing changes there. Other fptruncs are left alone. An exponential (+0
// and up, or a quiet NaN), also through selects with non-negative constants
// and block arguments every branch passes such values to, takes its NaN
// choice as one unsigned minimum with the canonical NaN; -0, or a value of
// unknown sign on any path, keeps the test and the choice.
//
// RUN: tile-opt %s -p 'builtin.module(amdgpu-truncate-bf16{target=amdgpu:gfx942})' | filecheck %s --check-prefix=SOFT
// RUN: tile-opt %s -p 'builtin.module(amdgpu-truncate-bf16{target=amdgpu:gfx950})' | filecheck %s --check-prefix=HARD
//
// Another family's target, or an unknown chip, is refused with the reason.
// RUN: not tile-opt %s -p 'builtin.module(amdgpu-truncate-bf16{target=nvidia:sm_90a})' 2>&1 | filecheck %s --check-prefix=FAMILY
// FAMILY: error: amdgpu-truncate-bf16: nvidia:sm_90a is not an amdgpu chip
// RUN: not tile-opt %s -p 'builtin.module(amdgpu-truncate-bf16{target=amdgpu:gfx9999})' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: amdgpu-truncate-bf16: unknown target 'amdgpu:gfx9999'

// SOFT-LABEL: llvm.func @scalar
// SOFT: %[[NAN:.+]] = llvm.fcmp "uno" %arg0, %arg0 : f32
// SOFT: %[[QUIET:.+]] = llvm.bitcast %{{.+}} : i32 to f32
// SOFT: %[[X:.+]] = llvm.select %[[NAN]], %[[QUIET]], %arg0 : i1, f32
// SOFT: %[[BITS:.+]] = llvm.bitcast %[[X]] : f32 to i32
// SOFT: %[[LSB:.+]] = llvm.and %{{.+}}, %{{.+}} : i32
// SOFT: %[[BIASED:.+]] = llvm.add %[[BITS]], %{{.+}} : i32
// SOFT: %[[SUM:.+]] = llvm.add %[[BIASED]], %[[LSB]] : i32
// SOFT: %[[HIGH:.+]] = llvm.lshr %[[SUM]], %{{.+}} : i32
// SOFT: %[[HALF:.+]] = llvm.trunc %[[HIGH]] : i32 to i16
// SOFT: %[[Y:.+]] = llvm.bitcast %[[HALF]] : i16 to bf16
// SOFT: llvm.return %[[Y]] : bf16
// HARD-LABEL: llvm.func @scalar
// HARD: llvm.fptrunc %arg0 : f32 to bf16
llvm.func @scalar(%x: f32) -> bf16 {
  %y = llvm.fptrunc %x : f32 to bf16
  llvm.return %y : bf16
}

// SOFT-LABEL: llvm.func @vector
// SOFT: llvm.mlir.constant(dense<2143289344> : vector<4xi32>) : vector<4xi32>
// SOFT: llvm.select %{{.+}}, %{{.+}}, %arg0 : vector<4xi1>, vector<4xf32>
// SOFT: llvm.mlir.constant(dense<32767> : vector<4xi32>) : vector<4xi32>
// SOFT: llvm.bitcast %{{.+}} : vector<4xi16> to vector<4xbf16>
// SOFT-NOT: llvm.fptrunc %arg0
// HARD-LABEL: llvm.func @vector
// HARD: llvm.fptrunc %arg0 : vector<4xf32> to vector<4xbf16>
llvm.func @vector(%x: vector<4xf32>) -> vector<4xbf16> {
  %y = llvm.fptrunc %x : vector<4xf32> to vector<4xbf16>
  llvm.return %y : vector<4xbf16>
}

// SOFT-LABEL: llvm.func @others
// SOFT: llvm.fptrunc %arg0 : f32 to f16
// SOFT: llvm.fptrunc %arg1 : f64 to bf16
llvm.func @others(%x: f32, %z: f64) -> f16 {
  %h = llvm.fptrunc %x : f32 to f16
  %b = llvm.fptrunc %z : f64 to bf16
  llvm.return %h : f16
}

// SOFT-LABEL: llvm.func @exponentials
// SOFT: %[[E:.+]] = rocdl.exp2
// SOFT: %[[BITS:.+]] = llvm.bitcast %[[E]] : f32 to i32
// SOFT: llvm.intr.umin(%[[BITS]], %{{.+}}) : (i32, i32) -> i32
// SOFT: %[[MASKED:.+]] = llvm.select %arg0, %[[E]], %{{.+}} : i1, f32
// SOFT: %[[MBITS:.+]] = llvm.bitcast %[[MASKED]] : f32 to i32
// SOFT: llvm.intr.umin(%[[MBITS]], %{{.+}}) : (i32, i32) -> i32
// SOFT: ^bb{{[0-9]+}}(%[[JOINED:.+]]: f32):
// SOFT: %[[JBITS:.+]] = llvm.bitcast %[[JOINED]] : f32 to i32
// SOFT: llvm.intr.umin(%[[JBITS]], %{{.+}}) : (i32, i32) -> i32
// SOFT-NOT: llvm.fcmp
// SOFT: llvm.return
llvm.func @exponentials(%c: i1, %x: f32) -> bf16 {
  %zero = llvm.mlir.constant(0.0 : f32) : f32
  %e = rocdl.exp2 %x f32 -> f32
  %a = llvm.fptrunc %e : f32 to bf16
  %m = llvm.select %c, %e, %zero : i1, f32
  %b = llvm.fptrunc %m : f32 to bf16
  llvm.cond_br %c, ^join(%m : f32), ^other
^other:
  llvm.br ^join(%zero : f32)
^join(%j: f32):
  %d = llvm.fptrunc %j : f32 to bf16
  llvm.return %d : bf16
}

// SOFT-LABEL: llvm.func @not_exponentials
// SOFT: llvm.select %arg0, %{{.+}}, %{{.+}} : i1, f32
// SOFT: llvm.fcmp "uno"
// SOFT: ^bb{{[0-9]+}}(%{{.+}}: f32):
// SOFT: llvm.fcmp "uno"
// SOFT-NOT: llvm.intr.umin
// SOFT: llvm.return
llvm.func @not_exponentials(%c: i1, %x: f32) -> bf16 {
  %negative_zero = llvm.mlir.constant(-0.0 : f32) : f32
  %e = rocdl.exp2 %x f32 -> f32
  %m = llvm.select %c, %e, %negative_zero : i1, f32
  %b = llvm.fptrunc %m : f32 to bf16
  llvm.cond_br %c, ^join(%e : f32), ^other
^other:
  llvm.br ^join(%x : f32)
^join(%j: f32):
  %d = llvm.fptrunc %j : f32 to bf16
  llvm.return %d : bf16
}

// A loop's argument is an exponential where every branch to it passes one;
// one branch passing another value is enough to keep the test.
// SOFT-LABEL: llvm.func @loops
// SOFT: ^bb1(%[[P:.+]]: f32):
// SOFT: %[[PBITS:.+]] = llvm.bitcast %[[P]] : f32 to i32
// SOFT: llvm.intr.umin(%[[PBITS]], %{{.+}}) : (i32, i32) -> i32
// SOFT: ^bb2(%[[Q:.+]]: f32):
// SOFT: llvm.fcmp "uno" %[[Q]], %[[Q]] : f32
// SOFT: llvm.return
llvm.func @loops(%c: i1, %x: f32) -> bf16 {
  %e = rocdl.exp2 %x f32 -> f32
  llvm.br ^exp_loop(%e : f32)
^exp_loop(%p: f32):
  %t = llvm.fptrunc %p : f32 to bf16
  %n = rocdl.exp2 %p f32 -> f32
  llvm.cond_br %c, ^exp_loop(%n : f32), ^any_loop(%e : f32)
^any_loop(%q: f32):
  %u = llvm.fptrunc %q : f32 to bf16
  llvm.cond_br %c, ^any_loop(%x : f32), ^exit
^exit:
  llvm.return %t : bf16
}

// A producer with the nsz (or fast) flag may give -0 for +0: the test stays.
// SOFT-LABEL: llvm.func @no_signed_zeros
// SOFT: llvm.fcmp "uno"
// SOFT-NOT: llvm.intr.umin
// SOFT: llvm.return
llvm.func @no_signed_zeros(%c: i1, %x: f32) -> bf16 {
  %zero = llvm.mlir.constant(0.0 : f32) : f32
  %e = rocdl.exp2 %x f32 -> f32
  %m = llvm.select %c, %e, %zero {fastmathFlags = #llvm.fastmath<nsz>} : i1, f32
  %b = llvm.fptrunc %m : f32 to bf16
  llvm.return %b : bf16
}
