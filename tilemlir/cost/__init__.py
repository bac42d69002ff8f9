"""The cost model: what a kernel configuration is predicted to cost on a target.

    from tilemlir.cost.model import GemmProblem, KernelConfig, predict
    predict(GemmProblem(256, 256, 256, "f16", "f16", "f16", "f32"),
            KernelConfig((32, 32, 64), threads=256, stages=2), get_target("amdgpu:gfx942"))

`facts.py` reads what the model needs from a target's descriptor, assuming a
documented, conservative value for each fact the descriptor leaves unknown;
`model.py` predicts a configuration's time from those facts.

A layer of its own between the hardware model (`tilemlir.targets`, the only
package it reads) and the passes (DESIGN.md section 2): tile-tiling consults
it to choose a default tiling, and `tilemlir.passes.gemm_configs` lists the
configurations it ranks. The tuner (`tilemlir.tune`), which compiles
candidates through the passes and the driver, sits above them all and ranks
with it too. This module imports nothing.
"""
