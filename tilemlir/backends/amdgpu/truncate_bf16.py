"""amdgpu-truncate-bf16: f32 -> bf16 rounded with integer arithmetic of our own.

Only gfx950 of the amdgpu chips converts f32 to bf16 in one instruction
(`v_cvt_pk_bf16_f32`; the descriptor's `amdgpu.bf16_conversions`). Elsewhere
llc-22 expands `fptrunc float to bfloat` into five instructions per element:
the rounding bias (`v_bfe_u32`, `v_add3_u32`), a quiet copy of the input for
NaNs (`v_or_b32 0x400000`), the NaN test (`v_cmp_u_f32`) and the choice
(`v_cndmask_b32`). This pass writes the conversion out instead: a NaN input is
first replaced by the canonical quiet NaN 0x7fc00000 (so it rounds to 0x7fc0,
what torch's bf16 rounding gives), which needs no quiet copy:
four instructions per element, and the NaN test is independent of the
rounding, so llc can issue it early (where llc's expansion left a hazard wait
between each test and its choice). A bf16 row of 4096 on gfx942 issues about
100 fewer instructions a lane (layernorm 14.00 -> 12.72 per element,
bench/amd_norms_vs_triton.py).

For a finite or infinite x with bits i, the bf16 bits are the high half of
i + 0x7fff + ((i >> 16) & 1): round to nearest, ties to even (the carry into
the exponent is the rounding up to the next binade, or to infinity past the
largest bf16). The sign and -0 are kept, subnormals round like any other
value. A NaN becomes 0x7fc0, which drops its sign and payload (llc keeps
them; docs/kernels.md leaves a converted NaN's sign and payload unspecified).

Where x is an exponential (`rocdl.exp2`, `llvm.intr.exp2`, `llvm.intr.exp`;
through `llvm.select`s, non-negative constants and the block arguments every
branch passes such values to, none with the `nsz` or `fast` flag, which lets
LLVM give -0 for +0), x is +0 or more, or a quiet NaN of either sign (an
arithmetic result is never a signalling NaN: LLVM's rule, and the hardware's
with its IEEE mode, on for kernels): as an unsigned integer, every
number is at most 0x7f800000 (infinity) and every such NaN at least
0x7fc00000, so `llvm.intr.umin` with 0x7fc00000 is the NaN choice, one
instruction (`v_min_u32`) where the test and the choice take two and a hazard
wait between them. Attention's probabilities P are such values (the masked
ones selects of 0.0, joined at the causal loop's branches): gfx942's bf16
attention defaults, busy ratio per wave, d 128 0.569 -> 0.603, causal 0.567
-> 0.601, d 64 0.504 -> 0.536 (bench/amd_attention_vs_triton.py).

Input invariant: the LLVM dialect (after convert-gpu-to-rocdl). Output: on
chips without a conversion instruction, every `llvm.fptrunc` from f32 to bf16
(scalar or vector) is replaced as below; elsewhere nothing changes.
Options: target (family:chip or a descriptor path; else the module's tile.target).

    %y = llvm.fptrunc %x : f32 to bf16
    // becomes
    %nan = llvm.fcmp "uno" %x, %x
    %q = llvm.select %nan, 0x7fc00000 (as f32), %x
    %i = llvm.bitcast %q : f32 to i32
    %lsb = llvm.and (llvm.lshr %i, 16), 1
    %r = llvm.add (llvm.add %i, 0x7fff), %lsb
    %y = llvm.bitcast (llvm.trunc (llvm.lshr %r, 16) : i32 to i16) : i16 to bf16
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.irutil import element_of, llvm_constant, shaped_like, walk
from tilemlir.passes.base import PassState, TilePass
from tilemlir.targets.registry import resolve_target

ROUNDING_BIAS = 0x7FFF
QUIET_NAN = 0x7FC00000
# llvm.fcmp's predicate for "unordered" (LLVM's FCmpInst::FCMP_UNO, the
# LLVM dialect's FCmpPredicate enum).
UNORDERED = 14


def _op(name: str, result: ir.Type, *operands: ir.Value, **attributes: ir.Attribute) -> ir.Value:
    return ir.Operation.create(name, results=[result], operands=list(operands), attributes=attributes).result


# Ops whose results are +0 or more, or quiet NaNs (module docstring).
EXPONENTIALS = frozenset({"rocdl.exp2", "llvm.intr.exp2", "llvm.intr.exp"})


def _incoming(argument: ir.BlockArgument) -> list[ir.Value] | None:
    """The values the branches to `argument`'s block pass for it; None for
    an entry block's (a function's) argument, or if a predecessor ends in
    another terminator than llvm.br or llvm.cond_br."""
    block, index = argument.owner, argument.arg_number
    predecessors = list(block.predecessors)
    if not predecessors:
        return None
    values = []
    for predecessor in predecessors:
        branch = predecessor.operations[len(predecessor.operations) - 1]
        if branch.name == "llvm.br":
            values.append(branch.operands[index])
        elif branch.name == "llvm.cond_br":
            true_count = ir.DenseI32ArrayAttr(branch.attributes["operandSegmentSizes"])[1]
            for position, successor in enumerate(branch.successors):
                if successor == block:
                    values.append(branch.operands[1 + (true_count if position else 0) + index])
        else:
            return None
    return values


def _non_negative_constant(op: ir.Operation) -> bool:
    value = op.attributes["value"]
    if isinstance(value, ir.FloatAttr):
        numbers = [value.value]
    elif isinstance(value, ir.DenseFPElementsAttr):
        numbers = list(value)
    else:
        return False
    return all(number >= 0 and math.copysign(1.0, number) > 0 for number in numbers)


def _fast_math_flags(op: ir.Operation) -> set[str]:
    """The flags of `op`'s `#llvm.fastmath<...>` attribute (none: empty)."""
    if "fastmathFlags" not in op.attributes:
        return set()
    text = str(op.attributes["fastmathFlags"])
    return {flag.strip() for flag in text[text.find("<") + 1:text.rfind(">")].split(",")} - {"none"}


def is_exponential(value: ir.Value) -> bool:
    """Whether every value `value` can take is an exponential's result or a
    non-negative constant (module docstring), followed through selects and
    branch arguments (a worklist: a block argument on a cycle is settled by
    the branches that enter it)."""
    seen, work = set(), [value]
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        if isinstance(value, ir.BlockArgument):
            incoming = _incoming(value)
            if incoming is None:
                return False
            work += incoming
            continue
        op = value.owner
        if _fast_math_flags(op) & {"nsz", "fast"}:
            return False  # LLVM may then give -0 for +0
        if op.name == "llvm.select":
            work += list(op.operands)[1:]
        elif op.name not in EXPONENTIALS and not (op.name == "llvm.mlir.constant" and _non_negative_constant(op)):
            return False
    return True


def rounded_bf16(x: ir.Value, exponential: bool = False) -> ir.Value:
    """The bf16 (or vector of bf16) nearest `x` (f32, or a vector of f32), as
    the module docstring computes it, at the current insertion point; with
    `exponential`, for an `x` that `is_exponential`."""
    i32 = shaped_like(x.type, ir.IntegerType.get_signless(32))
    i16 = shaped_like(x.type, ir.IntegerType.get_signless(16))
    if exponential:
        bits = _op("llvm.intr.umin", i32, _op("llvm.bitcast", i32, x), llvm_constant(QUIET_NAN, i32))
    else:
        i1 = shaped_like(x.type, ir.IntegerType.get_signless(1))
        predicate = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), UNORDERED)
        nan = _op("llvm.fcmp", i1, x, x, predicate=predicate)
        quiet = _op("llvm.bitcast", x.type, llvm_constant(QUIET_NAN, i32))
        chosen = _op("llvm.select", x.type, nan, quiet, x)
        bits = _op("llvm.bitcast", i32, chosen)
    lsb = _op("llvm.and", i32, _op("llvm.lshr", i32, bits, llvm_constant(16, i32)), llvm_constant(1, i32))
    rounded = _op("llvm.add", i32, _op("llvm.add", i32, bits, llvm_constant(ROUNDING_BIAS, i32)), lsb)
    high = _op("llvm.trunc", i16, _op("llvm.lshr", i32, rounded, llvm_constant(16, i32)))
    return _op("llvm.bitcast", shaped_like(x.type, ir.BF16Type.get()), high)


def truncate_bf16(module: ir.Operation) -> int:
    """Replaces every f32 -> bf16 `llvm.fptrunc` of `module` (module
    docstring); returns how many."""
    changed = 0
    for op in list(walk(module)):
        if op.name != "llvm.fptrunc" or not isinstance(element_of(op.results[0].type), ir.BF16Type) \
                or not isinstance(element_of(op.operands[0].type), ir.F32Type):
            continue
        with ir.InsertionPoint(op), op.location:
            x = op.operands[0]
            op.results[0].replace_all_uses_with(rounded_bf16(x, is_exponential(x)))
        op.erase()
        changed += 1
    return changed


@dataclass(frozen=True)
class AmdgpuTruncateBf16(TilePass):
    """f32 -> bf16 with integer arithmetic where the chip has no conversion
    instruction (module docstring)."""

    name: ClassVar[str] = "amdgpu-truncate-bf16"
    summary: ClassVar[str] = ("round f32 to bf16 with four integer and compare instructions (three for an "
                              "exponential) where the chip has no conversion instruction (NaN: the canonical "
                              "quiet NaN)")

    target: str = ""

    def run(self, module: ir.Operation, state: PassState) -> None:
        target = resolve_target(module, self.target)
        if target.family != "amdgpu":
            state.error(module, f"{self.name}: {target.family}:{target.name} is not an amdgpu chip "
                                "(the pass reads the amdgpu descriptor's bf16_conversions)")
            return
        if not target.family_facts.bf16_conversions:
            truncate_bf16(module)
