"""A SIMT emulator for GPU-level IR: `emulate(module, "entry", args)`.

Input (what `tile-lower-to-gpu` produces, or the same written by hand in
upstream dialects): a `module attributes {gpu.container_module}` with a host
`func.func @entry` whose memref arguments are bound to NumPy arrays (written
in place) and whose index/integer arguments to ints, and whose body computes
launch sizes with arith and calls `gpu.launch_func @mod::@kern blocks in (...)
threads in (...) args(...)`; and the `gpu.module`s holding the `gpu.func`
kernels (workgroup attributions are LDS, `memref.alloca` is private memory).

Execution: the workgroups of a launch run one after another; inside one, all
threads run in lockstep with lanes vectorized by NumPy (emu_core). Waves are
`wave_size` consecutive linear thread ids; `amdgpu.mfma` runs per wave of 64
with AMD's documented lane layouts (mfma_layouts, which also states the
rounding model), `amdgpu.wmma` per wave of 32 on the RDNA chips (wmma_layouts). Divergent `scf.if`/`scf.for`/`scf.while` run under per-lane
masks. Supported ops: gpu ids/dims, lane_id, barrier, shuffle; scf for/if/
while; arith; math; memref load/store/atomic_rmw (add, max, min)/alloca/alloc/dim/
subview/view/cast/reinterpret_cast/expand_shape/collapse_shape; on the host,
gpu.memset; vector load/store/maskedload/
maskedstore/transfer_read/transfer_write (permutation maps, in_bounds,
padding, masks), broadcast/splat/from_elements/extract/insert (dynamic
positions too)/strided slices/shape_cast/bitcast/transpose/fma/reduction/
contract(add)/masks; affine.apply/min/max; amdgpu.mfma, amdgpu.wmma, amdgpu.lds_barrier. Anything else is
`file:line:col: error: emulator: unsupported op 'x.y'` (an `UnsupportedOp`,
a `UserError`), found before anything runs.

Which chip: the emulator models CHIPS (AMD's MFMA and WMMA chips, MetaX's) and runs on
no GPU, so a kernel compiled for it (tile-run --engine emulator,
`runtime.run(engine="emulator")`, `@tilemlir.jit`'s emulator runs) whose
target nobody names (no target=/--target, tile.target or TILEMLIR_TARGET) is
compiled for the emulator's own target (`emulator_target()`:
the first family whose manifest's `default_chip` is one of CHIPS, amdgpu's
gfx942, the chip whose MFMA layouts the emulator was first checked on) in
place of this machine's GPU (`tilemlir.targets.selection`'s rule, step 4).

Memory safety (always: bounds; with `sanitize=True` also LDS shadows and
the data-race check on global memory, within a workgroup and between the
workgroups of a launch): see emu_memory. Every violation is a
`SanitizerError` naming the op's location, the workgroup and the lane.
"""

from __future__ import annotations

import functools

import numpy as np
from mlir import ir

# The op handlers register themselves on import.
from tilemlir.runtime import emu_arith, emu_control, emu_memory, emu_metax, emu_vector, wmma_layouts  # noqa: F401
from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.emu_core import (
    Compiler,
    EmulatorError,
    Frame,
    RaceClock,
    SanitizerError,
    UnsupportedOp,
    Workgroup,
    handles,
    scalar_dtype,
)
from tilemlir.runtime.emu_memory import allocate, host_memref
from tilemlir.runtime.mfma_layouts import INSTRUCTIONS

__all__ = ["CHIPS", "EmulatorError", "SanitizerError", "UnsupportedOp", "emulate", "emulator_target"]

CHIPS = tuple(INSTRUCTIONS) + wmma_layouts.CHIPS + emu_metax.CHIPS  # AMD MFMA, AMD WMMA, MetaX (MMA built-ins)


@functools.cache
def emulator_target() -> str:
    """The emulator's own target, `family:chip`: what a kernel is compiled for
    when it runs in the emulator and nothing names a target (the module
    docstring says why it has one). Asked of the backends, so the code
    names no family or chip: the first family, in name order, whose
    manifest's `default_chip` is one the emulator models (CHIPS); with
    tilemlir's own families, amdgpu's gfx942."""
    from tilemlir.targets.model import TargetError
    from tilemlir.targets.registry import backend, usable_families

    for family in usable_families():
        chip = backend(family).default_chip
        if chip in CHIPS:
            return f"{family}:{chip}"
    raise TargetError(f"the emulator models {', '.join(CHIPS)}, and no registered family's default chip is "
                      "one of them; name a target (--target, target=, $TILEMLIR_TARGET)")


def _module_op(module) -> ir.Operation:
    return module.operation  # an ir.Module, an op view or an ir.Operation


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _find(parent: ir.Operation, name: str, kinds: tuple[str, ...]) -> ir.Operation | None:
    for op in parent.regions[0].blocks[0].operations:
        op = op.operation
        if op.name in kinds and "sym_name" in op.attributes and _symbol(op) == name:
            return op
    return None


class Kernel:
    """A `gpu.func` compiled once; `launch` runs every workgroup of a grid."""

    def __init__(self, func: ir.Operation, compiler: Compiler):
        self.func = func
        self.compiler = compiler
        block = func.regions[0].blocks[0]
        self.inputs = len(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
                          .inputs)
        self.workgroup = int(ir.IntegerAttr(func.attributes["workgroup_attributions"]).value) \
            if "workgroup_attributions" in func.attributes else 0
        self.arg_slots = compiler.slots_of(block.arguments)
        attributions = list(block.arguments)[self.inputs:]
        self.attribution_types = [a.type for a in attributions]
        self.body = compiler.compile_block(block)
        self.known_block = [int(x) for x in func.attributes["known_block_size"]] \
            if "known_block_size" in func.attributes else None

    def launch(self, op: ir.Operation, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: list) -> None:
        if self.known_block is not None and list(block) != self.known_block:
            raise EmulatorError(f"launch with {block} threads per workgroup, but the kernel "
                                f"declares known_block_size {tuple(self.known_block)}", op)
        if min(grid) <= 0 or min(block) <= 0:
            raise EmulatorError(f"empty launch: grid {grid}, block {block}", op)
        c = self.compiler
        clock = c.clock
        if clock is not None:
            clock.start_launch(str(op.attributes["kernel"]))
        for z in range(grid[2]):
            for y in range(grid[1]):
                for x in range(grid[0]):
                    wg = Workgroup((x, y, z), grid, block, c.wave_size, c.chip, c.sanitize)
                    if clock is not None:
                        wg.clock, wg.first_epoch = clock, clock.start_workgroup((x, y, z))
                    frame = Frame(len(c.slots), wg)
                    for slot, value in zip(self.arg_slots, args):
                        frame.vals[slot] = value
                    for index, t in enumerate(self.attribution_types):
                        kind = "workgroup" if index < self.workgroup else "private"
                        number = index if index < self.workgroup else index - self.workgroup
                        frame.vals[self.arg_slots[self.inputs + index]] = allocate(
                            t, frame, f"{kind} attribution {number}", self.func)
                    self.body(frame)


def _launch_segments(op: ir.Operation) -> list[list[ir.Value]]:
    sizes = [int(x) for x in op.attributes["operandSegmentSizes"]]
    operands, out, start = list(op.operands), [], 0
    for size in sizes:
        out.append(operands[start:start + size])
        start += size
    return out


def _scalar(value, what: str, op) -> int:
    array = np.asarray(value).reshape(-1)
    if array.size != 1:
        raise EmulatorError(f"{what} is not the same for every thread", op)
    return int(array[0])


@handles("gpu.launch_func")
def _launch_func(compiler, op):
    segments = _launch_segments(op)
    # ODS order: asyncDependencies, gridSize xyz, blockSize xyz, clusterSize xyz,
    # dynamicSharedMemorySize, kernelOperands, asyncObject
    grid_slots = compiler.slots_of([v for s in segments[1:4] for v in s])
    block_slots = compiler.slots_of([v for s in segments[4:7] for v in s])
    if any(segments[7:11]) or segments[0]:
        raise UnsupportedOp("gpu.launch_func with async tokens, clusters or dynamic shared "
                            "memory", op)
    arg_slots = compiler.slots_of(segments[11])
    path = str(op.attributes["kernel"])  # @mod::@kern
    module_name, _, kernel_name = path.lstrip("@").partition("::@")
    gpu_module = _find(compiler.module, module_name, ("gpu.module",))
    func = _find(gpu_module, kernel_name, ("gpu.func",)) if gpu_module is not None else None
    if func is None:
        raise EmulatorError(f"kernel {path} not found", op)
    kernel = Kernel(func, Compiler(compiler.chip, compiler.wave_size, compiler.sanitize,
                                   compiler.module, compiler.clock))

    def step(frame):
        vals = frame.vals
        grid = tuple(_scalar(vals[s], "the grid size", op) for s in grid_slots)
        block = tuple(_scalar(vals[s], "the block size", op) for s in block_slots)
        kernel.launch(op, grid, block, [vals[s] for s in arg_slots])
    return step


def _bind(value: ir.Value, arg, position: int, entry: str):
    t = value.type
    where = f"argument {position} of @{entry}"
    if isinstance(t, ir.MemRefType):
        if not isinstance(arg, np.ndarray):
            raise EmulatorError(f"{where} must be a NumPy array for {t}, got {type(arg).__name__}")
        dtype = scalar_dtype(t.element_type)
        if arg.dtype != dtype:
            raise EmulatorError(f"{where} has dtype {arg.dtype}, but {t} needs {dtype}")
        if len(arg.shape) != t.rank or any(s not in (ir.ShapedType.get_dynamic_size(), n)
                                           for s, n in zip(t.shape, arg.shape)):
            raise EmulatorError(f"{where} has shape {arg.shape}, but the type is {t}")
        if not arg.flags.c_contiguous or not arg.flags.writeable:
            raise EmulatorError(f"{where} must be a writeable C-contiguous array")
        return host_memref(arg, where)
    if isinstance(t, (ir.IndexType, ir.IntegerType, ir.FloatType)):
        dtype = scalar_dtype(t)
        array = np.asarray(arg)
        if array.size != 1:
            raise EmulatorError(f"{where} must be a scalar for {t}")
        return convert(array.reshape(1), dtype)  # one rounding, by our definition (dtypes.py)
    raise EmulatorError(f"{where} has unsupported type {t}")


def emulate(module, entry: str, args: list, *, wave_size: int | None = None, sanitize: bool = True,
            chip: str | None = None) -> None:
    """Runs host function `entry` of a GPU-level module on `args` (arrays are
    written in place), as `chip` (one of CHIPS; None: the emulator's own
    target's, `emulator_target()`) executes it, in waves of `wave_size` lanes
    (None: the chip's, 32 for the RDNA chips in wmma_layouts, else 64). Raises
    `EmulatorError` (a `UserError`) for unsupported ops, bad arguments and, as
    `SanitizerError`, memory-safety violations."""
    if chip is None:
        chip = emulator_target().partition(":")[2]
    if chip not in CHIPS:
        raise EmulatorError(f"unknown chip '{chip}' (known: {', '.join(CHIPS)})")
    if wave_size is None:
        wave_size = wmma_layouts.WAVE if chip in wmma_layouts.CHIPS else 64
    if wave_size not in (32, 64):
        raise EmulatorError(f"wave size must be 32 or 64, not {wave_size}")
    module_op = _module_op(module)
    with module_op.context:
        func = _find(module_op, entry, ("func.func",))
        if func is None:
            raise EmulatorError(f"no func.func @{entry} in the module")
        block = func.regions[0].blocks[0]
        params = list(block.arguments)
        if len(args) != len(params):
            raise EmulatorError(f"@{entry} takes {len(params)} arguments, got {len(args)}")
        # one clock for every launch of the run; the host's own accesses are not tracked
        compiler = Compiler(chip, wave_size, sanitize, module_op,
                            RaceClock() if sanitize else None)
        slots = compiler.slots_of(params)
        body = compiler.compile_block(block)
        host = Workgroup((0, 0, 0), (1, 1, 1), (1, 1, 1), wave_size, chip, sanitize)
        frame = Frame(len(compiler.slots), host)
        for position, (slot, value, arg) in enumerate(zip(slots, params, args)):
            frame.vals[slot] = _bind(value, arg, position, entry)
        body(frame)
