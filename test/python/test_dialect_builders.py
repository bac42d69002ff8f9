"""Every tile op built from Python with the upstream builder conventions
(keyword-only loc=None, ip=None), then verified and round-tripped."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func

from tilemlir.dialects import make_context, tile
from tilemlir.passes import build_pipeline


def _build_module() -> ir.Module:
    f16, f32 = ir.F16Type.get(), ir.F32Type.get()
    a_type = ir.MemRefType.get([256, 128], f16)
    c_type = ir.MemRefType.get([256, 256], f32)
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("built", ir.FunctionType.get([a_type, a_type, c_type], []))
        entry = fn.add_entry_block()
        with ir.InsertionPoint(entry):
            kernel = tile.kernel([4, 4], 256, loc=ir.Location.name("kernel"))
            with tile.kernel_body(kernel) as (bx, by):
                a_s = tile.alloc_shared(tile.shared_memref_type([64, 32], f16))
                b_s = tile.alloc_shared(tile.shared_memref_type([64, 32], f16))
                acc = tile.alloc_fragment(tile.fragment_memref_type([64, 64], f32))
                row_max = tile.alloc_fragment(tile.fragment_memref_type([64], f32))
                zero = arith.ConstantOp(f32, 0.0).result
                tile.fill(acc, zero)
                c64 = arith.ConstantOp(ir.IndexType.get(), 64).result
                row = arith.MulIOp(by, c64).result
                col = arith.MulIOp(bx, c64).result
                tile.copy(entry.arguments[0], a_s, [row, row])
                tile.copy(entry.arguments[1], b_s, [col, col])
                tile.gemm(a_s, b_s, acc, accum_dtype=f32, transpose_b=True)
                tile.reduce(acc, row_max, kind="max", dim=1)
                tile.copy(acc, entry.arguments[2], dst_indices=[row, col])
            func.ReturnOp([])
    return module


def test_builders_produce_verified_tile_ir():
    with make_context(), ir.Location.unknown():
        module = _build_module()
        assert module.operation.verify()
        build_pipeline("tile-verify").run(module.operation)
        text = str(module)
    for name in tile.OP_NAMES:
        assert f'"{name}"' in text, name
    assert "transpose_b = true" in text
    assert 'kind = "max"' in text
    assert "operandSegmentSizes = array<i32: 1, 1, 0, 2>" in text


def test_round_trip_through_text():
    with make_context(), ir.Location.unknown():
        first = str(_build_module())
        generic = ir.Module.parse(first).operation.get_asm(print_generic_op_form=True)
        again = str(ir.Module.parse(generic))
    assert again == first


def test_insertion_point_keyword():
    """ip= places the op like the upstream builders do."""
    f32 = ir.F32Type.get
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ir.FunctionType.get([], []))
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                ret = func.ReturnOp([])
        kernel = tile.kernel([2], 64, ip=ir.InsertionPoint(ret))
        assert kernel.operation.parent.name == "func.func"
        ops = [op.operation.name for op in block.operations]
        assert ops == ["tile.kernel", "func.return"]
        with tile.kernel_body(kernel):
            frag = tile.alloc_fragment(tile.fragment_memref_type([4], f32()))
        assert frag.owner.parent.name == "tile.kernel"


def test_register_is_idempotent_and_scoped():
    context = ir.Context()
    assert not context.is_registered_operation("tile.gemm")
    tile.register_dialect(context)
    tile.register_dialect(context)
    assert context.is_registered_operation("tile.gemm")
    assert not ir.Context().is_registered_operation("tile.gemm")


def test_reduce_rejects_unknown_kind():
    import pytest

    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body), pytest.raises(ValueError, match="sum, max, min"):
            tile.reduce(None, None, kind="avg", dim=0)
