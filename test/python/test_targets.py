"""The shipped target descriptors checked against the real toolchain and the
published figures.

* every AMD matrix row: llvm-mc-22 assembles a representative instance on its
  chip and rejects it on each chip whose table lacks the shape; llc-22 selects
  the row's mnemonic from the row's LLVM intrinsic;
* every AMD target: the dense peaks computed from table cycles x SIMDs x CUs x
  clock equal the published figures in the descriptor within 1%;
* the register and workgroup limits of the descriptors, re-checked with llc-22
  and llvm-mc-22;
* every descriptor in the repo loads, and every number in a shipped descriptor
  has a source key defined in its [sources] table.

One llvm-mc / llc process per chip and check, so the whole file runs in seconds.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from tilemlir import mma_layouts
from tilemlir.targets import MmaInstr, Target, family_targets, load_target_file
from tilemlir.targets.model import ELEMENT_BITS, FP8_KIND, is_unknown

LLVM_BIN = Path("/usr/lib/llvm-22/bin")


def _tool(name: str) -> str:
    found = shutil.which(f"{name}-22") or shutil.which(name, path=str(LLVM_BIN))
    if found is None:  # `make setup` installs Debian's llvm-22: missing is a failure, not a skip
        pytest.fail(f"{name} (LLVM 22) is not installed; run `make setup`")
    return found


def _llvm(tool: str, chip: str, source: Path, output: Path | str) -> subprocess.CompletedProcess:
    """Runs llvm-mc or llc for `chip` on `source`. Never pass -o /dev/null: LLVM
    tools delete their output file when they fail."""
    triple = "-triple" if tool == "llvm-mc" else "-mtriple"
    command = [_tool(tool), f"{triple}=amdgcn-amd-amdhsa", f"-mcpu={chip}", str(source)]
    return subprocess.run(
        [*command, "-o", str(output)], capture_output=True, text=True, check=False, timeout=120
    )


AMD = family_targets("amdgpu")
AMD_IDS = [t.name for t in AMD]


def _identity(row: MmaInstr) -> tuple:
    """What makes two rows the same hardware instruction: the shape and the
    operand kinds. An fp8 mnemonic is one instruction whether a chip reads its
    bytes as FNUZ (gfx942) or OCP (gfx950); the chip's fp8_formats say which."""
    kind = FP8_KIND
    return (row.m, row.n, row.k, row.blocks, kind.get(row.a, row.a), kind.get(row.b, row.b), row.c)


# --------------------------------------------------------------------------
# llvm-mc: every mnemonic on its own chip, and not on chips that lack it
# --------------------------------------------------------------------------


def _registers(prefix: str, first: int, count: int) -> str:
    return f"{prefix}{first}" if count == 1 else f"{prefix}[{first}:{first + count - 1}]"


def wmma_operand_registers(row: MmaInstr, owner: Target) -> tuple[int, int, int]:
    """32-bit registers per lane of a WMMA's A, B and C/D in wave32 by its
    chip's documented layout (RDNA3 holds all of K in each lane half)."""
    layout = mma_layouts.WmmaLayout(owner.architecture)
    return (layout.a_per_lane * ELEMENT_BITS[row.a] // 32, layout.b_per_lane * ELEMENT_BITS[row.b] // 32,
            layout.c_per_lane * ELEMENT_BITS[row.c] // 32)


def representative_asm(row: MmaInstr, owner: Target) -> str:
    """One instance of the instruction with operand registers sized from its
    shape: A and B in VGPRs, C and D in AGPRs (WMMAs: in VGPRs, which RDNA has only)."""
    if row.name.startswith("v_wmma_"):
        a_regs, b_regs, c_regs = wmma_operand_registers(row, owner)
        acc = _registers("v", 32, c_regs)
        return f"{row.name} {acc}, {_registers('v', 0, a_regs)}, {_registers('v', 16, b_regs)}, {acc}"
    a_regs, b_regs, c_regs = row.register_counts(owner.compute.wave_size)
    modifiers = ""
    if "f8f6f4" in row.name:  # format codes: 0 = E4M3 (default), 1 = E5M2
        cbsz = 1 if FP8_KIND.get(row.a) == "bf8" else 0
        blgp = 1 if FP8_KIND.get(row.b) == "bf8" else 0
        modifiers = f" cbsz:{cbsz} blgp:{blgp}"
    acc = _registers("a", 0, c_regs)
    a, b = _registers("v", 0, a_regs), _registers("v", 16, b_regs)
    return f"{row.name} {acc}, {a}, {b}, {acc}{modifiers}"


def _failing_lines(chip: str, lines: list[str], tmp_path: Path) -> dict[int, str]:
    """Assembles `lines` for `chip` in one llvm-mc run; returns {line: error}."""
    source = tmp_path / f"mfma-{chip}.s"
    source.write_text("\n".join(lines) + "\n")
    result = _llvm("llvm-mc", chip, source, source.with_suffix(".o"))
    failures = {}
    for match in re.finditer(
        rf"^{re.escape(str(source))}:(\d+):\d+: error: (.*)$", result.stderr, re.MULTILINE
    ):
        failures.setdefault(int(match.group(1)), match.group(2))
    assert result.returncode == (1 if failures else 0), result.stderr
    return failures


def test_every_amd_row_assembles_on_its_chip_and_not_where_missing(tmp_path):
    # Every row of every AMD target, assembled on every AMD chip.
    rows = [(owner, row) for owner in AMD for row in owner.mma]
    lines = [representative_asm(row, owner) for owner, row in rows]
    checked_absent = 0
    for chip in AMD:
        failures = _failing_lines(chip.name, lines, tmp_path)
        has = {_identity(r) for r in chip.mma}
        for number, (owner, row) in enumerate(rows, start=1):
            if owner is chip:
                assert number not in failures, (
                    f"{chip}: {lines[number - 1]!r} rejected: {failures.get(number)}"
                )
            elif _identity(row) not in has:
                assert number in failures, (
                    f"{chip} has no {row.name} ({owner}'s row) in its table, "
                    f"but llvm-mc-22 -mcpu={chip.name} accepts {lines[number - 1]!r}"
                )
                checked_absent += 1
    # gfx950 lacks xf32 and the gfx90a legacy shapes; gfx90a lacks all that is new;
    # RDNA has no MFMA, CDNA no WMMA, and gfx11 no fp8 WMMA.
    assert checked_absent > 40


# compute.cross_lane_moves: instructions each move stands for (backends/amdgpu/cross_lane.py).
CROSS_LANE_ASM = {
    "dpp16": ["v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf bound_ctrl:1",
              "v_mov_b32_dpp v0, v1 row_half_mirror row_mask:0xf bank_mask:0xf",
              "v_mov_b32_dpp v0, v1 row_ror:8 row_mask:0xf bank_mask:0xf",
              "v_mov_b32_dpp v0, v1 row_shl:4 row_mask:0xf bank_mask:0x5"],
    "dpp_row_bcast": ["v_mov_b32_dpp v0, v1 row_bcast:15 row_mask:0xa bank_mask:0xf",
                      "v_mov_b32_dpp v0, v1 row_bcast:31 row_mask:0xc bank_mask:0xf"],
    "permlane_swap": ["v_permlane16_swap_b32 v0, v1", "v_permlane32_swap_b32 v0, v1"],
}


def test_cross_lane_moves_assemble_where_listed_and_not_elsewhere(tmp_path):
    moves = sorted(CROSS_LANE_ASM)
    lines = [line for move in moves for line in CROSS_LANE_ASM[move]]
    for chip in AMD:
        assert set(chip.compute.cross_lane_moves) <= set(moves), chip.compute.cross_lane_moves
        failures = _failing_lines(chip.name, lines, tmp_path)
        number = 0
        for move in moves:
            for line in CROSS_LANE_ASM[move]:
                number += 1
                listed = move in chip.compute.cross_lane_moves
                assert (number not in failures) == listed, (
                    f"{chip.name} {'lists' if listed else 'does not list'} {move}, and llvm-mc-22 "
                    f"{'rejects' if number in failures else 'accepts'} {line!r}")


def test_xf32_and_legacy_shapes_are_where_the_traps_say():
    by_name = {t.name: {_identity(r) for r in t.mma} for t in AMD}
    xf32 = (16, 16, 8, 1, "xf32", "xf32", "f32")
    assert xf32 in by_name["gfx942"] and xf32 not in by_name["gfx950"] | by_name["gfx90a"]
    legacy_i8 = (32, 32, 8, 1, "i8", "i8", "i32")
    legacy_bf16 = (32, 32, 4, 1, "bf16", "bf16", "f32")
    for shape in (legacy_i8, legacy_bf16):
        assert shape in by_name["gfx90a"]
        assert shape not in by_name["gfx942"] | by_name["gfx950"]


# --------------------------------------------------------------------------
# llc: every row's intrinsic selects the row's mnemonic
# --------------------------------------------------------------------------


def _ir_type(element: str, count: int, intrinsic: str) -> str:
    """The LLVM IR type of `count` elements per lane as the intrinsic takes them."""
    if element in ("f32", "xf32"):
        scalar = "float"
    elif element == "f64":
        scalar = "double"
    elif element == "f16":
        scalar = "half"
    elif element == "bf16":
        # The pre-gfx950 bf16 intrinsics take bits as i16; gfx950's take bfloat.
        scalar = "i16" if "bf16.1k" in intrinsic or re.search(r"\dbf16$", intrinsic) else "bfloat"
    elif element == "i32":
        scalar = "i32"
    else:  # 8-bit operands travel packed in 32- or 64-bit integers
        if count == 8 and "f8f6f4" not in intrinsic:
            return "i64"
        words = count // 4
        return "i32" if words == 1 else f"<{words} x i32>"
    return scalar if count == 1 else f"<{count} x {scalar}>"


def wmma_call_ir(index: int, row: MmaInstr, owner: Target) -> str:
    """A call of a WMMA row's intrinsic with the operand types its chip's
    lowering gives it (ROCDL: bf16 as i16, 8-bit operands as i32 words)."""
    layout = mma_layouts.WmmaLayout(owner.architecture)
    scalar = {"f16": "half", "bf16": "i16"}.get(row.a)
    if scalar is None:  # i8 and fp8: 32-bit words of 4
        a = b = f"<{layout.a_per_lane // 4} x i32>" if layout.a_per_lane > 4 else "i32"
    else:
        a = b = f"<{layout.a_per_lane} x {scalar}>"
    c = f"<8 x {'i32' if row.c == 'i32' else 'float'}>"
    if row.a == "i8":  # signed A, signed B, no clamp
        operands = f"i1 true, {a} %a, i1 true, {b} %b, {c} %c, i1 false"
    else:
        operands = f"{a} %a, {b} %b, {c} %c"
    return (
        f"define {c} @row{index}({a} %a, {b} %b, {c} %c) {{\n"
        f"  %d = call {c} @{row.key('intrinsic')}({operands})\n"
        f"  ret {c} %d\n}}\n"
    )


def intrinsic_call_ir(index: int, row: MmaInstr, owner: Target) -> str:
    if row.name.startswith("v_wmma_"):
        return wmma_call_ir(index, row, owner)
    wave_size = owner.compute.wave_size
    a_elems = row.m * row.k * row.blocks // wave_size
    b_elems = row.n * row.k * row.blocks // wave_size
    c_elems = row.m * row.n * row.blocks // wave_size
    a = _ir_type(row.a, a_elems, row.key("intrinsic"))
    b = _ir_type(row.b, b_elems, row.key("intrinsic"))
    c = _ir_type(row.c, c_elems, row.key("intrinsic"))
    if "f8f6f4" in row.key("intrinsic"):
        name = f"{row.key('intrinsic')}.v8i32.v8i32"
        cbsz = 1 if FP8_KIND.get(row.a) == "bf8" else 0
        blgp = 1 if FP8_KIND.get(row.b) == "bf8" else 0
        # format A, format B, then zero opsel and scale for A and B: the unscaled MFMA.
        extra = f"i32 {cbsz}, i32 {blgp}, i32 0, i32 0, i32 0, i32 0"
    else:
        name = row.key("intrinsic")
        extra = "i32 0, i32 0, i32 0"  # cbsz, abid, blgp
    return (
        f"define {c} @row{index}({a} %a, {b} %b, {c} %c) {{\n"
        f"  %d = call {c} @{name}({a} %a, {b} %b, {c} %c, {extra})\n"
        f"  ret {c} %d\n}}\n"
    )


@pytest.mark.parametrize("target", AMD, ids=AMD_IDS)
def test_every_amd_intrinsic_selects_its_row(target: Target, tmp_path):
    module = tmp_path / f"{target.name}.ll"
    module.write_text("".join(intrinsic_call_ir(i, row, target) for i, row in enumerate(target.mma)))
    result = _llvm("llc", target.name, module, "-")
    assert result.returncode == 0, result.stderr[-2000:]
    selected = dict(
        re.findall(r"^row(\d+):.*?^\s+(v_(?:mfma|wmma)\w+)", result.stdout, re.MULTILINE | re.DOTALL)
    )
    for index, row in enumerate(target.mma):
        assert selected.get(str(index)) == row.name, f"{row.key('intrinsic')} on {target.name}"


# --------------------------------------------------------------------------
# Peaks: table cycles x SIMDs x CUs x clock against the published figures
# --------------------------------------------------------------------------


def _peak_cases() -> list:
    return [
        pytest.param(target, key, published, id=f"{target.name}-{key}")
        for target in AMD
        for key, published in target.peak_dense_tflops
        if not is_unknown(published)
    ]


@pytest.mark.parametrize(("target", "key", "published"), _peak_cases())
def test_published_peak_matches_table(target: Target, key: str, published: float):
    computed = target.peak_from_table(key)
    assert abs(computed - published) <= 0.01 * published, (
        f"{target}: {key} from the table {computed:.1f} TFLOP/s, published {published}"
    )


@pytest.mark.parametrize("target", AMD, ids=AMD_IDS)
def test_fp16_and_fp8_peaks_are_checked_where_present(target: Target):
    published = dict(target.peak_dense_tflops)
    assert "f16" in published
    has_fp8_rows = any(r.a in FP8_KIND for r in target.mma)
    assert ("fp8" in published) == has_fp8_rows


# --------------------------------------------------------------------------
# Register and workgroup limits, re-checked with the toolchain
# --------------------------------------------------------------------------

_LIMITS_IR = """
define amdgpu_kernel void @wide(ptr addrspace(1) %p) #0 {
  store i32 0, ptr addrspace(1) %p
  ret void
}
define amdgpu_kernel void @vgprs97(ptr addrspace(1) %p) {
  call void asm sideeffect "", "~{v96}"()
  ret void
}
attributes #0 = { "amdgpu-flat-work-group-size"="1,2048" }
"""


@pytest.mark.parametrize("target", AMD, ids=AMD_IDS)
def test_workgroup_and_register_limits(target: Target, tmp_path):
    module = tmp_path / "limits.ll"
    module.write_text(_LIMITS_IR)
    result = _llvm("llc", target.name, module, "-")
    assert result.returncode == 0, result.stderr
    compute, registers = target.compute, target.registers
    # A request for 2048 threads is cut to the hardware maximum.
    assert f".max_flat_workgroup_size: {compute.max_threads_per_workgroup}" in result.stdout
    occupancy = [int(x) for x in re.findall(r"; Occupancy: (\d+)", result.stdout)]
    assert occupancy[0] == compute.max_waves_per_simd
    # 97 VGPRs round up to the allocation granule; the SIMD's file (CDNA: the
    # unified file one wave may fill, RDNA: file_per_lane) holds that many waves.
    granule = registers.vgpr_alloc_granule
    rounded = -(-97 // granule) * granule
    file = registers.vgprs_per_lane if is_unknown(registers.file_per_lane) else registers.file_per_lane
    assert occupancy[1] == min(compute.max_waves_per_simd, file // rounded)
    if is_unknown(registers.file_per_lane):
        # CDNA encodes the count in allocation granules (RDNA in blocks of 8 whatever its granule).
        assert f"; VGPRBlocks: {-(-97 // granule) - 1}" in result.stdout


@pytest.mark.parametrize("target", AMD, ids=AMD_IDS)
def test_sgpr_and_accum_offset_limits(target: Target, tmp_path):
    regs = target.registers
    last = regs.sgprs_per_wave - 1
    lines = [f"s_mov_b32 s{last}, 0", f"s_mov_b32 s{last + 1}, 0"]
    failures = _failing_lines(target.name, lines, tmp_path)
    # CDNA: "s102 register not available on this GPU"; RDNA: "register index is out of range".
    assert 1 not in failures and re.search("not available|out of range", failures[2]), failures


@pytest.mark.parametrize("target", AMD, ids=AMD_IDS)
def test_lds_limit(target: Target, tmp_path):
    limit = target.memory.shared_bytes_per_workgroup
    outcomes = []
    for size in (limit, limit + 4):
        module = tmp_path / f"lds{size}.ll"
        module.write_text(
            f"@lds = internal addrspace(3) global [{size // 4} x i32] poison\n"
            "define amdgpu_kernel void @k(i32 %i) {\n"
            f"  %p = getelementptr [{size // 4} x i32], ptr addrspace(3) @lds, i32 0, i32 %i\n"
            "  store volatile i32 0, ptr addrspace(3) %p\n  ret void\n}\n"
        )
        result = _llvm("llc", target.name, module, module.with_suffix(".s"))
        outcomes.append(result.returncode)
    assert outcomes[0] == 0 and outcomes[1] != 0, f"{target}: LDS limit is not {limit} bytes"


# --------------------------------------------------------------------------
# The descriptor files themselves
# --------------------------------------------------------------------------

SHIPPED = sorted(REPO.glob("tilemlir/backends/*/targets/*.toml"))
VALID_TEST_INPUTS = [REPO / "test/Backends/Inputs/minimal.toml"]


@pytest.mark.parametrize("path", SHIPPED + VALID_TEST_INPUTS, ids=lambda p: p.name)
def test_every_descriptor_in_the_repo_loads(path: Path):
    target = load_target_file(path)
    assert target.mma and target.qualified_name == f"{target.family}:{target.name}"
    # A packaged file prints as its name; any other file names itself too.
    shown = target.qualified_name if path in SHIPPED else f"{target.qualified_name} (from {path.name})"
    assert str(target) == shown


def test_the_shipped_targets():
    names = sorted(str(load_target_file(p)) for p in SHIPPED)
    assert names == [
        "amdgpu:gfx1100",
        "amdgpu:gfx1101",
        "amdgpu:gfx1102",
        "amdgpu:gfx1200",
        "amdgpu:gfx1201",
        "amdgpu:gfx90a",
        "amdgpu:gfx942",
        "amdgpu:gfx950",
        "metax:xcore1000",
        "metax:xcore1500",
        "nvidia:sm_90a",
    ]


# A key given a number, at the start of a line or inside an inline table.
_NUMBER = re.compile(r"(?:^|[{,])\s*[\w-]+\s*=\s*-?\d")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_number_has_a_defined_source(path: Path):
    target = load_target_file(path)
    defined = {key for key, _ in target.sources}
    used = set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        code, _, comment = line.partition("#")
        keys = set(re.findall(r"\[([A-Z0-9][A-Z0-9-]*)\]", comment))
        used |= keys
        if _NUMBER.search(code) and not code.lstrip().startswith("schema"):
            assert keys, f"{path.name}:{number}: a number without a source key: {line.strip()}"
    assert used <= defined, f"{path.name}: keys used but not in [sources]: {sorted(used - defined)}"
