"""The generic kernel emitter of tile-lower-to-gpu: one tile.kernel becomes one
thread's program in a gpu.func (values, register fragments, scf, copies).

It knows no family: matrix instructions come from the family's `MatrixCore`,
the family's own additions from its `LoweringHooks` (see `api.py`); both see
this emitter only as an `api.KernelLowering`.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from tilemlir.diagnostics import UserError
from tilemlir.dialects import attributes
from tilemlir.irutil import walk
from tilemlir.lds_banks import SWIZZLE_CHUNK_BYTES
from tilemlir.passes.fragment_layout import accumulator_layout
from tilemlir.passes.gemm_facts import MmaChoice, k_along_rows, warp_grid_of
from tilemlir.passes.gpu_builders import (
    BytePermute,
    add,
    and_,
    bit_width,
    box_index,
    columns_of,
    const_index,
    convert,
    known_multiple,
    load_or_zero,
    load_vector_guarded,
    loads_or_zeros,
    memref_dims,
    mul,
    splat,
    swizzled_column,
    udiv,
    ult,
    urem,
    zero_of,
    zeros,
)
from tilemlir.passes.kernel_facts import kernel_threads
from tilemlir.passes.lower_to_gpu.api import (
    AccumulatorFragment,
    AccumulatorLayout,
    GemmOperands,
    GlobalOperand,
    LaneIds,
    LoweringError,
    LoweringHooks,
    MatrixCore,
    RegisterFragment,
    copy_width,
    for_loop_parts,
    fragment_values,
    guarded,
    rebind_fragments,
    widen_fp8_arithmetic,
)
from tilemlir.passes.lower_to_gpu.fragment_ops import (
    FragmentOps,
    ParallelContext,
    vector_alignment,
    window_dims,
)
from tilemlir.passes.shared_memory import (
    SharedLayout,
    physical_shared_bytes,
    physical_shared_shape,
    shared_alloc_of,
    shared_layout,
    use_reads_transposed,
)
from tilemlir.passes.software_pipeline import in_peeled_tail, read_once_from_global
from tilemlir.passes.stage_operands import register_a_from
from tilemlir.targets import backend


def check_cast(copy: ir.Operation) -> None:
    """A copy between element types converts each element, rounding to nearest
    even (the one rounding tile.cast allows, checked by tile-verify). The
    tile.cast tile-legalize-precision recorded must name the conversion the
    operand types make: one they contradict (stale, or written by hand) is refused."""
    cast = attributes.CAST.read(copy)
    if cast is None:
        return
    source = ir.MemRefType(copy.operands[0].type).element_type
    target = ir.MemRefType(copy.operands[1].type).element_type
    recorded = ir.TypeAttr(cast["from"]).value, ir.TypeAttr(cast["to"]).value
    if recorded != (source, target):
        raise LoweringError(copy, f"tile-lower-to-gpu: {attributes.CAST.name} converts {recorded[0]} to "
                                  f"{recorded[1]}, but this copy's element types are {source} "
                                  f"and {target}")


@dataclass
class LoweredKernel:
    """What the pass needs to launch a lowered kernel."""

    gpu_func: ir.Operation
    arguments: list[ir.Value]  # host values passed, in order
    dynamic_shared_bytes: int = 0
    # Threads per workgroup at launch: the kernel's own, or more where the core
    # added some (`MatrixCore.emit_kernel_body`).
    threads: int = 0
    # The launch grid where the core chose its own (`set_launch_grid`); empty:
    # the tile.kernel's.
    grid: list[int] = field(default_factory=list)
    # Arguments a core added (e.g. TMA tensor maps), each with what a launcher
    # must pass for it: (type, metadata).
    extra_arguments: list[tuple[ir.Type, dict]] = field(default_factory=list)


class KernelEmitter(FragmentOps):
    """Emits one tile.kernel as a gpu.func (one thread's program); implements
    `api.KernelLowering`.

    Fixed at construction: the kernel, target, name, thread count, wave size,
    the family's core, its hook options. Mutable state, all of it:

    * `_values`: tile value -> lowered value (the value map);
    * `_fragments`: tile fragment value -> its registers (`AccumulatorFragment`
      for gemm accumulators, else `RegisterFragment`);
    * `_scratch`, `_parallel`: see `fragment_ops.FragmentOps`;
    * `_shared`: tile shared value -> (stored memref, `SharedLayout`);
    * `_deferred_stores`: LDS stores of prefetch copies waiting for the end of
      the pipelined iteration being emitted (None outside such a loop);
    * `_lds_conflicts`: bank-conflict clocks of the gemms emitted so far;
    * `_shared_notes`: what the core and hooks said of how they stored and
      filled shared buffers (`note_shared`);
    * `_lowered`: the gpu.func and its arguments once `lower` made them;
    * `_ids`, `_hooks`: made at the kernel's entry.
    """

    def __init__(self, kernel: ir.Operation, target, name: str, core: MatrixCore,
                 hooks_class: type[LoweringHooks] = LoweringHooks, options: dict | None = None):
        self._kernel = kernel
        self._target = target
        self.name = name
        self._threads = kernel_threads(kernel)
        self._wave_size = target.require("compute.wave_size", "lowering to lanes")
        self.core = core
        self._hooks_class = hooks_class
        self._options = dict(options or {})
        formats = target.matrix.fp8_formats
        converts = backend(target.family).converts_fp8
        # The fp8 formats converted in hardware; None: no fp8 encoding at all.
        self._native_fp8 = (tuple(formats) if isinstance(formats, tuple) else ()) if converts else None
        self._values: dict = {}
        self._fragments: dict = {}
        self._shared: dict = {}
        # tile.read_from_global buffers -> (load, the block their copy is in);
        # their reads, shared by the gemms (`GlobalOperand.reads`).
        self._global_a: dict = {}
        self._global_reads: dict = {}
        self._deferred_stores: list | None = None
        self._prefetching: list = []  # the body of the last pipelined loop that prefetches
        self._lds_conflicts = 0
        self._shared_notes: dict = {}  # tile.alloc_shared -> what note_shared recorded
        self._lowered: LoweredKernel | None = None
        self._ids: LaneIds | None = None
        self._hooks: LoweringHooks | None = None
        self._scratch: dict = {}  # element type -> the kernel's tile.scratch buffer
        self._parallel: ParallelContext | None = None  # the T.Parallel being emitted
        self._per_thread = False  # emitting a tile.per_thread region: every thread runs each op

    # -- api.KernelLowering ----------------------------------------------------

    @property
    def kernel(self) -> ir.Operation:
        return self._kernel

    @property
    def target(self):
        return self._target

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def wave_size(self) -> int:
        return self._wave_size

    @property
    def ids(self) -> LaneIds:
        return self._ids

    @property
    def entry_block(self) -> ir.Block:
        return self._lowered.gpu_func.regions[0].blocks[0]

    def option(self, name: str) -> object:
        return self._options[name]

    def value_of(self, tile_value: ir.Value) -> ir.Value:
        return self._values[tile_value]

    def bind(self, tile_value: ir.Value, value: ir.Value) -> None:
        self._values[tile_value] = value

    def shared_buffer(self, tile_value: ir.Value) -> ir.Value | None:
        bound = self._shared.get(tile_value)
        return bound[0] if bound else None

    def shared_layout(self, tile_value: ir.Value) -> SharedLayout:
        return self._shared[tile_value][1]

    def bind_shared(self, tile_value: ir.Value, buffer: ir.Value, layout: SharedLayout) -> None:
        self._shared[tile_value] = (buffer, layout)

    def fragments(self) -> list[AccumulatorFragment]:
        return list(self._fragments.values())

    def lower_op(self, op: ir.Operation) -> None:
        with op.location:
            handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
            if handler is not None:
                try:
                    handler(op)
                except LoweringError:
                    raise
                except UserError as error:  # from a builder (e.g. an fp8 conversion): at this op
                    raise LoweringError(op, str(error)) from None
            elif op.name.startswith("tile."):
                raise LoweringError(op, f"tile-lower-to-gpu: {op.name} is not supported here")
            elif op.regions:
                raise LoweringError(op, f"tile-lower-to-gpu: {op.name} with regions is not "
                                        "supported inside a tile.kernel")
            else:
                self.clone_op(op)

    def gemm_operands(self, gemm: ir.Operation) -> GemmOperands:
        a, b, c = gemm.operands[0], gemm.operands[1], gemm.operands[2]
        a_fragment, a_source_layout = self.register_a_operand(gemm)
        a_global = self.global_operand(gemm)
        if (a not in self._shared and a_fragment is None and a_global is None) or b not in self._shared:
            raise LoweringError(gemm, "tile-lower-to-gpu: gemm operands A and B must be shared "
                                      "buffers, or A the copy of an accumulator the family's matrix "
                                      "instructions read from registers (run tile-stage-operands)")
        if c not in self._fragments:
            raise LoweringError(gemm, "tile-lower-to-gpu: the gemm accumulator has no register layout")
        choice = MmaChoice.of(gemm)
        warps = warp_grid_of(gemm)
        if choice is None or warps is None:
            raise LoweringError(gemm, f"tile-lower-to-gpu: tile.gemm has no {attributes.MMA.name} "
                                      "(run tile-select-mma)")
        fragment = self._fragments[c]
        # The C layout depends on the instruction's m and n (not its K).
        if fragment.instruction and (fragment.instruction[:2] != (choice.m, choice.n)
                                     or fragment.warps != tuple(warps)):
            raise LoweringError(gemm, f"tile-lower-to-gpu: this gemm issues {choice.name} over "
                                      f"{warps[0]}x{warps[1]} waves, but its accumulator's "
                                      f"{attributes.LAYOUT.name} is laid out for a "
                                      f"{'x'.join(map(str, fragment.instruction))} instruction over "
                                      f"{fragment.warps[0]}x{fragment.warps[1]} waves (run tile-infer-layout "
                                      "after tile-select-mma)")
        transpose_a = ir.BoolAttr(gemm.attributes["transpose_a"]).value
        transpose_b = ir.BoolAttr(gemm.attributes["transpose_b"]).value
        block_k = ir.MemRefType(a.type).shape[0 if transpose_a else 1]
        # Before the reads' anchor where A is read from global memory: they use it.
        with ir.InsertionPoint(a_global.anchor) if a_global and a_global.anchor else contextlib.nullcontext():
            wave_m, wave_n = self.wave_position(fragment)
        a_smem, layout_a = self._shared[a] if a in self._shared else (None, SharedLayout())
        b_smem, layout_b = self._shared[b]
        # A buffer stored transposed flips which index of it is K. A buffer
        # stored for transpose reads is read with them by the uses whose K runs
        # down its stored columns only: another gemm may read the same buffer
        # along its rows (S = Q K^T next to H = K^T Q), with vector reads.
        a_along, b_along = k_along_rows(gemm)
        read_a = use_reads_transposed(layout_a, a_along)
        read_b = use_reads_transposed(layout_b, b_along)
        for role, layout, transposed_read in (("A", layout_a, read_a), ("B", layout_b, read_b)):
            if layout.swizzle and not transposed_read and not self.core.reads_swizzled_rows:
                raise LoweringError(gemm, f"tile-lower-to-gpu: operand {role} of this gemm is XOR-swizzled "
                                          f"({attributes.SMEM_LAYOUT.name} swizzle = {layout.swizzle}), "
                                          f"which {self.target.family}'s matrix instructions read only with "
                                          "LDS transpose reads, but this gemm reads it along its stored rows "
                                          "(run tile-infer-layout, which swizzles such buffers only where "
                                          "every gemm reads them with transpose reads)")
        steps = attributes.OPERAND_READ_STEPS.read(gemm) or 1
        readable = self.core.k_steps_per_read(gemm, self._wave_size) if steps != 1 else 1
        if steps != readable:
            raise LoweringError(gemm, f"tile-lower-to-gpu: this gemm's {attributes.OPERAND_READ_STEPS.name} "
                                      f"is {steps}, but {self.target.family}'s matrix instructions read "
                                      f"{readable} K step(s) of this gemm at a time (run tile-infer-layout, "
                                      "which sets it)")
        return GemmOperands(fragment, choice, a_smem, b_smem,
                            transpose_a != layout_a.transposed, transpose_b != layout_b.transposed,
                            block_k, self._ids.lane, wave_m, wave_n, read_a, read_b,
                            layout_a.swizzle, layout_b.swizzle, a_fragment, a_source_layout, steps, a_global)

    def register_a_operand(self, gemm: ir.Operation) -> tuple[RegisterFragment | None,
                                                              AccumulatorLayout | None]:
        """A gemm's A held in registers, where tile-stage-operands left it
        there (`register_a_from`), and the instruction layout of the
        accumulator it was copied from: it must be laid out exactly as that
        accumulator, which is what the core reads. (None, None): A is in
        shared memory."""
        a = gemm.operands[0]
        fragment = self.fragment_of(a)
        if fragment is None:
            return None, None
        source = register_a_from(gemm, self._target)
        if source is None or ir.BoolAttr(gemm.attributes["transpose_a"]).value:
            raise LoweringError(gemm, "tile-lower-to-gpu: this gemm's A is held in registers the "
                                      "matrix instruction cannot read (run tile-stage-operands)")
        accumulator = self._fragments.get(source.operands[2])
        if not isinstance(fragment, RegisterFragment) or accumulator is None or \
                fragment.placement != accumulator.placement:
            raise LoweringError(gemm, "tile-lower-to-gpu: this gemm's A in registers is not laid out "
                                      "as the accumulator it was copied from (run tile-infer-layout)")
        return fragment, accumulator.layout

    def record_lds_conflicts(self, gemm: ir.Operation) -> None:
        conflicts = attributes.LDS_CONFLICTS.read(gemm)
        if conflicts is not None and not in_peeled_tail(gemm):  # per iteration of the main loop
            self._lds_conflicts += conflicts

    def note_shared(self, tile_value: ir.Value, **facts: object) -> None:
        alloc = shared_alloc_of(tile_value)
        if alloc is not None:
            self._shared_notes.setdefault(alloc, {}).update(facts)

    def add_kernel_argument(self, arg_type: ir.Type, metadata: dict) -> ir.Value:
        # After the memrefs and before nothing else: cores that place shared
        # memory have no workgroup attributions.
        gpu_func = self._lowered.gpu_func
        block = gpu_func.regions[0].blocks[0]
        argument = block.add_argument(arg_type, self._kernel.location)
        inputs = [a.type for a in block.arguments]
        gpu_func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, []))
        self._lowered.extra_arguments.append((arg_type, metadata))
        return argument

    def set_launch_grid(self, grid: list[int]) -> None:
        self._lowered.grid = list(grid)

    def set_function_attribute(self, name: str, value: ir.Attribute) -> None:
        self._lowered.gpu_func.attributes[name] = value

    # -- the gpu.func ---------------------------------------------------------

    def captured_values(self) -> list[ir.Value]:
        """Values used inside the kernel but defined outside it, in first-use order."""
        defined, captured, seen = set(), [], set()
        for op in walk(self._kernel):
            for region in op.regions:
                for block in region.blocks:
                    defined.update(block.arguments)
            defined.update(op.results)
        for op in walk(self._kernel):
            for operand in op.operands:
                if operand not in defined and operand not in seen:
                    seen.add(operand)
                    captured.append(operand)
        return captured

    def lower(self, gpu_module_body: ir.Block) -> LoweredKernel:
        """Emits the gpu.func at the end of `gpu_module_body`."""
        captured = self.captured_values()
        # Constants defined outside are rematerialized inside; the rest are arguments.
        arguments = [v for v in captured if not _is_constant(v)]
        shared_ops = [op for op in walk(self._kernel) if op.name == "tile.alloc_shared"
                      and not attributes.READ_FROM_GLOBAL.is_on(op)]
        placed = self.core.places_shared_memory
        shared_types = [] if placed else [physical_shared_type(op) for op in shared_ops]
        function_type = ir.FunctionType.get([v.type for v in arguments], [])
        with ir.InsertionPoint(gpu_module_body), self._kernel.location:
            gpu_func = gpu.GPUFuncOp(function_type, sym_name=self.name, kernel=True,
                                     known_block_size=[self._threads, 1, 1])
            gpu_func.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), len(shared_types))
            block = gpu_func.regions[0].blocks.append(*[v.type for v in arguments], *shared_types)
        self._lowered = LoweredKernel(gpu_func, arguments)
        for value, argument in zip(arguments, block.arguments):
            self._values[value] = argument
        for op, attribution in zip(shared_ops, list(block.arguments)[len(arguments):]):
            self.bind_shared(op.results[0], attribution, shared_layout(op))
        with ir.InsertionPoint(block), self._kernel.location:
            for value in captured:
                if _is_constant(value):
                    self._values[value] = value.owner.clone().results[0]
            self.emit_prologue()
            if placed:
                dynamic = self.core.place_shared(self, shared_ops)
                self._lowered.dynamic_shared_bytes = dynamic
                attributes.DYNAMIC_SHARED_BYTES.write(gpu_func, dynamic)
            for op in shared_ops:
                if attributes.SCRATCH.is_on(op):
                    element = ir.MemRefType(op.results[0].type).element_type
                    self._scratch[element] = self.shared_buffer(op.results[0])
            body = self._kernel.regions[0].blocks[0]
            launched = self.core.emit_kernel_body(self, lambda: self.emit_block(body))
            gpu.ReturnOp([])
        widen_fp8_arithmetic(gpu_func.operation, self._native_fp8)
        self._lowered.threads = launched
        if launched != self._threads:
            gpu_func.attributes["known_block_size"] = ir.DenseI32ArrayAttr.get([launched, 1, 1])
        attributes.LDS_BANK_CONFLICTS_PER_ITERATION.write(gpu_func, self._lds_conflicts)
        self._hooks.end_kernel(gpu_func, 0 if placed else sum(physical_shared_bytes(op) for op in shared_ops))
        # Positions among all the kernel's buffers, as the report's decisions count them.
        every = [op for op in walk(self._kernel) if op.name == "tile.alloc_shared"]
        notes = [json.dumps({"buffer": position, **self._shared_notes[op]})
                 for position, op in enumerate(every) if op in self._shared_notes]
        if notes:
            attributes.SHARED_STORAGE.write(gpu_func, notes)
        return self._lowered

    def emit_prologue(self) -> None:
        body = self._kernel.regions[0].blocks[0]
        dims = [gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z]
        for argument, dim in zip(body.arguments, dims):
            self._values[argument] = gpu.BlockIdOp(dim).result
        thread = gpu.ThreadIdOp(gpu.Dimension.x).result
        self._ids = LaneIds(thread, urem(thread, self._wave_size), udiv(thread, self._wave_size))
        self._hooks = self._hooks_class(self)
        self._hooks.begin_kernel()

    # -- statements -----------------------------------------------------------

    def emit_block(self, block: ir.Block) -> None:
        for op in block.operations:
            self.lower_op(op.operation)

    def clone_op(self, op: ir.Operation) -> ir.Operation:
        for operand in op.operands:
            self.check_scalar_use(op, operand)
        new = op.clone()
        for i, operand in enumerate(op.operands):
            new.operands[i] = self._values[operand]
        for old, result in zip(op.results, new.results):
            self._values[old] = result
        return new

    def check_scalar_use(self, op, value: ir.Value) -> None:
        self.check_logical_access(op, value)
        if value in self._fragments:
            raise LoweringError(op, f"tile-lower-to-gpu: {op.name} uses a register fragment directly; "
                                    "access fragments inside scf.parallel over their shape")
        if value not in self._values:
            raise LoweringError(op, f"tile-lower-to-gpu: {op.name} uses a value this lowering has "
                                    "not produced")

    def check_logical_access(self, op, value: ir.Value) -> None:
        """The program's own ops (memref.load/store, vector ops, views) index a
        shared buffer with its logical indices: refused when the buffer is
        stored otherwise (tile-infer-layout keeps such buffers as written, so
        only a hand-written or stale tile.smem_layout gets here)."""
        bound = self._shared.get(value)
        if bound is None or bound[1] == SharedLayout():
            return
        layout = bound[1]
        how = [word for word, on in (("transposed", layout.transposed),
                                     (f"with rows padded by {layout.pad}", layout.pad),
                                     ("for LDS transpose reads", layout.transpose_read),
                                     (f"XOR-swizzled ({layout.swizzle})", layout.swizzle),
                                     ("as 128-byte-swizzled boxes", layout.boxed)) if on]
        raise LoweringError(op, f"tile-lower-to-gpu: {op.name} indexes a shared buffer as written, "
                                f"but {attributes.SMEM_LAYOUT.name} stores it {', '.join(how)}; "
                                "its addresses would be wrong (run tile-infer-layout, which keeps "
                                "buffers the program indexes as written)")

    def op_gpu_yield(self, op) -> None:
        pass

    def op_tile_alloc_shared(self, op) -> None:
        if attributes.READ_FROM_GLOBAL.is_on(op):
            if not self.core.reads_a_from_global or not read_once_from_global(op, self._kernel):
                raise LoweringError(op, f"tile-lower-to-gpu: {attributes.READ_FROM_GLOBAL.name} needs "
                                        f"{attributes.READ_FROM_GLOBAL.form}, and a matrix core that reads "
                                        f"such an A from global memory ({self.target.family}'s "
                                        f"{'does' if self.core.reads_a_from_global else 'does not'})")
            self._global_reads[op.results[0]] = {}  # no LDS: its copy records its source
            return
        self._values[op.results[0]] = self.shared_buffer(op.results[0])

    def op_memref_subview(self, op) -> None:
        """A stage of a multi-buffered shared tile (tile-pipeline) is still LDS;
        its view is taken of the stored (possibly transposed, padded) buffer."""
        source = op.operands[0]
        if source not in self._shared or not is_stage_view(op):
            self.clone_op(op)  # the program's own view (refused when the buffer is not stored as written)
            return
        stored, layout = self._shared[source]
        stored_type = ir.MemRefType(stored.type)
        logical = list(ir.MemRefType(op.results[0].type).shape)
        plane = list(reversed(logical)) if layout.transposed else logical
        row_stride = stored_type.shape[-1]
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        view_type = ir.MemRefType.get(plane, stored_type.element_type,
                                      layout=ir.StridedLayoutAttr.get(dynamic, [row_stride, 1]),
                                      memory_space=stored_type.memory_space)
        stage = self._values[list(op.operands)[1]]
        view = memref.SubViewOp(view_type, stored, [stage], [], [], [dynamic, 0, 0],
                                [1, *plane], [1, 1, 1]).result
        self.bind_shared(op.results[0], view, layout)
        self._values[op.results[0]] = view

    def op_tile_alloc_fragment(self, op) -> None:
        result = op.results[0]
        if not any(use.owner.name == "tile.gemm" and use.operand_number == 2 for use in result.uses):
            self.make_fragment(op)
            return
        layout = attributes.LAYOUT.read(op)
        if layout is None or ir.StringAttr(layout["kind"]).value != "mma_accumulator" or "dims" in layout:
            raise LoweringError(op, f"tile-lower-to-gpu: this gemm accumulator has no "
                                    f"{attributes.LAYOUT.name} of its instruction (run tile-infer-layout)")
        m, n, k = list(ir.DenseI64ArrayAttr(layout["instruction"]))
        wm, wn = list(ir.DenseI64ArrayAttr(layout["warps"]))
        memref_type = ir.MemRefType(result.type)
        shape = (memref_type.shape[0], memref_type.shape[1])
        try:  # a hand-written tile.layout may name an instruction or warps the family has no layout for
            lanes = self.core.accumulator_layout(m, n, k, self._wave_size,
                                                 bit_width(memref_type.element_type))
            if "transposed" in layout and ir.BoolAttr(layout["transposed"]).value:
                if not self.core.transposes_accumulator:
                    raise ValueError("this family's matrix core does not issue transposed accumulators")
                lanes = lanes.transposed()
            placement = accumulator_layout(shape, lanes, (wm, wn), self._wave_size, self._threads, (m, n, k))
        except ValueError as error:
            raise LoweringError(op, f"tile-lower-to-gpu: {attributes.LAYOUT.name} {layout}: {error}") from None
        fragment = AccumulatorFragment(shape, memref_type.element_type, lanes, (wm, wn), instruction=(m, n, k))
        fragment.placement = placement
        zero = splat(fragment.vector_type, zero_of(fragment.element))
        fragment.values = [zero] * (fragment.tiles[0] * fragment.tiles[1])
        self._fragments[result] = fragment

    def op_tile_fill(self, op) -> None:
        buffer, value = op.operands[0], self._values[op.operands[1]]
        if isinstance(self._fragments.get(buffer), RegisterFragment):
            fragment = self._fragments[buffer]
            fragment.values = [value] * len(fragment.values)
            return
        if buffer in self._fragments:
            fragment = self._fragments[buffer]
            filled = vector.BroadcastOp(fragment.vector_type, value).result
            fragment.values = [filled] * len(fragment.values)
            return
        if buffer in self._shared:
            self.distributed_fill(op, self.shared_buffer(buffer), value)
            return
        raise LoweringError(op, "tile-lower-to-gpu: tile.fill of this buffer is not supported")

    def op_tile_copy(self, op) -> None:
        src, dst = op.operands[0], op.operands[1]
        check_cast(op)
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        src_indices = [self._values[v] for v in op.operands[2:2 + segments[2]]]
        dst_indices = [self._values[v] for v in op.operands[2 + segments[2]:]]
        # An unindexed side starts at its origin.
        src_indices = src_indices or [const_index(0)] * ir.MemRefType(src.type).rank
        dst_indices = dst_indices or [const_index(0)] * ir.MemRefType(dst.type).rank
        shared, fragments = self._shared, self._fragments
        if dst in self._global_reads:
            # tile-insert-barriers counts on these two (`fenced_by_lowering`), as for
            # the copy into LDS this replaces: they order the accesses around it.
            gpu.BarrierOp()
            self.record_global_operand(op, src_indices)
            gpu.BarrierOp()
            return
        if self.copy_with_fragments(op, src_indices, dst_indices):
            return
        src_rank, dst_rank = ir.MemRefType(src.type).rank, ir.MemRefType(dst.type).rank
        if dst in shared and src not in shared and src not in fragments and dst_rank != 2:
            # tile-insert-barriers counts on these two (`fenced_by_lowering`).
            gpu.BarrierOp()
            self.copy_through_registers(op, src_indices, dst_indices)
            gpu.BarrierOp()
        elif dst in shared and src not in shared and src not in fragments:
            source = self._values[src]
            if src_rank > dst_rank:  # a rank-reducing copy: a 2-D view of the window
                source, src_indices = window_view(op, source, src_indices, dst_rank)
            if attributes.PREFETCH.is_on(op):
                # Software-pipelined: the loop's one barrier per iteration orders it.
                self.copy_global_to_shared(op, source, src_indices, dst, defer=self._deferred_stores)
                self._hooks.prefetch_issued(op)
                return
            # tile-insert-barriers counts on these two (`fenced_by_lowering`).
            gpu.BarrierOp()
            self.copy_global_to_shared(op, source, src_indices, dst)
            self.core.fence_shared_writes(dst)
            gpu.BarrierOp()
        else:  # shared -> global, shared -> shared, global -> global: through registers
            self.copy_through_registers(op, src_indices, dst_indices)

    def record_global_operand(self, op, src_indices: list[ir.Value]) -> None:
        """The copy into a tile.read_from_global buffer emits nothing: the
        gemms reading the buffer read its window of the source where they
        need it (`GlobalOperand`), converted as the copy converts, 0 outside
        the source as the copy reads."""
        src, dst = op.operands[0], op.operands[1]
        source = self._values[src]
        if ir.MemRefType(src.type).rank > 2:
            source, src_indices = window_view(op, source, src_indices, 2)
        rows, cols = memref_dims(source)
        if attributes.IN_BOUNDS.is_on(op):
            rows = cols = None
        from_element = ir.MemRefType(src.type).element_type
        to_element = ir.MemRefType(dst.type).element_type

        def load(row: ir.Value, k: ir.Value, count: int) -> ir.Value:
            loaded = load_vector_or_zeros(source, [add(src_indices[0], row), add(src_indices[1], k)],
                                          rows, cols, ir.VectorType.get([count], from_element))
            return convert(loaded, from_element, to_element, self._native_fp8)

        self._global_a[dst] = (load, ir.InsertionPoint.current.block)

    def global_operand(self, gemm: ir.Operation) -> GlobalOperand | None:
        """A gemm's A read from global memory (tile.read_from_global), with
        its reads anchored before the outermost loop around the gemm that
        the buffer's copy is not in; None for any other A."""
        a = gemm.operands[0]
        if a not in self._global_reads:
            return None
        # op_tile_alloc_shared checked the buffer (read_once_from_global): its copy came first.
        load, copy_block = self._global_a[a]
        anchor, block = None, ir.InsertionPoint.current.block
        while block != copy_block:
            owner = block.owner
            if owner is None or owner.operation.name == "gpu.func":
                raise LoweringError(gemm, f"tile-lower-to-gpu: this gemm's A is marked "
                                          f"{attributes.READ_FROM_GLOBAL.name}, but the gemm is not nested "
                                          "where the copy that fills it is")
            anchor, block = owner.operation, owner.operation.block
        return GlobalOperand(load, anchor, self._global_reads[a], ir.MemRefType(a.type).element_type)

    def op_tile_gemm(self, op) -> None:
        self.core.emit_k_steps(self.gemm_operands(op))
        self.record_lds_conflicts(op)

    # -- scf ------------------------------------------------------------------

    def op_scf_for(self, op) -> None:
        if self.core.lower_loop(self, op):
            return
        loop = for_loop_parts(op)
        carried = self.fragments()  # every register fragment is loop-carried
        iter_inits = [self._values[v] for v in loop.inits]
        new_loop = scf.ForOp(self._values[loop.lower], self._values[loop.upper],
                             self._values[loop.step], iter_inits + fragment_values(carried))
        body = new_loop.body
        self._values[loop.induction_variable] = new_loop.induction_variable
        inner = list(new_loop.inner_iter_args)
        for old, new in zip(loop.iter_args, inner[:len(iter_inits)]):
            self._values[old] = new
        rebind_fragments(carried, inner[len(iter_inits):])
        pipelined = attributes.PIPELINED.is_on(op)
        outer_deferred = self._deferred_stores
        self._deferred_stores = [] if pipelined else None
        with ir.InsertionPoint(body):
            if pipelined:
                # Stage i mod N was stored by iteration i-N+1 (or the prologue)
                # and the stage stored at the end of this iteration was last
                # read in iteration i-1: one barrier here orders both.
                # A peeled tail reads the stages the pipelined loop before it filled.
                tail = attributes.PIPELINE_TAIL.is_on(op)
                self._hooks.begin_pipelined_iteration(self._prefetching if tail else loop.body_ops)
                self._hooks.stage_barrier()
            single_stage = attributes.PIPELINED.read(op) == 1
            body_ops = loads_first(loop.body_ops) if single_stage else loop.body_ops
            for inner_op in body_ops:
                if inner_op.name == "scf.yield":
                    if self._deferred_stores and single_stage:
                        # One stage: it is overwritten once every wave has read it.
                        self._hooks.stage_barrier()
                    for store in self._deferred_stores or ():
                        store()
                    if pipelined:
                        self._hooks.end_pipelined_iteration(body)
                    yielded = [self._values[v] for v in inner_op.operands]
                    scf.YieldOp(yielded + fragment_values(carried))
                else:
                    self.lower_op(inner_op)
        self._deferred_stores = outer_deferred
        if pipelined and not attributes.PIPELINE_TAIL.is_on(op):
            self._prefetching = loop.body_ops  # after its body: an inner loop's does not stay
            if not _peeled(op):  # a peeled tail's iterations wait for what it prefetched
                self._hooks.after_pipelined_loop(loop.body_ops)
        results = list(new_loop.results)
        for old, new in zip(op.results, results[:len(iter_inits)]):
            self._values[old] = new
        rebind_fragments(carried, results[len(iter_inits):])

    def op_scf_while(self, op) -> None:
        """scf.while (a `while` loop of block-level code): its own values and,
        as scf.for carries them, every register fragment, through the
        condition region and the body."""
        carried = self.fragments()
        inits = [self._values[v] for v in op.operands] + fragment_values(carried)
        old_before, old_after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        own = len(old_after.arguments)
        result_types = [a.type for a in old_after.arguments] + [v.type for v in inits[len(op.operands):]]
        new = scf.WhileOp(result_types, inits)
        outer_deferred, self._deferred_stores = self._deferred_stores, None  # as an unpipelined scf.for
        before = new.before.blocks.append(*[v.type for v in inits])
        with ir.InsertionPoint(before):
            for old, value in zip(old_before.arguments, before.arguments):
                self._values[old] = value
            rebind_fragments(carried, list(before.arguments)[len(op.operands):])
            for inner in [o.operation for o in old_before.operations]:
                if inner.name == "scf.condition":
                    forwarded = [self._values[v] for v in list(inner.operands)[1:]]
                    scf.ConditionOp(self._values[inner.operands[0]], forwarded + fragment_values(carried))
                else:
                    self.lower_op(inner)
        after = new.after.blocks.append(*result_types)
        with ir.InsertionPoint(after):
            for old, value in zip(old_after.arguments, after.arguments):
                self._values[old] = value
            rebind_fragments(carried, list(after.arguments)[own:])
            for inner in [o.operation for o in old_after.operations]:
                if inner.name == "scf.yield":
                    scf.YieldOp([self._values[v] for v in inner.operands] + fragment_values(carried))
                else:
                    self.lower_op(inner)
        self._deferred_stores = outer_deferred
        results = list(new.results)
        for old, value in zip(op.results, results[:own]):
            self._values[old] = value
        rebind_fragments(carried, results[own:])

    # -- fragments <-> lanes -------------------------------------------------

    def wave_position(self, fragment: AccumulatorFragment) -> tuple[ir.Value, ir.Value]:
        """The lane's wave's (row, column) in the fragment's wave grid."""
        _, wn = fragment.warps
        return udiv(self._ids.wave, wn), urem(self._ids.wave, wn)

    # -- shared memory ---------------------------------------------------------

    def distributed_accesses(self, shape: list[int], width: int, depth: int = 1):
        """Yields (row, col, guard) index values for this thread's accesses when
        the threads sweep a rows x cols tile in blocks of `depth` rows x `width`
        elements (`depth` divides rows)."""
        rows, cols = shape
        per_row = cols // width
        total = rows // depth * per_row
        rounds = -(-total // self._threads)
        for r in range(rounds):
            linear = add(self._ids.thread, r * self._threads)
            guard = None
            if (r + 1) * self._threads > total:
                guard = ult(linear, const_index(total))
            yield mul(udiv(linear, per_row), depth), mul(urem(linear, per_row), width), guard

    def copy_global_to_shared(self, op, src: ir.Value, offsets: list[ir.Value], dst_tile: ir.Value,
                              defer: list | None = None) -> None:
        """Every thread loads its vectors from global memory and stores them to
        LDS; with `defer`, the stores are queued to run later (at the end of a
        pipelined iteration) so the loads overlap the matrix instructions, and
        the family's hooks may emit the copy their own way (`copy_prefetch`)."""
        dst, layout = self._shared[dst_tile]
        src_type, dst_type = ir.MemRefType(src.type), ir.MemRefType(dst.type)
        # The window is the tile-level destination's shape: the stored buffer
        # may be transposed and its rows padded.
        shape = list(ir.MemRefType(op.operands[1].type).shape)
        if len(shape) != 2:
            raise LoweringError(op, "tile-lower-to-gpu: only 2-D copies into shared memory are "
                                    "supported")
        width = copy_width(op, shape[1], src_type.element_type)
        transposed, swizzle, boxed = layout.transposed, layout.swizzle, layout.boxed
        depth = 1
        if transposed:
            depth = transposed_store_depth(shape, width, bit_width(dst_type.element_type),
                                           self._threads)
        vector_type = ir.VectorType.get([width], src_type.element_type)
        rows, cols = memref_dims(src)
        if attributes.IN_BOUNDS.is_on(op):  # tile-tiling proved every window inside
            rows = cols = None

        def load(row, col) -> list[ir.Value]:
            """The `depth` converted row vectors of this thread's block."""
            return [convert(load_vector_or_zeros(
                        src, [add(offsets[0], add(row, j)), add(offsets[1], col)], rows, cols,
                        vector_type), src_type.element_type, dst_type.element_type,
                        self._native_fp8) for j in range(depth)]

        if defer is not None and self._hooks.copy_prefetch(op, src, offsets, width):
            return
        permute = self._hooks.byte_permute()
        for row, col, guard in self.distributed_accesses(shape, width, depth):
            if defer is not None:
                # Load now (guarded accesses past the end read zeros), store later.
                loaded = load(row, col) if guard is None else loads_or_zeros(
                    guard, [ir.VectorType.get([width], dst_type.element_type)] * depth,
                    lambda row=row, col=col: load(row, col))
                defer.append(lambda values=loaded, row=row, col=col, guard=guard: guarded(
                    guard, lambda: store_tile_block(values, dst, row, col, transposed, swizzle, boxed, permute)))
                continue
            guarded(guard, lambda row=row, col=col: store_tile_block(
                load(row, col), dst, row, col, transposed, swizzle, boxed, permute))

    def distributed_fill(self, op, dst: ir.Value, value: ir.Value) -> None:
        shape = list(ir.MemRefType(dst.type).shape)
        if len(shape) != 2:
            raise LoweringError(op, "tile-lower-to-gpu: only 2-D shared fills are supported")
        # tile-insert-barriers counts on these two (`fenced_by_lowering`).
        gpu.BarrierOp()
        for row, col, guard in self.distributed_accesses(shape, 1):
            guarded(guard, lambda row=row, col=col: memref.StoreOp(value, dst, [row, col]))
        gpu.BarrierOp()


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def is_stage_view(subview: ir.Operation) -> bool:
    """Whether a memref.subview takes one whole 2-D stage [s, :, :] of a
    multi-buffered tile (as tile-pipeline makes them), rank-reduced."""
    shape = list(ir.MemRefType(subview.operands[0].type).shape)
    offsets = list(ir.DenseI64ArrayAttr(subview.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(subview.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(subview.attributes["static_strides"]))
    return (len(shape) == 3 and len(ir.MemRefType(subview.results[0].type).shape) == 2
            and all(offset == 0 for offset in offsets[1:]) and sizes == [1, *shape[1:]]
            and all(stride == 1 for stride in strides))


def window_view(op, buffer: ir.Value, indices: list[ir.Value], rank: int) -> tuple[ir.Value, list[ir.Value]]:
    """A rank-reducing tile.copy's global side as a `rank`-D view: the dims
    outside the window (`tile.window`, default the leading ones) fixed at
    their indices, the window's extents whole; returns the view and the
    window's offsets. A fixed index out of bounds leaves the view empty
    (reads give 0, writes are dropped, as tile.copy defines)."""
    memref_type = ir.MemRefType(buffer.type)
    window = list(window_dims(op, memref_type.rank, rank))
    extents = memref_dims(buffer)
    if not indices:
        indices = [const_index(0)] * memref_type.rank
    inside = None
    offsets, sizes = [], []
    for d in range(memref_type.rank):
        if d in window:
            offsets.append(const_index(0))
            sizes.append(extents[d])
            continue
        ok = ult(indices[d], extents[d])
        inside = ok if inside is None else and_(inside, ok)
        offsets.append(arith.SelectOp(ok, indices[d], const_index(0)).result)
    # Empty when a fixed index is out of bounds: the first window dim has extent 0.
    sizes[0] = arith.SelectOp(inside, sizes[0], const_index(0)).result
    dynamic = ir.ShapedType.get_dynamic_size()
    strides, _ = memref_type.get_strides_and_offset()
    view_type = ir.MemRefType.get([dynamic] * rank, memref_type.element_type,
                                  layout=ir.StridedLayoutAttr.get(dynamic, [strides[d] for d in window]),
                                  memory_space=memref_type.memory_space)
    static_sizes = [dynamic if d in window else 1 for d in range(memref_type.rank)]
    view = memref.SubViewOp(view_type, buffer, offsets, sizes, [], [dynamic] * memref_type.rank,
                            static_sizes, [1] * memref_type.rank).result
    return view, [indices[d] for d in window]


def load_vector_or_zeros(src, indices, rows, cols, vector_type) -> ir.Value:
    """`width` consecutive elements of a row; elements outside the memref
    read as 0. With no bounds (rows is None) one vector.load; where the
    vector splits into pieces each wholly inside or outside the memref, the
    pieces loaded branch-free (`load_pieces_or_zeros`); else one vector.load
    where the whole vector is inside, element by element where it is not."""
    width = vector_type.shape[0]
    align = vector_alignment(src, indices, width)
    if rows is None:
        return load_vector_guarded(src, indices, vector_type, None, None, align)
    pieces = load_pieces_or_zeros(src, indices, vector_type)
    if pieces is not None:
        return pieces
    row, col = indices

    def element_at(i: int) -> ir.Value:
        column = add(col, i)
        return load_or_zero(and_(ult(row, rows), ult(column, cols)), vector_type.element_type,
                            lambda: memref.LoadOp(src, [row, column]).result)

    inside = and_(ult(row, rows), ult(add(col, width - 1), cols))
    return load_vector_guarded(src, indices, vector_type, inside, element_at, align)


def load_pieces_or_zeros(src, indices, vector_type) -> ir.Value | None:
    """The vector at `indices` of a 2-D memref of static extents, elements
    outside it read as 0, with no branch: in pieces of gcd(width, columns)
    elements, where the row stride and the column index are multiples of
    that (provably, `known_multiple`), so that each piece lies wholly inside
    the memref or wholly outside. Each piece is loaded at its indices
    clamped into the memref (a valid address whatever the thread's) and
    replaced by zeros where it lies outside. A guarded whole-vector load
    needs a branch, and an element-by-element path in it, that every
    iteration of a loop over an edge carries (gfx942 fp8 200x96x136, llvm-mca
    busy ratio of the main loop at the default: 0.023-0.057 with it, 0.19
    with pieces; bench/results/gemm-defaults-amd.md). None where the pieces
    cannot be proved whole, or would be narrower than 32 bits (an odd row of
    f16: one scalar load per element, where the guarded load has one vector
    load inside the rows)."""
    memref_type = ir.MemRefType(src.type)
    if memref_type.rank != 2:
        return None
    rows, cols = memref_type.shape
    if ir.ShapedType.get_dynamic_size() in (rows, cols) or min(rows, cols) < 1:
        return None
    width = vector_type.shape[0]
    piece = math.gcd(width, cols)
    if piece * bit_width(vector_type.element_type) < 32 and piece < width:
        return None
    (row_stride, _), _ = memref_type.get_strides_and_offset()
    row, col = indices
    if row_stride == ir.ShapedType.get_dynamic_stride_or_offset() or row_stride % piece \
            or known_multiple(col) % piece:
        return None
    piece_type = ir.VectorType.get([piece], vector_type.element_type)
    row_inside = ult(row, const_index(rows))
    safe_row = arith.MinUIOp(row, const_index(rows - 1)).result
    loaded = None
    for start in range(0, width, piece):
        column = add(col, start)
        safe_column = arith.MinUIOp(column, const_index(cols - piece)).result
        # Aligned as the unclamped piece would be: the clamped indices are
        # the same multiples.
        value = vector.LoadOp(piece_type, src, [safe_row, safe_column],
                              alignment=vector_alignment(src, [row, column], piece)).result
        value = arith.SelectOp(and_(row_inside, ult(column, const_index(cols))), value,
                               zeros(piece_type)).result
        loaded = value if loaded is None else vector.shuffle(loaded, value, list(range(start + piece)))
    return loaded


def physical_shared_type(alloc: ir.Operation) -> ir.MemRefType:
    """The LDS memref a tile.alloc_shared is stored as (`physical_shared_shape`)."""
    memref_type = ir.MemRefType(alloc.results[0].type)
    return ir.MemRefType.get(physical_shared_shape(alloc), memref_type.element_type,
                             memory_space=memref_type.memory_space)


def transposed_store_depth(shape: list[int], width: int, element_bits: int, threads: int) -> int:
    """Rows of the logical tile each thread loads before a transposed store:
    with `depth` row vectors of `width` in registers, a thread transposes them
    (v_perm_b32 on AMD) and writes `width` stored rows of `depth` elements,
    one LDS store of up to 64 bits each, instead of `width * depth`
    single-element stores. The deepest block that divides the rows and still
    gives every thread a block; 1 (element stores) when none does. (Narrowing
    the copy's vectors to give every thread a block measured worse: the seed
    0.366 -> 0.277 mfma_busy_ratio on gfx942, f16 128x128x32 gfx90a 0.736 -> 0.723.)"""
    rows, cols = shape
    if element_bits == 8:  # columns built a dword at a time (gpu_builders.columns_of)
        depths = [4] if width % 4 == 0 else []
    else:
        depths = [d for d in (4, 2) if 16 <= element_bits and d * element_bits <= 64]
    for depth in depths:
        if rows % depth == 0 and rows // depth * (cols // width) >= threads:
            return depth
    return 1


def store_tile_block(values: list[ir.Value], dst: ir.Value, row: ir.Value, col: ir.Value,
                     transposed: bool, swizzle: int = 0, boxed: bool = False,
                     permute: BytePermute | None = None) -> None:
    """Stores consecutive row vectors of the logical tile from (row, col) on:
    one vector store per row (at its swizzled column, tile.smem_layout's
    swizzle; in its box, `SharedLayout.boxed`), or, into a transposed buffer,
    one store per stored row (logical column) of the elements the rows hold
    in that column (transposed in registers by columns_of, with the family's
    byte permutation `permute` for 8-bit elements where it has one)."""
    dst_type = ir.MemRefType(dst.type)
    if not transposed:
        width = ir.VectorType(values[0].type).shape[0]
        chunk = SWIZZLE_CHUNK_BYTES * 8 // bit_width(dst_type.element_type)
        # A swizzle moves whole 16-byte chunks: wider vectors (a converting
        # copy's, e.g. 16 fp8 -> 16 f16) are stored a chunk at a time.
        piece = min(width, chunk) if swizzle or boxed else width
        for j, value in enumerate(values):
            stored_row = add(row, j)
            for start in range(0, width, piece):
                # A shuffle, not vector.extract_strided_slice: the ROCDL
                # conversion lowers shuffles, but leaves strided slices behind.
                part = value if piece == width else vector.shuffle(
                    value, value, list(range(start, start + piece)))
                if boxed:
                    flat, index = box_index(dst, stored_row, add(col, start), chunk_start=piece == chunk)
                    vector.StoreOp(part, flat, [index])
                    continue
                vector.StoreOp(part, dst, [stored_row, swizzled_column(
                    stored_row, add(col, start), swizzle, dst_type.shape[-1], dst_type.element_type)])
        return
    width, depth = ir.VectorType(values[0].type).shape[0], len(values)

    def at(i: int) -> list[ir.Value]:
        # Stored row col + i; a column vector of `depth` elements (at most 8
        # bytes, from a multiple of `depth`) stays inside one swizzled chunk.
        stored_row = add(col, i)
        return [stored_row, swizzled_column(stored_row, row, swizzle, dst_type.shape[-1], dst_type.element_type)]
    if depth == 1:
        for i in range(width):
            memref.StoreOp(vector.ExtractOp(values[0], [], [i]).result, dst, at(i))
        return
    for i, column in enumerate(columns_of(values, permute)):
        vector.StoreOp(column, dst, at(i))


def _is_constant(value: ir.Value) -> bool:
    owner = value.owner
    return isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant"


def loads_first(body_ops: list) -> list:
    """A single-stage pipelined loop's body (tile-pipeline: ..., gemms, index
    arithmetic, prefetch copies of the next tile) in emission order: the
    prefetch copies and the index arithmetic and stage views they need first,
    so their global loads overlap the gemms; their LDS stores are deferred to
    the end of the iteration anyway. Arithmetic that depends on anything else
    stays in place, and so does everything when a copy needs such a value."""
    moved: list = []
    defined: set = set()  # results of the ops moved so far
    for inner in body_ops:
        movable = inner.name.startswith(("arith.", "memref.subview")) and not inner.regions or (
            inner.name == "tile.copy" and attributes.PREFETCH.is_on(inner))
        if not movable:
            continue
        inside = [v for v in inner.operands if isinstance(v.owner, ir.OpView | ir.Operation)
                  and v.owner.operation.parent == inner.parent]
        if all(v in defined for v in inside):
            moved.append(inner)
            defined.update(inner.results)
        elif inner.name == "tile.copy":
            return body_ops
    return moved + [inner for inner in body_ops if inner not in moved]


def _peeled(loop: ir.Operation) -> bool:
    """Whether tile-pipeline peeled `loop`'s last iterations: its tail follows it."""
    ops = list(loop.operation.block.operations)
    following = next((ops[i + 1] for i, other in enumerate(ops[:-1]) if other.operation == loop.operation), None)
    return following is not None and attributes.PIPELINE_TAIL.is_on(following.operation)
