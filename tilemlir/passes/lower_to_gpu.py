"""tile-lower-to-gpu: tile kernels become gpu.func kernels with lane-level code.

Every `tile.kernel` becomes a `gpu.func` in a `gpu.module` (one per function)
and is replaced, in the host function, by `gpu.launch_func` with the kernel's
grid and `threads` threads along x. Inside, the block-level (collective)
program becomes one thread's program:

* `tile.alloc_shared` -> a workgroup attribution of the gpu.func;
* `tile.alloc_fragment` used as a gemm accumulator -> per-lane registers: one
  `vector<c_per_lane x T>` SSA value per instruction tile of the wave
  (`tile.layout` from tile-infer-layout says which lane holds which element),
  carried through `scf.for` loops as iter_args;
* `tile.copy` global -> shared: every thread moves `tile.vector_width` elements
  per access: one `vector.load` when the whole vector is inside the source,
  else element by element with out-of-bounds reads giving 0; it converts
  the element type (round to nearest even) and stores to LDS, between
  `gpu.barrier`s (before: the previous readers are done; after: the data is
  visible to every wave);
* `tile.copy` fragment <-> global: each lane moves the elements it holds,
  guarded so that out-of-bounds writes are dropped and reads give 0;
* `tile.fill` of a fragment -> splat registers;
* `tile.gemm` (A, B in shared memory) -> for each K step of the chosen
  instruction, per-lane operand loads from LDS in the instruction's documented
  layout and one `amdgpu.mfma` per (M, N) instruction tile of the wave;
* `scf.parallel` over a fragment's shape (TileLang's T.Parallel on a fragment)
  -> its body once per element the lane holds, with the fragment accesses
  turned into register reads and writes;
* `scf.for` (pipelined or not: stages are not used here; tile-pipeline does
  that) -> `scf.for`; other ops (arith, math, memref on global memory) are
  copied with their operands remapped.

Input invariant: tile-verify holds; in-kernel gemms carry `tile.mma` and
`tile.warp_grid` (tile-select-mma) and their accumulators `tile.layout`
(tile-infer-layout); A and B of gemms are shared buffers.
Output invariant: no tile ops remain; the module has `gpu.container_module`.

Options:
  target (string): the target (default: the module's tile.target).
  direct-lds-loads (auto|true|false): prefetch copies of a software-pipelined
    loop that convert nothing, keep their rows as they are and stay inside the
    global memref become buffer loads into LDS (amdgpu.gather_to_lds from the
    memref's buffer resource) where the chip has one of the copy's vector size
    (memory.buffer_load_lds, e.g. gfx950's 16-byte buffer_load_dwordx4 ... lds):
    no VGPRs, no LDS stores, 32-bit lane offsets; each wave waits for its own
    (vmcnt) before the loop's barrier. "auto" (default): in kernels where
    tile-infer-layout chose LDS transpose reads (infer_layout.transpose_reads_pay).
  tma-copies (bool): nvidia sm_90a: the global -> shared copies of pipelined
    loops go through TMA with mbarriers (128-byte-swizzled tiles) for mma.sync
    gemms too, not only for wgmma, which always uses them (default: false).

Example (the seed's kernel, abridged):

    "tile.kernel"() ({ ^bb0(%bx: index, %by: index): ... "tile.gemm"(...) ... gpu.yield })
        {grid = array<i64: 8, 8>, threads = 256 : i64}
    // becomes
    gpu.launch_func @mixed_precision_gemm_kernels::@mixed_precision_gemm_kernel0
        blocks in (%c8, %c8, %c1) threads in (%c256, %c1, %c1) args(%A : ..., %B : ..., %C : ...)
    gpu.module @mixed_precision_gemm_kernels {
      gpu.func @mixed_precision_gemm_kernel0(...) workgroup(%lds0 : memref<128x32xf8E4M3FNUZ, 3>, ...)
          kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
        ... %d = amdgpu.mfma 32x32x16 %a * %b + %c ...
      }
    }
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import ClassVar

from mlir import ir
from mlir.dialects import amdgpu, arith, gpu, llvm, memref, rocdl, scf, vector

from tilemlir.backends.symbols import kernel_symbol
from tilemlir.diagnostics import UserError
from tilemlir.irutil import walk
from tilemlir.lds_banks import SWIZZLE_CHUNK_BYTES
from tilemlir.passes.base import PassState, Switch, TilePass, switch_on
from tilemlir.passes.common import (
    IN_BOUNDS_ATTR,
    LAYOUT_ATTR,
    LDS_CONFLICTS_ATTR,
    VECTOR_WIDTH_ATTR,
    MmaChoice,
    SharedLayout,
    copy_vector_width,
    element_span,
    grid_problem,
    kernel_grid,
    kernel_threads,
    lds_breakdown,
    physical_shared_shape,
    shared_layout,
    warp_grid_of,
)
from tilemlir.passes.gpu_builders import (
    add,
    and_,
    bit_width,
    columns_of,
    const_index,
    convert,
    load_or_zero,
    loads_or_zeros,
    mul,
    splat,
    swizzled_column,
    udiv,
    ult,
    urem,
    zero_of,
)
from tilemlir.passes.matrix_cores import AccumulatorLayout, GemmStep, core_for
from tilemlir.passes.software_pipeline import PIPELINED_ATTR, PREFETCH_ATTR
from tilemlir.target import resolve_target
from tilemlir.target.model import is_unknown


class LoweringError(UserError):
    """A construct tile-lower-to-gpu does not handle, reported at its op."""

    def __init__(self, op, message: str):
        super().__init__(message)
        self.op = op


# --------------------------------------------------------------------------
# Fragments held in registers
# --------------------------------------------------------------------------

@dataclass
class AccumulatorFragment:
    """A gemm accumulator: per lane, one vector per instruction tile of its wave."""

    shape: tuple[int, int]
    element: ir.Type
    layout: AccumulatorLayout
    warps: tuple[int, int]  # waves along M and N
    values: list[ir.Value] = field(default_factory=list)

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.shape[0] // self.warps[0], self.shape[1] // self.warps[1]

    @property
    def tiles(self) -> tuple[int, int]:
        wm, wn = self.warp_tile
        return wm // self.layout.m, wn // self.layout.n

    @property
    def vector_type(self) -> ir.VectorType:
        return ir.VectorType.get([self.layout.c_per_lane], self.element)

    def tile_index(self, tm: int, tn: int) -> int:
        return tm * self.tiles[1] + tn

    def owned(self) -> list[tuple[int, int, int, int]]:
        """(tile, element, static row part, tm/tn) of every element a lane holds."""
        result = []
        for tm, tn in itertools.product(range(self.tiles[0]), range(self.tiles[1])):
            for j in range(self.layout.c_per_lane):
                result.append((self.tile_index(tm, tn), j, tm, tn))
        return result


@dataclass
class LaneIds:
    thread: ir.Value
    lane: ir.Value
    wave: ir.Value
    uniform_wave: ir.Value | None = None  # the wave id as LLVM sees it uniform (AMD)


# --------------------------------------------------------------------------
# The kernel emitter
# --------------------------------------------------------------------------

class KernelEmitter:
    """Emits one tile.kernel as a gpu.func (one thread's program)."""

    def __init__(self, kernel: ir.Operation, target, name: str):
        self.kernel = kernel
        self.target = target
        self.name = name
        self.threads = kernel_threads(kernel)
        self.wave_size = target.require("compute.wave_size", "lowering to lanes")
        self.env: dict = {}
        self.fragments: dict = {}  # tile-level fragment value -> AccumulatorFragment
        self.shared: dict = {}  # tile-level shared value -> workgroup memref value
        self.layouts: dict = {}  # tile-level shared value -> its SharedLayout (tile.smem_layout)
        self.lds_conflicts = 0  # LDS bank-conflict clocks of the gemms emitted (static model)
        self.ids: LaneIds | None = None
        self.core = core_for(target.family)
        self.dynamic_shared_bytes = 0  # set when the core places shared memory itself
        # Kernel arguments a core added (e.g. TMA tensor maps), with what the
        # launcher must pass for each: (type, metadata dict).
        self.extra_arguments: list[tuple[ir.Type, dict]] = []
        self.direct_lds_loads = False  # tile-lower-to-gpu{direct-lds-loads}
        self.sched_hints = True  # tile-lower-to-gpu{sched-hints}
        self.tma_copies = False  # tile-lower-to-gpu{tma-copies}
        self.fat_buffers: dict = {}  # global memref -> its buffer-resource view
        self.gpu_func: ir.Operation | None = None
        # LDS stores of tile.prefetch copies, deferred to the end of the
        # pipelined loop iteration they belong to (None: outside such a loop).
        self.deferred_stores: list | None = None
        formats = target.matrix.fp8_formats
        self.native_fp8 = tuple(formats) if isinstance(formats, tuple) else ()

    # -- analysis -------------------------------------------------------------

    def captured_values(self) -> list[ir.Value]:
        """Values used inside the kernel but defined outside it, in first-use order."""
        defined, captured, seen = set(), [], set()
        for op in walk(self.kernel):
            for region in op.regions:
                for block in region.blocks:
                    defined.update(block.arguments)
            defined.update(op.results)
        for op in walk(self.kernel):
            for operand in op.operands:
                if operand not in defined and operand not in seen:
                    seen.add(operand)
                    captured.append(operand)
        return captured

    def shared_allocs(self) -> list[ir.Operation]:
        return [op for op in walk(self.kernel) if op.name == "tile.alloc_shared"]

    # -- the gpu.func ---------------------------------------------------------

    def emit(self, gpu_module_body: ir.Block) -> tuple[str, list[ir.Value]]:
        captured = self.captured_values()
        # Constants defined outside are rematerialized inside; the rest are arguments.
        arguments = [v for v in captured if not _is_constant(v)]
        shared_ops = self.shared_allocs()
        placed = self.core.places_shared_memory
        shared_types = [] if placed else [physical_shared_type(op) for op in shared_ops]
        function_type = ir.FunctionType.get([v.type for v in arguments], [])
        with ir.InsertionPoint(gpu_module_body), self.kernel.location:
            gpu_func = gpu.GPUFuncOp(function_type, sym_name=self.name, kernel=True,
                                     known_block_size=[self.threads, 1, 1])
            gpu_func.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), len(shared_types))
            block = gpu_func.regions[0].blocks.append(*[v.type for v in arguments], *shared_types)
        self.gpu_func = gpu_func
        for value, argument in zip(arguments, block.arguments):
            self.env[value] = argument
        for op, attribution in zip(shared_ops, list(block.arguments)[len(arguments):]):
            self.shared[op.results[0]] = attribution
            self.layouts[op.results[0]] = shared_layout(op)
        with ir.InsertionPoint(block), self.kernel.location:
            for value in captured:
                if _is_constant(value):
                    self.env[value] = value.owner.clone().results[0]
            self.emit_prologue()
            if placed:
                self.dynamic_shared_bytes = self.core.place_shared(self, shared_ops)
                gpu_func.attributes["tile.dynamic_shared_bytes"] = ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(64), self.dynamic_shared_bytes)
            self.emit_block(self.kernel.regions[0].blocks[0])
            gpu.ReturnOp([])
        # The static LDS model's conflict clocks of the gemms' operand reads
        # (one main-loop iteration executes each gemm once).
        gpu_func.attributes[LDS_CONFLICTS_REPORT_ATTR] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), self.lds_conflicts)
        return self.name, arguments

    def add_kernel_argument(self, arg_type: ir.Type, metadata: dict) -> ir.Value:
        """Appends an argument to the gpu.func (after its memrefs and before
        nothing else: cores that place shared memory have no attributions) and
        returns it; `metadata` tells the launcher what to pass, see
        `TileLowerToGpu.launch`."""
        block = self.gpu_func.regions[0].blocks[0]
        argument = block.add_argument(arg_type, self.kernel.location)
        inputs = [a.type for a in block.arguments]
        self.gpu_func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, []))
        self.extra_arguments.append((arg_type, metadata))
        return argument

    def emit_prologue(self) -> None:
        body = self.kernel.regions[0].blocks[0]
        dims = [gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z]
        for argument, dim in zip(body.arguments, dims):
            self.env[argument] = gpu.BlockIdOp(dim).result
        thread = gpu.ThreadIdOp(gpu.Dimension.x).result
        self.ids = LaneIds(thread, urem(thread, self.wave_size), udiv(thread, self.wave_size))
        if self.direct_lds_loads and self.target.memory.buffer_load_lds:
            # Loads into LDS take the wave's LDS base in M0, a scalar: a wave id
            # LLVM knows is uniform (readfirstlane), made once here because
            # readfirstlane is convergent and LICM would not hoist it from loops.
            i32 = ir.IntegerType.get_signless(32)
            self.ids.uniform_wave = arith.IndexCastOp(ir.IndexType.get(), rocdl.ReadfirstlaneOp(
                i32, arith.IndexCastOp(i32, self.ids.wave).result).result).result

    # -- statements -----------------------------------------------------------

    def emit_block(self, block: ir.Block) -> None:
        for op in block.operations:
            self.emit_op(op.operation)

    def emit_op(self, op: ir.Operation) -> None:
        with op.location:
            handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
            if handler is not None:
                handler(op)
            elif op.name.startswith("tile."):
                raise LoweringError(op, f"tile-lower-to-gpu: {op.name} is not supported here")
            elif op.regions:
                raise LoweringError(op, f"tile-lower-to-gpu: {op.name} with regions is not "
                                        "supported inside a tile.kernel")
            else:
                self.clone_op(op)

    def clone_op(self, op: ir.Operation) -> ir.Operation:
        for operand in op.operands:
            self.check_scalar_use(op, operand)
        new = op.clone()
        for i, operand in enumerate(op.operands):
            new.operands[i] = self.env[operand]
        for old, result in zip(op.results, new.results):
            self.env[old] = result
        return new

    def check_scalar_use(self, op, value: ir.Value) -> None:
        if value in self.fragments:
            raise LoweringError(op, f"tile-lower-to-gpu: {op.name} uses a register fragment directly; "
                                    "access fragments inside scf.parallel over their shape")
        if value not in self.env:
            raise LoweringError(op, f"tile-lower-to-gpu: {op.name} uses a value this lowering has "
                                    "not produced")

    def op_gpu_yield(self, op) -> None:
        pass

    def op_tile_alloc_shared(self, op) -> None:
        self.env[op.results[0]] = self.shared[op.results[0]]

    def op_memref_subview(self, op) -> None:
        """A stage of a multi-buffered shared tile (tile-pipeline) is still LDS;
        its view is taken of the stored (possibly transposed, padded) buffer."""
        source = op.operands[0]
        if source not in self.shared:
            self.clone_op(op)
            return
        stored = self.shared[source]
        stored_type = ir.MemRefType(stored.type)
        logical = list(ir.MemRefType(op.results[0].type).shape)
        plane = list(reversed(logical)) if self.layouts[source].transposed else logical
        row_stride = stored_type.shape[-1]
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        view_type = ir.MemRefType.get(plane, stored_type.element_type,
                                      layout=ir.StridedLayoutAttr.get(dynamic, [row_stride, 1]),
                                      memory_space=stored_type.memory_space)
        stage = self.env[list(op.operands)[1]]
        view = memref.SubViewOp(view_type, stored, [stage], [], [], [dynamic, 0, 0],
                                [1, *plane], [1, 1, 1]).result
        self.shared[op.results[0]] = view
        self.env[op.results[0]] = view
        self.layouts[op.results[0]] = self.layouts[source]

    def op_tile_alloc_fragment(self, op) -> None:
        result = op.results[0]
        if LAYOUT_ATTR not in op.attributes:
            raise LoweringError(op, "tile-lower-to-gpu: this fragment has no tile.layout (run "
                                    "tile-infer-layout; only gemm accumulators are held in "
                                    "registers so far)")
        layout = ir.DictAttr(op.attributes[LAYOUT_ATTR])
        m, n, k = list(ir.DenseI64ArrayAttr(layout["instruction"]))
        wm, wn = list(ir.DenseI64ArrayAttr(layout["warps"]))
        memref_type = ir.MemRefType(result.type)
        try:  # a hand-written tile.layout may name an instruction the family has no layout for
            lanes = self.core.accumulator_layout(m, n, k, self.wave_size,
                                                 bit_width(memref_type.element_type))
        except ValueError as error:
            raise LoweringError(op, f"tile-lower-to-gpu: tile.layout {layout}: {error}") from None
        fragment = AccumulatorFragment(
            (memref_type.shape[0], memref_type.shape[1]), memref_type.element_type, lanes, (wm, wn))
        zero = splat(fragment.vector_type, zero_of(fragment.element))
        count = fragment.tiles[0] * fragment.tiles[1]
        fragment.values = [zero] * count
        self.fragments[result] = fragment

    def op_tile_fill(self, op) -> None:
        buffer, value = op.operands[0], self.env[op.operands[1]]
        if buffer in self.fragments:
            fragment = self.fragments[buffer]
            filled = vector.BroadcastOp(fragment.vector_type, value).result
            fragment.values = [filled] * len(fragment.values)
            return
        if buffer in self.shared:
            self.distributed_fill(op, self.shared[buffer], value)
            return
        raise LoweringError(op, "tile-lower-to-gpu: tile.fill of this buffer is not supported")

    def op_tile_copy(self, op) -> None:
        src, dst = op.operands[0], op.operands[1]
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        src_indices = [self.env[v] for v in op.operands[2:2 + segments[2]]]
        dst_indices = [self.env[v] for v in op.operands[2 + segments[2]:]]
        if dst in self.shared and src not in self.shared and src not in self.fragments:
            if PREFETCH_ATTR in op.attributes:
                # Software-pipelined: the loop's one barrier per iteration orders it.
                self.copy_global_to_shared(op, self.env[src], src_indices, self.shared[dst],
                                           defer=self.deferred_stores, layout=self.layouts[dst])
                return
            gpu.BarrierOp()
            self.copy_global_to_shared(op, self.env[src], src_indices, self.shared[dst],
                                       layout=self.layouts[dst])
            gpu.BarrierOp()
        elif src in self.fragments and dst not in self.shared and dst not in self.fragments:
            self.copy_fragment_to_global(self.fragments[src], self.env[dst], dst_indices,
                                         in_bounds=IN_BOUNDS_ATTR in op.attributes)
        elif dst in self.fragments and src not in self.shared and src not in self.fragments:
            self.copy_global_to_fragment(self.fragments[dst], self.env[src], src_indices)
        else:
            raise LoweringError(op, "tile-lower-to-gpu: this tile.copy direction is not supported "
                                    "yet (supported: global->shared, fragment<->global)")

    def op_tile_gemm(self, op) -> None:
        self.core.emit_k_steps(self.gemm_step(op))
        self.count_lds_conflicts(op)

    def gemm_step(self, op) -> GemmStep:
        """What the core needs to emit one tile.gemm, read from the op and the
        current bindings of its shared operands."""
        a, b, c = op.operands[0], op.operands[1], op.operands[2]
        if a not in self.shared or b not in self.shared:
            raise LoweringError(op, "tile-lower-to-gpu: gemm operands A and B must be shared "
                                    "buffers (register operands are not supported yet)")
        if c not in self.fragments:
            raise LoweringError(op, "tile-lower-to-gpu: the gemm accumulator has no register layout")
        choice = MmaChoice.of(op)
        warps = warp_grid_of(op)
        if choice is None or warps is None:
            raise LoweringError(op, "tile-lower-to-gpu: tile.gemm has no tile.mma (run tile-select-mma)")
        fragment = self.fragments[c]
        transpose_a = ir.BoolAttr(op.attributes["transpose_a"]).value
        transpose_b = ir.BoolAttr(op.attributes["transpose_b"]).value
        block_k = ir.MemRefType(a.type).shape[0 if transpose_a else 1]
        wave_m, wave_n = self.wave_position(fragment)
        # A buffer stored transposed flips which index of it is K.
        layout_a, layout_b = self.layouts[a], self.layouts[b]
        stored_transpose_a = transpose_a != layout_a.transposed
        stored_transpose_b = transpose_b != layout_b.transposed
        return GemmStep(fragment, choice, self.shared[a], self.shared[b],
                        stored_transpose_a, stored_transpose_b, block_k,
                        self.ids.lane, wave_m, wave_n,
                        layout_a.transpose_read, layout_b.transpose_read,
                        layout_a.swizzle, layout_b.swizzle)

    def count_lds_conflicts(self, op) -> None:
        if LDS_CONFLICTS_ATTR in op.attributes:
            self.lds_conflicts += ir.IntegerAttr(op.attributes[LDS_CONFLICTS_ATTR]).value

    # -- scf ------------------------------------------------------------------

    def op_scf_for(self, op) -> None:
        if self.core.lower_loop(self, op):
            return
        loop = scf_for_view(op)
        carried = [v for v in self.fragments]  # every register fragment is loop-carried
        flat = [value for f in carried for value in self.fragments[f].values]
        iter_inits = [self.env[v] for v in loop["inits"]]
        new_loop = scf.ForOp(self.env[loop["lb"]], self.env[loop["ub"]], self.env[loop["step"]],
                             iter_inits + flat)
        body = new_loop.body
        self.env[loop["iv"]] = new_loop.induction_variable
        inner = list(new_loop.inner_iter_args)
        for old, new in zip(loop["iter_args"], inner[:len(iter_inits)]):
            self.env[old] = new
        self.rebind(carried, inner[len(iter_inits):])
        pipelined = PIPELINED_ATTR in op.attributes
        outer_deferred = self.deferred_stores
        self.deferred_stores = [] if pipelined else None
        with ir.InsertionPoint(body):
            if pipelined:
                # Stage i mod N was stored by iteration i-N+1 (or the prologue)
                # and the stage stored at the end of this iteration was last
                # read in iteration i-1: one barrier here orders both. Direct
                # global -> LDS loads are counted by vmcnt, not by the barrier's
                # fences: each wave waits for its own first.
                if any(inner.name == "tile.copy" and PREFETCH_ATTR in inner.attributes
                       and self.direct_lds_load(inner) for inner in loop["body_ops"]):
                    amdgpu.MemoryCounterWaitOp(load=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0))
                gpu.BarrierOp()
            single_stage = pipelined and ir.IntegerAttr(op.attributes[PIPELINED_ATTR]).value == 1
            body_ops = loads_first(loop["body_ops"]) if single_stage else loop["body_ops"]
            for inner_op in body_ops:
                if inner_op.name == "scf.yield":
                    if self.deferred_stores and single_stage:
                        # One stage: it is overwritten once every wave has read it.
                        gpu.BarrierOp()
                    for store in self.deferred_stores or ():
                        store()
                    if pipelined and self.wants_sched_hint():
                        scheduling_region_hint(body)
                    yielded = [self.env[v] for v in inner_op.operands]
                    frag_values = [value for f in carried for value in self.fragments[f].values]
                    scf.YieldOp(yielded + frag_values)
                else:
                    self.emit_op(inner_op)
        self.deferred_stores = outer_deferred
        results = list(new_loop.results)
        for old, new in zip(op.results, results[:len(iter_inits)]):
            self.env[old] = new
        self.rebind(carried, results[len(iter_inits):])

    def wants_sched_hint(self) -> bool:
        """tile-lower-to-gpu{sched-hints} on an amdgpu chip, for workgroups of at
        most one wave per SIMD: with no other wave of the workgroup to switch
        to, the order within the wave is what keeps the MFMAs fed. With two
        (f16 256x256x64 gfx950 in 8 waves) it measured worse: 0.285 -> 0.247
        by default, 0.584 -> 0.220 with direct loads and transpose reads."""
        simds = self.target.compute.simds_per_cu
        return (self.sched_hints and self.target.family == "amdgpu" and not is_unknown(simds)
                and self.threads // self.wave_size <= simds)

    def rebind(self, carried: list, values: list[ir.Value]) -> None:
        position = 0
        for key in carried:
            fragment = self.fragments[key]
            count = len(fragment.values)
            fragment.values = list(values[position:position + count])
            position += count

    def op_scf_parallel(self, op) -> None:
        lbs, ubs, steps, ivs, body_ops = scf_parallel_view(op)
        touched = {v for inner in walk(op) for v in inner.operands if v in self.fragments}
        if len(touched) != 1:
            raise LoweringError(op, "tile-lower-to-gpu: scf.parallel inside a kernel must iterate "
                                    "over exactly one register fragment's shape (it touches "
                                    f"{len(touched)})")
        key = next(iter(touched))
        fragment = self.fragments[key]
        bounds = [(_constant_int(lb), _constant_int(ub), _constant_int(st)) for lb, ub, st in
                  zip(lbs, ubs, steps)]
        if bounds != [(0, fragment.shape[0], 1), (0, fragment.shape[1], 1)]:
            raise LoweringError(op, "tile-lower-to-gpu: scf.parallel over a fragment must cover "
                                    f"exactly its {fragment.shape[0]}x{fragment.shape[1]} shape "
                                    "with step 1")
        self.for_each_owned(fragment, lambda row, col, tile_i, j: self.emit_parallel_body(
            op, body_ops, ivs, key, fragment, row, col, tile_i, j))

    def emit_parallel_body(self, op, body_ops, ivs, key, fragment, row, col, tile_i, j) -> None:
        self.env[ivs[0]] = row
        self.env[ivs[1]] = col
        for inner in body_ops:
            if inner.name == "scf.reduce":
                if inner.operands:
                    raise LoweringError(inner, "tile-lower-to-gpu: scf.parallel reductions are "
                                               "not supported")
                continue
            if inner.name == "memref.load" and inner.operands[0] == key:
                self.require_owned_indices(inner, list(inner.operands)[1:], ivs)
                with inner.location:
                    self.env[inner.results[0]] = vector.ExtractOp(
                        fragment.values[tile_i], [], [j]).result
            elif inner.name == "memref.store" and inner.operands[1] == key:
                self.require_owned_indices(inner, list(inner.operands)[2:], ivs)
                with inner.location:
                    fragment.values[tile_i] = vector.InsertOp(
                        self.env[inner.operands[0]], fragment.values[tile_i], [], [j]).result
            else:
                self.emit_op(inner.operation)

    def require_owned_indices(self, op, indices, ivs) -> None:
        if list(indices) != list(ivs):
            raise LoweringError(op, "tile-lower-to-gpu: inside scf.parallel a fragment must be "
                                    "indexed by the loop's own induction variables")

    # -- fragments <-> lanes -------------------------------------------------

    def wave_position(self, fragment: AccumulatorFragment) -> tuple[ir.Value, ir.Value]:
        """The lane's wave's (row, column) in the fragment's wave grid."""
        _, wn = fragment.warps
        return udiv(self.ids.wave, wn), urem(self.ids.wave, wn)

    def for_each_owned(self, fragment: AccumulatorFragment, body) -> None:
        """Calls body(row, col, tile, element) for every element the lane holds;
        row and col are index values within the fragment."""
        wave_m, wave_n = self.wave_position(fragment)
        wtm, wtn = fragment.warp_tile
        layout = fragment.layout
        base_row = add(mul(wave_m, wtm), layout.lane_row(self.ids.lane))
        base_col = add(mul(wave_n, wtn), layout.lane_col(self.ids.lane))
        for tile_i, j, tm, tn in fragment.owned():
            row = add(base_row, tm * layout.m + layout.row_offset(j))
            col = add(base_col, tn * layout.n + layout.col_offset(j))
            body(row, col, tile_i, j)

    def copy_fragment_to_global(self, fragment, dst: ir.Value, offsets: list[ir.Value],
                                in_bounds: bool = False) -> None:
        dst_type = ir.MemRefType(dst.type)
        rows, cols = self.memref_dims(dst)

        def store(row, col, tile_i, j):
            gr, gc = add(offsets[0], row), add(offsets[1], col)
            value = vector.ExtractOp(fragment.values[tile_i], [], [j]).result
            self.guarded(None if in_bounds else and_(ult(gr, rows), ult(gc, cols)),
                         lambda: memref.StoreOp(convert(value, fragment.element,
                                                        dst_type.element_type, self.native_fp8),
                                                dst, [gr, gc]))

        self.for_each_owned(fragment, store)

    def copy_global_to_fragment(self, fragment, src: ir.Value, offsets: list[ir.Value]) -> None:
        src_type = ir.MemRefType(src.type)
        rows, cols = self.memref_dims(src)

        def load(row, col, tile_i, j):
            gr, gc = add(offsets[0], row), add(offsets[1], col)
            value = load_or_zero(
                and_(ult(gr, rows), ult(gc, cols)), fragment.element,
                lambda: convert(memref.LoadOp(src, [gr, gc]).result, src_type.element_type,
                                fragment.element, self.native_fp8))
            fragment.values[tile_i] = vector.InsertOp(value, fragment.values[tile_i], [], [j]).result

        self.for_each_owned(fragment, load)

    def memref_dims(self, value: ir.Value) -> list[ir.Value]:
        memref_type = ir.MemRefType(value.type)
        dims = []
        for axis, extent in enumerate(memref_type.shape):
            if extent == ir.ShapedType.get_dynamic_size():
                dims.append(memref.DimOp(value, const_index(axis)).result)
            else:
                dims.append(const_index(extent))
        return dims

    # -- shared memory ---------------------------------------------------------

    def distributed_accesses(self, shape: list[int], width: int, depth: int = 1):
        """Yields (row, col, guard) index values for this thread's accesses when
        the threads sweep a rows x cols tile in blocks of `depth` rows x `width`
        elements (`depth` divides rows)."""
        rows, cols = shape
        per_row = cols // width
        total = rows // depth * per_row
        rounds = -(-total // self.threads)
        for r in range(rounds):
            linear = add(self.ids.thread, r * self.threads)
            guard = None
            if (r + 1) * self.threads > total:
                guard = ult(linear, const_index(total))
            yield mul(udiv(linear, per_row), depth), mul(urem(linear, per_row), width), guard

    def copy_global_to_shared(self, op, src: ir.Value, offsets: list[ir.Value], dst: ir.Value,
                              layout: SharedLayout, defer: list | None = None) -> None:
        """Every thread loads its vectors from global memory and stores them to
        LDS; with `defer`, the stores are queued to run later (at the end of a
        pipelined iteration) so the loads overlap the matrix instructions."""
        src_type, dst_type = ir.MemRefType(src.type), ir.MemRefType(dst.type)
        # The window is the tile-level destination's shape: the stored buffer
        # may be transposed and its rows padded.
        shape = list(ir.MemRefType(op.operands[1].type).shape)
        if len(shape) != 2:
            raise LoweringError(op, "tile-lower-to-gpu: only 2-D copies into shared memory are "
                                    "supported")
        width = _vector_width(op, shape[1], src_type.element_type)
        transposed, swizzle = layout.transposed, layout.swizzle
        depth = 1
        if transposed:
            depth = transposed_store_depth(shape, width, bit_width(dst_type.element_type),
                                           self.threads)
        vector_type = ir.VectorType.get([width], src_type.element_type)
        rows, cols = self.memref_dims(src)
        if IN_BOUNDS_ATTR in op.attributes:  # tile-tiling proved every window inside
            rows = cols = None

        def load(row, col) -> list[ir.Value]:
            """The `depth` converted row vectors of this thread's block."""
            return [convert(self.load_vector_or_zeros(
                        src, [add(offsets[0], add(row, j)), add(offsets[1], col)], rows, cols,
                        vector_type), src_type.element_type, dst_type.element_type,
                        self.native_fp8) for j in range(depth)]

        if defer is not None and self.direct_lds_load(op) is not None:
            self.copy_direct_to_lds(op, src, offsets, width)
            return
        for row, col, guard in self.distributed_accesses(shape, width, depth):
            if defer is not None:
                # Load now (guarded accesses past the end read zeros), store later.
                loaded = load(row, col) if guard is None else loads_or_zeros(
                    guard, [ir.VectorType.get([width], dst_type.element_type)] * depth,
                    lambda row=row, col=col: load(row, col))
                defer.append(lambda values=loaded, row=row, col=col, guard=guard: self.guarded(
                    guard, lambda: store_tile_block(values, dst, row, col, transposed, swizzle)))
                continue
            self.guarded(guard, lambda row=row, col=col: store_tile_block(
                load(row, col), dst, row, col, transposed, swizzle))

    # -- global -> LDS without registers (buffer_load ... lds) -----------------

    def direct_lds_load(self, op) -> str | None:
        """The load-into-LDS instruction a prefetch copy can use, or None: the
        chip has one of width x element bytes (memory.buffer_load_lds), this
        lowering was asked to use them, the copy converts nothing, stores its
        rows as they are (not transposed) into a stage of a multi-buffered
        tile, and reads inside the global memref only (tile.in_bounds: the
        instruction cannot give zeros past an edge)."""
        if not self.direct_lds_loads or IN_BOUNDS_ATTR not in op.attributes:
            return None
        src_type, dst_type = ir.MemRefType(op.operands[0].type), ir.MemRefType(op.operands[1].type)
        owner = op.operands[1].owner
        if src_type.element_type != dst_type.element_type or len(dst_type.shape) != 2 or not (
                isinstance(owner, ir.OpView | ir.Operation) and owner.name == "memref.subview"
                and owner.operands[0] in self.shared) or self.layouts[owner.operands[0]].transposed:
            return None
        span = buffer_span_bytes(src_type)
        if span is None or span >= 2 ** 31:
            return None  # buffer offsets are 32-bit: larger tensors keep the register path
        stored = ir.MemRefType(self.shared[owner.operands[0]].type)
        if stored.shape[0] < 2:
            return None  # one stage: it must be read before it is refilled (registers wait)
        width = _vector_width(op, dst_type.shape[1], src_type.element_type)
        name = BUFFER_LOAD_LDS.get(width * bit_width(src_type.element_type) // 8)
        row_bytes = stored.shape[-1] * bit_width(stored.element_type) // 8
        if name not in self.target.memory.buffer_load_lds or row_bytes % BUFFER_LOAD_LDS_BYTES[name]:
            return None
        return name

    def copy_direct_to_lds(self, op, src: ir.Value, offsets: list[ir.Value], width: int) -> None:
        """The wave writes consecutive `width`-element slots of the stage's
        stored rows (padding included) in lane order, as loads into LDS do;
        each lane loads the global address of its own slot (a padding slot
        loads the row's first vector again, into the padding)."""
        subview = op.operands[1].owner
        stored = self.shared[subview.operands[0]]
        stage = self.env[subview.operands[1]]
        stored_type = ir.MemRefType(stored.type)
        _, rows, stride = stored_type.shape
        cols = ir.MemRefType(op.operands[1].type).shape[1]
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        plane = memref.SubViewOp(
            ir.MemRefType.get([rows, stride], stored_type.element_type,
                              layout=ir.StridedLayoutAttr.get(dynamic, [stride, 1]),
                              memory_space=stored_type.memory_space),
            stored, [stage], [], [], [dynamic, 0, 0], [1, rows, stride], [1, 1, 1]).result
        per_row = stride // width
        total = rows * per_row
        vector_type = ir.VectorType.get([width], stored_type.element_type)
        wave = self.ids.uniform_wave or self.ids.wave
        # Through a buffer resource: 32-bit per-lane offsets (buffer_load ... lds)
        # instead of 64-bit addresses.
        buffer = self.fat_buffer(src)
        for r in range(-(-total // self.threads)):
            linear = add(self.ids.thread, r * self.threads)
            first = add(mul(wave, self.wave_size), r * self.threads)  # lane 0's slot
            row, slot = udiv(linear, per_row), urem(linear, per_row)
            col = mul(slot, width)
            padding = arith.CmpIOp(arith.CmpIPredicate.uge, col, const_index(cols)).result
            # Swizzled rows (no padding) hold at slot col the column it swaps with.
            col = swizzled_column(row, col, self.layouts[subview.operands[0]].swizzle, stride,
                                  stored_type.element_type)
            source_col = arith.SelectOp(padding, const_index(0), col).result
            dst_indices = [udiv(first, per_row), mul(urem(first, per_row), width)]

            def issue(row=row, source_col=source_col, dst_indices=dst_indices) -> None:
                amdgpu.GatherToLDSOp(buffer, [add(offsets[0], row), add(offsets[1], source_col)],
                                     plane, dst_indices, vector_type)
            guard = ult(linear, const_index(total)) if (r + 1) * self.threads > total else None
            self.guarded(guard, issue)

    def fat_buffer(self, src: ir.Value) -> ir.Value:
        """`src` as a buffer resource (amdgpu.fat_raw_buffer_cast), made once, at
        the kernel's entry when `src` is a kernel argument."""
        if src not in self.fat_buffers:
            entry = self.gpu_func.regions[0].blocks[0]
            at_entry = isinstance(src, ir.BlockArgument) and src.owner == entry
            with ir.InsertionPoint.at_block_begin(entry) if at_entry else ir.InsertionPoint.current:
                self.fat_buffers[src] = amdgpu.FatRawBufferCastOp(src).result
        return self.fat_buffers[src]

    @staticmethod
    def load_vector_or_zeros(src, indices, rows, cols, vector_type) -> ir.Value:
        """`width` consecutive elements of a row; elements outside the memref
        read as 0. Fast path: the whole vector is inside -> one vector.load;
        with no bounds (rows is None) that is all there is."""
        if rows is None:
            return vector.LoadOp(vector_type, src, indices).result
        width = vector_type.shape[0]
        element = vector_type.element_type
        row, col = indices
        inside = and_(ult(row, rows), ult(add(col, width - 1), cols))
        branch = scf.IfOp(inside, [vector_type], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp([vector.LoadOp(vector_type, src, indices).result])
        with ir.InsertionPoint(branch.else_block):
            scalars = []
            for i in range(width):
                column = add(col, i)
                scalars.append(load_or_zero(and_(ult(row, rows), ult(column, cols)), element,
                                            lambda column=column: memref.LoadOp(src, [row, column]).result))
            scf.YieldOp([vector.FromElementsOp(vector_type, scalars).result])
        return branch.results[0]

    def distributed_fill(self, op, dst: ir.Value, value: ir.Value) -> None:
        shape = list(ir.MemRefType(dst.type).shape)
        if len(shape) != 2:
            raise LoweringError(op, "tile-lower-to-gpu: only 2-D shared fills are supported")
        gpu.BarrierOp()
        for row, col, guard in self.distributed_accesses(shape, 1):
            self.guarded(guard, lambda row=row, col=col: memref.StoreOp(value, dst, [row, col]))
        gpu.BarrierOp()

    @staticmethod
    def guarded(guard: ir.Value | None, body) -> None:
        if guard is None:
            body()
            return
        branch = scf.IfOp(guard)
        with ir.InsertionPoint(branch.then_block):
            body()
            scf.YieldOp([])

LDS_CONFLICTS_REPORT_ATTR = "tile.lds_bank_conflicts_per_iteration"


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
                     transposed: bool, swizzle: int = 0) -> None:
    """Stores consecutive row vectors of the logical tile from (row, col) on:
    one vector store per row (at its swizzled column, tile.smem_layout's
    swizzle), or, into a transposed buffer, one store per stored row (logical
    column) of the elements the rows hold in that column."""
    if not transposed:
        dst_type = ir.MemRefType(dst.type)
        width = ir.VectorType(values[0].type).shape[0]
        # A swizzle moves whole 16-byte chunks: wider vectors (a converting
        # copy's, e.g. 16 fp8 -> 16 f16) are stored a chunk at a time.
        piece = min(width, SWIZZLE_CHUNK_BYTES * 8 // bit_width(dst_type.element_type)) if swizzle else width
        for j, value in enumerate(values):
            stored_row = add(row, j)
            for start in range(0, width, piece):
                part = value if piece == width else vector.ExtractStridedSliceOp(
                    ir.VectorType.get([piece], dst_type.element_type), value, [start], [piece], [1]).result
                vector.StoreOp(part, dst, [stored_row, swizzled_column(
                    stored_row, add(col, start), swizzle, dst_type.shape[-1], dst_type.element_type)])
        return
    width, depth = ir.VectorType(values[0].type).shape[0], len(values)
    if depth == 1:
        for i in range(width):
            memref.StoreOp(vector.ExtractOp(values[0], [], [i]).result, dst, [add(col, i), row])
        return
    for i, column in enumerate(columns_of(values)):
        vector.StoreOp(column, dst, [add(col, i), row])


def buffer_span_bytes(memref_type: ir.MemRefType) -> int | None:
    """Bytes from a memref's base to one past its last element, strides and
    offset included (what a buffer resource of it must cover: the element
    count understates a strided view), or None when not static or when an
    element lies below the base (a negative stride: buffer offsets are unsigned)."""
    span = element_span(memref_type)
    if span is None or span[0] < 0 or any(s < 0 for s in memref_type.get_strides_and_offset()[0]):
        return None
    return max(0, span[1] + 1) * max(1, bit_width(memref_type.element_type) // 8)


# Loads into LDS by bytes per lane (memory.buffer_load_lds).
BUFFER_LOAD_LDS = {4: "buffer_load_dword", 12: "buffer_load_dwordx3", 16: "buffer_load_dwordx4"}
BUFFER_LOAD_LDS_BYTES = {name: size for size, name in BUFFER_LOAD_LDS.items()}


def _vector_width(op, cols: int, element: ir.Type) -> int:
    """tile-infer-layout's choice, or the same rule when it did not run."""
    if VECTOR_WIDTH_ATTR in op.attributes:
        return ir.IntegerAttr(op.attributes[VECTOR_WIDTH_ATTR]).value
    return copy_vector_width(cols, bit_width(element))


def _is_constant(value: ir.Value) -> bool:
    owner = value.owner
    return isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant"


def _constant_int(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    return None


def scf_for_view(op: ir.Operation) -> dict:
    body = op.regions[0].blocks[0]
    arguments = list(body.arguments)
    operands = list(op.operands)
    return {
        "lb": operands[0], "ub": operands[1], "step": operands[2], "inits": operands[3:],
        "iv": arguments[0], "iter_args": arguments[1:],
        "body_ops": [o.operation for o in body.operations],
    }


# llvm.amdgcn.sched.group.barrier's mask bit for MFMA/WMMA (LLVM AMDGPUUsage,
# "AMDGPU Intrinsics"; AMDGPUIGroupLP.cpp's SchedGroupMask::MFMA).
SCHED_GROUP_MFMA = 0x8


def scheduling_region_hint(body: ir.Block) -> None:
    """End a pipelined loop's body with one `rocdl.sched.group.barrier`
    grouping all of its MFMAs, a group that orders nothing.

    What it changes is how llc-22 schedules the region: GCNSchedStage::
    initGCNRegion (GCNSchedStrategy.cpp) schedules a region that holds a
    SCHED_GROUP_BARRIER or IGLP_OPT with the IGroupLP DAG mutation in place
    of the default mutations, among them the clustering of neighbouring
    loads and stores. Unclustered, the LDS reads of the next K step and the
    global loads of the next stage spread between the MFMAs instead of
    issuing in bursts that leave the matrix core waiting on them. Measured
    with bench/amd_vs_triton.py (mfma_busy_ratio, without -> with, no spills
    either way): f16/bf16 128x128x64 gfx942 0.663 -> 0.692, fp8 128x128x128
    gfx942 0.661 -> 0.701, f16 256x256x64 gfx950 0.721 -> 0.751, fp8
    128x128x128 gfx950 0.637 -> 0.650, f16 128x128x32 gfx90a 0.736 -> 0.736.
    Interleaving patterns that order the groups (one MFMA then one LDS
    read, one global load per two MFMAs, ...) measured worse on most of
    these (e.g. 0.692 -> 0.516 on f16 gfx942), so none is imposed."""
    mfmas = sum(1 for op in body.operations if op.operation.name.startswith(("amdgpu.mfma",
                                                                            "amdgpu.scaled_mfma")))
    if mfmas:
        rocdl.SchedGroupBarrier(SCHED_GROUP_MFMA, mfmas, 0)


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
            inner.name == "tile.copy" and PREFETCH_ATTR in inner.attributes)
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


def reads_transposed(kernel: ir.Operation) -> bool:
    """Whether a gemm of the kernel reads a shared buffer with LDS transpose reads."""
    return any(shared_layout(op).transpose_read for op in walk(kernel) if op.name == "tile.alloc_shared")


def scf_parallel_view(op: ir.Operation):
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    operands = list(op.operands)
    lbs = operands[:segments[0]]
    ubs = operands[segments[0]:segments[0] + segments[1]]
    steps = operands[segments[0] + segments[1]:segments[0] + segments[1] + segments[2]]
    body = op.regions[0].blocks[0]
    return lbs, ubs, steps, list(body.arguments), [o.operation for o in body.operations]


@dataclass(frozen=True)
class TileLowerToGpu(TilePass):
    name: ClassVar[str] = "tile-lower-to-gpu"
    summary: ClassVar[str] = "Lower tile kernels to gpu.func with amdgpu.mfma, launched by gpu.launch_func"

    target: str = ""
    direct_lds_loads: Switch = "auto"
    sched_hints: bool = True
    tma_copies: bool = False

    def run(self, module: ir.Operation, state: PassState) -> None:
        kernels = [op for op in walk(module) if op.name == "tile.kernel"]
        if not kernels:
            return
        target = resolve_target(module, self.target)
        module.attributes["gpu.container_module"] = ir.UnitAttr.get()
        by_function: dict = {}
        for kernel in kernels:
            function = kernel.parent
            while function.name != "func.func":
                function = function.parent
            by_function.setdefault(ir.StringAttr(function.attributes["sym_name"]).value, []).append(kernel)
        body = module.regions[0].blocks[0]
        # Emitted names are identifiers whatever the function is called
        # (backends/symbols.py), and new: not a symbol of the module, nor the
        # name a function's host launcher takes in C++ (MetaX).
        taken = set()
        for op in body.operations:
            if "sym_name" in op.attributes:
                symbol = ir.StringAttr(op.attributes["sym_name"]).value
                taken |= {symbol, kernel_symbol(symbol)}

        def fresh(base: str) -> str:
            name, suffix = kernel_symbol(base), 0
            while name in taken:
                suffix += 1
                name = kernel_symbol(f"{base}_{suffix}")
            taken.add(name)
            return name

        for function_name, function_kernels in by_function.items():
            with module.location:
                module_name = fresh(f"{function_name}_kernels")
                gpu_module = gpu.GPUModuleOp(module_name, ip=ir.InsertionPoint(body))
                gpu_block = gpu_module.regions[0].blocks.append()
            for index, kernel in enumerate(function_kernels):
                name = fresh(f"{function_name}_kernel{index}")
                if not self.check_resources(kernel, target, state):
                    continue
                try:
                    emitter = KernelEmitter(kernel, target, name)
                    emitter.direct_lds_loads = switch_on(self.direct_lds_loads, reads_transposed(kernel))
                    emitter.tma_copies = self.tma_copies
                    emitter.sched_hints = self.sched_hints
                    _, arguments = emitter.emit(gpu_block)
                except LoweringError as error:
                    state.error(error.op, str(error))
                    continue
                self.launch(kernel, module_name, name, arguments,
                            emitter.dynamic_shared_bytes, emitter)
                kernel.erase()
            if state.failed:
                return

    @staticmethod
    def check_resources(kernel: ir.Operation, target, state: PassState) -> bool:
        """Shared memory and threads against the descriptor: the seed article's
        "compiles, then crashes at run time" becomes a compile-time error."""
        allocs = [(op, 1) for op in walk(kernel) if op.name == "tile.alloc_shared"]
        limit = target.require("memory.shared_bytes_per_workgroup", "the LDS budget")
        ok = True
        if allocs and lds_breakdown(allocs)[0] > limit:
            shared, account, _ = lds_breakdown(allocs)
            state.error(kernel, f"tile-lower-to-gpu: this kernel needs {shared} bytes of LDS, "
                                f"{target.name} allows {limit}; by buffer: {account}")
            ok = False
        threads = kernel_threads(kernel)
        too_large = grid_problem(kernel_grid(kernel), threads, target)
        if too_large is not None:
            state.error(kernel, f"tile-lower-to-gpu: this kernel's grid is too large: {too_large}")
            ok = False

        # Unpublished (MetaX: third-party figures disagree): the limit cannot be checked.
        most = target.compute.max_threads_per_workgroup
        if not is_unknown(most) and threads > most:
            state.error(kernel, f"tile-lower-to-gpu: this kernel has {threads} threads, "
                                f"{target.name} allows {most} per workgroup")
            ok = False
        return ok

    @staticmethod
    def launch(kernel: ir.Operation, module_name: str, name: str, arguments: list[ir.Value],
               dynamic_shared_bytes: int = 0, emitter: KernelEmitter | None = None) -> None:
        """The gpu.launch_func of a lowered kernel. Arguments a core added
        (`KernelEmitter.add_kernel_argument`) get a null pointer here and their
        metadata in the gpu.func's `tile.kernel_arguments` (a launcher supplies
        them: e.g. TMA tensor maps of the kernel's memref arguments)."""
        grid = kernel_grid(kernel) + [1] * (3 - len(kernel_grid(kernel)))
        threads = kernel_threads(kernel)
        with ir.InsertionPoint(kernel), kernel.location:
            sizes = [const_index(v) for v in grid]
            block = [const_index(threads), const_index(1), const_index(1)]
            dynamic = None
            if dynamic_shared_bytes:
                dynamic = arith.ConstantOp(ir.IntegerType.get_signless(32), dynamic_shared_bytes).result
            extra = emitter.extra_arguments if emitter is not None else []
            placeholders = [llvm.ZeroOp(arg_type).result for arg_type, _ in extra]
            gpu.LaunchFuncOp([module_name, name], tuple(sizes), tuple(block), arguments + placeholders,
                             dynamic_shared_memory_size=dynamic)
        if extra:
            entries = [json.dumps(_argument_metadata(spec, len(arguments) + i, emitter))
                       for i, (_, spec) in enumerate(extra)]
            emitter.gpu_func.attributes[KERNEL_ARGUMENTS_ATTR] = ir.ArrayAttr.get(
                [ir.StringAttr.get(e) for e in entries])


KERNEL_ARGUMENTS_ATTR = "tile.kernel_arguments"


def _argument_metadata(spec: dict, position: int, emitter: KernelEmitter) -> dict:
    """JSON-able metadata of an added kernel argument: values in it (a memref
    the argument describes) become their kernel-argument positions."""
    block = emitter.gpu_func.regions[0].blocks[0]
    positions = {argument: i for i, argument in enumerate(block.arguments)}
    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, ir.Value):
            return {"kernel_argument": positions[value]}
        return value
    return {"position": position, **plain(spec)}

