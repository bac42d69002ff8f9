"""tile-lower-to-gpu, in three modules:

* `lowering_pass.py`: the pass (options, resource checks, launches);
* `emitter.py`: the generic kernel emitter (values, fragments, scf, copies);
* `api.py`: the typed interface backends use (`KernelLowering`, `MatrixCore`,
  `LoweringHooks`) and the helpers they may call. Backends import this module
  only, never the emitter.

Nothing is imported here, so a backend importing `api` does not import the pass.
"""
