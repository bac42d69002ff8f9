"""MetaX matrix cores: the 16x16 wave64 `__builtin_mxc_mma_*` built-ins.

At the GPU level one instruction is a call to a declared external function
named like the MACA built-in, with the operands in the order MetaX's own
code generators pass them -- the **B fragment first, then A**, then C:

    %d = func.call @__builtin_mxc_mma_16x16x16f16(%b, %a, %c)
        : (vector<4xf16>, vector<4xf16>, vector<4xf32>) -> vector<4xf32>

(the MACA C++ emitter prints the call as it stands; the emulator executes it
by the layouts below). 8-bit operands are packed into 32-bit integers the way
mcTriton hands them to the `llvm.mxc.mma.*` intrinsics: four i8 in one i32
for 16x16x16i8, eight 8-bit values in `vector<2xi32>` for the K=32 forms.

Lane layouts, for a wave of 64 lanes and K values per lane kpl = K/4
(`lane // 16` is the lane's group g, `lane % 16` its index r):

* first operand X (m x k): lane holds X[r][g*kpl + i], i < kpl;
* second operand Y (k x n): lane holds Y[g*kpl + i][r];
* D (16 x 16, 32-bit): element j of lane holds D[4*g + j][r].

Each lane's operand elements are K-consecutive, in one row of A and in one
column of B (`operand_lanes`), so tile-infer-layout stores an operand whose K
runs down its columns transposed, rows padded, and every operand is read with
one vector load per lane (64 bits: 4 x 16-bit or 8 x 8-bit; 16x16x16i8's
operand is one 32-bit word).

Sources: tilelang-metax `tilelang/maca/intrinsics/layout/mma_layout.py`
(`thread_id_shared_access_64x4_to_16x16_layout_A/_B`, the 64x8 K=32 forms)
and `macro/mma_macro_generator.py` (`mma_atom` passes `B_local_buf` before
`A_local_buf` to `T.maca_mma`; `stmatrix` stores C through
`mma_store_index_map` = `..._layout_C_n_m`: C[lane % 16][4*(lane // 16) + j]);
mcTriton `MMAMACA.cpp` (4 A/B values per lane for 16-bit types, 8 for the K=32
8-bit types; 4 C values; the swapped (b, a) order for its column-major MMA
layout). With B as X and A as Y, D = B^T A^T = C^T, so lane (g, r) holds
C[r][4*g + j]: a row of C, four consecutive columns -- which is why MetaX
passes B first. That this is the same layout for every 16x16 built-in
(f16, bf16, i8 K=16 and K=32, fp8 K=32) is stated by neither source for
each instruction; the descriptor records it as an assumption.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func, vector

from tilemlir.passes.lower_to_gpu.api import (
    AccumulatorLayout,
    GemmOperands,
    MatrixCore,
    add,
    lane_operand,
    mul,
    udiv,
    urem,
)

WAVE = 64
TILE = 16  # "all the M,N are {16,16}" (mcTriton MMAMACA.cpp)
GROUPS = WAVE // TILE  # lane groups of 16 along K
BUILTIN_PREFIX = "__builtin_mxc_"


@dataclass(frozen=True)
class MetaxAccumulator(AccumulatorLayout):
    """Lane (g, r) holds row r, columns 4g .. 4g+3 of each 16x16 tile."""

    m: int = TILE
    n: int = TILE
    c_per_lane: int = TILE * TILE // WAVE

    def lane_row(self, lane: ir.Value) -> ir.Value:
        return urem(lane, TILE)

    def lane_col(self, lane: ir.Value) -> ir.Value:
        return mul(udiv(lane, TILE), self.c_per_lane)

    def row_offset(self, j: int) -> int:
        return 0

    def col_offset(self, j: int) -> int:
        return j

    def lane_terms(self):
        return ((1, TILE, 1),), ((TILE, GROUPS, self.c_per_lane),)


def builtin_name(instruction: str) -> str:
    """`mma_16x16x16f16` (a descriptor row's name) -> `__builtin_mxc_mma_16x16x16f16`."""
    return BUILTIN_PREFIX + instruction


def packed_type(count: int, element: ir.Type) -> ir.Type:
    """The type a built-in takes for `count` values of `element` per lane:
    8-bit values packed into i32 words (mcTriton's operand types), others as
    a vector."""
    if isinstance(element, ir.IntegerType) or _is_fp8(element):
        words = count * 8 // 32
        i32 = ir.IntegerType.get_signless(32)
        return i32 if words == 1 else ir.VectorType.get([words], i32)
    return ir.VectorType.get([count], element)


def _is_fp8(element: ir.Type) -> bool:
    return str(element).startswith("f8")


def pack(values: ir.Value, count: int, element: ir.Type) -> ir.Value:
    """A lane's operand vector in the built-in's operand type."""
    target = packed_type(count, element)
    if isinstance(target, ir.VectorType) and target.element_type == element:
        return values
    i32 = ir.IntegerType.get_signless(32)
    words = count // 4
    as_words = vector.BitCastOp(ir.VectorType.get([words], i32), values).result
    if words == 1:
        return vector.ExtractOp(as_words, [], [0]).result
    return as_words


class MetaxMmaCore(MatrixCore):
    """MetaX 16x16 wave64 MMAs through calls to the `__builtin_mxc_mma_*` built-ins."""

    reads_a_from_global = True  # global_a_operand

    def supported(self, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
        # K = 16 (f16, bf16, i8 on xcore1000) and K = 32 (i8 on xcore1500, fp8):
        # 4 or 8 values per lane. The f32/tf32/f64 forms (1 or 2 per lane, and an
        # f64 D layout of its own) are not lowered.
        return (m, n, blocks, wave_size) == (TILE, TILE, 1, WAVE) and k in (16, 32)

    def accumulator_layout(self, m: int, n: int, k: int, wave_size: int,
                           c_bits: int = 32) -> AccumulatorLayout:
        if not self.supported(m, n, k, 1, wave_size) or c_bits != 32:
            raise ValueError(f"no MetaX lane layout for {m}x{n}x{k} with {c_bits}-bit results")
        return MetaxAccumulator()

    def operand_lanes(self, m: int, n: int, k: int, wave_size: int, steps: int = 1):
        """Per lane (g, r): A row r and B column r, K from g * kpl, kpl
        elements each (the module docstring's layouts with B as X, A as Y;
        the same facts test/metax/maca_host.h and runtime/emu_metax.py
        execute, from tilelang-metax's `..._64x4_to_16x16_layout_A/_B`)."""
        if not self.supported(m, n, k, 1, wave_size) or steps != 1:
            return None
        per_lane = k // GROUPS
        outer = [lane % TILE for lane in range(WAVE)]
        ks = [lane // TILE * per_lane for lane in range(WAVE)]
        return (outer, ks, per_lane), (outer, ks, per_lane)

    def emit_k_steps(self, step: GemmOperands) -> None:
        fragment = step.fragment
        k = step.choice.k
        per_lane = k // GROUPS
        wtm, wtn = fragment.warp_tile
        tiles_m, tiles_n = fragment.tiles
        group = mul(udiv(step.lane, TILE), per_lane)
        a_row0 = add(mul(step.wave_m, wtm), urem(step.lane, TILE))
        b_col0 = add(mul(step.wave_n, wtn), urem(step.lane, TILE))
        a_element = step.a_global.element if step.a_global else ir.MemRefType(step.a_smem.type).element_type
        b_element = ir.MemRefType(step.b_smem.type).element_type
        callee = self.declare(builtin_name(step.choice.name), per_lane, a_element,
                              fragment.vector_type)
        for k_step in range(step.block_k // k):
            k0 = add(group, k_step * k)
            if step.a_global is not None:
                a_values = [pack(global_a_operand(step, wtm, tm, k_step * k, per_lane), per_lane, a_element)
                            for tm in range(tiles_m)]
            else:
                a_values = [pack(lane_operand(step.a_smem, add(a_row0, tm * TILE), k0, per_lane,
                                              a_element, k_contiguous=not step.transpose_a),
                                 per_lane, a_element)
                            for tm in range(tiles_m)]
            b_values = [pack(lane_operand(step.b_smem, add(b_col0, tn * TILE), k0, per_lane,
                                          b_element, k_contiguous=step.transpose_b),
                             per_lane, b_element)
                        for tn in range(tiles_n)]
            for tm, tn in itertools.product(range(tiles_m), range(tiles_n)):
                index = fragment.tile_index(tm, tn)
                # B first, then A: D = B^T A^T, i.e. the accumulator transposed (module docstring).
                fragment.values[index] = func.CallOp(
                    [fragment.vector_type], callee,
                    [b_values[tn], a_values[tm], fragment.values[index]]).result

    @staticmethod
    def declare(name: str, per_lane: int, element: ir.Type, result: ir.Type) -> ir.FlatSymbolRefAttr:
        """A private func.func declaration of the built-in in the enclosing gpu.module."""
        block = ir.InsertionPoint.current.block
        owner = block.owner
        while owner is not None and owner.name != "gpu.module":
            owner = owner.parent
        if owner is None:
            raise ValueError("MetaX MMA calls must be emitted inside a gpu.module")
        module_body = owner.regions[0].blocks[0]
        for op in module_body.operations:
            if op.operation.name == "func.func" and \
                    ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
                return ir.FlatSymbolRefAttr.get(name)
        operand = packed_type(per_lane, element)
        with ir.InsertionPoint.at_block_begin(module_body):
            func.FuncOp(name, ir.FunctionType.get([operand, operand, result], [result]),
                        visibility="private")
        return ir.FlatSymbolRefAttr.get(name)


def global_a_operand(step: GemmOperands, wtm: int, tm: int, k0: int, per_lane: int) -> ir.Value:
    """Row tile `tm`'s A operand of the K step at `k0` read from global
    memory, once, before the gemm's loop (`GlobalOperand.read`): A row
    lane mod 16, K from (lane div 16) x per_lane, as from shared memory."""

    def indices() -> tuple[ir.Value, ir.Value]:
        row = add(add(mul(step.wave_m, wtm), urem(step.lane, TILE)), tm * TILE)
        return row, add(mul(udiv(step.lane, TILE), per_lane), k0)

    return step.a_global.read((TILE, wtm, tm, k0, per_lane), indices, per_lane)

