"""Choosing kernel configurations: the cost model now, the tuner and its database later.

    from tilemlir.tune.model import GemmProblem, KernelConfig, predict
    predict(GemmProblem(256, 256, 256, "f16", "f16", "f16", "f32"),
            KernelConfig((32, 32, 64), threads=256, stages=2), get_target("amdgpu:gfx942"))

`facts.py` reads what the model needs from a target's descriptor, assuming a
documented, conservative value for each fact the descriptor leaves unknown;
`model.py` predicts a configuration's time from those facts. Together with
`tilemlir.passes.gemm_configs.candidate_configs` (the configurations that fit
a target) they are the pieces a tuner ranks candidates with.

Where this package sits (DESIGN.md section 2 lists tune/ after passes): the
model and its facts read only the target layer, and tile-tiling (a pass) must
call them to choose its default tiling, so `tilemlir.tune.facts` and
`tilemlir.tune.model` form a layer of their own between `tilemlir.target` and
`tilemlir.passes`. Everything else in tune/ (tile-tune, which compiles
candidates, and its database) sits above `tilemlir.compiler`, where the
design places it. test/python/test_layers.py holds both placements; this
module imports nothing, so importing the model never drags the tuner in.
"""
