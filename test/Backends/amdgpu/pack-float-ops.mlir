// amdgpu-pack-float-ops: a float op applied to every element of a vector
// (element i reads element i of some vectors and the same values for every
// i, with the same flags) becomes one vector op, its shared operands
// splatted; a chain of such ops packs op by op; aligned pairs of a partly
// covered vector become vector<2> ops; anything else is left as it is.
// A subtraction of a shared operand becomes the addition of its negation
// (CDNA has packed adds, no packed subtract); bf16 -> f32 widenings pack as
// well; a multiply that is splatted loses `contract` (it is computed once,
// not per element), `fast` spelled out without it.
//
// RUN: tile-opt %s -p 'builtin.module(amdgpu-pack-float-ops)' | filecheck %s

// The rescale and the scores' scale-then-subtract: whole vectors, a chain.
// CHECK-LABEL: llvm.func @rescale
// CHECK: %[[S:.+]] = llvm.shufflevector %{{.+}}, %{{.+}} [0, 0, 0, 0] : vector<1xf32>
// CHECK: %[[M:.+]] = llvm.fmul %arg0, %[[S]] {fastmathFlags = #llvm.fastmath<contract>} : vector<4xf32>
// CHECK: %[[N:.+]] = llvm.fneg %arg3 : f32
// CHECK: %[[NS:.+]] = llvm.shufflevector %{{.+}}, %{{.+}} [0, 0, 0, 0] : vector<1xf32>
// CHECK: %[[D:.+]] = llvm.fadd %[[M]], %[[NS]] {fastmathFlags = #llvm.fastmath<contract>} : vector<4xf32>
// CHECK: %[[F:.+]] = llvm.intr.fma(%[[D]], %arg1, %{{.+}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NOT: llvm.fmul %{{.+}} : f32
// CHECK-NOT: llvm.fsub %{{.+}} : f32
// CHECK-NOT: llvm.intr.fma(%{{.+}}) : (f32, f32, f32) -> f32
// CHECK: llvm.return
llvm.func @rescale(%acc: vector<4xf32>, %w: vector<4xf32>, %s: f32, %m: f32, %b: f32) -> vector<4xf32> {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %c2 = llvm.mlir.constant(2 : i64) : i64
  %c3 = llvm.mlir.constant(3 : i64) : i64
  %p = llvm.mlir.poison : vector<4xf32>
  %e0 = llvm.extractelement %acc[%c0 : i64] : vector<4xf32>
  %e1 = llvm.extractelement %acc[%c1 : i64] : vector<4xf32>
  %e2 = llvm.extractelement %acc[%c2 : i64] : vector<4xf32>
  %e3 = llvm.extractelement %acc[%c3 : i64] : vector<4xf32>
  %w0 = llvm.extractelement %w[%c0 : i64] : vector<4xf32>
  %w1 = llvm.extractelement %w[%c1 : i64] : vector<4xf32>
  %w2 = llvm.extractelement %w[%c2 : i64] : vector<4xf32>
  %w3 = llvm.extractelement %w[%c3 : i64] : vector<4xf32>
  %m0 = llvm.fmul %e0, %s {fastmathFlags = #llvm.fastmath<contract>} : f32
  %m1 = llvm.fmul %e1, %s {fastmathFlags = #llvm.fastmath<contract>} : f32
  %m2 = llvm.fmul %e2, %s {fastmathFlags = #llvm.fastmath<contract>} : f32
  %m3 = llvm.fmul %e3, %s {fastmathFlags = #llvm.fastmath<contract>} : f32
  %d0 = llvm.fsub %m0, %m {fastmathFlags = #llvm.fastmath<contract>} : f32
  %d1 = llvm.fsub %m1, %m {fastmathFlags = #llvm.fastmath<contract>} : f32
  %d2 = llvm.fsub %m2, %m {fastmathFlags = #llvm.fastmath<contract>} : f32
  %d3 = llvm.fsub %m3, %m {fastmathFlags = #llvm.fastmath<contract>} : f32
  %f0 = llvm.intr.fma(%d0, %w0, %b) : (f32, f32, f32) -> f32
  %f1 = llvm.intr.fma(%d1, %w1, %b) : (f32, f32, f32) -> f32
  %f2 = llvm.intr.fma(%d2, %w2, %b) : (f32, f32, f32) -> f32
  %f3 = llvm.intr.fma(%d3, %w3, %b) : (f32, f32, f32) -> f32
  %r0 = llvm.insertelement %f0, %p[%c0 : i64] : vector<4xf32>
  %r1 = llvm.insertelement %f1, %r0[%c1 : i64] : vector<4xf32>
  %r2 = llvm.insertelement %f2, %r1[%c2 : i64] : vector<4xf32>
  %r3 = llvm.insertelement %f3, %r2[%c3 : i64] : vector<4xf32>
  llvm.return %r3 : vector<4xf32>
}

// Elements 0-2 only: the aligned pair (0, 1) packs, element 2 stays scalar;
// ops whose other operand differs per element, whose flags differ, or
// that read two positions, and f64, integer and divide ops stay scalar.
// CHECK-LABEL: llvm.func @partial
// CHECK: %[[A:.+]] = llvm.shufflevector %arg0, %arg0 [0, 1] : vector<4xf32>
// CHECK: llvm.fadd %[[A]], %{{.+}} : vector<2xf32>
// CHECK: llvm.fadd %{{.+}}, %arg3 : f32
// CHECK: llvm.fmul %{{.+}}, %arg3 : f32
// CHECK: llvm.fmul %{{.+}}, %arg4 : f32
// CHECK: llvm.fmul %{{.+}}, %arg3 {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK: llvm.fmul %{{.+}}, %arg3 {fastmathFlags = #llvm.fastmath<afn>} : f32
// CHECK: llvm.fmul %{{.+}}, %{{.+}} : f32
// CHECK: llvm.fmul %{{.+}}, %{{.+}} : f32
// CHECK: llvm.fdiv %{{.+}}, %arg3 : f32
// CHECK: llvm.fdiv %{{.+}}, %arg3 : f32
// CHECK: llvm.fmul %{{.+}}, %arg5 : f64
// CHECK: llvm.fmul %{{.+}}, %arg5 : f64
// CHECK: llvm.mul %{{.+}}, %arg6 : i32
// CHECK: llvm.mul %{{.+}}, %arg6 : i32
// CHECK-NOT: vector<2xf64>
// CHECK-NOT: vector<2xi32>
// CHECK: llvm.return
llvm.func @partial(%acc: vector<4xf32>, %v: vector<2xf64>, %iv: vector<2xi32>, %s: f32, %t: f32, %x: f64, %k: i32) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %c2 = llvm.mlir.constant(2 : i64) : i64
  %e0 = llvm.extractelement %acc[%c0 : i64] : vector<4xf32>
  %e1 = llvm.extractelement %acc[%c1 : i64] : vector<4xf32>
  %e2 = llvm.extractelement %acc[%c2 : i64] : vector<4xf32>
  %a0 = llvm.fadd %e0, %s : f32
  %a1 = llvm.fadd %e1, %s : f32
  %a2 = llvm.fadd %e2, %s : f32
  %n0 = llvm.fmul %e0, %s : f32
  %n1 = llvm.fmul %e1, %t : f32
  %g0 = llvm.fmul %e0, %s {fastmathFlags = #llvm.fastmath<contract>} : f32
  %g1 = llvm.fmul %e1, %s {fastmathFlags = #llvm.fastmath<afn>} : f32
  %x0 = llvm.fmul %e0, %e1 : f32
  %x1 = llvm.fmul %e1, %e0 : f32
  %q0 = llvm.fdiv %e0, %s : f32
  %q1 = llvm.fdiv %e1, %s : f32
  %v0 = llvm.extractelement %v[%c0 : i64] : vector<2xf64>
  %v1 = llvm.extractelement %v[%c1 : i64] : vector<2xf64>
  %y0 = llvm.fmul %v0, %x : f64
  %y1 = llvm.fmul %v1, %x : f64
  %i0 = llvm.extractelement %iv[%c0 : i64] : vector<2xi32>
  %i1 = llvm.extractelement %iv[%c1 : i64] : vector<2xi32>
  %j0 = llvm.mul %i0, %k : i32
  %j1 = llvm.mul %i1, %k : i32
  llvm.return
}

// Widened bf16 elements pack, and so does the product of two of them; a
// vector subtraction of vectors stays one; the splatted mean's multiply keeps
// its other flags and loses `contract`; `fast` is spelled out without it.
// CHECK-LABEL: llvm.func @widened
// CHECK: %[[MEAN:.+]] = llvm.fmul %arg1, %arg2 {fastmathFlags = #llvm.fastmath<afn>} : f32
// CHECK: %[[SCALE:.+]] = llvm.fmul %arg1, %arg2 {fastmathFlags = #llvm.fastmath<nnan, ninf, nsz, arcp, afn, reassoc>} : f32
// CHECK: %[[X:.+]] = llvm.fpext %arg0 : vector<2xbf16> to vector<2xf32>
// CHECK: %[[NEG:.+]] = llvm.fneg %[[MEAN]] : f32
// CHECK: %[[C:.+]] = llvm.fadd %[[X]], %{{.+}} {fastmathFlags = #llvm.fastmath<contract>} : vector<2xf32>
// CHECK: %[[SQ:.+]] = llvm.fmul %[[C]], %[[C]] {fastmathFlags = #llvm.fastmath<contract>} : vector<2xf32>
// CHECK: %[[R:.+]] = llvm.fsub %[[X]], %[[SQ]] : vector<2xf32>
// CHECK: llvm.fmul %[[R]], %{{.+}} : vector<2xf32>
// CHECK-NOT: llvm.fpext %{{.+}} : bf16 to f32
// CHECK: llvm.return
llvm.func @widened(%row: vector<2xbf16>, %sum: f32, %inv_n: f32) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %mean = llvm.fmul %sum, %inv_n {fastmathFlags = #llvm.fastmath<contract, afn>} : f32
  %scale = llvm.fmul %sum, %inv_n {fastmathFlags = #llvm.fastmath<fast>} : f32
  %b0 = llvm.extractelement %row[%c0 : i64] : vector<2xbf16>
  %b1 = llvm.extractelement %row[%c1 : i64] : vector<2xbf16>
  %x0 = llvm.fpext %b0 : bf16 to f32
  %x1 = llvm.fpext %b1 : bf16 to f32
  %d0 = llvm.fsub %x0, %mean {fastmathFlags = #llvm.fastmath<contract>} : f32
  %d1 = llvm.fsub %x1, %mean {fastmathFlags = #llvm.fastmath<contract>} : f32
  %q0 = llvm.fmul %d0, %d0 {fastmathFlags = #llvm.fastmath<contract>} : f32
  %q1 = llvm.fmul %d1, %d1 {fastmathFlags = #llvm.fastmath<contract>} : f32
  %r0 = llvm.fsub %x0, %q0 : f32
  %r1 = llvm.fsub %x1, %q1 : f32
  %s0 = llvm.fmul %r0, %scale : f32
  %s1 = llvm.fmul %r1, %scale : f32
  llvm.return
}
