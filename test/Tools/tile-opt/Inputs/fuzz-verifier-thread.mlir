// Kernels that need more than the chip has fail at compile time, with the
// numbers, at the kernel's location (DESIGN §4: never a run-time surprise).
//
// RUN: tile-compile %s --split-input-file --verify-diagnostics

// 96 KiB of LDS: gfx942 has 64 KiB per workgroup.
module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"} {
  gpu.module @kernels {
    // expected-error@below {{kernel 'lds_hog' needs 98304 bytes of LDS, gfx942 allows 65536}}
    gpu.func @lds_hog(%out: memref<64xi8>)
        workgroup(%lds: memref<98304xi8, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %lds[%c0] : memref<98304xi8, #gpu.address_space<workgroup>>
      memref.store %v, %out[%c0] : memref<64xi8>
      gpu.return
    }
  }
}

// -----

// Two attributions add up: 2 x 128 KiB of f32 on gfx950 (160 KiB).
module attributes {gpu.container_module, tile.target = "amdgpu:gfx950"} {
  gpu.module @kernels {
    // expected-error@below {{kernel 'two_tiles' needs 262144 bytes of LDS, gfx950 allows 163840}}
    gpu.func @two_tiles(%out: memref<64xf32>)
        workgroup(%a: memref<128x256xf32, #gpu.address_space<workgroup>>,
                  %b: memref<256x128xf32, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %a[%c0, %c0] : memref<128x256xf32, #gpu.address_space<workgroup>>
      %y = memref.load %b[%c0, %c0] : memref<256x128xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %x, %y : f32
      memref.store %s, %out[%c0] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// A workgroup-space memref.global counts for the kernel that uses it.
module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"} {
  gpu.module @kernels {
    memref.global "private" @staging : memref<20000xf32, #gpu.address_space<workgroup>>
    // expected-error@below {{kernel 'uses_global' needs 80000 bytes of LDS, gfx942 allows 65536}}
    gpu.func @uses_global(%out: memref<64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %g = memref.get_global @staging : memref<20000xf32, #gpu.address_space<workgroup>>
      %v = memref.load %g[%c0] : memref<20000xf32, #gpu.address_space<workgroup>>
      memref.store %v, %out[%c0] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// More threads than a workgroup may have.
module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"} {
  gpu.module @kernels {
    }
    gpu.func @too_wide(%out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 256, 8, 1>} {
      gpu.return
    }
  }
}

// -----

// gfx950 reads OCP fp8 only: an FNUZ operand would be reinterpreted, so it is refused.
module attributes {gpu.container_module, tile.target = "amdgpu:gfx950"} {
  gpu.module @kernels {
    gpu.func @fnuz_on_gfx950(%a: vector<8xf8E4M3FNUZ>, %out: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      // expected-error@below {{gfx950 matrix instructions take f8E4M3FN, f8E5M2, not f8E4M3FNUZ}}
      %d = amdgpu.mfma 16x16x32 %a * %a + %zero blgp = none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
      vector.store %d, %out[%c0] : memref<4xf32>, vector<4xf32>
      gpu.return
    // expected-error@below {{kernel 'too_wide' needs 2048 threads per workgroup, gfx942 allows 1024}}
  }
}

// -----

// gfx90a has no fp8 matrix instructions at all.
module attributes {gpu.container_module, tile.target = "amdgpu:gfx90a"} {
  gpu.module @kernels {
    gpu.func @fp8_on_gfx90a(%a: vector<8xf8E4M3FNUZ>, %out: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      // expected-error@below {{gfx90a matrix instructions take no fp8 at all, not f8E4M3FNUZ}}
      %d = amdgpu.mfma 16x16x32 %a * %a + %zero blgp = none : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
      vector.store %d, %out[%c0] : memref<4xf32>, vector<4xf32>
      gpu.return
    }
  }
}

// -----

// Exactly the limit compiles (65536 bytes on gfxdense<1.0> : tensor<2xf32>942).
module attributes {gpu.container_module, tile.target = "amdgpu:gfx942"} {
  gpu.module @kernels {
    gpu.func @at_limit(%out: memref<64xi8>)
        workgroup(%lds: memref<65536xi8, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %lds[%c0] : memref<65536xi8, #gpu.address_space<workgroup>>
      memref.store %v, %out[%c0] : memref<64xi8>
      gpu.return
    }
  }
}
