// What every backend refuses in hand-written GPU-level IR (passes/check_gpu_input.py),
// each at the op concerned: names that are not identifiers (pasted into
// `.amdhsa_kernel NAME`, PTX and C++), a gpu.module `targets` attribute (its
// `link` list names files serialization would read), non-positive sizes.
//
// RUN: tile-compile %s --target amdgpu:gfx942 --emit isa --split-input-file --verify-diagnostics
// RUN: tile-compile %s --target nvidia:sm_90a --emit ptx --split-input-file --verify-diagnostics
// RUN: tile-compile %s --target metax:xcore1000 --emit maca --split-input-file --verify-diagnostics

// A space in a kernel name: llc would write `.amdhsa_kernel my kernel`, NVPTX would abort.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@"my kernel" blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{gpu.func @"my kernel": the name is not an identifier}}
    gpu.func @"my kernel"(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// A newline in a gpu.module name, which names the launch too.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @"m\0A.globl injected"::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  // expected-error@below {{the name is not an identifier ([A-Za-z][A-Za-z0-9_]* or _[A-Za-z0-9_]+), so it cannot be written into assembly, PTX or C++; rename it (e.g. @tm_m_0a_2eglobl_20injected)}}
  gpu.module @"m\0A.globl injected" {
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// A global whose name would be a PTX `.shared` variable or an assembly symbol.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{memref.global @"lds; injected": the name is not an identifier}}
    memref.global "private" @"lds; injected" : memref<4xf32, #gpu.address_space<workgroup>>
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// A target attribute's link list would make serialization read /etc/passwd.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  // expected-error@below {{gpu.module @kernels carries a target attribute ([#nvvm.target<link = ["/etc/passwd"]>]); the target comes from --target or --target-desc}}
  gpu.module @kernels [#nvvm.target<link = ["/etc/passwd"]>] {
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// The same for ROCDL's target attribute.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  // expected-error@below {{gpu.module @kernels carries a target attribute}}
  gpu.module @kernels [#rocdl.target<chip = "gfx942", link = ["/etc/passwd"]>] {
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// A negative block size tripped an APInt assertion (SIGABRT) in the AMDGPU lowering.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{gpu.func @k: known_block_size must be positive in every dimension, got [-64, 1, 1]}}
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: -64, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// Zero threads: MetaX printed `__launch_bounds__(0)`.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{gpu.func @k: known_block_size must be positive in every dimension, got [64, 0, 1]}}
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 64, 0, 1>} {
      gpu.return
    }
  }
}

// -----

// The grid size too.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{gpu.func @k: known_grid_size must be positive in every dimension, got [-1, 1, 1]}}
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: -1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// A section name with newlines: LLVM prints it as it is, so it would add
// assembler directives (a global, here) to the output.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@k blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{section ".data\0A.globl injected\0Ainjected:\0A.long 7\0A.section .data" is not a plain section name}}
    llvm.mlir.global external @g(1 : i32) {addr_space = 1 : i32, section = ".data\n.globl injected\ninjected:\n.long 7\n.section .data"} : i32
    gpu.func @k(%out: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %p = llvm.mlir.addressof @g : !llvm.ptr<1>
      %v = llvm.load %p : !llvm.ptr<1> -> i32
      %f = arith.sitofp %v : i32 to f32
      %c0 = arith.constant 0 : index
      memref.store %f, %out[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// A kernel named like a macro of the emitted C++ (the prelude's TM_CHECK):
// the preprocessor would rewrite the MetaX kernel's definition.
module attributes {gpu.container_module} {
  func.func @host(%out: memref<4xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @kernels::@TM_CHECK blocks in (%one, %one, %one) threads in (%one, %one, %one) args(%out : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    // expected-error@below {{gpu.func @TM_CHECK: a kernel or kernel module may not be named like a C++ keyword, a reserved name, a macro}}
    gpu.func @TM_CHECK(%out: memref<4xf32>) kernel {
      gpu.return
    }
  }
}
