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
