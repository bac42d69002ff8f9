"""Cross-lane reduction steps as AMD's hardware does them: DPP lane moves and
permlane swaps, which read another lane's register in the VALU, instead of
`gpu.shuffle`, which ROCDL lowers to ds_swizzle/ds_bpermute (LDS-path
instructions, each waited for with s_waitcnt lgkmcnt).

A reduction over the lane bits `bits` of a wave needs every lane of a group
(lanes differing only in those bits) to end with the group's combined value,
the same bits in each. Each step below either gives a lane the value of
lane ^ bit (an exact butterfly step: the lane and its partner combine the
same two values, and `combine` is commutative), or, where a step relies on
the lower bits being reduced already, the value of a lane that holds the
same thing. What the chip offers is `compute.cross_lane_moves` of its
descriptor:

  bit 1, 2    quad_perm [1,0,3,2] / [2,3,0,1]                      (dpp16)
  bit 4       row_half_mirror (lane i of 8 reads 7 - i: i ^ 4 once bits 1
              and 2 are reduced), else row_shl:4 into banks 0 and 2 and
              row_shr:4 into banks 1 and 3 (two moves, exact)      (dpp16)
  bit 8       row_ror:8 (i - 8 mod 16 = i ^ 8)                      (dpp16)
  bit 16, 32  v_permlane16_swap / v_permlane32_swap: lane ^ 16 and lane ^ 32
                                                                   (permlane_swap)
              else, for the last two steps of a whole-wave reduction
              (every row of 16 holding one value): row_bcast:15 into rows
              1 and 3, row_bcast:31 into rows 2 and 3 combine the wave in
              lane 63, which v_readlane gives every lane      (dpp_row_bcast)

Sources: the DPP controls and their row_mask/bank_mask/bound_ctrl fields are
AMD's "AMD Instinct MI300 Instruction Set Architecture" (CDNA3) reference,
DPP section ("DPP_CTRL"), and LLVM's AMDGPUModifierSyntax.rst ("DPP16
modifiers"; row_bcast on GFX9 only); masked-off lanes of llvm.amdgcn.update.dpp
keep `old` (AMDGPUUsage.rst, "AMDGPU intrinsics"); the swaps are
v_permlane16_swap_b32 (odd rows of the first operand exchanged with even
rows of the second) and v_permlane32_swap_b32 (rows 2, 3 with rows 0, 1),
CDNA4 only (llvm/lib/Target/AMDGPU/VOP1Instructions.td, HasGFX950Insts), which
MLIR's amdgpu.permlane_swap turns into each lane reading lane ^ 16 or ^ 32
(mlir/lib/Conversion/AMDGPUToROCDL/AMDGPUToROCDL.cpp, AMDGPUPermlaneLowering).
Any other step stays a `gpu.shuffle`: bits 16 or 32 of a partial-wave
reduction on a chip without swaps (halves of a wave would need a v_readlane
per half and a select; held in SGPRs, flash attention's 64 row reductions
per iteration spilled 45 of them on gfx942), and every step at wave sizes
other than 64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir
from mlir.dialects import amdgpu, arith, rocdl

from tilemlir.passes.lower_to_gpu.api import KernelLowering, moved_by_words, shuffle_xor

Combine = Callable[[ir.Value, ir.Value], ir.Value]

# Lanes of a DPP row, and the lane bits inside one.
ROW_LANES = 16
ROW_BITS = ROW_LANES - 1
WAVE_LANES = 64  # row_bcast:31 and readlane 31/63 address a wave of 64


def _dpp(src: ir.Value, kind: amdgpu.DPPPerm, argument: ir.Attribute | None = None, *,
         old: ir.Value | None = None, row_mask: int = 0xF, bank_mask: int = 0xF) -> ir.Value:
    """One DPP move of `src`; lanes the masks leave out get `old`. With every
    lane written (full masks) and no lane reading outside its row (none of
    the moves here does), bound_ctrl changes nothing, and setting it lets
    LLVM fold the move into the VALU op that consumes it (GCNDPPCombine.cpp:
    a v_mov_b32_dpp whose old value is unused, bound_ctrl:1 and full masks).
    """
    i32 = ir.IntegerType.get_signless(32)
    every_lane = row_mask == 0xF and bank_mask == 0xF
    return amdgpu.DPPOp(src if old is None else old, src, kind, permArgument=argument,
                        row_mask=ir.IntegerAttr.get(i32, row_mask),
                        bank_mask=ir.IntegerAttr.get(i32, bank_mask),
                        bound_ctrl=ir.BoolAttr.get(every_lane)).result


def _i32(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)


def _quad_perm(src: ir.Value, selects: Sequence[int]) -> ir.Value:
    return _dpp(src, amdgpu.DPPPerm.quad_perm, ir.ArrayAttr.get([_i32(s) for s in selects]))


def _within_row(src: ir.Value, bit: int, reduced: int) -> ir.Value:
    """The value of lane ^ bit (or of a lane equal to it, given the `reduced`
    bits) for a bit inside a row."""
    if bit == 1:
        return _quad_perm(src, (1, 0, 3, 2))
    if bit == 2:
        return _quad_perm(src, (2, 3, 0, 1))
    if bit == 8:
        return _dpp(src, amdgpu.DPPPerm.row_ror, _i32(8))
    if reduced & 3 == 3:  # bit 4: lanes of a quad agree, so 7 - i stands for i ^ 4
        return _dpp(src, amdgpu.DPPPerm.row_half_mirror)
    # bit 4 exactly: banks (4 lanes) 0 and 2 read 4 lanes up, banks 1 and 3 four down.
    up = _dpp(src, amdgpu.DPPPerm.row_shl, _i32(4), bank_mask=0b0101)
    return _dpp(src, amdgpu.DPPPerm.row_shr, _i32(4), old=up, bank_mask=0b1010)


def _readlane(value: ir.Value, lane: int) -> ir.Value:
    """Lane `lane`'s value, on every lane (a wave-uniform value)."""
    i32 = ir.IntegerType.get_signless(32)
    return rocdl.ReadlaneOp(value.type, value, arith.ConstantOp(i32, lane).result).result


def exchanges_without_lds(lowering: KernelLowering) -> bool:
    """Whether `reduce_across_lanes` applies: waves of 64 with DPP16."""
    return lowering.wave_size == WAVE_LANES and "dpp16" in lowering.target.compute.cross_lane_moves


def reduce_across_lanes(lowering: KernelLowering, value: ir.Value, bits: Sequence[int],
                        combine: Combine) -> ir.Value:
    """`LoweringHooks.reduce_across_lanes` where `exchanges_without_lds`
    (module docstring)."""
    moves = set(lowering.target.compute.cross_lane_moves)
    wave_size = lowering.wave_size
    reduced = 0
    remaining = sorted(bits)
    while remaining:
        bit = remaining.pop(0)
        if bit < ROW_LANES:
            value = combine(value, moved_by_words(value, lambda word, bit=bit, done=reduced: _within_row(word, bit, done)))
        elif "permlane_swap" in moves:
            value = combine(value, moved_by_words(value, lambda word, bit=bit: amdgpu.PermlaneSwapOp(word, bit).result))
        elif "dpp_row_bcast" in moves and remaining == [32] and reduced & ROW_BITS == ROW_BITS:
            # The whole wave, every row holding one value: rows 1 and 3 combine
            # with rows 0 and 2, rows 2 and 3 with lane 31 (rows the masks leave
            # out combine with themselves: only lane 63 is read at the end).
            remaining.pop(0)
            bit |= 32
            value = combine(value, moved_by_words(
                value, lambda word: _dpp(word, amdgpu.DPPPerm.row_bcast_15, row_mask=0b1010)))
            value = combine(value, moved_by_words(
                value, lambda word: _dpp(word, amdgpu.DPPPerm.row_bcast_31, row_mask=0b1100)))
            value = moved_by_words(value, lambda word: _readlane(word, WAVE_LANES - 1))
        else:
            value = combine(value, shuffle_xor(value, bit, wave_size))
        reduced |= bit
    return value
