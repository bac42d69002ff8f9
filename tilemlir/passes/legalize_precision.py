"""tile-legalize-precision: make every in-kernel gemm's types ones the chip takes.

Mixed precision is explicit after this pass:

* **fp8 encodings.** gfx942's matrix unit reads the FNUZ fp8 encodings,
  gfx950's and MetaX's the OCP ones (the descriptor's `matrix.fp8_formats`).
  A gemm operand staged through shared memory (or held in a fragment) in the
  other encoding is converted by the copy that fills it (tile.copy converts element types,
  rounding to nearest even):
  - FNUZ -> OCP (e.g. on gfx950): not exact: OCP's exponent bias is one
    lower, so the FNUZ values below OCP's smallest normal with an odd last
    mantissa bit (16 of E4M3FNUZ's encodings, 8 of E5M2FNUZ's) would round.
    An error by default, with the fixes in the message: convert the inputs,
    `fp8-fallback=f16` to compute exactly in f16, or `allow-fp8-rounding`
    to accept the rounding;
  - OCP -> FNUZ (e.g. on gfx942): OCP E4M3 reaches 448 but E4M3FNUZ only 240,
    so values would saturate; this is an error by default, with the fix in the
    message: convert the inputs, or `fp8-fallback=f16` to compute exactly in f16;
  - a chip without fp8 matrix instructions computes in f16 (every fp8 value is
    exact in f16) by default; so does one where whether it has them is not
    publicly known (the conservative assumption, said in a remark), and one
    without an instruction for the gemm's pair of types (mixed fp8, e5m2 x
    e4m3, on a chip with e4m3 x e4m3 and e5m2 x e5m2 only; fp8 x f16) but with
    an f16 one (a remark says so; `fp8-fallback=error` refuses). The
    operand buffer becomes f16; a copy that filled it from a wider type (the
    seed's f16 -> fp8 copy) still rounds to fp8 first: it fills the fp8 buffer
    as written, and a copy after it widens that into the f16 one (exact), so
    the gemm multiplies the same values as in fp8.
  Option `fp8-fallback`: `auto` (the rules above), `f16` (always compute fp8
  gemms in f16), `error` (reject any conversion, unknown fp8 support and a
  pair of types the chip has no instruction for).
  Option `allow-fp8-rounding` (default false): under `auto`, convert FNUZ
  operands to OCP and accept the rounding of those small values.
* **accumulators** are f32 for float inputs and i32 for i8; a narrower one is
  refused unless `allow-narrow-accumulator` (the seed's "wrong results from
  low-precision accumulation" becomes a compile-time error).
* **explicit casts**: every copy that changes the element type is marked
  `tile.cast = {from = T1, to = T2, rounding = "nearest_even"}`, including the
  output rounding of the accumulator into C.

Input invariant: tile-verify holds; gemms to legalize are inside kernels
(run after tile-tiling). Output invariant: in-kernel gemm operand types are
among the chip's matrix instruction types (or a diagnostic was emitted).

Options:
  fp8-fallback=auto|f16|error   allow-fp8-rounding=false   allow-narrow-accumulator=false
  target=FAMILY:NAME

Example (gfx950, allow-fp8-rounding=true):

    %a = "tile.alloc_shared"() : () -> memref<128x64xf8E4M3FNUZ, #shared>
    "tile.copy"(%A, %a, ...)
    // becomes
    %a = "tile.alloc_shared"() : () -> memref<128x64xf8E4M3FN, #shared>
    "tile.copy"(%A, %a, ...) {tile.cast = {from = f8E4M3FNUZ, rounding = "nearest_even", to = f8E4M3FN}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir

from tilemlir.dialects import attributes, tile
from tilemlir.irutil import walk
from tilemlir.passes.base import PassOptionError, PassState, TilePass
from tilemlir.passes.kernel_facts import enclosing_kernel
from tilemlir.targets import resolve_target
from tilemlir.targets.model import FP8_KIND, is_unknown

FNUZ_TO_OCP = {"f8E4M3FNUZ": "f8E4M3FN", "f8E5M2FNUZ": "f8E5M2"}
OCP_TO_FNUZ = {v: k for k, v in FNUZ_TO_OCP.items()}
POLICIES = ("auto", "f16", "error")
# FNUZ encodings that round when converted to OCP (the values below OCP's
# smallest normal, 2^-6 for E4M3 and 2^-14 for E5M2, with an odd last mantissa
# bit); counted with ml_dtypes' float8 types, every encoding converted and back.
INEXACT_FNUZ_TO_OCP = {"f8E4M3FNUZ": 16, "f8E5M2FNUZ": 8}


class Rejected(Exception):
    pass


@dataclass(frozen=True)
class TileLegalizePrecision(TilePass):
    name: ClassVar[str] = "tile-legalize-precision"
    summary: ClassVar[str] = "Legal fp8 encodings, wide accumulators and explicit casts for the target"

    fp8_fallback: str = "auto"
    allow_fp8_rounding: bool = False
    allow_narrow_accumulator: bool = False
    target: str = ""

    def run(self, module: ir.Operation, state: PassState) -> None:
        if self.fp8_fallback not in POLICIES:
            raise PassOptionError(f"{self.name}: fp8-fallback must be one of {', '.join(POLICIES)}, "
                                  f"got '{self.fp8_fallback}'")
        gemms = [op for op in walk(module) if op.name == "tile.gemm" and enclosing_kernel(op)]
        if gemms:
            target = resolve_target(module, self.target)
            for op in gemms:
                self.legalize_gemm(op, target, state)
        for op in walk(module):
            if op.name == "tile.copy":
                self.mark_cast(op)

    # -- gemm operands -------------------------------------------------------

    def legalize_gemm(self, op: ir.Operation, target, state: PassState) -> None:
        self.check_accumulator(op, state)
        a_type = str(ir.MemRefType(op.operands[0].type).element_type)
        b_type = str(ir.MemRefType(op.operands[1].type).element_type)
        if a_type not in FP8_KIND and b_type not in FP8_KIND:
            return
        formats = target.matrix.fp8_formats
        if is_unknown(formats):
            if self.fp8_fallback == "error":
                state.error(op, f"tile-legalize-precision: whether {target} has fp8 matrix instructions "
                                "is not publicly known; give a descriptor with --target-desc, or let "
                                "fp8-fallback=auto compute in f16")
                return
            # Unknown, so assume none: f16 holds every fp8 value exactly.
            state.remark(op, f"tile-legalize-precision: whether {target} has fp8 matrix instructions is "
                             "not publicly known; gemms of fp8 operands are computed exactly in f16 (a "
                             "descriptor with matrix.fp8_formats, from --target-desc, lets them use fp8 "
                             "instructions)", kind="assumption", fact=(str(target), "matrix.fp8_formats"))
            formats = ()
        try:
            wanted = self.legal_types(a_type, b_type, tuple(formats), str(target))
        except Rejected as error:
            state.error(op, str(error))
            return
        wanted = self.pair_or_f16(op, wanted, target, state)
        if wanted is None:
            return
        for operand, old, new in zip(op.operands[:2], (a_type, b_type), wanted):
            if old != new:
                self.retype_shared(op, operand, new, state)

    def pair_or_f16(self, op: ir.Operation, wanted: tuple[str, str], target,
                    state: PassState) -> tuple[str, str] | None:
        """`wanted` when the chip has a matrix instruction for that pair; else,
        when f16 holds both operands exactly (fp8 or f16 each) and the chip has
        an f16 instruction, f16 x f16 under `auto` (a remark says so) and an
        error under `error`. None after an error."""
        accum = str(ir.TypeAttr(op.attributes["accum_dtype"]).value)
        exact_in_f16 = all(t in FP8_KIND or t == "f16" for t in wanted)
        if (wanted == ("f16", "f16") or not exact_in_f16 or target.mma_candidates(*wanted, accum)
                or not target.mma_candidates("f16", "f16", accum)):
            return wanted  # tile-select-mma says what is missing, if anything
        a, b = wanted
        fp8_rows = sorted({f"{r.a} x {r.b}" for r in target.mma if r.a in FP8_KIND or r.b in FP8_KIND})
        has = f" (its fp8 instructions take {', '.join(fp8_rows)})" if fp8_rows else ""
        if self.fp8_fallback == "error":
            state.error(op, f"tile-legalize-precision: {target} has no matrix instruction for {a} x {b} "
                            f"-> {accum}{has}; compute it exactly in f16 with "
                            "tile-legalize-precision{fp8-fallback=auto} (the default) or "
                            "{fp8-fallback=f16}, or copy both operands into one fp8 format yourself")
            return None
        state.remark(op, f"tile-legalize-precision: {target} has no matrix instruction for {a} x {b} "
                         f"-> {accum}{has}; this gemm is computed exactly in f16 (every fp8 value is "
                         "an f16 value); tile-legalize-precision{fp8-fallback=error} refuses instead",
                     kind="speed")
        return "f16", "f16"

    def legal_types(self, a: str, b: str, formats: tuple[str, ...], target: str) -> tuple[str, str]:
        if self.fp8_fallback == "f16" or (self.fp8_fallback == "auto" and not formats):
            return "f16", "f16"

        def legal(t: str) -> str:
            if t in formats or t not in FP8_KIND:
                return t
            if t in FNUZ_TO_OCP and FNUZ_TO_OCP[t] in formats and self.fp8_fallback == "auto":
                if self.allow_fp8_rounding:
                    return FNUZ_TO_OCP[t]
                raise Rejected(
                    f"tile-legalize-precision: {t} is the FNUZ fp8 encoding, but {target}'s matrix "
                    f"unit reads {FNUZ_TO_OCP[t]} (OCP), and converting is not exact: "
                    f"{INEXACT_FNUZ_TO_OCP[t]} of the 256 {t} encodings (small values OCP can only "
                    f"hold as coarser subnormals) would round; convert the input to {FNUZ_TO_OCP[t]} "
                    "yourself, compute exactly in f16 with tile-legalize-precision{fp8-fallback=f16}, "
                    "or accept the rounding with tile-legalize-precision{allow-fp8-rounding=true}")
            if t in OCP_TO_FNUZ and OCP_TO_FNUZ[t] in formats:
                raise Rejected(
                    f"tile-legalize-precision: {t} is the OCP fp8 encoding, but {target}'s matrix "
                    f"unit reads {OCP_TO_FNUZ[t]} (FNUZ; E4M3FNUZ ends at 240 where OCP E4M3 reaches "
                    "448, so converting could saturate); convert the input to "
                    f"{OCP_TO_FNUZ[t]} yourself, or compute exactly in f16 with "
                    "tile-legalize-precision{fp8-fallback=f16}")
            raise Rejected(
                f"tile-legalize-precision: {target}'s matrix unit reads {', '.join(formats)}, not "
                f"{t}; use tile-legalize-precision{{fp8-fallback=f16}} to compute in f16")

        return legal(a), legal(b)

    def retype_shared(self, gemm: ir.Operation, operand: ir.Value, element: str,
                      state: PassState) -> None:
        owner = operand.owner
        allocs = ("tile.alloc_shared", "tile.alloc_fragment")
        if not isinstance(owner, ir.OpView | ir.Operation) or owner.name not in allocs:
            state.error(gemm, "tile-legalize-precision: a gemm operand that needs a different fp8 "
                              "encoding must come from tile.alloc_shared or tile.alloc_fragment (so "
                              "the copy filling it converts it)")
            return
        old_type = ir.MemRefType(operand.type)
        rounding_copies = []
        for use in operand.uses:
            user = use.owner
            is_copy_into = user.name == "tile.copy" and user.operands[1] == operand
            if user.name != "tile.gemm" and not is_copy_into:
                state.error(user, f"tile-legalize-precision: cannot change this buffer to "
                                  f"{element}: it is used by {user.name}, not only filled by "
                                  "tile.copy and read by tile.gemm")
                return
            source = ir.MemRefType(user.operands[0].type).element_type if is_copy_into else None
            if source is not None and source != old_type.element_type:  # it rounds to the fp8 type
                if list(ir.DenseI32ArrayAttr(user.attributes["operandSegmentSizes"]))[3]:
                    state.error(user, f"tile-legalize-precision: this copy rounds {source} to "
                                      f"{old_type.element_type}, which computing in {element} must keep; "
                                      "only copies that fill the whole buffer can (index the source, not "
                                      "the buffer)")
                    return
                rounding_copies.append(user)
        new_type = ir.MemRefType.get(old_type.shape, ir.Type.parse(element),
                                     memory_space=old_type.memory_space)
        with ir.InsertionPoint(owner), owner.location:
            make = tile.alloc_shared if owner.name == "tile.alloc_shared" else tile.alloc_fragment
            replacement = make(new_type)
        if not rounding_copies:
            operand.replace_all_uses_with(replacement)
            owner.erase()
            return
        # The rounding copies keep filling the fp8 buffer; a copy after each
        # widens it into the f16 one (exact), which the gemm reads.
        operand.replace_all_uses_except(replacement, [c.operation for c in rounding_copies])
        for copy in rounding_copies:
            with ir.InsertionPoint.after(copy), copy.location:
                tile.copy(operand, replacement)

    def check_accumulator(self, op: ir.Operation, state: PassState) -> None:
        accum = str(ir.TypeAttr(op.attributes["accum_dtype"]).value)
        a = str(ir.MemRefType(op.operands[0].type).element_type)
        wide = "i32" if a in ("i8", "i32") else ("f64" if a == "f64" else "f32")
        if accum not in (wide, "f64") and not self.allow_narrow_accumulator:
            state.error(op, f"tile-legalize-precision: accumulating in {accum} loses precision; "
                            f"use accum_dtype = {wide} (or allow-narrow-accumulator=true)")

    # -- casts ---------------------------------------------------------------

    @staticmethod
    def mark_cast(op: ir.Operation) -> None:
        source = ir.MemRefType(op.operands[0].type).element_type
        target = ir.MemRefType(op.operands[1].type).element_type
        if source == target:
            attributes.CAST.remove(op)
            return
        attributes.CAST.write(op, {
            "from": ir.TypeAttr.get(source),
            "to": ir.TypeAttr.get(target),
            "rounding": ir.StringAttr.get("nearest_even"),
        })
