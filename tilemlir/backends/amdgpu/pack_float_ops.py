"""amdgpu-pack-float-ops: a register fragment's element-wise float math as vector ops.

A fragment lives in a vector register tuple (an MFMA accumulator is
`vector<16xf32>`), but an element-wise loop over it reaches the LLVM dialect
one element at a time: every element extracted, the same op applied with the
same other operand, the vector rebuilt. llc keeps those scalar. gfx90a, gfx942
and gfx950 have packed f32 instructions (`v_pk_mul_f32`, `v_pk_add_f32`,
`v_pk_fma_f32`: two lanes' worth of an op each, AMD's CDNA3 ISA, "Packed
FP32"), which llc selects for vector float ops only. Flash attention's
rescale of O by the row's factor is 64 `v_mul_f32` on gfx942 where 32
`v_pk_mul_f32` do the same, and the scores' scaling and max subtraction pair
the same way.

This pass finds, in each block, the float multiplies, adds, subtracts and
FMAs (f32 or f16) that are one op applied to every element of a vector:
element i of the op reads element i of some vectors (`llvm.extractelement`
at constant position i) and otherwise the same values for every i, with the
same fast-math flags. Widenings of bf16 elements to f32 (`llvm.fpext`,
a shift or a mask per element either way) group the same way, so the math
on a bf16 row loaded as vectors packs too. Such a group over all n elements
becomes one op on `vector<n>` (the shared values splatted), placed before
the group's first op; each element's uses read the vector op's element i
instead. A subtraction of a shared operand becomes the addition of its
negation, computed once, the same value (CDNA has packed adds and no packed
subtract). A shared operand that is a multiply is computed once for the
whole vector: it loses `contract`, which would let llc fuse it into each
element's add (layernorm's x - sum/n: a `v_fmac_f32` per element where one
multiply and packed adds do). Groups over aligned pairs of elements only
(a fragment's loop guarded in part) become `vector<2>` ops. Each element
is computed by the same op on the same operands as before, so results are
bit-identical, except that a product llc would have fused into its users
is now rounded on its own (as the reference engine and the emulator
compute it); on chips without packed f32 llc splits the vector op back
into the scalar ones. The pass repeats
until nothing changes, so a chain of such ops (scale, then subtract the max)
becomes a chain of vector ops. LLVM's SLP vectorizer would pack these too,
but it also packs index arithmetic into 16-bit pairs (`v_pk_mul_lo_u16`),
which lengthened every GEMM main loop (bench/amd_vs_triton.py --defaults:
f16 1024^3 gfx942 busy 0.533 -> 0.514); this pass packs float math only.

Input invariant: the LLVM dialect (after amdgpu-contract-float-ops). Output:
as described; other ops untouched. No options.

    %e0 = llvm.extractelement %acc[%c0 : i64] : vector<2xf32>
    %m0 = llvm.fmul %e0, %s : f32
    %e1 = llvm.extractelement %acc[%c1 : i64] : vector<2xf32>
    %m1 = llvm.fmul %e1, %s : f32
    // becomes
    %v = llvm.fmul %acc, splat(%s) : vector<2xf32>
    %m0 = llvm.extractelement %v[0] ...  %m1 = llvm.extractelement %v[1] ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import constant_int, fastmath_flags, llvm_constant, walk
from tilemlir.passes.base import PassState, TilePass

PACKED_OPS = ("llvm.fmul", "llvm.fadd", "llvm.fsub", "llvm.intr.fma")
PACKED_TYPES = ("f32", "f16")
FLAGS = "fastmathFlags"
# What the LLVM dialect's `fast` stands for.
FAST_FLAGS = frozenset({"nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"})
CONVERSIONS = {"llvm.fpext": ("bf16", "f32")}
# Rounds of packing: a chain of element-wise ops packs one op per round.
MAX_ROUNDS = 16


def _element(value: ir.Value) -> tuple[ir.Value, int] | None:
    """(vector, position) where `value` is an llvm.extractelement at a constant position."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "llvm.extractelement":
        return None
    position = constant_int(owner.operation.operands[1])
    return None if position is None else (owner.operation.operands[0], position)


def _signature(op: ir.Operation):
    """(key, element position, vector length) of an element-wise float op,
    or None: the key is the op's name, flags and, per operand, either the
    vector it reads element i of or the value it reads for every i."""
    if op.name not in PACKED_OPS + tuple(CONVERSIONS) or len(op.results) != 1:
        return None
    element_type = op.results[0].type
    if op.name in CONVERSIONS:
        operand_name, result_name = CONVERSIONS[op.name]
        if str(element_type) != result_name:
            return None
        operand_type = ir.Type.parse(operand_name)
    elif str(element_type) in PACKED_TYPES:
        operand_type = element_type
    else:
        return None
    operands, position, length = [], None, None
    for operand in op.operands:
        found = _element(operand)
        if found is None:
            operands.append(("same", operand))
            continue
        vector, index = found
        if not isinstance(vector.type, ir.VectorType):
            return None
        vector_type = ir.VectorType(vector.type)
        if vector_type.rank != 1 or vector_type.element_type != operand_type \
                or position not in (None, index) or length not in (None, vector_type.shape[0]):
            return None
        position, length = index, vector_type.shape[0]
        operands.append(("element", vector))
    if position is None:
        return None
    flags = tuple(sorted((name, str(op.attributes[name])) for name in op.attributes))
    return (op.name, flags, tuple(operands)), position, length


def _shuffle(vector: ir.Value, mask: list[int], element_type: ir.Type) -> ir.Value:
    return ir.Operation.create("llvm.shufflevector", results=[ir.VectorType.get([len(mask)], element_type)],
                               operands=[vector, vector], attributes={"mask": ir.DenseI32ArrayAttr.get(mask)}).result


def _splat(value: ir.Value, length: int) -> ir.Value:
    """`value` in every element of a vector<length> (insert, then a zero shuffle)."""
    vector_type = ir.VectorType.get([1], value.type)
    poison = ir.Operation.create("llvm.mlir.poison", results=[vector_type]).result
    one = ir.Operation.create("llvm.insertelement", results=[vector_type],
                              operands=[poison, value, llvm_constant(0, ir.IntegerType.get_signless(32))]).result
    return _shuffle(one, [0] * length, value.type)


def _computed_once(value: ir.Value) -> ir.Value:
    """`value`, a vector op's shared operand; a multiply loses `contract`
    (module docstring)."""
    owner = value.owner
    if isinstance(owner, ir.OpView) and owner.operation.name == "llvm.fmul":
        flags = fastmath_flags(owner.operation, FLAGS)
        if "fast" in flags:  # every flag, contract among them
            flags = (flags - {"fast"}) | FAST_FLAGS
        if "contract" in flags:
            text = ", ".join(sorted(flags - {"contract"})) or "none"
            owner.operation.attributes[FLAGS] = ir.Attribute.parse(f"#llvm.fastmath<{text}>")
    return value


def _negated(value: ir.Value) -> ir.Value:
    return ir.Operation.create("llvm.fneg", results=[value.type], operands=[value]).result


def _pack(key, positions: list[int], ops: list[ir.Operation], whole: int, first: ir.Operation) -> None:
    """Replaces `ops` (elements `positions` of the group `key` of a vector of
    `whole` elements) by one vector op of len(positions) elements, placed
    before `first`, the earliest of them in their block: every operand is
    used by all of them, so it is defined before it."""
    op_name, _, operands = key
    element_type = first.results[0].type
    length = len(positions)
    with ir.InsertionPoint(first), first.location:
        vector_operands = []
        # a - s for a shared s as a + (-s), the same value, s negated once:
        # CDNA has packed f32 adds and no packed subtract. (A vector - vector
        # subtraction stays one: instcombine would fold the negation back.)
        subtracts_shared = op_name == "llvm.fsub" and operands[1][0] == "same"
        for i, (kind, value) in enumerate(operands):
            if kind == "same":
                value = _computed_once(value)
                vector_operands.append(_splat(_negated(value) if subtracts_shared and i == 1 else value, length))
                continue
            if length != whole:  # an aligned pair of the vector's elements
                value = _shuffle(value, positions, ir.VectorType(value.type).element_type)
            vector_operands.append(value)
        packed = ir.Operation.create("llvm.fadd" if subtracts_shared else op_name,
                                     results=[ir.VectorType.get([length], element_type)],
                                     operands=vector_operands,
                                     attributes={name: first.attributes[name] for name in first.attributes}).result
        for k, op in enumerate(ops):
            element = ir.Operation.create("llvm.extractelement", results=[element_type],
                                          operands=[packed, llvm_constant(k, ir.IntegerType.get_signless(64))]).result
            op.results[0].replace_all_uses_with(element)
    for op in ops:
        op.erase()


def _pack_block(block: ir.Block) -> int:
    """One round over `block`: packs every complete group; returns how many ops it replaced."""
    groups: dict = {}
    order: dict = {}
    for index, op in enumerate(block.operations):
        op = op.operation
        signature = _signature(op)
        if signature is None:
            continue
        key, position, length = signature
        order[op] = index
        groups.setdefault((key, length), {}).setdefault(position, []).append(op)
    replaced, gone = 0, set()
    for (key, length), by_position in groups.items():
        if length < 2 or any(len(ops) != 1 for ops in by_position.values()):
            continue  # the same element computed twice: left to CSE
        if any(kind == "same" and value in gone for kind, value in key[2]):
            continue  # reads an op packed this round: the next round sees its new form
        if set(by_position) == set(range(length)):
            chunks = [list(range(length))]
        else:
            chunks = [[p, p + 1] for p in range(0, length - 1, 2) if p in by_position and p + 1 in by_position]
        for positions in chunks:
            ops = [by_position[p][0] for p in positions]
            gone.update(op.results[0] for op in ops)
            _pack(key, positions, ops, length, min(ops, key=order.__getitem__))
            replaced += len(positions)
    return replaced


def pack_float_ops(module: ir.Operation) -> int:
    """Packs the module's element-wise float ops (module docstring); returns
    how many scalar ops became elements of vector ops."""
    # Packing adds and erases ops, never blocks.
    blocks = [block for op in walk(module) for region in op.regions for block in region.blocks]
    total = 0
    for _ in range(MAX_ROUNDS):
        replaced = sum(_pack_block(block) for block in blocks)
        total += replaced
        if not replaced:
            break
    return total


@dataclass(frozen=True)
class AmdgpuPackFloatOps(TilePass):
    """A fragment's element-wise float math as vector ops (module docstring)."""

    name: ClassVar[str] = "amdgpu-pack-float-ops"
    summary: ClassVar[str] = ("turn element-wise float multiplies, adds, subtracts and FMAs over every "
                              "element of a vector into one vector op (packed f32 instructions on CDNA)")

    def run(self, module: ir.Operation, state: PassState) -> None:
        pack_float_ops(module)
