"""toygpu's stages: tilemlir's tile and gpu, then its own `toyasm`.

    tile IR --tile, gpu (tilemlir.backends.driver)--> GPU-level IR
        --toyasm-prepare: gpu-check-input, toygpu-count-mma--> annotated GPU-level IR
        --toyasm: print_toyasm--> toy assembly (text)

Toy assembly is GPU-level IR printed one op a line, flat: per kernel its
threads, shared buffers and matrix-instruction count, then its body with
`toy.mma.MxNxK.<type> %d, %a, %b, %c` for each matrix instruction and nested
regions indented. The `--report` JSON (from `toyasm`) gives the same facts
per kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from tilemlir.backends.driver import Compilation, GpuStage, Stage, TileStage
from tilemlir.backends.report_schema import kernel_entry, module_report
from tilemlir.irutil import walk
from tilemlir.passes.check_gpu_input import GpuCheckInput
from tilemlir_toygpu.matrix import BANNER_ATTR
from tilemlir_toygpu.passes import MMA_COUNT_ATTR, MMA_PREFIX, ToyCountMma, is_mma_call


@dataclass(frozen=True)
class ToyKernel:
    name: str
    threads: int
    shared: tuple[tuple[str, int], ...]  # (name, bytes) of each workgroup buffer
    mma_instructions: int


class ToyPrinter:
    """GPU-level IR as toy assembly (module docstring)."""

    def __init__(self) -> None:
        self.names: dict[ir.Value, str] = {}
        self.lines: list[str] = []
        self.kernels: list[ToyKernel] = []

    def name(self, value: ir.Value) -> str:
        return self.names.setdefault(value, f"%{len(self.names)}")

    def module(self, module: ir.Operation) -> str:
        for op in walk(module):
            if op.name == "gpu.module":
                self.lines.append(f".module {ir.StringAttr(op.attributes['sym_name']).value}")
                for inner in op.regions[0].blocks[0].operations:
                    if inner.operation.name == "gpu.func":
                        self.kernel(inner.operation)
                self.lines.append(".end module")
        return "\n".join(self.lines) + "\n"

    def kernel(self, op: ir.Operation) -> None:
        name = ir.StringAttr(op.attributes["sym_name"]).value
        entry = op.regions[0].blocks[0]
        inputs = len(ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs)
        buffers = ir.IntegerAttr(op.attributes["workgroup_attributions"]).value \
            if "workgroup_attributions" in op.attributes else 0
        shared = tuple((self.name(value), _bytes(value.type))
                       for value in list(entry.arguments)[inputs:inputs + buffers])
        block_size = op.attributes.get("known_block_size", None)
        threads = ir.DenseI32ArrayAttr(block_size)[0] if block_size is not None else 0
        mma = ir.IntegerAttr(op.attributes[MMA_COUNT_ATTR]).value
        self.kernels.append(ToyKernel(name, threads, shared, mma))
        self.lines.append(f".kernel {name}")
        if BANNER_ATTR in op.attributes:
            self.lines.append(f"  // {ir.StringAttr(op.attributes[BANNER_ATTR]).value}")
        arguments = ", ".join(self.name(value) for value in list(entry.arguments)[:inputs])
        self.lines += [f"  .args {arguments}", f"  .threads {threads}"]
        self.lines += [f"  .shared {value} {size}" for value, size in shared]
        self.lines.append(f"  .mma {mma}")
        self.block(entry, depth=1)
        self.lines.append(".end kernel")

    def block(self, block: ir.Block, depth: int) -> None:
        for inner in block.operations:
            self.op(inner.operation, depth)

    def op(self, op: ir.Operation, depth: int) -> None:
        results = ", ".join(self.name(result) for result in op.results)
        operands = ", ".join(self.name(operand) for operand in op.operands)
        if is_mma_call(op):
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            shape, _, element = callee.removeprefix(MMA_PREFIX).partition("_")
            text = f"toy.mma.{shape}.{element} {results}, {operands}"
        elif op.name == "arith.constant":
            text = f"{results} = const {op.attributes['value']}"
        elif "dimension" in op.attributes:  # gpu.thread_id x, gpu.block_id y, ...
            dimension = str(op.attributes["dimension"]).removeprefix("#gpu<dim ").rstrip(">")
            text = f"{results} = {op.name} {dimension}"
        else:
            text = f"{results} = {op.name} {operands}" if results else f"{op.name} {operands}"
        self.lines.append("  " * depth + text.rstrip())
        for region in op.regions:
            for block in region.blocks:
                if len(block.arguments):
                    arguments = ", ".join(self.name(argument) for argument in block.arguments)
                    self.lines.append("  " * (depth + 1) + f"^({arguments}):")
                self.block(block, depth + 2)
        if len(op.regions):
            self.lines.append("  " * depth + f"end {op.name}")


def _bytes(memref_type: ir.Type) -> int:
    shaped = ir.MemRefType(memref_type)
    count = 1
    for extent in shaped.shape:
        count *= extent
    return count * max(1, shaped.element_type.width // 8)


@dataclass(frozen=True)
class ToyAsmStage(Stage):
    """GPU-level IR -> toy assembly, in process; the report comes from here."""

    name: str = "toyasm"
    summary: str = "toy assembly for toygpu targets (GPU-level IR, one op a line)"

    def prepare(self, job: Compilation) -> str:
        return f"builtin.module({GpuCheckInput(target=job.spec)},{ToyCountMma()})"

    def describe(self, job: Compilation) -> list[str]:
        return [f"toyasm-prepare: {self.prepare(job)}",
                "toyasm: in process (tilemlir_toygpu.stages: GPU-level IR -> toy assembly)"]

    def run(self, job: Compilation) -> None:
        with job.timed("toyasm-prepare"):
            job.run_pipeline(self.prepare(job))
        printer = ToyPrinter()
        with job.timed(self.name):
            job.artifacts[self.name] = printer.module(job.module)
        # The report's common fields, and the toy's own under "toygpu" (docs/report.md).
        job.report = module_report(job.target, [
            kernel_entry(k.name, job.target.family, threads=k.threads,
                         shared_bytes=sum(size for _, size in k.shared),
                         family_fields={"mma_instructions": k.mma_instructions})
            for k in printer.kernels])


STAGES: tuple[Stage, ...] = (TileStage(), GpuStage(), ToyAsmStage())
