"""nvidia-dynamic-memref-arguments: dynamic-shape kernel arguments as a pointer plus index extents.

The nvidia pipeline lowers kernels with the bare-pointer calling convention
(`convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true}`, pass_lists.py): a
memref argument is one pointer, which is what a launcher passes. Upstream's
converter only makes a bare pointer of a memref whose shape, strides and
offset are static (LLVMTypeConverter's canConvertToBarePtr); for
`memref<?x128xf16>` it converts nothing and `gpu.func` fails to legalize. This
pass gives such an argument the calling convention the launcher implements:

* the argument becomes a 0-D memref of the same element type and memory space
  (a bare pointer), and the body sees the original memref again through a
  `memref.reinterpret_cast` with the extents and the row-major strides;
* the dynamic extents are new `index` arguments after the kernel's own
  arguments, in argument order, then axis order (`dynamic_extents`);
* every `gpu.launch_func` of the kernel passes the same: the memref cast to
  0-D and `memref.dim` of each dynamic axis.

The launch metadata (toolchain.launch_metadata, read before this pass) lists
the same extents, through `dynamic_extents`, so the launcher passes them.

Input invariant: GPU-level IR (after tile-lower-to-gpu), kernels as gpu.func.
Output invariant: every kernel argument of memref type has a static shape;
a dynamic-shape argument with a non-identity layout is refused (the launcher
knows only contiguous row-major arguments). No options.

    gpu.func @k(%a: memref<?x128xf16>) kernel { ... memref.load %a[%i, %j] ... }
    // becomes
    gpu.func @k(%a: memref<f16>, %a_d0: index) kernel {
      %v = memref.reinterpret_cast %a to offset: [0], sizes: [%a_d0, 128], strides: [128, 1]
      ... memref.load %v[%i, %j] ...
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlir import ir
from mlir.dialects import arith, memref

from tilemlir.irutil import walk
from tilemlir.passes.base import PassState, TilePass

DYNAMIC = ir.ShapedType.get_dynamic_size()


def dynamic_extents(t: ir.Type) -> list[int]:
    """The axes of `t` whose extent a launcher passes as an extra kernel
    argument: the dynamic axes of a memref, none for anything else."""
    if not isinstance(t, ir.MemRefType):
        return []
    return [axis for axis, extent in enumerate(ir.MemRefType(t).shape) if extent == DYNAMIC]


def has_identity_layout(t: ir.Type) -> bool:
    """A memref with the default (row-major, offset 0) layout."""
    memref_type = ir.MemRefType(t)
    layout = memref_type.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(
        memref_type.rank, context=t.context)


def _index_constant(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _row_major(argument: ir.BlockArgument, extents: list[ir.Value]) -> ir.Value:
    """`argument` (now 0-D) seen as its original type, at the start of `block`."""
    original = ir.MemRefType(argument.type)
    shape = list(original.shape)
    sizes = iter(extents)
    size_values = [next(sizes) if extent == DYNAMIC else None for extent in shape]
    static_strides, stride_values = [], []
    running, running_value = 1, None  # the stride as a constant, or a value once dynamic
    for extent, size_value in reversed(list(zip(shape, size_values))):
        if running_value is None:
            static_strides.insert(0, running)
        else:
            static_strides.insert(0, DYNAMIC)
            stride_values.insert(0, running_value)
        if extent == DYNAMIC:
            base = running_value if running_value is not None else _index_constant(running)
            running_value = arith.MulIOp(base, size_value).result
        elif running_value is None:
            running *= extent
        else:
            running_value = arith.MulIOp(running_value, _index_constant(extent)).result
    return memref.ReinterpretCastOp(original, argument, [], [v for v in size_values if v is not None],
                                    stride_values, [0], shape, static_strides).result


def rewrite_kernel(func: ir.Operation, state: PassState) -> list[tuple[int, list[int]]] | None:
    """Rewrites one gpu.func (module docstring); returns [(input position,
    dynamic axes)] of the arguments it rewrote, or None when it rewrote nothing."""
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = list(function_type.inputs)
    rewritten = [(position, dynamic_extents(t)) for position, t in enumerate(inputs) if dynamic_extents(t)]
    if not rewritten:
        return None
    for position, _ in rewritten:
        if not has_identity_layout(inputs[position]):
            state.error(func, f"nvidia: kernel argument {position} has type {inputs[position]}; "
                              "a dynamic shape is supported with the identity (row-major) layout only")
            return None
    block = func.regions[0].blocks[0]
    location = func.location
    count = sum(len(axes) for _, axes in rewritten)
    # The extents go after the kernel's inputs and before its attributions: add them
    # at the end, then move every attribution behind them.
    attributions = list(block.arguments)[len(inputs):]
    extents = [block.add_argument(ir.IndexType.get(), location) for _ in range(count)]
    for old in attributions:
        old.replace_all_uses_with(block.add_argument(old.type, old.location))
    for index in reversed(range(len(inputs), len(inputs) + len(attributions))):
        block.erase_argument(index)
    next_extent = iter(extents)
    # A gpu.func body ends in gpu.return, so it has a first op.
    with ir.InsertionPoint(block.operations[0]), location:
        for position, axes in rewritten:
            argument = block.arguments[position]
            view = _row_major(argument, [next(next_extent) for _ in axes])
            argument.replace_all_uses_except(view, view.owner.operation)
            t = ir.MemRefType(argument.type)
            argument.set_type(ir.MemRefType.get([], t.element_type, memory_space=t.memory_space))
    new_inputs = [block.arguments[i].type for i in range(len(inputs))] + [ir.IndexType.get()] * count
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(new_inputs, list(function_type.results)))
    if "arg_attrs" in func.attributes:
        empty = ir.DictAttr.get({})
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(
            list(ir.ArrayAttr(func.attributes["arg_attrs"])) + [empty] * count)
    return rewritten


def rewrite_launch(launch: ir.Operation, rewritten: list[tuple[int, list[int]]]) -> None:
    """The same convention at a gpu.launch_func: cast to 0-D, then the extents."""
    segments = [int(x) for x in ir.DenseI32ArrayAttr(launch.attributes["operandSegmentSizes"])]
    start = sum(segments[:11])  # async deps, grid, block, cluster, dynamic shared (ODS order)
    operands = list(launch.operands)
    kernel_operands = operands[start:start + segments[11]]
    extents = []
    with ir.InsertionPoint(launch), launch.location:
        for position, axes in rewritten:
            value = kernel_operands[position]
            t = ir.MemRefType(value.type)
            flat = ir.MemRefType.get([], t.element_type, memory_space=t.memory_space)
            kernel_operands[position] = memref.ReinterpretCastOp(flat, value, [], [], [], [0], [], []).result
            extents += [memref.DimOp(value, _index_constant(axis)).result for axis in axes]
        new_operands = operands[:start] + kernel_operands + extents + operands[start + segments[11]:]
        segments[11] += len(extents)
        attributes = {name: launch.attributes[name] for name in launch.attributes}
        attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(segments)
        replacement = ir.Operation.create("gpu.launch_func", results=[r.type for r in launch.results],
                                          operands=new_operands, attributes=attributes)
    for old, new in zip(launch.results, replacement.results):
        old.replace_all_uses_with(new)
    launch.erase()


def rewrite_dynamic_memref_arguments(module: ir.Operation, state: PassState) -> None:
    """Every kernel of `module` and every launch of it (module docstring)."""
    by_kernel = {}
    for op in walk(module):
        if op.name != "gpu.module":
            continue
        module_name = ir.StringAttr(op.attributes["sym_name"]).value
        for inner in op.regions[0].blocks[0].operations:
            inner = inner.operation
            if inner.name == "gpu.func" and "gpu.kernel" in inner.attributes:
                rewritten = rewrite_kernel(inner, state)
                if rewritten:
                    name = ir.StringAttr(inner.attributes["sym_name"]).value
                    by_kernel[f"@{module_name}::@{name}"] = rewritten
    if not by_kernel:
        return
    launches = [op for op in walk(module) if op.name == "gpu.launch_func"
                and str(op.attributes["kernel"]) in by_kernel]
    for launch in launches:
        rewrite_launch(launch, by_kernel[str(launch.attributes["kernel"])])


@dataclass(frozen=True)
class NvidiaDynamicMemrefArguments(TilePass):
    """Dynamic-shape kernel arguments as a bare pointer and index extents (module docstring)."""

    name: ClassVar[str] = "nvidia-dynamic-memref-arguments"
    summary: ClassVar[str] = ("pass a dynamic-shape memref kernel argument as a pointer and its "
                              "dynamic extents, the bare-pointer convention's form")

    def run(self, module: ir.Operation, state: PassState) -> None:
        rewrite_dynamic_memref_arguments(module, state)
