"""Control flow, GPU ids and barriers, lane exchanges (gpu.shuffle, DPP,
permlane swaps, readlane), affine.apply and amdgpu.mfma for the SIMT emulator.

Divergence: a structured op whose condition or bounds differ between active
lanes runs its regions with a narrower lane mask (`Frame.mask`) and merges
the results per lane; memory side effects only happen in active lanes
(emu_memory.access). Uniform conditions and bounds (the common case) run
the region once with plain Python control flow.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from tilemlir.runtime import mfma_layouts, wmma_layouts
from tilemlir.runtime.emu_core import (
    INDEX,
    EmulatorError,
    SanitizerError,
    UnsupportedOp,
    attr_int,
    handles,
    lane_axis,
    merge,
    require_whole_waves,
    value_type,
)


def _uniform(values, mask) -> bool:
    for value in values:
        if value.shape[0] == 1:
            continue
        active = value if mask is None else value[mask]
        if active.size and not (active == active[0]).all():
            return False
    return True


def _first_active(value: np.ndarray, mask) -> int:
    if value.shape[0] == 1 or mask is None:
        return value.reshape(-1)[0].item()
    return value[np.argmax(mask)].item()


# --------------------------------------------------------------------------
# scf
# --------------------------------------------------------------------------

@handles("scf.yield", "scf.condition")
def _yield(compiler, op):
    values = compiler.slots_of(op.operands)  # scf.condition: the condition, then the values

    def step(frame):
        vals = frame.vals
        frame.yielded = [vals[v] for v in values]
    return step


@handles("scf.for")
def _for(compiler, op):
    lower, upper, stride, *inits = compiler.slots_of(op.operands)
    (iv, *carried_slots), body = compiler.compile_region(op.regions[0])
    outs = compiler.slots_of(op.results)

    def step(frame):
        vals = frame.vals
        lo, hi, st = vals[lower], vals[upper], vals[stride]
        carried = [vals[i] for i in inits]
        outer = frame.mask
        if _uniform((lo, hi, st), outer):
            first, last, by = (_first_active(v, outer) for v in (lo, hi, st))
            if by <= 0:
                raise EmulatorError(f"scf.for with step {by}", op)
            dtype = lo.dtype
            for value in range(first, last, by):
                vals[iv] = np.array([value], dtype=dtype)
                for s, v in zip(carried_slots, carried):
                    vals[s] = v
                body(frame)
                carried = frame.yielded
        else:
            threads = frame.wg.threads
            index = np.array(np.broadcast_to(lo, (threads,)))
            hi, st = np.broadcast_to(hi, (threads,)), np.broadcast_to(st, (threads,))
            while True:
                active = index < hi if outer is None else outer & (index < hi)
                if not active.any():
                    break
                frame.mask = active
                vals[iv] = index
                for s, v in zip(carried_slots, carried):
                    vals[s] = v
                body(frame)
                carried = [merge(active, y, c) for y, c in zip(frame.yielded, carried)]
                index = np.where(active, index + st, index)
            frame.mask = outer
        for s, v in zip(outs, carried):
            vals[s] = v
    return step


@handles("scf.if")
def _if(compiler, op):
    condition = compiler.slot(op.operands[0])
    _, then_body = compiler.compile_region(op.regions[0])
    else_body = compiler.compile_region(op.regions[1])[1] if len(op.regions[1].blocks) else None
    outs = compiler.slots_of(op.results)

    def step(frame):
        vals = frame.vals
        cond = vals[condition]
        outer = frame.mask
        results: list = []
        if _uniform((cond,), outer):
            if _first_active(cond, outer):
                then_body(frame)
                results = frame.yielded
            elif else_body is not None:
                else_body(frame)
                results = frame.yielded
        else:
            then_mask = cond if outer is None else outer & cond
            else_mask = ~cond if outer is None else outer & ~cond
            then_results = else_results = None
            if then_mask.any():
                frame.mask = then_mask
                then_body(frame)
                then_results = frame.yielded
            if else_body is not None and else_mask.any():
                frame.mask = else_mask
                else_body(frame)
                else_results = frame.yielded
            frame.mask = outer
            if then_results is None:
                results = else_results or []
            elif else_results is None:
                results = then_results
            else:
                results = [merge(then_mask, t, e) for t, e in zip(then_results, else_results)]
        for s, v in zip(outs, results):
            vals[s] = v
    return step


@handles("scf.while")
def _while(compiler, op):
    inits = compiler.slots_of(op.operands)
    before_args, before = compiler.compile_region(op.regions[0])
    after_args, after = compiler.compile_region(op.regions[1])
    outs = compiler.slots_of(op.results)

    def step(frame):
        vals = frame.vals
        carried = [vals[i] for i in inits]
        outer = frame.mask
        active = outer
        results: list = [None] * len(outs)
        while True:
            frame.mask = active
            for s, v in zip(before_args, carried):
                vals[s] = v
            before(frame)
            cond, *forwarded = frame.yielded
            if _uniform((cond,), active):
                if not _first_active(cond, active):
                    results = [merge(active, f, r) for f, r in zip(forwarded, results)]
                    break
            else:
                everyone = np.ones(frame.wg.threads, bool) if active is None else active
                done = everyone & ~cond
                results = [merge(done, f, r) for f, r in zip(forwarded, results)]
                active = everyone & cond
            frame.mask = active
            for s, v in zip(after_args, forwarded):
                vals[s] = v
            after(frame)
            carried = [merge(active, y, c) for y, c in zip(frame.yielded, carried)]
        frame.mask = outer
        for s, v in zip(outs, results):
            vals[s] = v
    return step


# --------------------------------------------------------------------------
# gpu
# --------------------------------------------------------------------------

def _dimension(op) -> int:
    text = str(op.attributes["dimension"])  # #gpu<dim x>
    return "xyz".index(text[-2])


def _thread_ids(wg, d: int) -> np.ndarray:
    bx, by = wg.block[0], wg.block[1]
    return (wg.lanes % bx, (wg.lanes // bx) % by, wg.lanes // (bx * by))[d]


_IDS = {
    "gpu.thread_id": lambda wg, d: _thread_ids(wg, d),
    "gpu.block_id": lambda wg, d: np.array([wg.block_id[d]], INDEX),
    "gpu.block_dim": lambda wg, d: np.array([wg.block[d]], INDEX),
    "gpu.grid_dim": lambda wg, d: np.array([wg.grid[d]], INDEX),
    "gpu.global_id": lambda wg, d: wg.block_id[d] * wg.block[d] + _thread_ids(wg, d),
}
_WAVE_IDS = {
    "gpu.lane_id": lambda wg: wg.lanes % wg.wave_size,
    "gpu.subgroup_id": lambda wg: wg.lanes // wg.wave_size,
    "gpu.subgroup_size": lambda wg: np.array([wg.wave_size], INDEX),
    "gpu.num_subgroups": lambda wg: np.array([-(-wg.threads // wg.wave_size)], INDEX),
}


@handles(*_IDS)
def _ids(compiler, op):
    fn, d = _IDS[op.name], _dimension(op)
    out = compiler.slot(op.results[0])

    def step(frame):
        frame.vals[out] = fn(frame.wg, d)
    return step


@handles(*_WAVE_IDS)
def _wave_ids(compiler, op):
    fn = _WAVE_IDS[op.name]
    out = compiler.slot(op.results[0])

    def step(frame):
        frame.vals[out] = fn(frame.wg)
    return step


@handles("rocdl.readfirstlane")
def _readfirstlane(compiler, op):
    """The value of the first active lane of each wave, on every lane of it."""
    source, out = compiler.slot(op.operands[0]), compiler.slot(op.results[0])

    def step(frame):
        wg = frame.wg
        values = np.broadcast_to(np.asarray(frame.vals[source]), (wg.threads,))
        active = np.ones(wg.threads, dtype=bool) if frame.mask is None else frame.mask
        waves = values.reshape(-1, wg.wave_size)
        first = waves[np.arange(waves.shape[0]), np.argmax(active.reshape(-1, wg.wave_size), axis=1)]
        frame.vals[out] = np.repeat(first, wg.wave_size)
    return step


@handles("gpu.barrier", "amdgpu.lds_barrier")
def _barrier(compiler, op):
    """gpu.barrier orders the workgroup's LDS and global accesses;
    amdgpu.lds_barrier (fences restricted to LDS) its LDS accesses alone, so a
    global access that only it separates from another lane's is a race."""
    global_too = op.name == "gpu.barrier"

    def step(frame):
        if frame.mask is not None and not frame.mask.all():
            lane = int(np.argmin(frame.mask))
            raise SanitizerError(
                f"{op.name} in divergent control flow: not reached by "
                f"{frame.wg.describe_lane(lane)}", op)
        for buffer in frame.wg.shared:
            if buffer.shadow is not None:
                buffer.shadow.barrier()
        if global_too and frame.wg.clock is not None:  # orders this workgroup's global accesses too
            frame.wg.clock.barrier()
    return step


@handles("llvm.intr.trap")
def _trap(compiler, op):
    """A trap (tile-lower-to-gpu's form of a kernel's `assert`): the launch
    fails where an active lane reaches it, naming the assert's line."""
    def step(frame):
        if frame.mask is None or frame.mask.any():
            lane = 0 if frame.mask is None else int(np.argmax(frame.mask))
            raise SanitizerError(f"device assert failed (llvm.intr.trap) in {frame.wg.describe_lane(lane)}", op)
    return step


@handles("gpu.return", "func.return")
def _return(compiler, op):
    if op.parent is not None and op.parent.name not in ("gpu.func", "func.func"):
        raise UnsupportedOp(f"'{op.name}' inside a nested region (early return)", op)


SHUFFLE_SOURCE = {  # gpu.shuffle modes: the source lane, counted from the segment's first (reference.py too)
    "xor": lambda lane, offset: lane ^ offset,
    "up": lambda lane, offset: lane - offset,
    "down": lambda lane, offset: lane + offset,
    "idx": lambda lane, offset: offset,
}


@handles("gpu.shuffle")
def _shuffle(compiler, op):
    """A wave shuffle: each wave is cut into segments of `width` lanes (a power
    of two up to the wave size, the same in every lane); a lane reads the value
    of the source lane its mode names inside its own segment (xor: own ^
    offset, idx: offset, down: own + offset, up: own - offset, counted from
    the segment's first lane), or keeps its own value with `valid` false when
    that lane is outside the segment (or past the workgroup's last thread).
    With the sanitizer, reading a lane that divergent control flow left
    inactive is an error."""
    text = str(op.attributes["mode"])  # #gpu<shuffle_mode xor>
    source_of = SHUFFLE_SOURCE[text[text.rindex(" ") + 1:-1]]
    value, offset, width = compiler.slots_of(op.operands)
    out, valid_out = compiler.slots_of(op.results)

    def step(frame):
        wg, vals = frame.wg, frame.vals
        lanes = wg.lanes
        widths = np.unique(np.asarray(vals[width]))
        w = int(widths[0])
        if len(widths) != 1 or w < 1 or w > wg.wave_size or w & (w - 1):
            raise EmulatorError(f"gpu.shuffle width {widths.tolist()}: must be one power of two from 1 "
                                f"to the wave size ({wg.wave_size}) in every lane", op)
        in_wave = lanes % wg.wave_size
        segment = in_wave // w * w
        source = source_of(in_wave - segment, np.broadcast_to(vals[offset], lanes.shape)) + segment
        global_source = lanes - in_wave + source
        valid = (source >= segment) & (source < segment + w) & (global_source < wg.threads)
        global_source = np.where(valid, global_source, lanes)
        if compiler.sanitize and frame.mask is not None:
            reads_inactive = frame.mask & valid & ~frame.mask[global_source]
            if reads_inactive.any():
                lane = int(np.argmax(reads_inactive))
                raise SanitizerError(f"gpu.shuffle in divergent control flow: "
                                     f"{wg.describe_lane(lane)} reads lane {int(global_source[lane])}, "
                                     "which is inactive", op)
        data = np.broadcast_to(vals[value], (wg.threads,) + vals[value].shape[1:])
        vals[out] = data[global_source]
        vals[valid_out] = valid
    return step


# AMD lane moves without LDS: DPP (amdgpu.dpp -> v_mov_b32_dpp / llvm.amdgcn.update.dpp),
# permlane swaps and v_readlane. Sources: AMD's CDNA3 ISA reference ("AMD Instinct
# MI300 Instruction Set Architecture"), DPP section: DPP_CTRL (which lane each lane
# reads), ROW_MASK and BANK_MASK (rows of 16 and banks of 4 lanes of a row that
# are written; the others keep their old value), BOUND_CTRL (a lane whose source
# is out of range reads 0 when set, else keeps its old value); LLVM's
# AMDGPUModifierSyntax.rst ("DPP16 modifiers") for the same table; MLIR's
# AMDGPUToROCDL.cpp (AMDGPUPermlaneLowering) for amdgpu.permlane_swap: each lane
# reads lane ^ row_length (v_permlane16/32_swap_b32, CDNA4).
_DPP_ROW = 16


def _dpp_source(kind: str, argument, lane: np.ndarray, wave: int) -> np.ndarray:
    """Per in-wave `lane`, the in-wave lane it reads under DPP control `kind`
    (-1: out of range)."""
    row, position = lane // _DPP_ROW * _DPP_ROW, lane % _DPP_ROW
    invalid = np.full_like(lane, -1)
    if kind == "quad_perm":
        return lane // 4 * 4 + np.asarray(argument, dtype=lane.dtype)[lane % 4]
    if kind == "row_shl":
        return np.where(position + argument < _DPP_ROW, lane + argument, invalid)
    if kind == "row_shr":
        return np.where(position >= argument, lane - argument, invalid)
    if kind == "row_ror":
        return row + (position - argument) % _DPP_ROW
    if kind == "row_mirror":
        return row + _DPP_ROW - 1 - position
    if kind == "row_half_mirror":
        return lane // 8 * 8 + 7 - lane % 8
    if kind == "row_bcast_15":  # lane 15 of the row before (row 0 has none)
        return np.where(row > 0, row - 1, invalid)
    if kind == "row_bcast_31":  # lane 31, for rows 2 and 3
        return np.where(lane >= 2 * _DPP_ROW, 2 * _DPP_ROW - 1, invalid)
    if kind == "wave_shl":
        return np.where(lane + 1 < wave, lane + 1, invalid)
    if kind == "wave_shr":
        return np.where(lane >= 1, lane - 1, invalid)
    if kind == "wave_rol":
        return (lane + 1) % wave
    if kind == "wave_ror":
        return (lane - 1) % wave
    raise UnsupportedOp(f"amdgpu.dpp control '{kind}'")


def _read_lanes(frame, op, what: str, value_slot: int, in_wave_source: np.ndarray, sanitize: bool):
    """Every lane's read of `in_wave_source` (in-wave lane ids, -1: none) of its
    own wave: (the values, which lanes had a source inside the workgroup)."""
    wg, vals = frame.wg, frame.vals
    lanes = wg.lanes
    global_source = lanes - lanes % wg.wave_size + in_wave_source
    valid = (in_wave_source >= 0) & (global_source < wg.threads)
    global_source = np.where(valid, global_source, lanes)
    if sanitize and frame.mask is not None:
        reads_inactive = frame.mask & valid & ~frame.mask[global_source]
        if reads_inactive.any():
            lane = int(np.argmax(reads_inactive))
            raise SanitizerError(f"{what} in divergent control flow: {wg.describe_lane(lane)} reads lane "
                                 f"{int(global_source[lane])}, which is inactive", op)
    data = np.broadcast_to(vals[value_slot], (wg.threads,) + vals[value_slot].shape[1:])
    return data[global_source], valid


@handles("amdgpu.dpp")
def _dpp(compiler, op):
    """A DPP move: each lane reads the lane its control names in its wave;
    lanes outside row_mask x bank_mask keep `old`, and so do lanes whose
    source is out of range unless bound_ctrl (then 0)."""
    text = str(op.attributes["kind"])  # #amdgpu<dpp_perm row_ror>
    kind = text[text.rindex(" ") + 1:-1]
    argument = None
    if "permArgument" in op.attributes:
        attr = op.attributes["permArgument"]
        argument = ([int(ir.IntegerAttr(a).value) for a in ir.ArrayAttr(attr)] if kind == "quad_perm"
                    else int(ir.IntegerAttr(attr).value))
    row_mask, bank_mask = attr_int(op, "row_mask"), attr_int(op, "bank_mask")
    bound_ctrl = ir.BoolAttr(op.attributes["bound_ctrl"]).value
    old_slot, src_slot = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])
    wave = compiler.wave_size
    in_wave = np.arange(wave, dtype=INDEX)
    source = _dpp_source(kind, argument, in_wave, wave)
    written = ((row_mask >> (in_wave // _DPP_ROW)) & 1).astype(bool) \
        & ((bank_mask >> (in_wave % _DPP_ROW // 4)) & 1).astype(bool)

    def step(frame):
        vals, lanes = frame.vals, frame.wg.lanes % wave
        moved, valid = _read_lanes(frame, op, "amdgpu.dpp", src_slot, source[lanes], compiler.sanitize)
        old = np.broadcast_to(vals[old_slot], moved.shape)
        moved = np.where(lane_axis(valid, moved.ndim), moved, np.zeros_like(moved) if bound_ctrl else old)
        vals[out] = np.where(lane_axis(written[lanes], moved.ndim), moved, old)
    return step


@handles("amdgpu.permlane_swap")
def _permlane_swap(compiler, op):
    """Each lane reads lane ^ row_length (16 or 32) of its wave."""
    chip_moves = _cross_lane_moves(compiler.chip)
    if "permlane_swap" not in chip_moves:
        raise EmulatorError(f"amdgpu.permlane_swap: {compiler.chip} has no v_permlane16/32_swap "
                            f"(its cross_lane_moves: {', '.join(chip_moves) or 'none'})", op)
    row_length = attr_int(op, "row_length")
    src_slot, out = compiler.slot(op.operands[0]), compiler.slot(op.results[0])
    source = np.arange(compiler.wave_size, dtype=INDEX) ^ row_length

    def step(frame):
        require_whole_waves(frame, op, "amdgpu.permlane_swap", compiler.wave_size)
        frame.vals[out], _ = _read_lanes(frame, op, "amdgpu.permlane_swap", src_slot,
                                         source[frame.wg.lanes % compiler.wave_size], compiler.sanitize)
    return step


def _cross_lane_moves(chip: str) -> tuple[str, ...]:
    from tilemlir.targets import get_target

    return get_target(f"amdgpu:{chip}").compute.cross_lane_moves


@handles("rocdl.readlane")
def _readlane(compiler, op):
    """Lane src1 (the same in every lane) of each wave's src0, on every lane of it."""
    src_slot, lane_slot = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        wg, vals = frame.wg, frame.vals
        lanes = np.unique(np.asarray(vals[lane_slot]))
        if len(lanes) != 1 or not 0 <= int(lanes[0]) < wg.wave_size:
            raise EmulatorError(f"rocdl.readlane lane {lanes.tolist()}: must be one lane of the wave "
                                f"(0 to {wg.wave_size - 1}) in every lane", op)
        source = np.full(wg.threads, int(lanes[0]), dtype=INDEX)
        moved, valid = _read_lanes(frame, op, "rocdl.readlane", src_slot, source, compiler.sanitize)
        if not valid.all():
            lane = int(np.argmin(valid))
            raise EmulatorError(f"rocdl.readlane: {wg.describe_lane(lane)} reads lane {int(lanes[0])} of a "
                                "wave past the workgroup's last thread", op)
        vals[out] = moved
    return step


# --------------------------------------------------------------------------
# affine
# --------------------------------------------------------------------------

def compile_affine_expr(expr, operands: list[int], n_dims: int):
    """A function of the frame values computing one affine expression; operands
    are the dims then the symbols (affine.apply's operand order)."""
    if isinstance(expr, ir.AffineConstantExpr):
        constant = int(expr.value)
        return lambda vals: constant
    if isinstance(expr, ir.AffineDimExpr):
        slot = operands[expr.position]
        return lambda vals: vals[slot]
    if isinstance(expr, ir.AffineSymbolExpr):
        slot = operands[n_dims + expr.position]
        return lambda vals: vals[slot]
    lhs = compile_affine_expr(expr.lhs, operands, n_dims)
    rhs = compile_affine_expr(expr.rhs, operands, n_dims)
    if isinstance(expr, ir.AffineAddExpr):
        return lambda vals: lhs(vals) + rhs(vals)
    if isinstance(expr, ir.AffineMulExpr):
        return lambda vals: lhs(vals) * rhs(vals)
    if isinstance(expr, ir.AffineModExpr):
        return lambda vals: lhs(vals) % rhs(vals)
    if isinstance(expr, ir.AffineFloorDivExpr):
        return lambda vals: lhs(vals) // rhs(vals)
    if isinstance(expr, ir.AffineCeilDivExpr):
        return lambda vals: -((-lhs(vals)) // rhs(vals))
    raise UnsupportedOp(f"affine expression {expr}")


def _affine_results(compiler, op):
    amap = ir.AffineMapAttr(op.attributes["map"]).value
    operands = compiler.slots_of(op.operands)
    return [compile_affine_expr(e, operands, amap.n_dims) for e in amap.results]


@handles("affine.apply", "affine.min", "affine.max")
def _affine(compiler, op):
    exprs = _affine_results(compiler, op)
    out = compiler.slot(op.results[0])
    combine = {"affine.apply": None, "affine.min": np.minimum, "affine.max": np.maximum}[op.name]

    def step(frame):
        vals = frame.vals
        result = exprs[0](vals)
        for expr in exprs[1:]:
            result = combine(result, expr(vals))
        frame.vals[out] = np.asarray(result, dtype=INDEX).reshape(-1)
    return step


# --------------------------------------------------------------------------
# amdgpu.mfma
# --------------------------------------------------------------------------

_BLGP = {"none": 0, "bcast_first_32": 1, "bcast_second_32": 2, "rotate_16_right": 3,
         "bcast_first_16": 4, "bcast_second_16": 5, "bcast_third_16": 6, "bcast_fourth_16": 7}


def _mfma_operand(t: ir.Type, op) -> tuple[np.dtype, int, bool]:
    """(element dtype, values per lane, packed-integer) of an MFMA source operand;
    i32/i64 (and vectors of them) carry packed i8 values."""
    dtype, shape = value_type(t, op)
    count = int(np.prod(shape)) if shape else 1
    if dtype in (np.int32, np.int64):
        return np.dtype(np.int8), count * dtype.itemsize, True
    return dtype, count, False


def _lanes_of(value, count: int, packed: bool, threads: int) -> np.ndarray:
    """A matrix operand as (threads, values per lane); packed i32/i64 words as their i8 values."""
    value = np.broadcast_to(value, (threads,) + value.shape[1:])
    if packed:
        return np.ascontiguousarray(value).view(np.int8).reshape(threads, count)
    return value.reshape(threads, count)


@handles("amdgpu.mfma")
def _mfma(compiler, op):
    m, n, k, blocks = (attr_int(op, name) for name in ("m", "n", "k", "blocks"))
    cbsz, abid = attr_int(op, "cbsz"), attr_int(op, "abid")
    blgp_text = str(op.attributes["blgp"])
    blgp = _BLGP[blgp_text[blgp_text.rindex(" ") + 1:-1]]
    negate = tuple(name in op.attributes for name in ("negateA", "negateB", "negateC"))
    reduce_precision = "reducePrecision" in op.attributes
    a_dtype, a_count, a_packed = _mfma_operand(op.operands[0].type, op)
    b_dtype, b_count, b_packed = _mfma_operand(op.operands[1].type, op)
    c_shape = value_type(op.operands[2].type, op)[1]
    chip = compiler.chip
    kinds = [mfma_layouts.operand_kind(d, chip, reduce_precision) for d in (a_dtype, b_dtype)]
    instr = None
    if None not in kinds:
        instr = mfma_layouts.find_instruction(chip, m, n, k, blocks, kinds[0], kinds[1])
    if instr is None:
        raise EmulatorError(
            f"no MFMA instruction {m}x{n}x{k} with {blocks} block(s) and operands "
            f"{op.operands[0].type}, {op.operands[1].type} on {chip}", op)
    c_count = int(np.prod(c_shape)) if c_shape else 1
    if (a_count, b_count, c_count) != (instr.per_lane, instr.per_lane, instr.results_per_lane):
        raise EmulatorError(
            f"{instr.name} takes {instr.per_lane} A/B and {instr.results_per_lane} C values per "
            f"lane, not {a_count}, {b_count}, {c_count}", op)
    if str(value_type(op.operands[2].type, op)[0]) != {"f32": "float32", "i32": "int32",
                                                       "f64": "float64"}[instr.acc]:
        raise EmulatorError(f"{instr.name} accumulates in {instr.acc}, not "
                            f"{op.operands[2].type}", op)
    a_slot, b_slot, c_slot = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        wg, vals = frame.wg, frame.vals
        require_whole_waves(frame, op, "amdgpu.mfma", mfma_layouts.WAVE)
        threads = wg.threads
        a = _lanes_of(vals[a_slot], a_count, a_packed, threads)
        b = _lanes_of(vals[b_slot], b_count, b_packed, threads)
        c = _lanes_of(vals[c_slot], c_count, False, threads)
        d = mfma_layouts.execute(instr, a, b, c, cbsz=cbsz, abid=abid, blgp=blgp,
                                 negate=negate)
        vals[out] = d.reshape((threads,) + c_shape)
    return step


# --------------------------------------------------------------------------
# amdgpu.wmma (RDNA, wave32)
# --------------------------------------------------------------------------

@handles("amdgpu.wmma")
def _wmma(compiler, op):
    m, n, k = (attr_int(op, name) for name in ("m", "n", "k"))
    if ("subwordOffset" in op.attributes and attr_int(op, "subwordOffset")) or "clamp" in op.attributes:
        raise EmulatorError("amdgpu.wmma with subwordOffset or clamp is not modelled", op)
    unsigned = tuple(name in op.attributes for name in ("unsignedA", "unsignedB"))
    a_dtype, a_count, a_packed = _mfma_operand(op.operands[0].type, op)
    b_dtype, b_count, b_packed = _mfma_operand(op.operands[1].type, op)
    c_dtype, c_shape = value_type(op.operands[2].type, op)
    chip = compiler.chip
    kinds = [wmma_layouts.operand_kind(d, chip) for d in (a_dtype, b_dtype)]
    instr = None if None in kinds else wmma_layouts.find_instruction(chip, m, n, k, *kinds)
    if instr is None:
        raise EmulatorError(f"no WMMA instruction {m}x{n}x{k} with operands {op.operands[0].type}, "
                            f"{op.operands[1].type} on {chip}", op)
    c_count = int(np.prod(c_shape)) if c_shape else 1
    if (a_count, b_count, c_count) != (instr.per_lane, instr.per_lane, 8):
        raise EmulatorError(f"the {chip} WMMA takes {instr.per_lane} A/B and 8 C values per lane, "
                            f"not {a_count}, {b_count}, {c_count}", op)
    if str(c_dtype) != {"f32": "float32", "i32": "int32"}[instr.acc]:
        raise EmulatorError(f"the {chip} WMMA of {instr.a} accumulates in {instr.acc}, not "
                            f"{op.operands[2].type}", op)
    a_slot, b_slot, c_slot = compiler.slots_of(op.operands)
    out = compiler.slot(op.results[0])

    def step(frame):
        wg, vals = frame.wg, frame.vals
        require_whole_waves(frame, op, "amdgpu.wmma", wmma_layouts.WAVE)
        threads = wg.threads
        a = _lanes_of(vals[a_slot], a_count, a_packed, threads)
        b = _lanes_of(vals[b_slot], b_count, b_packed, threads)
        wave = wmma_layouts.unreplicated_wave(instr, a, b)
        if wave is not None:
            raise SanitizerError(f"amdgpu.wmma on {chip}: lanes 16-31 of wave {wave} do not repeat "
                                 "lanes 0-15 in A or B, which RDNA3 requires", op)
        c = _lanes_of(vals[c_slot], c_count, False, threads)
        vals[out] = wmma_layouts.execute(instr, a, b, c, unsigned).reshape((threads,) + c_shape)
    return step
