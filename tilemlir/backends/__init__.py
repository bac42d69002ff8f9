"""Backend families: one package per family (amdgpu/, metax/, nvidia/), each with
its `targets/*.toml`, its manifest (`BACKEND`, a `tilemlir.target.Backend`) and
its stages, found through the `tilemlir.backends` entry point; plus the helpers
every backend shares and that name no family (symbols.py, gpu_input.py).

The hardware model the families plug into (Target, descriptors, the registry of
families) is `tilemlir.target`.
"""
