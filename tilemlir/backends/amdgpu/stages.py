"""The amdgpu stages: tile, gpu (shared), then llvm, isa and hsaco.

    gpu   --llvm-->  amdgpu-check-resources, GPU_TO_LLVM, amdgpu-order-lds-dma,
                     amdgpu-scope-atomics
                     (one pipeline), the gpu.module's body translated to LLVM IR
                     in process, opt-22 LLVM_IR_PASSES
    llvm  --isa-->   llc-22 (a kernel marked tile.schedule_trial also with llc's
                     latency schedule, the faster kept: schedule.py); the
                     resource report, and the kernel's usage checked
                     against the target (LDS, threads, spills unless allowed;
                     when spills are all that is wrong, the note `spills`
                     names the kernels for the driver's fallback)
    isa   --hsaco--> llvm-mc-22, ld.lld-22 -shared

Each step is timed under its own label (gpu-to-llvm, translate, llvm-opt, llc,
schedule, report, llvm-mc, ld.lld). The data (pass lists, tool flags) is in pass_lists.py.
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass

from mlir import ir

from tilemlir.backends.amdgpu import schedule, toolchain
from tilemlir.backends.amdgpu.gpu_checks import AmdgpuCheckResources
from tilemlir.backends.amdgpu.pass_lists import gpu_to_llvm_pipeline
from tilemlir.backends.amdgpu.report import ResourceError, build_report, check_resources
from tilemlir.backends.driver import Compilation, GpuStage, Stage, TileStage
from tilemlir.dialects import attributes
from tilemlir.irutil import walk


def lowered_kernels(module: ir.Operation, marked: attributes.TileAttribute) -> dict[str, ir.Operation]:
    """The gpu.funcs of `module` that carry `marked`, by name."""
    return {ir.StringAttr(op.attributes["sym_name"]).value: op for op in walk(module)
            if op.name == "gpu.func" and marked.is_on(op)}


def schedule_trials(module: ir.Operation) -> list[str]:
    """The lowered kernels marked tile.schedule_trial, by name (schedule.py)."""
    return list(lowered_kernels(module, attributes.SCHEDULE_TRIAL))


def lds_bank_conflicts(module: ir.Operation) -> dict[str, int]:
    """Each lowered kernel's `tile.lds_bank_conflicts_per_iteration`, by name
    (hand-written GPU-level kernels, which have no tile layouts, have none)."""
    conflicts = attributes.LDS_BANK_CONFLICTS_PER_ITERATION
    return {name: conflicts.read(op) for name, op in lowered_kernels(module, conflicts).items()}


@dataclass(frozen=True)
class LlvmStage(Stage):
    """GPU-level IR -> LLVM IR (optimized by opt-22)."""

    name: str = "llvm"
    suffix: str = ".ll"
    summary: str = "LLVM IR of the device code, as llc reads it (amdgpu)"
    one_kernel_function: bool = True

    def pipeline(self, job: Compilation) -> str:
        return gpu_to_llvm_pipeline(job.target.processor, check=str(AmdgpuCheckResources(target=job.spec)),
                                    spec=job.spec)

    def describe(self, job: Compilation) -> list[str]:
        return [f"gpu-to-llvm: {self.pipeline(job)}",
                "translate: in process (mlir-translate --mlir-to-llvmir) of the gpu.module's body",
                f"llvm-opt: {toolchain.commands(job.target.processor)['llvm-opt']}"]

    def run(self, job: Compilation) -> None:
        # From the LDS layouts (tile-infer-layout's bank model) on the gpu.funcs,
        # which the conversion replaces.
        job.notes["lds_bank_conflicts_per_iteration"] = lds_bank_conflicts(job.module)
        job.notes["schedule_trial"] = schedule_trials(job.module)
        with job.timed("gpu-to-llvm"):
            job.run_pipeline(self.pipeline(job))
        with job.timed("translate"):
            device = toolchain.extract_device_module(job.module)
            leftover = toolchain.unconverted_ops(device)
            if leftover:
                raise job.located_errors([(op, (
                    f"'{op.name}' is not in the LLVM or ROCDL dialect after the amdgpu pipeline, "
                    "so it cannot be translated to LLVM IR")) for op in leftover])
            llvm_ir = toolchain.translate_to_llvmir(device)
        with job.timed("llvm-opt"):
            job.artifacts[self.name] = toolchain.optimize_llvmir(llvm_ir, job.target.processor)


@dataclass(frozen=True)
class IsaStage(Stage):
    """LLVM IR -> ISA text; builds the report and checks the kernel's usage."""

    name: str = "isa"
    suffix: str = ".s"
    summary: str = "AMDGPU assembly (.s) from llc-22 (amdgpu's default)"
    one_kernel_function: bool = True

    def describe(self, job: Compilation) -> list[str]:
        llc = toolchain.commands(job.target.processor)["llc"]
        marked = job.notes.get("schedule_trial")
        if not marked:
            return [f"llc: {llc}"]
        latency = shlex.join(["llc", *toolchain.llc_args(job.target.processor, (schedule.LATENCY_FLAG,))])
        kept = (f"kept instead where {', '.join(marked)} gain "
                "(schedule.prefers_latency; --report's schedule says which)")
        return [f"llc: {llc}", f"schedule: {latency}, {kept}"]

    def run(self, job: Compilation) -> None:
        with job.timed("llc"):
            isa = toolchain.llc_to_isa(job.artifacts["llvm"], job.target.processor)
        marked = job.notes.get("schedule_trial", [])
        with job.timed("schedule") if marked else contextlib.nullcontext():
            isa, schedules = schedule.scheduled(job.artifacts["llvm"], isa, job.target, marked)
        job.artifacts[self.name] = isa
        # Asked for, the report runs llvm-mca on the main loop: a step of its own.
        with job.timed("report") if job.options.report else contextlib.nullcontext():
            job.report = build_report(isa, job.target, mca=job.options.report)
        conflicts = job.notes.get("lds_bank_conflicts_per_iteration", {})
        for kernel in job.report["kernels"]:
            kernel[job.target.family]["lds_bank_conflicts_per_iteration"] = conflicts.get(kernel["name"])
            kernel[job.target.family]["schedule"] = schedules.get(kernel["name"])
        try:
            check_resources(job.report, job.target, allow_spills=job.options.allow_spills)
        except ResourceError as error:
            with contextlib.suppress(ResourceError):
                # Spills alone: the driver may fall back to another configuration (compiler.py).
                check_resources(job.report, job.target, allow_spills=True)
                job.notes["spills"] = spilling_kernels(job.report)
            raise job.file_error(str(error)) from None


def spilling_kernels(report: dict) -> list[dict]:
    """The kernels of `report` that spill: {kernel, vgpr_spills, sgpr_spills}
    each, in the report's order (the `spills` note of `Compilation`)."""
    return [{"kernel": kernel["name"], "vgpr_spills": kernel["amdgpu"]["vgpr_spills"],
             "sgpr_spills": kernel["amdgpu"]["sgpr_spills"]}
            for kernel in report["kernels"] if kernel["spills"]]


@dataclass(frozen=True)
class HsacoStage(Stage):
    """ISA -> the code object the HIP runtime loads."""

    name: str = "hsaco"
    suffix: str = ".hsaco"
    summary: str = "the code object (ELF with AMDHSA metadata); needs -o FILE"
    binary: bool = True
    one_kernel_function: bool = True

    def describe(self, job: Compilation) -> list[str]:
        commands = toolchain.commands(job.target.processor)
        return [f"llvm-mc: {commands['llvm-mc']}", f"ld.lld: {commands['ld.lld']}"]

    def run(self, job: Compilation) -> None:
        with job.timed("llvm-mc"):
            obj = toolchain.assemble(job.artifacts["isa"], job.target.processor)
        with job.timed("ld.lld"):
            job.artifacts[self.name] = toolchain.link_hsaco(obj)


STAGES: tuple[Stage, ...] = (TileStage(), GpuStage(), LlvmStage(), IsaStage(), HsacoStage())
