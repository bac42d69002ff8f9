// Inputs that used to kill tile-opt with SIGABRT (an assertion in the bindings'
// MLIR) are located errors, as from stock mlir-opt-22; see also
// test/python/test_crash_regressions.py.
// RUN: tile-opt %s --split-input-file --verify-diagnostics
// RUN: tile-compile %s --target amdgpu:gfx942 --split-input-file --verify-diagnostics

// A generic op named like a loaded dialect has no dialect: refused, not created.
// expected-error@below {{'arith' op created with unregistered dialect}}
"arith"() : () -> ()

// -----

// The same with a trailing dot, for the tile dialect (loaded through IRDL).
// expected-error@below {{'tile.' op created with unregistered dialect}}
"tile."() : () -> ()

// -----

// Escapes in the name are decoded before the check: this is "gpu".
func.func @f() {
  // expected-error@below {{'gpu' op created with unregistered dialect}}
  "\67pu"() : () -> ()
  return
}

// -----

// A dense array of index elements fails an assertion in MLIR's parser.
// expected-error@below {{a dense array of 'index' elements is not supported; use i64}}
func.func @g() attributes {sizes = array<index: 1, 2>} {
  return
}

// -----

// llvm.atomicrmw of a type the LLVM dialect does not know fails an assertion
// in its verifier (LLVMTypes.cpp, isScalableVectorType).
func.func @h(%p: !llvm.ptr<1>, %v: index) {
  // expected-error@below {{llvm.atomicrmw of 'index' is not supported: its value type must be an LLVM type written out (an integer, float, vector or !llvm.ptr)}}
  %0 = llvm.atomicrmw add %p, %v acq_rel : !llvm.ptr<1>, index
  return
}

// -----

// Signed and unsigned integers and the small floats have no LLVM type either.
llvm.func @signed(%p: !llvm.ptr<1>, %v: f32) {
  // expected-error@below {{llvm.atomicrmw of 'si32' is not supported}}
  %0 = llvm.atomicrmw fadd %p, %v acq_rel : !llvm.ptr<1>, si32
  llvm.return
}

// -----

llvm.func @small_float(%p: !llvm.ptr<1>, %v: f32) {
  // expected-error@below {{llvm.atomicrmw of 'f8E5M2' is not supported}}
  %0 = llvm.atomicrmw fadd %p, %v acq_rel : !llvm.ptr<1>, f8E5M2
  llvm.return
}

// -----

// The generic form too, with its signature on a later line, escaped, through an alias.
!t = tensor<2xf32>
func.func @k(%p: !llvm.ptr<1>, %v: !t) {
  %0 = "llvm.atomic\72mw"(%p, %v) <{bin_op = 1 : i64, ordering = 6 : i64}>
    // expected-error@below {{llvm.atomicrmw of '!t' is not supported}}
    : (!llvm.ptr<1>, !t) -> !t
  return
}
