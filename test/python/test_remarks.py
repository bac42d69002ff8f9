"""Which remarks are printed (`--remarks=SPEC`, `tilemlir.compile(remarks=)`):
by default what costs speed or precision and a target's assumed facts in one remark; `all`,
`none`, or a regular expression over the pass names, like clang's -Rpass=.
--verify-diagnostics still checks every remark; an error makes the remarks
before it quiet."""

from __future__ import annotations

import pytest
from conftest import run_tool
from kernel_text import whole_problem_gemm
from mlir import ir

import tilemlir
from tilemlir.diagnostics import (
    Diag,
    UserError,
    collect_diagnostics,
    configure_remarks,
    emit_remark,
    format_diag,
    remark_mark,
    shown_remarks,
    withdraw_remarks,
)

# Two whole-problem gemms in one function: tile-tiling makes a kernel of each.
TWO_GEMMS = whole_problem_gemm(256, 256, 256, "f16", "f32").replace(
    "  return\n",
    '  "tile.gemm"(%A, %B, %C) {accum_dtype = f32, transpose_a = false, transpose_b = false} : '
    "(memref<256x256xf16>, memref<256x256xf16>, memref<256x256xf32>) -> ()\n  return\n")


@pytest.fixture(autouse=True)
def default_remarks():
    configure_remarks(None)
    yield
    configure_remarks(None)


def said(spec: str | None) -> list[Diag]:
    """The remarks a collector keeps, one of each kind, under `spec`."""
    configure_remarks(spec)
    context = ir.Context()
    where = ir.Location.file("k.mlir", 3, 5, context=context)
    sink: list[Diag] = []
    with collect_diagnostics(context, sink, None):
        for origin, kind in (("tile-tiling", "info"), ("tile-tiling", "assumption"),
                             ("tile-infer-layout", "speed"), ("tile-legalize-precision", "precision")):
            emit_remark(where, f"{origin}: {kind}", origin=origin, kind=kind)
    return sink


@pytest.mark.parametrize("spec, shown", [
    (None, ["tile-tiling: assumption", "tile-infer-layout: speed", "tile-legalize-precision: precision"]),
    ("default", ["tile-tiling: assumption", "tile-infer-layout: speed", "tile-legalize-precision: precision"]),
    ("all", ["tile-tiling: info", "tile-tiling: assumption", "tile-infer-layout: speed",
             "tile-legalize-precision: precision"]),
    ("none", []),
    ("tiling", ["tile-tiling: info", "tile-tiling: assumption"]),
    ("^tile-(infer|legalize)", ["tile-infer-layout: speed", "tile-legalize-precision: precision"]),
])
def test_spec_selects_the_printed_remarks(spec, shown):
    sink = said(spec)
    assert [d.message for d in shown_remarks(sink)] == shown
    # A hidden remark is still collected (--verify-diagnostics checks it), not printed.
    assert len(sink) == 4
    assert "".join(format_diag(d) for d in sink).count("remark:") == len(shown)


@pytest.mark.parametrize("spec", ["(", "tile-[", ""])
def test_a_bad_spec_is_a_user_error(spec):
    with pytest.raises(UserError, match="--remarks.*none, all, default"):
        configure_remarks(spec)


def test_an_assumed_fact_is_said_once_and_again_after_it_is_withdrawn():
    context = ir.Context()
    first, second = (ir.Location.file("k.mlir", line, 1, context=context) for line in (3, 7))
    sink: list[Diag] = []
    with collect_diagnostics(context, sink, None):
        emit_remark(first, "x: 'a' is not publicly known for t: assumed 1", origin="x", kind="assumption")
        mark = remark_mark()
        emit_remark(second, "x: 'a' is not publicly known for t: assumed 1", origin="x", kind="assumption")
        emit_remark(second, "x: 'b' is not publicly known for t: assumed 2", origin="x", kind="assumption")
        assert [d.line for d in sink] == [3, 7]
        # A compile attempt the driver replaces: the next one says its facts again.
        withdraw_remarks(mark)
        emit_remark(second, "x: 'b' is not publicly known for t: assumed 2", origin="x", kind="assumption")
    assert [(d.line, d.message[3:6]) for d in sink] == [(3, "'a'"), (7, "'b'")]


def test_an_error_makes_the_remarks_before_it_quiet():
    context = ir.Context()
    where = ir.Location.file("k.mlir", 3, 5, context=context)
    sink: list[Diag] = []
    with collect_diagnostics(context, sink, None):
        emit_remark(where, "p: padding dropped", origin="p", kind="speed")
        sink.append(Diag("error", "3 stages need 98304 bytes of LDS", "k.mlir", 3, 5))
    assert [d.severity for d in sink] == ["remark", "error"]  # --verify-diagnostics sees both
    assert "".join(format_diag(d) for d in sink) == "k.mlir:3:5: error: 3 stages need 98304 bytes of LDS\n"


def test_compile_remarks_argument():
    text = whole_problem_gemm(256, 256, 256, "f16", "f32")
    by_spec = {spec: [d.message for d in tilemlir.compile(text, target="amdgpu:gfx942", emit="tile",
                                                          remarks=spec).remarks]
               for spec in ("default", "all", "none", "cost|tiling")}
    assert by_spec["none"] == []
    assert any(m.startswith("tile-tiling: block ") for m in by_spec["all"])
    assert by_spec["cost|tiling"] == [m for m in by_spec["all"] if m.startswith("tile-tiling: ")]
    assert not any(m.startswith("tile-tiling: block ") for m in by_spec["default"])
    # The default says gfx942's two assumed facts in one remark; all says each.
    assert sum("2 facts of amdgpu:gfx942 are not publicly known" in m and "memory.latency_clocks" in m
               and "memory.loaded_latency_clocks" in m for m in by_spec["default"]) == 1
    assert not any("'memory.latency_clocks' is not publicly known" in m for m in by_spec["default"])
    assert sum("'memory.latency_clocks' is not publicly known" in m for m in by_spec["all"]) == 1
    with pytest.raises(UserError, match="not a valid regular expression"):
        tilemlir.compile(text, target="amdgpu:gfx942", emit="tile", remarks="(")


def test_a_whole_problem_compile_says_each_assumed_fact_once():
    """Two gemms on gfx942: each assumed fact is printed once, not per gemm; by
    default gfx942's two in one remark, with --remarks=all each in its own."""
    result = run_tool("tile-compile", "-", "--target", "amdgpu:gfx942", "--emit", "tile", stdin=TWO_GEMMS)
    assert result.returncode == 0, result.stderr
    remarks = [line for line in result.stderr.splitlines() if ": remark: " in line]
    assert sum("2 facts of amdgpu:gfx942 are not publicly known" in r for r in remarks) == 1
    assert not any("tile-tiling: block " in r for r in remarks)  # what was chosen: --remarks=all
    result = run_tool("tile-compile", "-", "--target", "amdgpu:gfx942", "--emit", "tile", "--remarks=all",
                      stdin=TWO_GEMMS)
    remarks = [line for line in result.stderr.splitlines() if ": remark: " in line]
    assert sum("'memory.latency_clocks' is not publicly known for amdgpu:gfx942" in r for r in remarks) == 1
    assert sum("'memory.loaded_latency_clocks' is not publicly known" in r for r in remarks) == 1


def test_fp8_assumption_on_metax_is_said_once_for_two_gemms():
    text = TWO_GEMMS.replace("xf16>", "xf8E4M3FN>")
    messages = [d.message for d in tilemlir.compile(text, target="metax:xcore1000", emit="tile",
                                                    remarks="all").remarks]
    assert sum(m.startswith("tile-legalize-precision: whether metax:xcore1000 has fp8") for m in messages) == 1
    folded = [d.message for d in tilemlir.compile(text, target="metax:xcore1000", emit="tile").remarks]
    assert sum("facts of metax:xcore1000 are not publicly known" in m and "matrix.fp8_formats" in m
               for m in folded) == 1


def test_jit_kernel_compile_remarks_argument():
    from tilelang_style.kernels import copies_then_gemm_then_epilogue

    kernel = copies_then_gemm_then_epilogue()
    assert any("runs without prefetch on NVIDIA" in d.message for d in kernel.compile("gpu").remarks)
    assert kernel.compile("gpu", remarks="none").remarks == []
