"""amdgpu-order-lds-dma: loads into LDS in an alias scope of their own, LDS reads outside it.

Direct global -> LDS loads (tile-lower-to-gpu{direct-lds-loads}: `rocdl.load.to.lds`,
`rocdl.global.load.lds`, `rocdl.raw.ptr.buffer.load.lds`) get one alias scope,
and every LDS read (an `llvm.load` from address space 3, the `ds_read_tr`
intrinsics) gets that scope as a no-alias scope. Without it LLVM's waitcnt
insertion makes every LDS read wait (vmcnt) for every load still writing LDS,
including the next stage's, just issued. This is sound because the lowering
orders each read of a pipeline stage after the explicit vmcnt(0) wait and the
barrier that follow that stage's loads: the loads in flight at a read write
another stage's buffer.

Input invariant: the LLVM and ROCDL dialects (after convert-gpu-to-rocdl), in
gpu.modules or not. Output: the same ops, with `alias_scopes` on the loads
into LDS and `noalias_scopes` on the LDS reads; unchanged IR when there is no
load into LDS. No options.

    rocdl.load.to.lds %global, %lds, 16, 0, 0 : !llvm.ptr<7>
    %read = llvm.load %lds : !llvm.ptr<3> -> vector<8xf16>
    // becomes
    rocdl.load.to.lds %global, %lds, 16, 0, 0 {alias_scopes = [#scope]} : !llvm.ptr<7>
    %read = llvm.load %lds {noalias_scopes = [#scope]} : !llvm.ptr<3> -> vector<8xf16>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import llvm

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass

# LLVM dialect ops that read LDS on behalf of the matrix instructions.
LDS_READ_OPS = ("llvm.load", "rocdl.ds.read.tr4.b64", "rocdl.ds.read.tr8.b64",
                "rocdl.ds.read.tr6.b96", "rocdl.ds.read.tr16.b64")
LDS_DMA_OPS = ("rocdl.load.to.lds", "rocdl.global.load.lds", "rocdl.raw.ptr.buffer.load.lds")
LDS_ADDRESS_SPACE = 3


def _reads_lds(op: ir.Operation) -> bool:
    pointer = op.operands[0].type
    return isinstance(pointer, llvm.PointerType) and pointer.address_space == LDS_ADDRESS_SPACE


def order_lds_dma(module: ir.Operation) -> int:
    """Marks the loads into LDS and the LDS reads of `module` (module
    docstring); returns how many loads into LDS were marked."""
    dma = [op for op in walk(module) if op.name in LDS_DMA_OPS]
    if not dma:
        return 0
    with module.context:
        scope = ir.Attribute.parse(
            '#llvm.alias_scope<id = distinct[0]<>, domain = #llvm.alias_scope_domain<'
            'id = distinct[1]<>, description = "tilemlir: LDS written by loads into LDS">>')
        scopes = ir.ArrayAttr.get([scope])
    for op in dma:
        op.attributes["alias_scopes"] = scopes
    for op in walk(module):
        if op.name in LDS_READ_OPS and _reads_lds(op):
            op.attributes["noalias_scopes"] = scopes
    return len(dma)


@dataclass(frozen=True)
class AmdgpuOrderLdsDma(TilePass):
    """Puts loads into LDS in an alias scope that LDS reads do not alias (module docstring)."""

    name: ClassVar[str] = "amdgpu-order-lds-dma"
    summary: ClassVar[str] = ("put loads into LDS in an alias scope that LDS reads are outside of, "
                              "so the reads do not wait for them")

    def run(self, module: ir.Operation, state: PassState) -> None:
        order_lds_dma(module)
