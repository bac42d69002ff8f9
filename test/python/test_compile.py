"""tilemlir.compile and the amdgpu backend's toolchain, report and checks."""

from __future__ import annotations

import pytest
from conftest import REPO, run_tool
from mlir import ir

import tilemlir
from tilemlir.backends.amdgpu import report as report_mod
from tilemlir.backends.amdgpu import toolchain
from tilemlir.backends.report_schema import kernel_entry, module_report
from tilemlir.compiler import CompileError
from tilemlir.diagnostics import UserError
from tilemlir.dialects import tile
from tilemlir.targets import get_target

EXAMPLE = REPO / "examples" / "gpu" / "mfma_fp8_gfx942.mlir"
SEED = REPO / "examples" / "seed_fp8_gemm.mlir"
GFX942 = get_target("amdgpu:gfx942")


@pytest.fixture(scope="module")
def example_text() -> str:
    return EXAMPLE.read_text()


@pytest.fixture(scope="module")
def hsaco_result(example_text):
    return tilemlir.compile(example_text, target="amdgpu:gfx942", emit="hsaco")


# -- the API ------------------------------------------------------------------


def test_compile_to_hsaco_keeps_every_stage(hsaco_result):
    assert set(hsaco_result.artifacts) == {"gpu", "llvm", "isa", "hsaco"}
    assert hsaco_result.artifact[:4] == b"\x7fELF"
    assert "@llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8" in hsaco_result.artifacts["llvm"]
    assert "v_mfma_f32_16x16x32_fp8_fp8" in hsaco_result.artifacts["isa"]
    stages = hsaco_result.report["compile_seconds"]
    assert list(stages) == ["parse", "tile-verify", "gpu-to-llvm", "translate", "llvm-opt", "llc",
                            "llvm-mc", "ld.lld", "total"]
    assert stages["total"] >= stages["llc"] > 0


def test_report_numbers(hsaco_result):
    (kernel,) = hsaco_result.report["kernels"]
    amdgpu = kernel["amdgpu"]
    assert kernel["name"] == "mfma_16x16_fp8"
    assert kernel["scratch_bytes"] == 0 and kernel["spills"] == 0
    assert kernel["shared_bytes"] == 2 * 16 * 64
    assert kernel["matrix_instructions"] == {"v_mfma_f32_16x16x32_fp8_fp8": {"main_loop": 2, "total": 2}}
    assert amdgpu["global_load_bits"] == 128 and amdgpu["lds_read_bits"] == 64
    # Our occupancy (from the descriptor) agrees with llc's own.
    assert kernel["occupancy"] == amdgpu["occupancy_llc"] == 8


def test_hsaco_notes_match_the_isa_metadata(hsaco_result):
    from_isa = toolchain.parse_amdhsa_metadata(hsaco_result.artifacts["isa"])
    from_elf = toolchain.parse_amdhsa_metadata(toolchain.read_notes(hsaco_result.artifact))
    assert from_elf["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx942"
    assert from_elf["amdhsa.kernels"] == from_isa["amdhsa.kernels"]
    kernel = from_elf["amdhsa.kernels"][0]
    assert kernel[".reqd_workgroup_size"] == [64, 1, 1]
    assert kernel[".vgpr_count"] == hsaco_result.report["kernels"][0]["registers"]


def test_module_input_is_not_modified(example_text):
    context = tile.make_context()
    with context:
        module = ir.Module.parse(example_text)
        before = str(module)
        result = tilemlir.compile(module, emit="llvm")
        assert str(module) == before
    assert result.report is None and set(result.artifacts) == {"gpu", "llvm"}


def test_target_comes_from_the_module_then_the_argument(example_text):
    # The example says tile.target = "amdgpu:gfx942"; the argument wins over it.
    assert tilemlir.compile(example_text, target=None, emit="isa").target == GFX942
    with pytest.raises(CompileError) as raised:
        tilemlir.compile(example_text, target="amdgpu:gfx950", emit="isa")
    assert "<input>:59:15: error: gfx950 matrix instructions take f8E4M3FN, f8E5M2" in str(raised.value)


def test_ocp_fp8_compiles_for_gfx950(example_text):
    result = tilemlir.compile(example_text.replace("f8E4M3FNUZ", "f8E4M3FN"), target="amdgpu:gfx950",
                              emit="isa")
    assert "v_mfma_f32_16x16x32_fp8_fp8" in result.artifact
    assert "amdgcn-amd-amdhsa--gfx950" in result.artifact


def test_report_option_goes_on_to_the_isa(example_text):
    result = tilemlir.compile(example_text, emit="gpu", options={"report": True})
    assert result.artifact.startswith("module attributes {gpu.container_module")
    assert result.report["kernels"][0]["matrix_instructions"]


def test_bad_requests_are_user_errors(example_text):
    with pytest.raises(UserError, match="unknown --emit 'spirv'"):
        tilemlir.compile(example_text, emit="spirv")
    with pytest.raises(UserError, match="--emit hsaco is not a stage of the metax backend"):
        tilemlir.compile(example_text, target="metax:xcore1000", emit="hsaco")
    with pytest.raises(UserError, match=r"--emit maca is not a stage of the amdgpu backend "
                                        r"\(for amdgpu:gfx942: tile, gpu, llvm, isa, hsaco\); "
                                        "maca is a stage of metax"):
        tilemlir.compile(example_text, target="amdgpu:gfx942", emit="maca")
    with pytest.raises(CompileError, match="--emit tile needs tile IR"):
        tilemlir.compile(example_text, emit="tile")
    with pytest.raises(CompileError, match=r"<input>:\d+:\d+: error"):
        tilemlir.compile("gpu.module @m {")


@pytest.mark.parametrize(("flag", "text"), [
    ("--select", "prefer=v_mfma_f32_16x16x16_f16},symbol-dce,tile-select-mma{prefer=v_mfma_f32_16x16x16_f16"),
    ("--tiling", "block=64,64,32},symbol-dce,tile-tiling{block=64,64,32"),
    ("--tiling", "threads=256}"),
])
def test_pass_options_cannot_add_passes(flag, text, tmp_path):
    """--tiling and --select are one pass's options: text that closes the
    braces and adds a pass is refused, and nothing is written."""
    out = tmp_path / "out.mlir"
    result = run_tool("tile-compile", str(REPO / "examples" / "gemm_whole_problem.mlir"),
                      "--target", "amdgpu:gfx942", "--emit", "tile", flag, text, "-o", str(out))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "are not an option list" in result.stderr and not out.exists()


def test_missing_tile_pass_is_named(monkeypatch):
    from tilemlir.passes import registry

    monkeypatch.delitem(registry._REGISTRY, "tile-select-mma", raising=False)
    with pytest.raises(UserError, match="'tile-select-mma' does not refer to a registered pass"):
        tilemlir.compile(SEED.read_text(), emit="isa")


def test_seed_gemm_main_loop_has_one_mfma_per_instruction_tile():
    result = tilemlir.compile(SEED.read_text(), emit="isa")
    (kernel,) = result.report["kernels"]
    assert kernel["spills"] == 0 and kernel["scratch_bytes"] == 0
    (name, counts), = kernel["matrix_instructions"].items()
    m, n, k = (int(x) for x in name.split("_")[3].split("x"))
    # The seed's block is 128x128x32; the ISA is one wave's share of the workgroup's MFMAs.
    waves = kernel["threads"] // 64
    assert counts["main_loop"] * waves == 128 * 128 * 32 // (m * n * k)


# -- the toolchain ---------------------------------------------------------------


def test_missing_tool_says_make_setup(monkeypatch, tmp_path):
    monkeypatch.setattr(toolchain, "LLVM_BIN_DIR", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(toolchain.ToolchainError, match="run `make setup`"):
        toolchain.find_tool("llc")


def test_failing_tool_reports_its_stderr():
    # What we rely on: the command line, the status and every line llc wrote
    # to stderr reach the user (not the wording of llc's message).
    import subprocess

    bad = "this is not LLVM IR\n"
    with pytest.raises(toolchain.ToolchainError) as raised:
        toolchain.llc_to_isa(bad, "gfx942")
    message = str(raised.value)
    llc = toolchain.find_tool("llc")
    direct = subprocess.run([str(llc), "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-o", "/dev/null"],
                            input=bad.encode(), capture_output=True, check=False)
    assert direct.returncode != 0
    assert message.startswith(f"llc failed (exit status {direct.returncode}): "
                              "llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942")
    stderr_lines = [line.strip() for line in direct.stderr.decode().splitlines() if line.strip()]
    assert stderr_lines and all(line in message for line in stderr_lines)


def test_metadata_parser_reads_nested_maps_and_lists():
    text = """\
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .args:
      - .offset:         0
        .size:           8
    .name:           k
    .reqd_workgroup_size:
      - 256
      - 1
    .uses_dynamic_stack: false
amdhsa.target:   amdgcn-amd-amdhsa--gfx950
amdhsa.version:
  - 1
  - 2
...
\t.end_amdgpu_metadata
"""
    assert toolchain.parse_amdhsa_metadata(text) == {
        "amdhsa.kernels": [{".args": [{".offset": 0, ".size": 8}], ".name": "k",
                            ".reqd_workgroup_size": [256, 1], ".uses_dynamic_stack": False}],
        "amdhsa.target": "amdgcn-amd-amdhsa--gfx950",
        "amdhsa.version": [1, 2],
    }


# -- the report ------------------------------------------------------------------

NESTED_LOOPS = """\
k:
\tv_mfma_f32_32x32x16_fp8_fp8 a[0:15], v[0:1], v[2:3], a[0:15]
.LBB0_1:
\tglobal_load_dwordx4 v[4:7], v8, s[0:1]
.LBB0_2:
\tds_read_b128 v[4:7], v9
\tds_read2_b64 v[4:7], v9 offset1:4
\tv_mfma_f32_32x32x16_fp8_fp8 a[0:15], v[0:1], v[2:3], a[0:15]
\tv_mfma_f32_32x32x16_fp8_fp8 a[0:15], v[0:1], v[2:3], a[0:15]
\ts_cbranch_scc1 .LBB0_2
\tv_mfma_f32_16x16x32_fp8_fp8 a[0:3], v[0:1], v[2:3], a[0:3]
\ts_cbranch_vccnz .LBB0_1
\tbuffer_store_dwordx2 v[0:1], off, s[0:3], 0
\ts_branch .LBB0_3
.LBB0_3:
\ts_endpgm
"""


def test_main_loop_is_the_innermost_loop_with_mfmas():
    assert report_mod.matrix_instructions(NESTED_LOOPS) == {
        "v_mfma_f32_16x16x32_fp8_fp8": {"main_loop": 0, "total": 1},
        "v_mfma_f32_32x32x16_fp8_fp8": {"main_loop": 2, "total": 3},
    }
    assert report_mod.access_widths(NESTED_LOOPS) == {
        "global_load_bits": 128, "global_store_bits": 64, "lds_read_bits": 128, "lds_write_bits": 0,
    }


def _usage(**changes) -> report_mod.KernelUsage:
    fields = {"name": "k", "vgpr": 24, "agpr": 0, "sgpr": 12, "scratch_bytes": 0, "vgpr_spills": 0,
              "sgpr_spills": 0, "lds_bytes": 0, "workgroup_size": 256, "occupancy_llc": None}
    return report_mod.KernelUsage(**{**fields, **changes})


@pytest.mark.parametrize(
    ("changes", "waves"),
    [
        ({"vgpr": 97}, 4),                    # ceil(97/8)*8 = 104; 512 // 104 = 4 (descriptor comment)
        ({"vgpr": 82, "agpr": 64}, 3),         # 84 + 64 = 148 -> 152; 512 // 152 = 3
        ({"vgpr": 8, "lds_bytes": 32768}, 2),  # 2 workgroups of 4 waves on 4 SIMDs
        ({"vgpr": 8}, 8),                      # the wave ceiling
    ],
)
def test_occupancy_formula(changes, waves):
    assert report_mod.occupancy(_usage(**changes), GFX942)[0] == waves


def _report_of(shared_bytes: int) -> dict:
    """A report of one kernel that spills, using `shared_bytes` of LDS."""
    kernel = kernel_entry("k", "amdgpu", threads=256, registers=24, shared_bytes=shared_bytes,
                          scratch_bytes=16, spills=3,
                          family_fields={"vgpr": 24, "agpr": 0, "sgpr": 12, "vgpr_spills": 2, "sgpr_spills": 1})
    return module_report(GFX942, [kernel])


def test_check_resources_names_the_numbers():
    over = _report_of(98304)
    with pytest.raises(report_mod.ResourceError) as raised:
        report_mod.check_resources(over, GFX942, allow_spills=False)
    assert str(raised.value).splitlines() == [
        "kernel 'k' needs 98304 bytes of LDS, gfx942 allows 65536",
        ("kernel 'k' spills 2 VGPRs and 1 SGPRs to scratch (16 bytes per lane); "
         "reduce the tile sizes, or pass --allow-spills"),
    ]
    with pytest.raises(report_mod.ResourceError, match="spills 2 VGPRs"):
        report_mod.check_resources(_report_of(65536), GFX942)  # spills refused by default
    report_mod.check_resources(_report_of(65536), GFX942, allow_spills=True)


# -- the command ------------------------------------------------------------------


def test_tile_compile_report_and_output_file(tmp_path):
    out = tmp_path / "k.s"
    done = run_tool("tile-compile", str(EXAMPLE), "-o", str(out), "--report")
    assert done.returncode == 0, done.stderr
    assert '"occupancy": 8' in done.stdout
    assert "v_mfma_f32_16x16x32_fp8_fp8" in out.read_text()


def test_tile_compile_old_no_spills_flag_is_still_accepted():
    # Refusing spills is the default now (spills.test); scripts that asked for it still run.
    done = run_tool("tile-compile", str(EXAMPLE), "--no-spills", "--emit", "isa")
    assert done.returncode == 0 and "v_mfma" in done.stdout, done.stderr


# -- refusals before any work ----------------------------------------------------


def _two_kernel_functions(text: str) -> str:
    head, body = text[:text.index("  func.func")], text[text.index("  func.func"):text.rindex("}")]
    return head + body + body.replace("@mixed_precision_gemm", "@second") + "}\n"


@pytest.mark.parametrize("target", ["amdgpu:gfx942", "nvidia:sm_90a"])
def test_several_kernel_functions_are_refused_before_compiling(target):
    seed = (REPO / "examples" / "seed_fp8_gemm.mlir").read_text().replace("f8E4M3FNUZ", "f16")
    text = _two_kernel_functions(seed)
    # The second function is broken past the verifier (an unknown pass option
    # would be found only in its tile stage): the refusal comes first.
    with pytest.raises(CompileError) as raised:
        tilemlir.compile(text, target=target, emit="ptx" if target.startswith("nvidia") else "isa",
                         options={"tiling": "bogus=1"})
    (diag,) = raised.value.diags
    assert diag.message.endswith("has 2 (@mixed_precision_gemm, @second); put each in a file of its own")
    assert (diag.file, diag.line) == ("<input>", text[:text.index("func.func @second")].count("\n") + 1)
    # The IR stages take both functions (the emulator runs such modules).
    assert "@second_kernels" in tilemlir.compile(text, target=target, emit="gpu").artifact


def test_the_nvidia_toolchain_compiles_through_the_drivers_checks():
    """compile_to_ptx (the device engine's and the benches' way to PTX) runs
    the driver's stages, whose input checks refuse before any work, as
    tilemlir.compile's do: several kernel functions, a target without ptx."""
    from tilemlir.backends.nvidia.toolchain import compile_to_ptx

    seed = SEED.read_text().replace("f8E4M3FNUZ", "f16")
    context = tile.make_context()
    # Broken past the verifier (an unknown tiling option): the refusal comes first.
    two = ir.Module.parse(_two_kernel_functions(seed), context)
    with pytest.raises(CompileError, match=r"has 2 \(@mixed_precision_gemm, @second\); put each in a file"):
        compile_to_ptx(two.operation, get_target("nvidia:sm_90a"), tiling="bogus=1")
    one = ir.Module.parse(seed, context)
    with pytest.raises(UserError, match="--emit ptx is not a stage of the amdgpu backend"):
        compile_to_ptx(one.operation, get_target("amdgpu:gfx942"))


def test_an_op_printed_into_a_diagnostic_is_cut_short():
    from tilemlir.diagnostics import OP_DUMP_LINES, Diag, format_diag

    dump = "see current operation: \n" + "\n".join(f"  op {i}" for i in range(3000))
    shown = format_diag(Diag("error", "failed", "f.mlir", 1, 1, (Diag("note", dump, "f.mlir", 1, 1),)))
    assert len(shown.splitlines()) == 1 + OP_DUMP_LINES + 1
    assert shown.rstrip().endswith(f"... ({3001 - OP_DUMP_LINES} more lines of this op not shown)")
    short = "see current operation: %0 = arith.constant 0 : index"
    assert short in format_diag(Diag("note", short))


F16_GEMM = (REPO / "test" / "Backends" / "metax" / "maca-f16.mlir").read_text()


@pytest.mark.parametrize("target, emit", [("amdgpu:gfx942", "isa"), ("metax:xcore1000", "maca"),
                                          ("nvidia:sm_90a", "ptx")])
def test_api_default_emit_is_tile_compiles(target, emit):
    """Without emit=, the backend's default_emit, as tile-compile without --emit
    (README, "Which target, which artefact"); AMD's code object is asked for."""
    result = tilemlir.compile(F16_GEMM, target=target)
    assert result.emit == emit and result.artifacts[emit]


def test_report_from_the_tile_stage_goes_on_to_the_report_stage():
    # Once an error ("expected exactly one gpu.module"): the report comes from the ISA.
    result = tilemlir.compile(F16_GEMM, target="amdgpu:gfx942", emit="tile", options={"report": True})
    assert result.artifact.startswith("module") and result.report["kernels"][0]["name"] == "gemm_kernel0"


def test_a_backend_without_stages_is_refused(monkeypatch):
    from dataclasses import replace

    from tilemlir.targets import registry

    metax = registry.backend("metax")

    def manifest_with(**changes):
        resolved = registry.ResolvedBackend("metax", "test:BACKEND", "test", replace(metax, **changes))
        monkeypatch.setattr(registry, "resolve_backend", lambda family: resolved)

    manifest_with(stages="")
    with pytest.raises(UserError, match="the metax backend declares no compile stages"):
        tilemlir.compile(F16_GEMM, target="metax:xcore1000")
    manifest_with(stages="tilemlir.compiler:__all__")
    with pytest.raises(UserError, match=r"the metax backend's stages \(tilemlir.compiler:__all__\) "
                                        "are not distinct Stages"):
        tilemlir.compile(F16_GEMM, target="metax:xcore1000")
