"""Embedding the tile passes in a caller's own PassManager."""

from __future__ import annotations

import pytest
from mlir import ir, passmanager

from tilemlir import passes
from tilemlir.dialects import register_dialect
from tilemlir.passes import PassOptionError, PipelineError

GOOD = """
func.func @f(%A: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %z = arith.constant 0.0 : f32
  %dead = arith.constant 1.0 : f32
  "tile.fill"(%C, %z) : (memref<64x64xf32>, f32) -> ()
  "tile.gemm"(%A, %A, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>) -> ()
  return
}
"""

BAD = """
func.func @f(%A: memref<64x64xf16>, %C: memref<64x64xf16>) {
  "tile.gemm"(%A, %A, %C) {accum_dtype = f16, transpose_a = false, transpose_b = false} : (memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf16>) -> ()
  return
}
"""


@pytest.fixture
def context():
    context = ir.Context()
    register_dialect(context)
    with context, ir.Location.unknown():
        yield context


def test_add_to_a_callers_pass_manager(context):
    module = ir.Module.parse(GOOD)
    pm = passmanager.PassManager("builtin.module")
    pm.add("func.func(cse)")  # the caller's own passes around ours
    passes.add_to(pm, "tile-verify,canonicalize")
    pm.add("cse")
    assert str(pm).startswith("builtin.module(func.func(cse),tile-verify,canonicalize{")
    pm.run(module.operation)
    assert "1.000000e+00" not in str(module)  # canonicalize ran after tile-verify


def test_build_pipeline_nested_anchor(context):
    module = ir.Module.parse(GOOD)
    pm = passes.build_pipeline("builtin.module(func.func(canonicalize,tile-verify),cse)")
    pm.run(module.operation)
    assert "tile.gemm" in str(module)


def test_failure_is_a_located_mlir_error(context):
    module = ir.Module.parse(BAD)
    pm = passes.build_pipeline("tile-verify")
    with pytest.raises(ir.MLIRError) as raised:
        pm.run(module.operation)
    [diag] = raised.value.error_diagnostics
    assert "accum_dtype f16 is too narrow" in diag.message
    assert "loc(" in str(diag.location)


def test_options_round_trip():
    tile_pass = passes.make_pass("tile-verify", "allow-narrow-accumulator=true")
    assert str(tile_pass) == "tile-verify{allow-narrow-accumulator=true}"
    assert passes.make_pass("tile-verify", tile_pass.option_text()) == tile_pass
    assert str(passes.make_pass("tile-verify")) == "tile-verify"
    # A bare boolean option means true, as in mlir-opt.
    assert passes.make_pass("tile-verify", "allow-narrow-accumulator").allow_narrow_accumulator


def test_switch_options():
    """auto|true|false options: auto by default, bare means true, 1/on and
    0/off as for booleans; the rule decides only for auto (resolve_switch)."""
    from tilemlir.passes.base import resolve_switch

    default = passes.make_pass("tile-infer-layout")
    assert default.transpose_reads == "auto" and str(default) == "tile-infer-layout"
    assert passes.make_pass("tile-lower-to-gpu", "direct-lds-loads").direct_lds_loads == "true"
    assert passes.make_pass("tile-lower-to-gpu", "direct-lds-loads=off").direct_lds_loads == "false"
    assert str(passes.make_pass("tile-infer-layout", "transpose-reads=1")) == \
        "tile-infer-layout{transpose-reads=true}"
    assert [resolve_switch(v, True) for v in ("auto", "true", "false", False)] == [True, True, False, False]
    assert resolve_switch("auto", False) is False


def test_pass_is_frozen():
    import dataclasses

    tile_pass = passes.make_pass("tile-verify")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tile_pass.allow_narrow_accumulator = True  # type: ignore[misc]
    assert hash(tile_pass) == hash(passes.make_pass("tile-verify"))


@pytest.mark.parametrize(
    ("pipeline", "error", "message"),
    [
        ("tile-verfy", PipelineError, "did you mean 'tile-verify'"),
        ("canonicalise", PipelineError, "did you mean 'canonicalize'"),
        ("tile-verify{nope=1}", PassOptionError, "unknown option 'nope'"),
        ("tile-verify{allow-narrow-accumulator=2x}", PassOptionError, "expects true or false"),
        ("tile-infer-layout{transpose-reads=yes}", PassOptionError, "expects auto, true or false"),
        ("func.func(cse", PipelineError, r"expected '\)'"),
        ("cse{max=1}", PipelineError, "invalid options for pass 'cse'"),
    ],
)
def test_bad_pipelines(context, pipeline, error, message):
    pm = passmanager.PassManager("builtin.module")
    with pytest.raises(error, match=message):
        passes.add_to(pm, pipeline)


def test_registry_lists_tile_passes():
    assert "tile-verify" in passes.pass_names()
    assert passes.pass_class("tile-verify").summary


def test_add_pipeline_is_add_to():
    assert passes.add_to is passes.add_pipeline


@pytest.mark.parametrize("pipeline", [
    "tile-verify,func.func(canonicalize)",
    ("builtin.module(func.func(canonicalize{max-iterations=3},tile-verify{allow-narrow-accumulator}),"
     "tile-tiling{block=64,64,32 stages=2 target=amdgpu:gfx942},cse)"),
    "tile-infer-layout{transpose-reads=false},func.func(cse,canonicalize)",
])
def test_print_pipeline_is_a_fixed_point_that_runs_the_same(context, pipeline):
    """print -> add_pipeline -> print gives the same text, and both pipelines
    produce the same IR."""
    printed = passes.print_pipeline(pipeline)
    assert printed.startswith("builtin.module(") and passes.print_pipeline(printed) == printed
    outputs = []
    for text in (pipeline, printed):
        module = ir.Module.parse(GOOD)
        passes.build_pipeline(text).run(module.operation)
        outputs.append(str(module))
    assert outputs[0] == outputs[1]


def test_print_pipeline_keeps_options_and_anchors(context):
    printed = passes.print_pipeline("func.func(tile-verify{allow-narrow-accumulator}),tile-tiling{stages=2}",
                                    overrides={"target": "amdgpu:gfx942"})
    assert printed == ("builtin.module(func.func(tile-verify{allow-narrow-accumulator=true}),"
                       "tile-tiling{stages=2 target=amdgpu:gfx942})")


def test_option_values_with_spaces_are_quoted_and_parse_back():
    tile_pass = passes.make_pass("tile-tiling", "target='my chip.toml'")
    assert str(tile_pass) == "tile-tiling{target='my chip.toml'}"
    assert passes.make_pass("tile-tiling", tile_pass.option_text()) == tile_pass


def test_add_pipeline_needs_a_module_anchored_pass_manager(context):
    pm = passmanager.PassManager("func.func")
    with pytest.raises(PipelineError, match="anchored on 'builtin.module', not on 'func.func'"):
        passes.add_pipeline(pm, "tile-verify")


def test_add_pipeline_needs_the_tile_dialect():
    """A context without the tile dialect is refused for tile passes (named
    with the call that fixes it), and accepted for upstream-only pipelines."""
    with ir.Context():
        pm = passmanager.PassManager("builtin.module")
        with pytest.raises(PipelineError, match=r"register_dialect\(context\)"):
            passes.add_pipeline(pm, "func.func(tile-verify)")
        assert str(passes.add_pipeline(pm, "cse")) == "builtin.module(cse)"


def test_add_pipeline_turns_multithreading_off():
    context = ir.Context()
    register_dialect(context)
    context.enable_multithreading(True)
    with context:
        passes.add_pipeline(passmanager.PassManager("builtin.module"), "cse")
    assert context.get_num_threads() == 1
