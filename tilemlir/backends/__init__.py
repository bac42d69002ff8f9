"""Backend families: one package per family (amdgpu/, metax/, nvidia/), each with
its `targets/*.toml`, its manifest (`BACKEND`, a `tilemlir.targets.Backend`) and
its stages, found through the `tilemlir.backends` entry point; plus what every
backend's stage list is made of and that names no family (stages.py). A family
from outside the package plugs in the same way: docs/backends.md.

The hardware model the families plug into (Target, descriptors, the registry of
families) is `tilemlir.targets`.
"""
