"""A disk cache of compiled kernels, as Triton and TileLang keep one.

`@tilemlir.jit` kernels keep what they compiled (PTX with its launch metadata
for the device engine, GPU-level IR for the emulator) under

    $TILEMLIR_CACHE_DIR   (default $XDG_CACHE_HOME/tilemlir/kernels, ~/.cache/tilemlir/kernels
                           without it; TILEMLIR_CACHE=0 turns the cache off)
      <first 2 hex digits of the key>/<key>/   one folder per kernel, written whole or not at all

The key is a SHA-256 over everything that decides the code: the kernel's tile
IR (its shapes, element types and source locations), the target's whole
description, the compile options, what was compiled (`ptx`, `gpu`), the MLIR
bindings' version, and tilemlir's own source files (a changed compiler never
reuses an old kernel). A folder that cannot be read back is compiled again;
a cache that cannot be written is skipped with no error: the kernel still runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

CACHE_DIR_ENV, CACHE_SWITCH_ENV = "TILEMLIR_CACHE_DIR", "TILEMLIR_CACHE"
_PACKAGE = Path(__file__).resolve().parents[1]
# Files whose contents decide compiled code: the compiler, its dialect and targets.
_SOURCE_SUFFIXES = (".py", ".toml", ".mlir")


def cache_dir() -> Path | None:
    """Where compiled kernels are kept, or None when the cache is off."""
    if os.environ.get(CACHE_SWITCH_ENV, "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tilemlir" / "kernels"


@functools.cache
def compiler_fingerprint() -> str:
    """A hash of tilemlir's source files and the MLIR bindings' version."""
    from importlib import metadata

    digest = hashlib.sha256()
    from tilemlir.version import MLIR_BINDINGS_DISTRIBUTION as name

    try:
        digest.update(f"{name}=={metadata.version(name)}\n".encode())
    except metadata.PackageNotFoundError:
        digest.update(f"{name} (no metadata)\n".encode())
    for path in sorted(p for p in _PACKAGE.rglob("*") if p.suffix in _SOURCE_SUFFIXES and p.is_file()):
        digest.update(str(path.relative_to(_PACKAGE)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def kernel_key(module_text: str, target, options, stage: str) -> str:
    """The cache key of `module_text` compiled to `stage` for `target` (a
    Target) with `options` (CompileOptions)."""
    description = json.dumps(target.as_dict(), sort_keys=True, default=str)
    parts = [compiler_fingerprint(), stage, str(target), description, repr(options), module_text]
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _folder(key: str) -> Path | None:
    root = cache_dir()
    return None if root is None else root / key[:2] / key


def load(key: str, names: tuple[str, ...]) -> dict[str, str] | None:
    """The files `names` of the kernel `key`, or None when it is not cached (or
    its folder is incomplete or unreadable)."""
    folder = _folder(key)
    if folder is None:
        return None
    try:
        return {name: (folder / name).read_text(encoding="utf-8") for name in names}
    except (OSError, UnicodeDecodeError):
        return None


def store(key: str, files: dict[str, str]) -> None:
    """Keeps `files` as the kernel `key`: written to a private folder, then
    renamed into place, so a reader sees all of them or none. Failures (no
    space, no permission) leave the kernel uncached."""
    folder = _folder(key)
    if folder is None:
        return
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=folder.parent))
    except OSError:
        return
    try:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        if folder.exists():  # an entry `load` could not use: set aside, then replaced
            broken = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.broken.", dir=folder.parent))
            os.rename(folder, broken / "entry")
            shutil.rmtree(broken, ignore_errors=True)
        os.rename(staging, folder)
    except OSError:  # another process stored it first, or the disk refused
        shutil.rmtree(staging, ignore_errors=True)
