"""Facts about a tile.kernel and its operands that several passes read: its
grid and threads, whether the target can launch that grid, the span of a
memref's elements, and the integer attributes passes build."""

from __future__ import annotations

from mlir import ir

from tilemlir.irutil import enclosing
from tilemlir.targets.model import is_unknown

# Assumed where a descriptor's compute.max_grid is unknown: CUDA's limits (CUDA
# C++ Programming Guide, compute capabilities table: grid x 2^31-1, y and z 65535).
ASSUMED_MAX_GRID = (2 ** 31 - 1, 65535, 65535)


def grid_problem(grid: list[int], threads: int, target) -> str | None:
    """Why `target` cannot launch this grid (blocks along x, y, z; `threads`
    along x in each), or None. The limits are the descriptor's
    compute.max_grid and compute.max_work_items_per_dimension."""
    limits = target.compute.max_grid
    if is_unknown(limits):
        limits = ASSUMED_MAX_GRID
        source = f"compute.max_grid is unknown for {target}: CUDA's limits assumed"
    else:
        source = f"compute.max_grid of {target}"
    for axis, extent, most in zip("xyz", grid, limits):
        if extent > most:
            return f"{extent} blocks along {axis}, {target.name} launches at most {most} ({source})"
    most_items = target.compute.max_work_items_per_dimension
    if not is_unknown(most_items) and grid and grid[0] * threads > most_items:
        return (f"{grid[0]} blocks of {threads} threads along x are {grid[0] * threads} work-items, "
                f"{target.name} launches at most {most_items} per dimension "
                f"(compute.max_work_items_per_dimension of {target})")
    return None


def kernel_threads(kernel: ir.Operation) -> int:
    return ir.IntegerAttr(kernel.attributes["threads"]).value


def kernel_grid(kernel: ir.Operation) -> list[int]:
    return list(ir.DenseI64ArrayAttr(kernel.attributes["grid"]))


def enclosing_kernel(op: ir.Operation) -> ir.Operation | None:
    return enclosing(op, "tile.kernel")


def element_span(memref: ir.MemRefType) -> tuple[int, int] | None:
    """[lowest, highest] element offset from the base that a static memref
    reaches, strides of either sign and the layout offset included; None when
    a size, stride or offset is dynamic (or the layout is not strided)."""
    try:
        strides, offset = memref.get_strides_and_offset()
    except (ValueError, RuntimeError):
        return None
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if not memref.has_static_shape or dynamic in (*strides, offset):
        return None
    if 0 in memref.shape:
        return offset, offset - 1  # no element: an empty span
    reach = [(extent - 1) * stride for extent, stride in zip(memref.shape, strides)]
    return offset + sum(min(0, r) for r in reach), offset + sum(max(0, r) for r in reach)


def i64_array(values) -> ir.DenseI64ArrayAttr:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def int_attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def configuration_of(kernel: ir.Operation) -> dict:
    """How a tile.kernel's configuration was decided, as tile-compile --report
    gives it: `workgroups` (its grid's blocks), `split_k`, `predicted_seconds`
    (the cost model's, or None) and `config_source` ("model", "tuning-db" or
    "user"), from the `tile.tiling` tile-tiling wrote; a kernel without one was
    written by the user."""
    from tilemlir.dialects import attributes

    record = attributes.TILING.read(kernel)
    workgroups = 1
    for extent in kernel_grid(kernel):
        workgroups *= extent
    if record is None:
        return {"workgroups": workgroups, "split_k": 1, "predicted_seconds": None, "config_source": "user"}
    seconds = ir.FloatAttr(record["predicted_seconds"]).value if "predicted_seconds" in record else None
    return {"workgroups": workgroups, "split_k": ir.IntegerAttr(record["split_k"]).value,
            "predicted_seconds": seconds, "config_source": ir.StringAttr(record["source"]).value}
