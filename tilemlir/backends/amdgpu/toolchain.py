"""From the LLVM dialect to HSACO: the device module, LLVM IR, ISA, object, ELF.

    device = extract_device_module(module)      # gpu.module body -> builtin.module
    llvm_ir = translate_to_llvmir(device)       # in process (MLIR's C API)
    llvm_ir = optimize_llvmir(llvm_ir)          # opt-22 -passes=LLVM_IR_PASSES
    isa = llc_to_isa(llvm_ir, "gfx942")         # llc-22 -O3
    hsaco = link_hsaco(assemble(isa, "gfx942")) # llvm-mc-22, ld.lld-22 -shared
    kernels = parse_amdhsa_metadata(isa)        # or read_notes(hsaco)

The PyPI LLVM has no AMDGPU target, so code generation uses Debian's LLVM 22
tools (DESIGN §1), found in /usr/lib/llvm-22/bin or as `NAME-22` on PATH. A
missing tool says to run `make setup`; a failing tool becomes a `ToolchainError`
carrying the command line and the tool's own stderr, never a traceback.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from mlir import ir
from mlir.dialects import llvm

from tilemlir.backends.amdgpu.pass_lists import LLC_FLAGS, LLVM_IR_PASSES, TRIPLE
from tilemlir.diagnostics import UserError

LLVM_MAJOR = 22
LLVM_BIN_DIR = Path(f"/usr/lib/llvm-{LLVM_MAJOR}/bin")
TOOL_TIMEOUT_SECONDS = 600


class ToolchainError(UserError):
    """An LLVM tool is missing or failed."""


# --------------------------------------------------------------------------
# Running the tools
# --------------------------------------------------------------------------


def find_tool(name: str) -> str:
    """The path of LLVM 22's `name` (llc, opt, llvm-mc, ld.lld, llvm-readelf)."""
    candidate = LLVM_BIN_DIR / name
    if candidate.is_file():
        return str(candidate)
    found = shutil.which(f"{name}-{LLVM_MAJOR}")
    if found:
        return found
    raise ToolchainError(
        f"'{name}' of LLVM {LLVM_MAJOR} not found (looked in {LLVM_BIN_DIR} and for "
        f"'{name}-{LLVM_MAJOR}' on PATH); run `make setup` to install Debian's "
        f"llvm-{LLVM_MAJOR} and lld-{LLVM_MAJOR}"
    )


def tool_command(name: str, args: list[str]) -> list[str]:
    return [find_tool(name), *args]


def run_tool(name: str, args: list[str], stdin: bytes | None = None,
             timeout: float = TOOL_TIMEOUT_SECONDS) -> bytes:
    """Runs an LLVM tool; returns its stdout. Failure -> ToolchainError with stderr."""
    command = tool_command(name, args)
    printable = shlex.join([name, *args])
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{name} did not finish within {timeout:g} s: {printable}") from None
    except OSError as error:
        raise ToolchainError(f"cannot run {name} ({command[0]}): {error.strerror or error}") from None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", errors="replace").strip()
        detail = "\n".join(f"  {line}" for line in stderr.splitlines()) or "  (no output on stderr)"
        raise ToolchainError(f"{name} failed (exit status {done.returncode}): {printable}\n{detail}")
    return done.stdout


# --------------------------------------------------------------------------
# LLVM dialect -> LLVM IR, in process
# --------------------------------------------------------------------------


def extract_device_module(module: ir.Operation) -> ir.Module:
    """A new builtin.module holding a copy of the (single) gpu.module's body,
    with the AMDGPU triple and the data layout the conversion attached."""
    gpu_modules = [op.operation for op in module.regions[0].blocks[0].operations
                   if op.operation.name == "gpu.module"]
    if len(gpu_modules) != 1:
        names = ", ".join(str(m.attributes["sym_name"]) for m in gpu_modules) or "none"
        raise UserError(f"expected exactly one gpu.module to compile, found {len(gpu_modules)} ({names})")
    source = gpu_modules[0]
    with module.context, ir.Location.unknown():
        device = ir.Module.create()
        for op in source.regions[0].blocks[0].operations:
            op.operation.clone(ip=ir.InsertionPoint(device.body))
        device.operation.attributes["llvm.target_triple"] = ir.StringAttr.get(TRIPLE)
        if "llvm.data_layout" in source.attributes:
            device.operation.attributes["llvm.data_layout"] = source.attributes["llvm.data_layout"]
    return device


# Only these translate to LLVM IR (ROCDL intrinsics, LLVM ops and the module).
_TRANSLATABLE = ("llvm.", "rocdl.")


_CAST = "builtin.unrealized_conversion_cast"


def unconverted_ops(device: ir.Module) -> list[ir.Operation]:
    """Ops the conversion left outside the LLVM and ROCDL dialects: the
    outermost ones, and the casts bridging them only when nothing else is left."""
    from tilemlir.irutil import parent_ops, walk

    left = [
        op for op in walk(device.operation)
        if op.name != "builtin.module" and not op.name.startswith(_TRANSLATABLE)
    ]
    outermost = [
        op for op in left
        if not any(parent.name != "builtin.module" and not parent.name.startswith(_TRANSLATABLE)
                   for parent in parent_ops(op))
    ]
    real = [op for op in outermost if op.name != _CAST]
    return real or outermost


def translate_to_llvmir(device: ir.Module) -> str:
    """`mlir-translate --mlir-to-llvmir`, in process. The caller must have
    checked `unconverted_ops(device)` is empty: the C API does not survive a
    failed translation."""
    leftover = unconverted_ops(device)
    if leftover:
        raise UserError(f"cannot translate '{leftover[0].name}' to LLVM IR")
    with device.context:
        return llvm.translate_module_to_llvmir(device.operation)


# --------------------------------------------------------------------------
# LLVM IR -> ISA -> object -> HSACO
# --------------------------------------------------------------------------


def _target_flags(chip: str) -> list[str]:
    return [f"-mtriple={TRIPLE}", f"-mcpu={chip}"]


def opt_args(chip: str) -> list[str]:
    return [*_target_flags(chip), f"-passes={','.join(LLVM_IR_PASSES)}", "-S", "-o", "-", "-"]


def llc_args(chip: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [*_target_flags(chip), *LLC_FLAGS, *extra, "-o", "-", "-"]


def mc_args(chip: str) -> list[str]:
    return [f"-triple={TRIPLE}", f"-mcpu={chip}", "-filetype=obj", "-o", "-", "-"]


LD_ARGS = ("-shared",)


def optimize_llvmir(llvm_ir: str, chip: str) -> str:
    return run_tool("opt", opt_args(chip), llvm_ir.encode()).decode()


def llc_to_isa(llvm_ir: str, chip: str, extra: tuple[str, ...] = (),
               timeout: float = TOOL_TIMEOUT_SECONDS) -> str:
    """llc-22 with LLC_FLAGS and `extra` (e.g. schedule.LATENCY_FLAG)."""
    return run_tool("llc", llc_args(chip, extra), llvm_ir.encode(), timeout=timeout).decode()


def assemble(isa: str, chip: str) -> bytes:
    """The ISA text as a relocatable object (llvm-mc), so the HSACO is exactly
    the code shown by `--emit isa`."""
    return run_tool("llvm-mc", mc_args(chip), isa.encode())


def link_hsaco(obj: bytes) -> bytes:
    """ld.lld -shared: the code object the HIP runtime loads."""
    with tempfile.TemporaryDirectory(prefix="tilemlir-") as scratch:
        obj_path = Path(scratch) / "kernel.o"
        out_path = Path(scratch) / "kernel.hsaco"
        obj_path.write_bytes(obj)
        run_tool("ld.lld", [*LD_ARGS, str(obj_path), "-o", str(out_path)])
        return out_path.read_bytes()


def read_notes(hsaco: bytes) -> str:
    """`llvm-readelf --notes` of an HSACO (the AMDHSA metadata as YAML)."""
    with tempfile.TemporaryDirectory(prefix="tilemlir-") as scratch:
        path = Path(scratch) / "kernel.hsaco"
        path.write_bytes(hsaco)
        return run_tool("llvm-readelf", ["--notes", str(path)]).decode()


def commands(chip: str) -> dict[str, str]:
    """The external stages as shell commands (for --dump-pass-pipeline)."""
    return {
        "llvm-opt": shlex.join(["opt", *opt_args(chip)]),
        "llc": shlex.join(["llc", *llc_args(chip)]),
        "llvm-mc": shlex.join(["llvm-mc", *mc_args(chip)]),
        "ld.lld": shlex.join(["ld.lld", *LD_ARGS, "kernel.o", "-o", "kernel.hsaco"]),
    }


# --------------------------------------------------------------------------
# AMDHSA metadata (the YAML LLVM writes into the .s and the ELF note)
# --------------------------------------------------------------------------


def _metadata_document(text: str) -> list[str]:
    """The lines between `---` and `...` (in a .s: inside .amdgpu_metadata;
    in `llvm-readelf --notes`: after 'AMDGPU Metadata:')."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "---"), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == "..."), len(lines))
    return lines[start + 1:end]


def _scalar(text: str):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(part) for part in text[1:-1].split(",") if part.strip()]
    try:
        return int(text, 0)
    except ValueError:
        return text


_KEY = re.compile(r"^([^\s:'\"][^:]*):(?:\s+(.*))?$")


def _parse_block(lines: list[tuple[int, str]], pos: int, indent: int):
    """Parses the block-style YAML subset LLVM writes (maps, lists, scalars)."""
    if lines[pos][1].startswith("-"):
        items = []
        while pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith("-"):
            text = lines[pos][1]
            rest = text[1:].lstrip()
            if not rest:
                item, pos = _parse_block(lines, pos + 1, lines[pos + 1][0])
            elif _KEY.match(rest):
                # "- key: value" opens a map whose keys line up with `key`.
                lines[pos] = (indent + len(text) - len(rest), rest)
                item, pos = _parse_block(lines, pos, lines[pos][0])
            else:
                item, pos = _scalar(rest), pos + 1
            items.append(item)
        return items, pos
    result: dict = {}
    while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith("-"):
        match = _KEY.match(lines[pos][1])
        if match is None:
            raise ToolchainError(f"unreadable AMDHSA metadata line: {lines[pos][1]!r}")
        key, value = match.group(1).strip(), match.group(2)
        pos += 1
        if value:
            result[key] = _scalar(value)
        elif pos < len(lines) and (
            lines[pos][0] > indent or (lines[pos][0] == indent and lines[pos][1].startswith("-"))
        ):
            result[key], pos = _parse_block(lines, pos, lines[pos][0])
        else:
            result[key] = None
    return result, pos


def parse_amdhsa_metadata(text: str) -> dict:
    """The AMDHSA metadata map (`amdhsa.kernels`, `amdhsa.target`, ...) found
    in an ISA file or in `llvm-readelf --notes` output; {} when there is none."""
    lines = [
        (len(line) - len(line.lstrip(" ")), line.strip())
        for line in _metadata_document(text)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        return {}
    base = lines[0][0]
    lines = [(indent - base, body) for indent, body in lines]
    document, _ = _parse_block(lines, 0, 0)
    return document if isinstance(document, dict) else {}
