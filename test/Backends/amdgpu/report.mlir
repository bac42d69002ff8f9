// --report on the GPU-level example: registers, LDS, occupancy from the
// descriptor, MFMAs in the main loop, access widths and stage times, in the
// shape docs/report.md describes (each line of it, in order).
//
// RUN: tile-compile %examples/gpu/mfma_fp8_gfx942.mlir --report | filecheck %s --check-prefix=GFX942
// RUN: sed 's/f8E4M3FNUZ/f8E4M3FN/g' %examples/gpu/mfma_fp8_gfx942.mlir | tile-compile - --target amdgpu:gfx950 --report | filecheck %s --check-prefix=GFX950
// With -o the artifact goes to the file and the report still to stdout.
// RUN: tile-compile %examples/gpu/mfma_fp8_gfx942.mlir --emit hsaco -o %t.hsaco --report | filecheck %s --check-prefix=LINK
// RUN: llvm-readelf --notes %t.hsaco | filecheck %s --check-prefix=NOTES

// The top level is the same for every family (docs/report.md).
// GFX942:      "schema_version": 1,
// GFX942-NEXT: "tool": "tilemlir {{[0-9.]+}}",
// GFX942-NEXT: "target": "amdgpu:gfx942",
// GFX942-NEXT: "family": "amdgpu",
// GFX942-NEXT: "kernels": [
// GFX942-NEXT:   {
// GFX942-NEXT:     "name": "mfma_16x16_fp8",
// GFX942-NEXT:     "threads": 64,
// GFX942-NEXT:     "registers": {{[0-9]+}},
// GFX942-NEXT:     "shared_bytes": 2048,
// GFX942-NEXT:     "scratch_bytes": 0,
// GFX942-NEXT:     "spills": 0,
// One wave of few registers: the 8-wave ceiling binds; LDS allows 65536 / 2048 = 32
// workgroups of one wave, 8 per SIMD. llc computes the same.
// GFX942-NEXT:     "occupancy": 8,
// Two MFMAs per K step of 64, both inside the loop.
// GFX942-NEXT:     "matrix_instructions": {
// GFX942-NEXT:       "v_mfma_f32_16x16x32_fp8_fp8": {
// GFX942-NEXT:         "main_loop": 2,
// GFX942-NEXT:         "total": 2
// GFX942-NEXT:       }
// GFX942-NEXT:     },
// GPU-level input: no tile.kernel was configured, the user wrote the kernel.
// GFX942-NEXT:     "workgroups": null,
// GFX942-NEXT:     "split_k": null,
// GFX942-NEXT:     "predicted_seconds": null,
// GFX942-NEXT:     "config_source": "user",
// GFX942-NEXT:     "amdgpu": {
// GFX942-NEXT:       "vgpr": {{[0-9]+}},
// GFX942-NEXT:       "agpr": {{[0-9]+}},
// GFX942-NEXT:       "sgpr": {{[0-9]+}},
// GFX942-NEXT:       "vgpr_spills": 0,
// GFX942-NEXT:       "sgpr_spills": 0,
// GFX942-NEXT:       "occupancy_limits": {
// GFX942-NEXT:         "waves": 8,
// GFX942-NEXT:         "vgpr": {{[0-9]+}},
// GFX942-NEXT:         "lds": 8
// GFX942-NEXT:       },
// GFX942-NEXT:       "occupancy_llc": 8,
// Their 2 x 16 clocks against llvm-mca's estimate of the whole iteration, in
// which the loads are waited for before the MFMAs (nothing is pipelined here).
// GFX942-NEXT:       "mfma_busy_ratio": 0.{{[0-9]+}},
// GFX942-NEXT:       "main_loop_cycles": {
// GFX942-NEXT:         "mfma": 32,
// GFX942-NEXT:         "llvm_mca": {{[0-9]+}}.{{[0-9]}}
// GFX942-NEXT:       },
// GFX942-NEXT:       "global_load_bits": 128,
// GFX942-NEXT:       "global_store_bits": 32,
// GFX942-NEXT:       "lds_read_bits": 64,
// GFX942-NEXT:       "lds_write_bits": 128,
// Hand-written GPU-level IR has no tile layouts to model bank conflicts from,
// and no pipelined loop for the schedule trial (backends/amdgpu/schedule.py).
// GFX942-NEXT:       "lds_bank_conflicts_per_iteration": null,
// GFX942-NEXT:       "schedule": null
// GFX942-NEXT:     }
// GFX942-NEXT:   }
// GFX942-NEXT: ],
// GFX942-NEXT: "functions": null,
// GFX942-NEXT: "decisions": [],
// GFX942-NEXT: "compile_seconds": {
// GFX942-NEXT:   "parse": {{[0-9.e-]+}},
// GFX942:        "llc": {{[0-9.e-]+}},
// GFX942-NEXT:   "report": {{[0-9.e-]+}},
// GFX942-NEXT:   "total": {{[0-9.e-]+}}
// GFX942-NEXT: },
// GFX942-NEXT: "spill_fallback": null,
// GFX942-NEXT: "tuning": null
// GFX942-NEXT: }

// gfx950 has 160 KiB of LDS: 80 one-wave workgroups, 20 per SIMD; still 8 waves.
// GFX950:      "target": "amdgpu:gfx950",
// GFX950:      "occupancy": 8,
// GFX950:      "v_mfma_f32_16x16x32_fp8_fp8": {
// GFX950-NEXT:   "main_loop": 2,
// GFX950:        "lds": 20

// LINK:        "ld.lld": {{[0-9.e-]+}},
// NOTES:       .group_segment_fixed_size: 2048
// NOTES:       .name: mfma_16x16_fp8
