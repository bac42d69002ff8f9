"""The amdgpu family's hooks into tile-lower-to-gpu (`api.LoweringHooks`):
loads into LDS without registers, a scheduling hint for pipelined loops,
barriers of pipelined loops that wait for LDS alone (`amdgpu.lds_barrier`),
and cross-lane reduction steps as DPP moves and permlane swaps (`cross_lane`).

Options (of tile-lower-to-gpu, read by amdgpu kernels only):
  direct-lds-loads (auto|true|false): prefetch copies of a software-pipelined
    loop that convert nothing, keep their rows as they are and stay inside the
    global memref become buffer loads into LDS (amdgpu.gather_to_lds from the
    memref's buffer resource, amdgpu.fat_raw_buffer_cast) where the chip has
    one of the copy's vector size (amdgpu.buffer_load_lds, e.g. gfx950's
    16-byte buffer_load_dwordx4 ... lds): no VGPRs, no LDS stores, 32-bit lane
    offsets; each wave waits for its own (vmcnt) before the loop's barrier.
    "auto" (default): in kernels where tile-infer-layout chose LDS transpose
    reads (infer_layout.transpose_reads_pay). Where they are wanted (true, or
    auto with transpose reads) and a prefetch copy cannot use them, a remark
    at the copy says why (`direct_lds_load_or_why`); the buffers filled by
    them are recorded in the gpu.func's tile.shared_storage.
  sched-hints (bool, default true): pipelined loops of workgroups with at
    most one wave per SIMD end with a scheduling-region hint
    (`scheduling_region_hint`); kernels whose loop reduces between gemms and
    whose LDS allows one wave per SIMD are scheduled for latency (`end_kernel`);
    other kernels whose pipelined loop issues matrix instructions are marked
    tile.schedule_trial: the isa stage compiles them with llc's latency
    schedule too and keeps it where llvm-mca finds the main loop faster
    (schedule.py).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import amdgpu, arith, llvm, memref, rocdl

from tilemlir.backends.amdgpu import cross_lane
from tilemlir.backends.amdgpu.schedule import LATENCY_STRATEGY
from tilemlir.diagnostics import emit_remark
from tilemlir.dialects import attributes
from tilemlir.irutil import walk
from tilemlir.passes.base import Switch, resolve_switch
from tilemlir.passes.kernel_facts import element_span
from tilemlir.passes.lower_to_gpu.api import (
    KernelLowering,
    LoweringHooks,
    LoweringOption,
    add,
    bit_width,
    const_index,
    copy_width,
    guarded,
    mul,
    swizzled_column,
    udiv,
    ult,
    urem,
)
from tilemlir.passes.shared_memory import shared_alloc_of, shared_buffer_text, shared_layout
from tilemlir.targets.model import is_stated, is_unknown

# Loads into LDS by bytes per lane (amdgpu.buffer_load_lds).
BUFFER_LOAD_LDS = {4: "buffer_load_dword", 12: "buffer_load_dwordx3", 16: "buffer_load_dwordx4"}
BUFFER_LOAD_LDS_BYTES = {name: size for size, name in BUFFER_LOAD_LDS.items()}

# llc's function attribute bounding a kernel's accumulation registers (AGPRs).
NO_AGPRS = ("amdgpu-agpr-alloc", "0")
# llvm.amdgcn.sched.group.barrier's mask bit for MFMA/WMMA (LLVM AMDGPUUsage,
# "AMDGPU Intrinsics"; AMDGPUIGroupLP.cpp's SchedGroupMask::MFMA).
SCHED_GROUP_MFMA = 0x8


class AmdgpuLoweringHooks(LoweringHooks):
    """Direct loads into LDS, the scheduling hint and LDS-only stage barriers
    (see the module docstring)."""

    options = (
        LoweringOption("direct_lds_loads", Switch, "auto",
                       "prefetch copies as buffer loads into LDS (auto: with LDS transpose reads)"),
        LoweringOption("sched_hints", bool, True,
                       "scheduling: a region hint ending pipelined loops, and llc's latency schedule "
                       "where it pays (schedule.py)"),
    )

    def __init__(self, lowering: KernelLowering):
        super().__init__(lowering)
        self.direct_lds_loads = resolve_switch(lowering.option("direct_lds_loads"),
                                          reads_transposed(lowering.kernel))
        self.uniform_wave: ir.Value | None = None  # the wave id as LLVM sees it uniform
        self.fat_buffers: dict = {}  # global memref -> its buffer-resource view
        self.remarked: set = set()  # tile.alloc_shared ops whose register fills a remark named
        self.loop_reduces = False  # a pipelined loop reduces between its gemms (`prefetch_issued`)
        self.matrix_loop = False  # a pipelined loop issues matrix instructions (`end_pipelined_iteration`)

    def begin_kernel(self) -> None:
        lowering = self.lowering
        if self.direct_lds_loads and lowering.target.family_facts.buffer_load_lds:
            # Loads into LDS take the wave's LDS base in M0, a scalar: a wave id
            # LLVM knows is uniform (readfirstlane), made once here because
            # readfirstlane is convergent and LICM would not hoist it from loops.
            i32 = ir.IntegerType.get_signless(32)
            self.uniform_wave = arith.IndexCastOp(ir.IndexType.get(), rocdl.ReadfirstlaneOp(
                i32, arith.IndexCastOp(i32, lowering.ids.wave).result).result).result

    def stage_barrier(self) -> None:
        """amdgpu.lds_barrier: its workgroup fences are restricted to LDS (the
        "amdgpu-synchronize-as" = "local" tag), so it waits for LDS accesses
        alone; gpu.barrier's acquire also invalidates the vector L0 cache on
        GFX10+ in WGP mode (gfx11 buffer_gl0_inv, gfx12 global_inv), each
        iteration, for global memory the stage barrier does not order."""
        amdgpu.LDSBarrierOp()

    def _wait_for_direct_lds_loads(self, body_ops: list) -> bool:
        """vmcnt(0) where `body_ops` prefetch with direct global -> LDS loads
        (vmcnt counts them, the barrier's fences do not); whether it did."""
        if not any(inner.name == "tile.copy" and attributes.PREFETCH.is_on(inner)
                   and self.direct_lds_load(inner) for inner in body_ops):
            return False
        amdgpu.MemoryCounterWaitOp(load=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0))
        return True

    def begin_pipelined_iteration(self, body_ops: list) -> None:
        # Each wave waits for its own loads before the stage barrier.
        self._wait_for_direct_lds_loads(body_ops)

    def after_pipelined_loop(self, body_ops: list) -> None:
        # Its last iterations loaded past the end, into stages an outer loop's
        # next prologue stores from other lanes: every wave waits for its own
        # loads, then for the others'.
        if self._wait_for_direct_lds_loads(body_ops):
            self.stage_barrier()

    def end_pipelined_iteration(self, body: ir.Block) -> None:
        self.matrix_loop = self.matrix_loop or mfma_ops(body) > 0
        if self.wants_sched_hint():
            scheduling_region_hint(body)

    def prefetch_issued(self, op: ir.Operation) -> None:
        """In a pipelined loop that also reduces (flash attention's softmax
        between its gemms), a `rocdl.sched.barrier` that nothing crosses
        keeps the prefetch's global loads where the program issued them.
        Unguarded (tile.in_bounds), llc otherwise sinks them to their LDS
        stores at the end of the iteration and waits on them there.
        Measured with bench/amd_attention_vs_triton.py's kernel (f16,
        S = 4096, 4 waves; mfma_busy_ratio with guarded copies -> in-bounds
        copies and this barrier): 128x64 gfx942 d128 0.561 -> 0.573, causal
        0.491 -> 0.520, d64 0.476 -> 0.493; gfx950 d128 0.369 -> 0.383,
        causal 0.317 -> 0.333, d64 0.281 -> 0.281; gfx90a d128 0.720 ->
        0.739; but 128x32 with 2 stages on gfx942 0.518 -> 0.454. In-bounds
        copies without the barrier measured 0.466-0.577 where these are
        0.454-0.573. GEMM loops (no reduction) keep llc's placement: there
        the barrier's early loads cost 141 VGPRs of spills (f16 256x256x64
        gfx950)."""
        loop = op.parent
        if loop is not None and loop.name == "scf.for" \
                and any(inner.name == "tile.reduce" for inner in walk(loop)):
            rocdl.sched_barrier(0)
            self.loop_reduces = True

    def end_kernel(self, gpu_func: ir.Operation, shared_bytes: int) -> None:
        """A kernel whose pipelined loop reduces between its gemms (flash
        attention) and whose LDS alone keeps it at one wave per SIMD is
        scheduled by llc for latency: "amdgpu-sched-strategy"="max-ilp" (the
        function attribute of llc's GCNMaxILPSchedStrategy) in place of the
        default strategy, which first keeps registers free for an occupancy
        the LDS does not allow. Measured with bench/amd_attention_vs_triton.py
        (mfma_busy_ratio per wave, 128x64 blocks of 4 waves, no spills either
        way): gfx942 f16 d 128 0.656 -> 0.715, d 64 0.586 -> 0.594, bf16
        d 128 0.559 -> 0.560; gfx950 d 128 0.520 -> 0.549. Any other kernel
        whose pipelined loop issues matrix instructions (GEMMs, attention at
        two waves per SIMD or more) is marked tile.schedule_trial: where the
        latency schedule pays is the loop's own matter (f16 4096^3 on gfx942
        in 8 waves: 0.720 -> 0.924; gfx950 d 64 attention: 3 -> 2 waves per
        SIMD), so the isa stage compiles both and keeps the faster
        (schedule.py). tile-lower-to-gpu{sched-hints=false} does neither."""
        if self.loop_reduces and self.lds_bound_to_one_wave(shared_bytes):
            _pass_through(gpu_func, LATENCY_STRATEGY)
        elif self.matrix_loop and self.lowering.option("sched_hints"):
            attributes.SCHEDULE_TRIAL.mark(gpu_func)
        if self.share_fits_architected():
            _pass_through(gpu_func, NO_AGPRS)

    def share_fits_architected(self) -> bool:
        """Whether each wave's share of a unified register file (a chip with
        accumulation registers whose block starts at an offset in a wave's
        allocation, amdgpu.acc_offset_granule: gfx90a and later, whose matrix
        instructions also accumulate in architected registers) fits the
        architected registers: the workgroup's waves share SIMDs (8 waves over
        4 SIMDs: 256 registers each, registers.arch_vgprs_max 256). Such a
        kernel is compiled with no AGPRs ("amdgpu-agpr-alloc"="0"): otherwise
        llc splits the share into 128 architected and 128 accumulation
        registers and copies accumulators between the two inside the loop.
        Measured with llvm-mca (mfma_busy_ratio per wave, bench/
        amd_vs_triton.py's harness, no spills either way): f16 4096^3 in
        256x256x64 blocks of 8 waves, one stage, on gfx942 0.578 -> 0.720
        (246 -> 208 registers), fp8 256x256x128 0.588 -> 0.714; gfx950 f16
        256x256x32 in 2 stages 0.593 -> 0.740 (247 -> 166); gfx90a
        256x256x32 0.734 -> 0.759. gemm_configs.wave_register_limit counts on it."""
        lowering = self.lowering
        target = lowering.target
        registers, wave = target.registers, target.compute.wave_size
        facts = (target.family_facts.acc_offset_granule, registers.vgprs_per_lane, registers.arch_vgprs_max,
                 wave, target.compute.simds_per_cu)
        if not all(is_stated(fact) for fact in facts):
            return False
        waves = -(-lowering.threads // wave)
        file = registers.vgprs_per_lane if is_unknown(registers.file_per_lane) else registers.file_per_lane
        return file // -(-waves // target.compute.simds_per_cu) <= registers.arch_vgprs_max

    def lds_bound_to_one_wave(self, shared_bytes: int) -> bool:
        """Whether the kernel's LDS allows at most one of its waves per SIMD
        (report.waves_by_lds), with the sched-hints option on."""
        from tilemlir.backends.amdgpu.report import waves_by_lds

        lowering = self.lowering
        if not lowering.option("sched_hints") or not shared_bytes:
            return False
        waves = waves_by_lds(shared_bytes, lowering.threads, lowering.target)
        return waves is not None and waves <= 1

    def byte_permute(self):
        """v_perm_b32 (llvm.amdgcn.perm): one instruction per interleaving of
        an 8-bit tile's transpose in registers, eight per 4x4 block, as
        Triton's AMD backend transposes fp8 B. The generic bit arithmetic
        came out of InstCombine and llc-22 as about 22 instructions a block
        (shifts, masks, SDWA ors around partial v_perms). Measured with
        bench/amd_vs_triton.py (mfma_busy_ratio per wave): fp8 1024^3
        64x128x128 gfx942 0.516 -> 0.557 (175 -> 113 instructions in the
        loop), fp8 16x8192x8192 16x64x256 gfx942 0.135 -> 0.172."""
        def permute(low: ir.Value, high: ir.Value, selector: int) -> ir.Value:
            i32 = ir.IntegerType.get_signless(32)
            return llvm.call_intrinsic(i32, "llvm.amdgcn.perm",
                                       [high, low, arith.ConstantOp(i32, selector).result], [], [])
        return permute

    def reduce_across_lanes(self, value, bits, combine):
        if not cross_lane.exchanges_without_lds(self.lowering):
            return super().reduce_across_lanes(value, bits, combine)
        return cross_lane.reduce_across_lanes(self.lowering, value, bits, combine)

    def copy_prefetch(self, op: ir.Operation, source: ir.Value, offsets: list[ir.Value],
                      width: int) -> bool:
        name, why = self.direct_lds_load_or_why(op)
        if name is None:
            self.remark_registers(op, why)
            return False
        self.lowering.note_shared(op.operands[1], fill=f"{name} lds")
        self.copy_direct_to_lds(op, source, offsets, width)
        return True

    def remark_registers(self, op: ir.Operation, why: str) -> None:
        """A remark, once per shared tile, when loads into LDS were wanted
        (direct-lds-loads=true, or auto with transpose reads) and a prefetch
        copy into it goes through registers."""
        alloc = shared_alloc_of(op.operands[1])
        if not self.direct_lds_loads or alloc is None or alloc in self.remarked:
            return
        self.remarked.add(alloc)
        asked = ("direct-lds-loads=auto: the kernel reads LDS with transpose reads"
                 if self.lowering.option("direct_lds_loads") == "auto" else "direct-lds-loads=true")
        emit_remark(op.location, f"tile-lower-to-gpu: this copy fills {shared_buffer_text(alloc)} through "
                                 f"registers, not with loads into LDS ({asked}): {why}",
                    origin="tile-lower-to-gpu", kind="speed")

    def wants_sched_hint(self) -> bool:
        """tile-lower-to-gpu{sched-hints}, for workgroups of at most one wave
        per SIMD: with no other wave of the workgroup to switch to, the order
        within the wave is what keeps the MFMAs fed. With two (f16 256x256x64
        gfx950 in 8 waves) it measured worse: 0.285 -> 0.247 by default,
        0.584 -> 0.220 with direct loads and transpose reads."""
        lowering = self.lowering
        simds = lowering.target.compute.simds_per_cu
        return (bool(lowering.option("sched_hints")) and not is_unknown(simds)
                and lowering.threads // lowering.wave_size <= simds)

    # -- global -> LDS without registers (buffer_load ... lds) -----------------

    def direct_lds_load(self, op: ir.Operation) -> str | None:
        """The load-into-LDS instruction a prefetch copy uses, or None
        (`direct_lds_load_or_why`)."""
        name, _ = self.direct_lds_load_or_why(op)
        return name

    def direct_lds_load_or_why(self, op: ir.Operation) -> tuple[str | None, str]:
        """The load-into-LDS instruction a prefetch copy can use, or None and
        why not: the chip has one of width x element bytes
        (amdgpu.buffer_load_lds), this lowering was asked to use them, the
        copy converts nothing, stores its rows as they are (not transposed)
        into a stage of a multi-buffered tile, and reads inside the global
        memref only (tile.in_bounds: the instruction cannot give zeros past
        an edge)."""
        lowering = self.lowering
        if not self.direct_lds_loads:
            return None, "not asked for"
        if not attributes.IN_BOUNDS.is_on(op):
            return None, ("the copy may read past the edge of the global memref, where loads into LDS "
                          f"cannot give zeros (it has no {attributes.IN_BOUNDS.name})")
        src_type, dst_type = ir.MemRefType(op.operands[0].type), ir.MemRefType(op.operands[1].type)
        if src_type.element_type != dst_type.element_type:
            return None, f"the copy converts {src_type.element_type} to {dst_type.element_type}"
        owner = op.operands[1].owner
        if len(dst_type.shape) != 2 or not (
                isinstance(owner, ir.OpView | ir.Operation) and owner.name == "memref.subview"
                and lowering.shared_buffer(owner.operands[0]) is not None):
            return None, "its destination is not a stage of a multi-buffered 2-D tile"
        if lowering.shared_layout(owner.operands[0]).transposed:
            return None, "the tile is stored transposed"
        span = buffer_span_bytes(src_type)
        if span is None or span >= 2 ** 31:
            # Buffer offsets are 32-bit: larger tensors keep the register path.
            return None, "the global memref is not static or spans 2 GiB or more (buffer offsets are 32-bit)"
        stored = ir.MemRefType(lowering.shared_buffer(owner.operands[0]).type)
        if stored.shape[0] < 2:
            return None, "the tile has one stage: it must be read before it is refilled (registers wait)"
        width = copy_width(op, dst_type.shape[1], src_type.element_type)
        lane_bytes = width * bit_width(src_type.element_type) // 8
        name = BUFFER_LOAD_LDS.get(lane_bytes)
        available = lowering.target.family_facts.buffer_load_lds
        if name not in available:
            return None, (f"{lowering.target.name} has no load into LDS of {lane_bytes} bytes per lane "
                          f"(amdgpu.buffer_load_lds: {', '.join(available) or 'none'})")
        row_bytes = stored.shape[-1] * bit_width(stored.element_type) // 8
        if row_bytes % BUFFER_LOAD_LDS_BYTES[name]:
            return None, f"its stored rows of {row_bytes} bytes are not whole {name} loads"
        return name, ""

    def copy_direct_to_lds(self, op: ir.Operation, src: ir.Value, offsets: list[ir.Value],
                           width: int) -> None:
        """The wave writes consecutive `width`-element slots of the stage's
        stored rows (padding included) in lane order, as loads into LDS do;
        each lane loads the global address of its own slot (a padding slot
        loads the row's first vector again, into the padding)."""
        lowering = self.lowering
        threads = lowering.threads
        subview = op.operands[1].owner
        stored = lowering.shared_buffer(subview.operands[0])
        stage = lowering.value_of(subview.operands[1])
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
        wave = self.uniform_wave or lowering.ids.wave
        # Through a buffer resource: 32-bit per-lane offsets (buffer_load ... lds)
        # instead of 64-bit addresses.
        buffer = self.fat_buffer(src)
        swizzle = lowering.shared_layout(subview.operands[0]).swizzle
        for r in range(-(-total // threads)):
            linear = add(lowering.ids.thread, r * threads)
            first = add(mul(wave, lowering.wave_size), r * threads)  # lane 0's slot
            row, slot = udiv(linear, per_row), urem(linear, per_row)
            col = mul(slot, width)
            padding = arith.CmpIOp(arith.CmpIPredicate.uge, col, const_index(cols)).result
            # Swizzled rows (no padding) hold at slot col the column it swaps with.
            col = swizzled_column(row, col, swizzle, stride, stored_type.element_type)
            source_col = arith.SelectOp(padding, const_index(0), col).result
            dst_indices = [udiv(first, per_row), mul(urem(first, per_row), width)]

            def issue(row=row, source_col=source_col, dst_indices=dst_indices) -> None:
                amdgpu.GatherToLDSOp(buffer, [add(offsets[0], row), add(offsets[1], source_col)],
                                     plane, dst_indices, vector_type)
            guard = ult(linear, const_index(total)) if (r + 1) * threads > total else None
            guarded(guard, issue)

    def fat_buffer(self, src: ir.Value) -> ir.Value:
        """`src` as a buffer resource (amdgpu.fat_raw_buffer_cast), made once, at
        the kernel's entry when `src` is a kernel argument."""
        if src not in self.fat_buffers:
            entry = self.lowering.entry_block
            at_entry = isinstance(src, ir.BlockArgument) and src.owner == entry
            with ir.InsertionPoint.at_block_begin(entry) if at_entry else ir.InsertionPoint.current:
                self.fat_buffers[src] = amdgpu.FatRawBufferCastOp(src).result
        return self.fat_buffers[src]


def buffer_span_bytes(memref_type: ir.MemRefType) -> int | None:
    """Bytes from a memref's base to one past its last element, strides and
    offset included (what a buffer resource of it must cover: the element
    count understates a strided view), or None when not static or when an
    element lies below the base (a negative stride: buffer offsets are unsigned)."""
    span = element_span(memref_type)
    if span is None or span[0] < 0 or any(s < 0 for s in memref_type.get_strides_and_offset()[0]):
        return None
    return max(0, span[1] + 1) * max(1, bit_width(memref_type.element_type) // 8)


def reads_transposed(kernel: ir.Operation) -> bool:
    """Whether a gemm of the kernel reads a shared buffer with LDS transpose reads."""
    return any(shared_layout(op).transpose_read for op in walk(kernel) if op.name == "tile.alloc_shared")


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
    mfmas = mfma_ops(body)
    if mfmas:
        rocdl.SchedGroupBarrier(SCHED_GROUP_MFMA, mfmas, 0)


def mfma_ops(body: ir.Block) -> int:
    """The MFMAs (plain and scaled) directly in `body`."""
    return sum(1 for op in body.operations if op.operation.name.startswith(("amdgpu.mfma", "amdgpu.scaled_mfma")))


def _pass_through(gpu_func: ir.Operation, attribute: tuple[str, str]) -> None:
    """Add the LLVM function attribute `attribute` (name, value) to `gpu_func`'s passthrough."""
    given = list(ir.ArrayAttr(gpu_func.attributes["passthrough"])) if "passthrough" in gpu_func.attributes else []
    gpu_func.attributes["passthrough"] = ir.ArrayAttr.get(
        given + [ir.ArrayAttr.get([ir.StringAttr.get(attribute[0]), ir.StringAttr.get(attribute[1])])])
