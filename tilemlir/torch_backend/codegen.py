"""A fusion group as a `tilemlir.language` kernel (Python source).

The kernel is written as a TileLang user would write it, then built, checked
and compiled by the same path as any `@tilemlir.jit` kernel, so its errors
and its IR (`kernel.get_kernel_source()`) read like a hand-written one's.

Inputs are passed as 1-D views of the memory they span, read at offsets made
from the domain's coordinates and the tensor's own strides (0 where torch
broadcasts or expands): views, permutes and expands before a group cost no
copy. Outputs are new contiguous tensors, written with `T.copy`.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from dataclasses import dataclass

import torch
from torch import fx

from tilemlir.targets.model import is_unknown
from tilemlir.torch_backend import ops, partition, pointwise
from tilemlir.torch_backend.partition import Group, dtype_of, shape_of
from tilemlir.torch_backend.pointwise import DTYPES, Unsupported, convert, kind_of, literal

THREADS = 128
ELEMENTS_PER_BLOCK = 2048  # element-wise groups: 16 per thread
ROW_ELEMENTS = 4096  # reducing groups: values per fragment in a block
MAX_COLUMNS = partition.MAX_COLUMNS  # a reducing group's row is one block's; longer ones are split


@dataclass(frozen=True)
class TensorSpec:
    """An input as a call passes it: shape, strides, dtype."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype

    @staticmethod
    def of(tensor: torch.Tensor) -> TensorSpec:
        return TensorSpec(tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)

    @property
    def span(self) -> int:
        """Elements from the first to the last one the tensor reaches."""
        if any(d == 0 for d in self.shape):
            return 0
        return 1 + sum((d - 1) * s for d, s in zip(self.shape, self.stride))


@dataclass(frozen=True)
class GemmOperand:
    """How a GEMM operand reaches the kernel: as it is, or transposed (the
    tensor passed is the operand's transpose, contiguous)."""

    transposed: bool
    shape: tuple[int, ...]  # of the tensor passed


def gemm_layout(spec: TensorSpec) -> GemmOperand | None:
    """None when the operand must be made contiguous first."""
    *batch, rows, cols = spec.shape
    *batch_stride, row_stride, col_stride = spec.stride
    dense = (not batch) or (batch_stride[0] == rows * cols or batch[0] == 1)
    if dense and (col_stride == 1 or cols == 1) and (row_stride == cols or rows == 1):
        return GemmOperand(False, spec.shape)
    if dense and (row_stride == 1 or rows == 1) and (col_stride == rows or cols == 1):
        return GemmOperand(True, (*batch, cols, rows))
    return None


def gemm_operands(anchor: fx.Node) -> tuple[fx.Node, fx.Node]:
    """A GEMM node's A and B (addmm's follow its bias)."""
    return (anchor.args[1], anchor.args[2]) if anchor.target is torch.ops.aten.addmm.default \
        else (anchor.args[0], anchor.args[1])


def _next_power_of_two(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


class Source:
    """Lines of Python at an indentation."""

    def __init__(self):
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class KernelWriter:
    """The kernel of one group for the inputs a call passes."""

    def __init__(self, group: Group, specs: list[TensorSpec], name: str):
        self.group = group
        self.specs = dict(zip(group.inputs, specs))
        self.name = name
        self.operand_params: list[str] = []  # a GEMM's A and B
        self.input_params: list[str] = []
        self.output_params: list[str] = []
        self.param_of: dict[fx.Node, str] = {}  # inputs read at offsets, in parameter order
        self.anchor_value = None  # a GEMM group's: coords -> the product's value
        self.fragment: dict[fx.Node, str] = {}
        self.tiles: dict[fx.Node, tuple] = {}  # `pixel_rows_input`: (fragment, the coordinates it holds)
        self.counter = 0
        members = set(group.nodes)
        self.uses = {n: sum(1 for u in n.users if u in members) for n in group.nodes}
        self.body = Source()

    # -- values --------------------------------------------------------------
    def new_name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def input_param(self, node: fx.Node) -> str:
        if node not in self.param_of:
            name = f"I{len(self.param_of)}"
            spec = self.specs[node]
            if spec.dtype not in DTYPES:
                raise Unsupported(f"tensors of {spec.dtype}")
            self.input_params.append(f"{name}: T.Tensor(({max(spec.span, 1)},), '{DTYPES[spec.dtype]}')")
            self.param_of[node] = name
        return self.param_of[node]

    def pixel_rows_input(self, node: fx.Node, coords: list[str], at: str, tile_dims: tuple[int, int]) -> PixelRows:
        """A channels-last [N, C, H, W] input of the domain's shape, declared
        as its pixels' rows of channels, its `tile_dims` tile at `at` (the
        domain's tile at `coords`) copied into a fragment (vector loads):
        `load` reads it there at those coordinates, and from memory at any
        others (a padded, gathered or permuted read of it)."""
        spec = self.specs[node]
        batch, channels, height, width = spec.shape
        name, tile = f"I{len(self.param_of)}", self.new_name("T")
        dtype = DTYPES[spec.dtype]
        self.input_params.append(f"{name}: T.Tensor(({batch * height * width}, {channels}), '{dtype}')")
        self.param_of[node] = name
        self.body(f"{tile} = T.alloc_fragment(({tile_dims[0]}, {tile_dims[1]}), '{dtype}')")
        self.body(f"T.copy({name}[{at}], {tile})")
        self.tiles[node] = (tile, list(coords))
        return PixelRows(node)

    def load(self, node: fx.Node, coords: list[str]) -> str:
        """An input's element at the domain coordinates, in its kind (floats in f32)."""
        spec = self.specs[node]
        if node in self.tiles:  # at the domain's tile's coordinates, its (i, j); else its pixel's row
            tile, tile_coords = self.tiles[node]
            n, c, h, w = coords[-4:]
            _, _, height, width = spec.shape
            value = f"{tile}[i, j]" if list(coords) == tile_coords else \
                f"{self.param_of[node]}[({n} * {height} + {h}) * {width} + {w}, {c}]"
            return f"T.cast({value}, 'float32')" if spec.dtype != torch.float32 else value
        rank = len(coords)
        if len(spec.shape) > rank:
            raise Unsupported("an operand of more dims than its group")
        terms = []
        for t, (size, stride) in enumerate(zip(spec.shape, spec.stride)):
            if size == 1 or stride == 0:
                continue
            coord = coords[rank - len(spec.shape) + t]
            terms.append(coord if stride == 1 else f"{coord} * {stride}")
        value = f"{self.input_param(node)}[{' + '.join(terms) or '0'}]"
        if spec.dtype in pointwise.FLOATS and spec.dtype != torch.float32:
            return f"T.cast({value}, 'float32')"
        return value

    def value(self, node, coords: list[str]) -> str:
        """`node`'s value at the coordinates (of a full or a row loop)."""
        if not isinstance(node, fx.Node):
            return literal(node)
        if node in self.fragment:
            frag = self.fragment[node]
            return f"{frag}[i, j]" if self.group.level(node) == "full" else f"{frag}[i]"
        if node not in self.group.nodes:
            return self.load(node, coords)
        return self.expression(node, coords)

    def expression(self, node: fx.Node, coords: list[str]) -> str:
        """An in-group node's value, rendered from its operands."""
        if node is self.group.anchor:
            return self.anchor_value(coords)
        if node.target is torch.ops.aten.embedding.default:
            return self.gather(node, coords)
        if node.target is torch.ops.aten.gather.default:
            return self.gather_along(node, coords)
        if node.target is torch.ops.aten.constant_pad_nd.default:
            return self.padded(node, coords)
        if node.target is torch.ops.aten.cat.default:
            return self.concatenated(node, coords)
        if node.target is torch.ops.aten.index.Tensor:
            return self.indexed(node, coords)
        if node.target in pointwise.CREATION:
            if node.kwargs.get("device") not in (None, node.meta["val"].device):
                raise Unsupported("a tensor made on another device")
            return pointwise.created(node.target, node.args, coords[-1] if coords else "0", dtype_of(node))
        result = dtype_of(node)
        if node.target in pointwise.CONVERSIONS:
            source = node.args[0]
            if node.kwargs.get("device") not in (None, source.meta["val"].device) or \
                    node.kwargs.get("memory_format") not in (None, torch.preserve_format, torch.contiguous_format):
                raise Unsupported("a copy to another device or layout")
            target = node.kwargs.get("dtype", node.args[1] if len(node.args) > 1 else None) or dtype_of(source)
            return convert(self.value(source, coords), dtype_of(source), target)
        render = pointwise.POINTWISE[node.target]
        operands = [a for a in node.args if isinstance(a, fx.Node)]
        for a in operands:  # an operand of a dtype no kernel computes (float64, complex) is refused here
            kind_of(dtype_of(a))
        kind_of(result)  # a result dtype no kernel computes is refused here
        if node.target in pointwise.BITWISE and result != torch.bool:
            raise Unsupported(f"{node.target} of {result}")
        compared = None  # a comparison of floats: the dtype torch compares them in
        if node.target in pointwise.LOGICAL or node.target in pointwise.BITWISE:
            work = torch.bool
        elif node.target in pointwise.COMPARISONS:
            promoted = compared_dtype(node)
            if kind_of(promoted) == "f":
                work, compared = torch.float32, promoted
            else:
                work = dtype_of(operands[0]) if operands else torch.int64
        else:
            work = result
        args = []
        for position, a in enumerate(node.args):
            if isinstance(a, fx.Node):
                if node.target is torch.ops.aten.where.self and position == 0:
                    args.append(convert(self.value(a, coords), dtype_of(a), torch.bool))
                elif compared is not None:  # rounded to the compared dtype, compared in f32 (exactly)
                    args.append(convert(self.value(a, coords), dtype_of(a), compared))
                else:
                    args.append(convert(self.value(a, coords), dtype_of(a), work)
                                if kind_of(dtype_of(a)) != kind_of(work) else self.value(a, coords))
            elif isinstance(a, (bool, int, float)) and compared is not None and not isinstance(a, bool):
                args.append(literal(float(torch.tensor(a, dtype=compared))))
            elif isinstance(a, (bool, int, float)):
                args.append(literal(float(a)) if kind_of(work) == "f" and not isinstance(a, bool) else literal(a))
            elif a is None:
                args.append(None)
            else:
                raise Unsupported(f"an argument {a!r}")
        if node.target in (torch.ops.aten.div.Tensor_mode, torch.ops.aten.div.Scalar_mode) and \
                kind_of(work) == "i" and node.kwargs.get("rounding_mode") in ("floor", "trunc"):
            # Integers: Python's rounding (floor) or C's (trunc), never through a float.
            mode = "floordiv" if node.kwargs["rounding_mode"] == "floor" else "truncdiv"
            return f"T.{mode}({args[0]}, {args[1]})"
        if node.target in (torch.ops.aten.remainder.Tensor, torch.ops.aten.remainder.Scalar) and \
                kind_of(work) == "i":  # Python's remainder (the divisor's sign), in integers
            return f"({args[0]} - T.floordiv({args[0]}, {args[1]}) * {args[1]})"
        keywords = {}
        for key, a in node.kwargs.items():
            if isinstance(a, fx.Node):
                raise Unsupported(f"a tensor keyword '{key}'")
            keywords[key] = a
        try:
            return render(*args, **keywords)
        except TypeError as error:
            raise Unsupported(f"its arguments ({error})") from None

    def gather(self, node: fx.Node, coords: list[str]) -> str:
        """aten.embedding: the weight's row an index names (indices outside
        the table read row 0 or the last, where torch would raise)."""
        weight, indices = node.args[0], node.args[1]
        if weight in self.group.nodes or len(shape_of(weight)) != 2 or len(coords) != len(shape_of(indices)) + 1:
            raise Unsupported("an embedding of a computed table, or of another rank")
        rows = shape_of(weight)[0]
        index = self.value(indices, coords[:-1])
        row = f"T.max(T.min(T.cast({index}, 'int32'), {rows - 1}), 0)"
        return self.load(weight, [row, coords[-1]])

    def gather_along(self, node: fx.Node, coords: list[str]) -> str:
        """aten.gather: the source's element with the coordinate along `dim`
        taken from the index tensor (of the output's shape; indices outside
        the source read its first or last element, where torch would raise)."""
        source, dim, index = node.args[:3]
        shape = shape_of(source)
        if source in self.group.nodes or shape is None or len(shape) != len(coords) or not shape:
            raise Unsupported("a gather from a computed value")
        dim %= len(shape)
        position = f"T.max(T.min(T.cast({self.value(index, coords)}, 'int32'), {shape[dim] - 1}), 0)"
        return self.load(source, [position if d == dim else c for d, c in enumerate(coords)])

    def padded(self, node: fx.Node, coords: list[str]) -> str:
        """aten.constant_pad_nd: the source's element at the shifted coordinates, or the fill."""
        source, pads = node.args[0], list(node.args[1])
        fill = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
        shape = shape_of(source)
        if source in self.group.nodes or len(shape) != len(coords):
            raise Unsupported("a pad of a computed value")
        shifted, conditions = list(coords), []
        for k in range(len(pads) // 2):
            d = len(shape) - 1 - k
            before = pads[2 * k]
            if before == 0 and pads[2 * k + 1] == 0:
                continue
            position = f"({coords[d]} - {before})" if before else coords[d]
            conditions += [f"{position} >= 0", f"{position} < {shape[d]}"]
            shifted[d] = f"T.max(T.min({position}, {shape[d] - 1}), 0)"
        value = self.load(source, shifted)
        if not conditions:
            return value
        kind = kind_of(dtype_of(node))
        try:
            fill = literal(float(fill)) if kind == "f" else literal(bool(fill) if kind == "b" else int(fill))
        except (OverflowError, ValueError):
            raise Unsupported(f"a pad of {dtype_of(node)} with {fill}") from None
        return f"T.if_then_else({' and '.join(f'({c})' for c in conditions)}, {value}, {fill})"

    def concatenated(self, node: fx.Node, coords: list[str]) -> str:
        """aten.cat: the element of the operand whose run along `dim` holds the
        coordinate, at the coordinate less the runs before it (each operand
        read clamped into its own extent, selected by the coordinate)."""
        sources, dim = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        shape = shape_of(node)
        # torch skips 1-D empty operands of any other shape (a legacy rule).
        sources = [t for t in sources if shape_of(t) != (0,)]
        floats = dtype_of(node) in pointwise.FLOATS and all(dtype_of(t) in pointwise.FLOATS for t in sources)
        if any(not isinstance(t, fx.Node) or t in self.group.nodes or len(shape_of(t)) != len(coords)
               or dtype_of(t) != dtype_of(node) and not floats for t in sources):
            raise Unsupported("a concatenation of computed values, or of other ranks or kinds")
        dim %= len(shape)
        value, end = None, 0
        for source in sources:
            size = shape_of(source)[dim]
            if size == 0:
                continue
            start, end = end, end + size
            position = f"T.max(T.min({coords[dim]} - {start}, {size - 1}), 0)" if start else \
                f"T.min({coords[dim]}, {size - 1})"
            loaded = self.load(source, [position if d == dim else c for d, c in enumerate(coords)])
            value = loaded if value is None else f"T.if_then_else({coords[dim]} < {start}, {value}, {loaded})"
        if value is None:
            raise Unsupported("a concatenation of empty tensors")
        return value

    def indexed(self, node: fx.Node, coords: list[str]) -> str:
        """aten.index.Tensor (`x[:, rows, cols]`, nearest upsampling): the
        source's element at the index tensors' values (broadcast together;
        negative ones counted from the end, as torch's; values outside the
        source read its first or last element, where torch would raise) in
        the indexed dims, at the output's coordinates in the others. The
        broadcast dims stand where the indexed dims were if those are
        adjacent, else first, as torch orders them."""
        source, indices = node.args[0], list(node.args[1])
        shape = shape_of(source)
        if source in self.group.nodes or shape is None:
            raise Unsupported("an index of a computed value")
        indexed = [d for d, t in enumerate(indices) if t is not None]
        if any(dtype_of(indices[d]) not in (torch.int64, torch.int32) for d in indexed):
            raise Unsupported("an index by a mask (a result of data-dependent shape)")
        ranks = [len(shape_of(indices[d])) for d in indexed]
        width = max(ranks)
        adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
        first = indexed[0] if adjacent else 0
        broadcast = coords[first:first + width]
        rest = iter(coords[:first] + coords[first + width:])
        position = []
        for d, size in enumerate(shape):
            if d not in indexed:
                position.append(next(rest))
                continue
            index = self.value(indices[d], broadcast)
            position.append(f"T.max(T.min(T.if_then_else({index} < 0, {index} + {size}, {index}), {size - 1}), 0)")
        return self.load(source, position)

    # -- loops ---------------------------------------------------------------
    def materialized(self, node: fx.Node) -> bool:
        group = self.group
        if node in group.outputs or partition.is_reduction(node) or node.target == operator.getitem:
            return True
        if any(partition.is_reduction(u) for u in node.users if u in group.nodes):
            return True
        return self.uses[node] > 1 and node is not group.anchor

    def emit_value(self, node: fx.Node, dims: tuple[str, str], coords_full, coords_row, kind_name) -> None:
        """A fragment for `node`, filled by its loop."""
        level = self.group.level(node)
        frag = self.new_name("F" if level == "full" else "R")
        block = dims if level == "full" else dims[:1]
        dtype = kind_name(node)
        self.body(f"{frag} = T.alloc_fragment(({', '.join(block)},), '{dtype}')")
        if level == "full":
            self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
            expression = self.expression(node, coords_full)
            self.body.depth += 1
            self.body(f"{frag}[i, j] = {expression}")
        else:
            self.body(f"for i in T.Parallel({dims[0]}):")
            expression = self.expression(node, coords_row)
            self.body.depth += 1
            self.body(f"{frag}[i] = {expression}")
        self.body.depth -= 1
        self.fragment[node] = frag

    def emit_reduction(self, node: fx.Node, dims, columns: int, coords_full) -> None:
        source_dtype = dtype_of(node.args[0])
        if source_dtype not in pointwise.FLOATS:
            return self.emit_integer_reduction(node, dims, coords_full)
        source = self.reduction_source(node, dims, coords_full)
        block = dims[0]
        if node.target in pointwise.VARIANCES:
            mean, squares, var = self.new_name("R"), self.new_name("F"), self.new_name("R")
            self.body(f"{mean} = T.alloc_fragment(({block},), 'float32')")
            self.body(f"T.reduce_sum({source}, {mean}, dim=1)")
            self.body(f"for i in T.Parallel({block}):")
            self.body(f"    {mean}[i] = {mean}[i] / {float(columns)!r}")
            self.body(f"{squares} = T.alloc_fragment(({dims[0]}, {dims[1]}), 'float32')")
            self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
            self.body(f"    {squares}[i, j] = ({source}[i, j] - {mean}[i]) * ({source}[i, j] - {mean}[i])")
            self.body(f"{var} = T.alloc_fragment(({block},), 'float32')")
            self.body(f"T.reduce_sum({squares}, {var}, dim=1)")
            self.variance_of_squares(node, var, mean, block, columns)
            return
        kind, divides = pointwise.REDUCTIONS[node.target]
        frag = self.reduced(source, kind, dims)
        if divides:
            self.body(f"for i in T.Parallel({block}):")
            self.body(f"    {frag}[i] = {frag}[i] / {float(columns)!r}")
        self.fragment[node] = frag

    def reduced(self, source: str, kind: str, dims, dtype: str = "float32") -> str:
        """A fragment of the reduction (sum, max, min) of each row of the
        fragment `source`; of floats, max and min are NaN where a row holds
        one, as torch's amax and amin (T.reduce_max drops it)."""
        frag = self.new_name("R")
        self.body(f"{frag} = T.alloc_fragment(({dims[0]},), '{dtype}')")
        self.body(f"T.reduce_{kind}({source}, {frag}, dim=1)")
        if kind in ("max", "min") and dtype == "float32":
            flags, count = self.new_name("F"), self.new_name("R")
            self.body(f"{flags} = T.alloc_fragment(({dims[0]}, {dims[1]}), 'float32')")
            self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
            self.body(f"    {flags}[i, j] = T.if_then_else({source}[i, j] != {source}[i, j], 1.0, 0.0)")
            self.body(f"{count} = T.alloc_fragment(({dims[0]},), 'float32')")
            self.body(f"T.reduce_sum({flags}, {count}, dim=1)")
            self.body(f"for i in T.Parallel({dims[0]}):")
            self.body(f"    {frag}[i] = T.if_then_else({count}[i] > 0.0, float('nan'), {frag}[i])")
        return frag

    def reduction_source(self, node: fx.Node, dims, coords_full) -> str:
        """The fragment of a float reduction's operand (an input: loaded into registers first)."""
        if node.args[0] not in self.fragment:
            loaded = self.new_name("F")
            self.body(f"{loaded} = T.alloc_fragment(({dims[0]}, {dims[1]}), 'float32')")
            self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
            self.body(f"    {loaded}[i, j] = {self.load(node.args[0], coords_full)}")
            self.fragment[node.args[0]] = loaded
        return self.fragment[node.args[0]]

    def widened(self, node: fx.Node, dims, coords_full) -> str:
        """An integer reduction's operand as a fragment of its result's type."""
        result = dtype_of(node)
        wide = self.new_name("F")
        self.body(f"{wide} = T.alloc_fragment(({dims[0]}, {dims[1]}), '{DTYPES[result]}')")
        self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
        value = self.fragment[node.args[0]] + "[i, j]" if node.args[0] in self.fragment else \
            self.load(node.args[0], coords_full)
        self.body(f"    {wide}[i, j] = {convert(value, dtype_of(node.args[0]), result)}")
        return wide

    def emit_partials(self, node: fx.Node, dims, chunk: int, columns: int, coords_full) -> list[str]:
        """The first stage of a split reduction (`split_reduction`): `node`'s
        reduction of the chunk of `chunk` columns of each row that block
        column `by` reads, as fragments of partial results: a sum's in f32
        (of integers and booleans in int64, as torch sums them), a max's or
        min's in its type, a variance's the chunk's mean and the sum of
        squared deviations from it. Columns past the row's end (the last
        chunk's, read at the row's last column) are left out of sums; a max
        or min may take that column twice."""
        ragged = columns % chunk != 0
        valid = f"by * {chunk} + j < {columns}"
        if dtype_of(node.args[0]) in pointwise.FLOATS:
            source, dtype, zero = self.reduction_source(node, dims, coords_full), "float32", "0.0"
        else:
            source, dtype = self.widened(node, dims, coords_full), DTYPES[dtype_of(node)]
            zero = f"T.cast(0, '{dtype}')"
        kind = "var" if node.target in pointwise.VARIANCES else pointwise.REDUCTIONS[node.target][0]
        if kind in ("max", "min"):
            return [self.reduced(source, kind, dims, dtype)]
        masked = source
        if ragged:
            masked = self.new_name("F")
            self.body(f"{masked} = T.alloc_fragment(({dims[0]}, {dims[1]}), '{dtype}')")
            self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
            self.body(f"    {masked}[i, j] = T.if_then_else({valid}, {source}[i, j], {zero})")
        total = self.reduced(masked, "sum", dims, dtype)
        if kind == "sum":
            return [total]
        count = f"T.cast(T.min({chunk}, {columns} - by * {chunk}), 'float32')" if ragged else repr(float(chunk))
        self.body(f"for i in T.Parallel({dims[0]}):")
        self.body(f"    {total}[i] = {total}[i] / {count}")
        squares = self.new_name("F")
        square = f"({source}[i, j] - {total}[i]) * ({source}[i, j] - {total}[i])"
        self.body(f"{squares} = T.alloc_fragment(({dims[0]}, {dims[1]}), 'float32')")
        self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
        self.body(f"    {squares}[i, j] = " + (f"T.if_then_else({valid}, {square}, 0.0)" if ragged else square))
        return [total, self.reduced(squares, "sum", dims)]

    def emit_combined(self, node: fx.Node, dims, chunk: int, columns: int, partials: list[str]) -> None:
        """The second stage of a split reduction: `node`'s value from the
        fragments of its partial results (`emit_partials`, a row's chunks
        along a row). A variance combines its chunks' means and squared
        deviations as Chan et al.'s parallel algorithm does."""
        block = dims[0]
        dtype = "float32" if dtype_of(node.args[0]) in pointwise.FLOATS else DTYPES[dtype_of(node)]
        if node.target not in pointwise.VARIANCES:
            kind, divides = pointwise.REDUCTIONS[node.target]
            frag = self.reduced(partials[0], kind, dims, dtype)
            if divides:
                self.body(f"for i in T.Parallel({block}):")
                self.body(f"    {frag}[i] = {frag}[i] / {float(columns)!r}")
            self.fragment[node] = frag
            return
        means, deviations = partials
        count = f"T.cast(T.min({chunk}, {columns} - j * {chunk}), 'float32')" if columns % chunk else \
            repr(float(chunk))
        weighted, squares = self.new_name("F"), self.new_name("F")
        self.body(f"{weighted} = T.alloc_fragment(({dims[0]}, {dims[1]}), 'float32')")
        self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
        self.body(f"    {weighted}[i, j] = {means}[i, j] * {count}")
        mean = self.reduced(weighted, "sum", dims)
        self.body(f"for i in T.Parallel({block}):")
        self.body(f"    {mean}[i] = {mean}[i] / {float(columns)!r}")
        self.body(f"{squares} = T.alloc_fragment(({dims[0]}, {dims[1]}), 'float32')")
        self.body(f"for i, j in T.Parallel({dims[0]}, {dims[1]}):")
        self.body(f"    {squares}[i, j] = {deviations}[i, j] + {count} * ({means}[i, j] - {mean}[i]) * "
                  f"({means}[i, j] - {mean}[i])")
        var = self.reduced(squares, "sum", dims)
        self.variance_of_squares(node, var, mean, block, columns)

    def variance_of_squares(self, node: fx.Node, var: str, mean: str, block, columns: int) -> None:
        """A variance node's result from the sum of its squared deviations
        (`var`, divided here by the count less torch's correction, 1 by
        default) and its mean, for var_mean's items too."""
        correction = node.kwargs.get("correction", 1)
        correction = 1 if correction is None else correction
        self.body(f"for i in T.Parallel({block}):")
        self.body(f"    {var}[i] = {var}[i] / {float(max(columns - correction, 0))!r}")
        self.fragment[node] = var
        for user in node.users:
            if user.target == operator.getitem and user in self.group.nodes:
                self.fragment[user] = var if user.args[1] == 0 else mean

    def emit_integer_reduction(self, node: fx.Node, dims, coords_full) -> None:
        """sum, amax or amin of integers or booleans, in the result's type:
        int64 for a sum (torch sums integers and booleans in int64), the
        input's for amax and amin."""
        kind, _ = pointwise.REDUCTIONS[node.target]
        result = dtype_of(node)
        wide = self.widened(node, dims, coords_full)
        frag = self.new_name("R")
        self.body(f"{frag} = T.alloc_fragment(({dims[0]},), '{DTYPES[result]}')")
        self.body(f"T.reduce_{kind}({wide}, {frag}, dim=1)")
        self.fragment[node] = frag

    def emit_group_values(self, dims, coords_full, coords_row, columns: int) -> None:
        kind_name = _fragment_type
        for node in self.group.nodes:
            if node in self.fragment or not self.materialized(node):
                continue
            if partition.is_reduction(node):
                self.emit_reduction(node, dims, columns, coords_full)
            elif node.target == operator.getitem:
                raise Unsupported("an item of an op that is not a variance")
            else:
                self.emit_value(node, dims, coords_full, coords_row, kind_name)

    def outputs(self, shape_of_output) -> list[tuple[fx.Node, str]]:
        named = []
        for index, node in enumerate(self.group.outputs):
            name = f"O{index}"
            dtype = dtype_of(node)
            if dtype not in DTYPES:
                raise Unsupported(f"an output of {dtype}")
            shape = shape_of_output(node)
            self.output_params.append(f"{name}: T.Tensor(({', '.join(map(str, shape))},), '{DTYPES[dtype]}')")
            named.append((node, name))
        return named

    def source(self, grid: str, body: list[str], threads: int = THREADS) -> str:
        text = Source()
        text("import tilemlir.language as T")
        text("")
        text("")
        text("@T.prim_func")
        params = self.operand_params + self.input_params + self.output_params
        text(f"def {self.name}({', '.join(params)}):")
        text.depth += 1
        text(f"with T.Kernel({grid}, threads={threads}) as (bx, by{', bz' if grid.count(',') == 2 else ''}):")
        text.depth += 1
        for line in body:
            text(line)
        return text.text()


def _fragment_type(node: fx.Node) -> str:
    """The type a group value is computed in: f32 for floats, else its own."""
    dtype = dtype_of(node)
    return "float32" if dtype in pointwise.FLOATS else DTYPES[dtype]


def _coordinates(extents: tuple[int, ...], flat: str) -> list[str]:
    """Each dim's coordinate of a flat row-major index over `extents`."""
    coords = []
    for d, size in enumerate(extents):
        suffix = math.prod(extents[d + 1:])
        expression = flat if suffix == 1 else f"({flat}) // {suffix}"
        if d > 0 and size > 1:
            expression = f"({expression}) % {size}"
        coords.append(expression if size > 1 else "0")
    return coords


def pointwise_kernel(group: Group, specs: list[TensorSpec], name: str) -> tuple[str, list]:
    """(source, each output's view as the kernel writes it: (R, C) or (R,),
    or InMemoryOrder of one, inputs read at offsets in parameter order) of a
    pointwise or reducing group. Its rows run in the outputs' memory order
    (`memory_order`: channels-last, channels fastest), so that their stores,
    and the loads of inputs of the same layout, are coalesced; a pointwise
    group's columns are then its fastest dim."""
    writer = KernelWriter(group, specs, name)
    shape = group.shape
    lead_dims, red_dims, reordered = _domain_order(group)
    lead, red = [shape[d] for d in lead_dims], [shape[d] for d in red_dims]
    rows, cols = math.prod(lead), math.prod(red)
    if group.reduces:
        if cols > MAX_COLUMNS:  # split_reduction's
            raise Unsupported(f"a reduction over {cols} values (at most {MAX_COLUMNS} in one block)")
        block_cols = cols
        block_rows = max(1, min(_next_power_of_two(rows), _floor_power_of_two(max(1, ROW_ELEMENTS // cols))))
    else:
        block_cols = min(_next_power_of_two(cols), 512)
        block_rows = max(1, min(_next_power_of_two(rows), ELEMENTS_PER_BLOCK // block_cols))
    row = f"(bx * {block_rows} + i)" if rows % block_rows == 0 else \
        f"T.min(bx * {block_rows} + i, {rows - 1})"
    col = f"(by * {block_cols} + j)" if cols % block_cols == 0 else \
        f"T.min(by * {block_cols} + j, {cols - 1})"
    coords_full, coords_row = [""] * len(shape), ["0"] * len(shape)
    for d, coord in zip(lead_dims, _coordinates(tuple(lead), row)):
        coords_full[d] = coords_row[d] = coord
    for d, coord in zip(red_dims, _coordinates(tuple(red), col)):
        coords_full[d] = coord
    dims = (str(block_rows), str(block_cols))
    outputs = writer.outputs(lambda n: (rows, cols) if group.level(n) == "full" else (rows,))
    writer.emit_group_values(dims, coords_full, coords_row, cols)
    for node, param in outputs:
        if group.level(node) == "full":
            writer.body(f"T.copy({writer.fragment[node]}, {param}[bx * {block_rows}, by * {block_cols}])")
        else:
            writer.body(f"T.copy({writer.fragment[node]}, {param}[bx * {block_rows}])")
    grid = f"{-(-rows // block_rows)}, {-(-cols // block_cols)}"  # rows on x: up to 2^31 - 1 blocks
    views = [(rows, cols) if group.level(node) == "full" else (rows,) for node, _ in outputs]
    if reordered:
        views = [InMemoryOrder(view) for view in views]
    return writer.source(grid, writer.body.lines), views, list(writer.param_of)


def _domain_order(group: Group) -> tuple[list[int], list[int], bool]:
    """(the dims of a pointwise or reducing group's rows, slowest first; of
    its columns; whether that is not their logical order): the rows in the
    outputs' memory order (`memory_order`), a pointwise group's columns its
    fastest dim."""
    shape, columns = group.shape, group.columns
    lead_dims = list(range(len(shape) - columns))
    red_dims = list(range(len(shape) - columns, len(shape)))
    order = memory_order(group, len(lead_dims) if group.reduces else len(shape))
    if order != sorted(order):
        lead_dims, red_dims = (order[:-1], order[-1:]) if not group.reduces else (order, red_dims)
    return lead_dims, red_dims, order != sorted(order)


def split_chunk(columns: int) -> int:
    """The columns of a row each block of a split reduction's first stage
    folds: ROW_ELEMENTS, or the power of two that keeps a row's chunks (the
    second stage's row) at most MAX_COLUMNS."""
    chunk = max(ROW_ELEMENTS, _next_power_of_two(-(-columns // MAX_COLUMNS)))
    if chunk > MAX_COLUMNS:
        raise Unsupported(f"a reduction over {columns} values (at most {MAX_COLUMNS ** 2} in two stages of "
                          f"{MAX_COLUMNS})")
    return chunk


@dataclass(frozen=True)
class Stage:
    """A kernel of a split reduction: its prim_func's name and source, and
    what a call passes it, in order: ("input", k), the k-th input it reads
    at offsets (of the split's `loaded`); ("output", k), the group's output
    k as its view; ("partials", k), buffer k of partial results."""

    name: str
    source: str
    arguments: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class SplitReduction:
    """A reducing group's two kernels (`split_reduction`) and the buffers of
    partial results between them: (shape, dtype) each."""

    stages: tuple[Stage, ...]
    partials: tuple[tuple[tuple[int, int], torch.dtype], ...]


def split_reduction(group: Group, specs: list[TensorSpec], name: str) -> tuple[SplitReduction, list, list]:
    """(the kernels, each output's view as pointwise_kernel's, inputs read at
    offsets) of a group whose reductions fold more than MAX_COLUMNS values a
    row (partition's Group.split), in two stages, as Inductor splits such a
    reduction:

    * the first runs over [rows, columns] in blocks of `split_chunk`
      columns, computes the group's full values (writing its full outputs)
      and each reduction's partial result for its chunk of a row (in f32 of
      floats, int64 of integer and boolean sums, as torch accumulates);
    * the second reduces each row's partial results (a [rows, chunks]
      buffer per result), then computes the values after the reductions and
      writes the row outputs.

    None of the group's full values is computed from its reductions
    (partition keeps such a value out of a split group)."""
    shape = group.shape
    lead_dims, red_dims, reordered = _domain_order(group)
    lead, red = [shape[d] for d in lead_dims], [shape[d] for d in red_dims]
    rows, cols = math.prod(lead), math.prod(red)
    chunk = split_chunk(cols)
    chunks = -(-cols // chunk)
    after = partition.after_reductions(group.nodes)
    if any(group.level(node) == "full" for node in after):
        raise Unsupported("a full value computed from a reduction over more than one block's row")
    for node in group.outputs:
        if dtype_of(node) not in DTYPES:
            raise Unsupported(f"an output of {dtype_of(node)}")

    def rows_of(block: int) -> str:
        return f"(bx * {block} + i)" if rows % block == 0 else f"T.min(bx * {block} + i, {rows - 1})"

    # Stage 1: [block_rows, chunk] blocks, a chunk of the row per block column.
    first = KernelWriter(group, specs, f"{name}_partials")
    block_rows = max(1, min(_next_power_of_two(rows), _floor_power_of_two(max(1, ROW_ELEMENTS // chunk))))
    col = f"(by * {chunk} + j)" if cols % chunk == 0 else f"T.min(by * {chunk} + j, {cols - 1})"
    coords_full, coords_row = [""] * len(shape), ["0"] * len(shape)
    for d, coord in zip(lead_dims, _coordinates(tuple(lead), rows_of(block_rows))):
        coords_full[d] = coords_row[d] = coord
    for d, coord in zip(red_dims, _coordinates(tuple(red), col)):
        coords_full[d] = coord
    dims = (str(block_rows), str(chunk))
    partials: list[torch.dtype] = []
    buffers: dict[fx.Node, list[int]] = {}  # a reduction's partial results
    body = first.body
    for node in group.nodes:
        if node in first.fragment:
            continue
        if partition.is_reduction(node):
            buffers[node] = []
            for frag in first.emit_partials(node, dims, chunk, cols, coords_full):
                buffers[node].append(len(partials))
                body(f"for i in T.Parallel({block_rows}):")
                store = f"P{len(partials)}[bx * {block_rows} + i, by] = {frag}[i]"
                if rows % block_rows:
                    body(f"    if bx * {block_rows} + i < {rows}:")
                    body(f"        {store}")
                else:
                    body(f"    {store}")
                partials.append(torch.float32 if dtype_of(node.args[0]) in pointwise.FLOATS else dtype_of(node))
        elif node not in after and group.level(node) == "full" and first.materialized(node):
            first.emit_value(node, dims, coords_full, coords_row, _fragment_type)
    arguments = [("input", node) for node in first.param_of]
    for index, node in enumerate(group.outputs):
        if group.level(node) == "full":
            first.output_params.append(f"O{index}: T.Tensor(({rows}, {cols}), '{DTYPES[dtype_of(node)]}')")
            body(f"T.copy({first.fragment[node]}, O{index}[bx * {block_rows}, by * {chunk}])")
            arguments.append(("output", index))
    for k, dtype in enumerate(partials):
        first.output_params.append(f"P{k}: T.Tensor(({rows}, {chunks}), '{DTYPES[dtype]}')")
        arguments.append(("partials", k))
    stages = [(first, f"{-(-rows // block_rows)}, {chunks}", arguments)]

    # Stage 2: [block_rows, chunks] blocks of the partial results, a block's rows whole.
    second = KernelWriter(group, specs, f"{name}_total")
    block_rows = max(1, min(_next_power_of_two(rows), _floor_power_of_two(max(1, ROW_ELEMENTS // chunks))))
    coords_row = ["0"] * len(shape)
    for d, coord in zip(lead_dims, _coordinates(tuple(lead), rows_of(block_rows))):
        coords_row[d] = coord
    dims = (str(block_rows), str(chunks))
    for node in group.nodes:
        if node in second.fragment:
            continue
        if partition.is_reduction(node):
            loaded = []
            for k in buffers[node]:
                frag = second.new_name("F")
                second.body(f"{frag} = T.alloc_fragment(({block_rows}, {chunks}), '{DTYPES[partials[k]]}')")
                second.body(f"for i, j in T.Parallel({block_rows}, {chunks}):")
                second.body(f"    {frag}[i, j] = P{k}[{rows_of(block_rows)}, j]")
                loaded.append(frag)
            second.emit_combined(node, dims, chunk, cols, loaded)
        elif group.level(node) == "row" and second.materialized(node):
            second.emit_value(node, dims, coords_row, coords_row, _fragment_type)
    second.operand_params += [f"P{k}: T.Tensor(({rows}, {chunks}), '{DTYPES[dtype]}')"
                              for k, dtype in enumerate(partials)]
    arguments = [("partials", k) for k in range(len(partials))] + [("input", node) for node in second.param_of]
    for index, node in enumerate(group.outputs):
        if group.level(node) == "row":
            second.output_params.append(f"O{index}: T.Tensor(({rows},), '{DTYPES[dtype_of(node)]}')")
            second.body(f"T.copy({second.fragment[node]}, O{index}[bx * {block_rows}])")
            arguments.append(("output", index))
    stages.append((second, f"{-(-rows // block_rows)}, 1", arguments))

    loaded = list(dict.fromkeys([*first.param_of, *second.param_of]))
    split = SplitReduction(
        tuple(Stage(writer.name, writer.source(grid, writer.body.lines),
                    tuple((kind, loaded.index(k) if kind == "input" else k) for kind, k in arguments))
              for writer, grid, arguments in stages),
        tuple(((rows, chunks), dtype) for dtype in partials))
    views = [(rows, cols) if group.level(node) == "full" else (rows,) for node in group.outputs]
    if reordered:
        views = [InMemoryOrder(view) for view in views]
    return split, views, loaded


@dataclass(frozen=True)
class InMemoryOrder:
    """An output a pointwise kernel writes in its traced layout's memory order
    (`memory_order`), as the (rows, cols) or (rows,) view `shape` of its memory."""

    shape: tuple[int, ...]


def memory_order(group: Group, lead: int) -> list[int]:
    """The order (slowest first) in which a pointwise or reducing group's kernel
    runs over the first `lead` dims of its domain (a reducing group's: those
    before the reduced dims): the one in which every output is dense as
    traced (a channels-last image: N, H, W, C), else the logical order."""
    logical = list(range(lead))
    orders = set()
    for node in group.outputs:
        spec = TensorSpec.of(node.meta["val"])
        if len(spec.shape) < lead or tuple(spec.shape[:lead]) != tuple(group.shape[:lead]):
            return logical
        order = sorted(logical, key=lambda d: -spec.stride[d])  # stable: ties keep the logical order
        expected = 1
        for d in reversed(order + list(range(lead, len(spec.shape)))):
            if spec.shape[d] != 1 and spec.stride[d] != expected:
                return logical
            expected *= spec.shape[d]
        orders.add(tuple(order))
    return list(orders.pop()) if len(orders) == 1 else logical


def _floor_power_of_two(n: int) -> int:
    return 1 << (n.bit_length() - 1)


@dataclass(frozen=True)
class GemmSteps:
    """The K loop of a GEMM group's kernel: block K and pipeline stages; and
    the wide block a GEMM of at least 128 rows and `wide_n` columns takes
    (128 x wide_n, in `wide_threads` threads) where it still makes
    `wide_tiles` blocks (the chip's CUs: fewer, wider blocks would leave
    some idle)."""

    block_k: int = 32
    stages: int = 2
    wide_n: int = 128
    wide_threads: int = THREADS
    wide_tiles: int = 0


# Chips whose K loops are fed by TMA with a producer warpgroup (NVIDIA's
# wgmma, sm_90a): longer K steps, more of them in flight, and 128x256 blocks
# of two consumer warpgroups where N allows. Measured on the H200 (bench/
# results/gemm-defaults-h200.md, 2026-12-04): 128x256x64 blocks in 4 stages
# of 256 threads are tile-compile's default for large f16/bf16 GEMMs at
# 0.97-1.02 of cuBLAS; 128x128 blocks of one warpgroup ran 0.91-0.98 at
# 4096^3 and 8192^3; with the producer, 2-stage pipelines starve. BERT-base
# at 8x128 (1024 rows: 24 blocks of 128x256 for 132 SMs against 48 of
# 128x128) ran 1.48 ms against 1.08, at 32x512 (384 blocks) 7.98 against 8.30.
PRODUCER_FED_STEPS = GemmSteps(block_k=64, stages=4, wide_n=256, wide_threads=256)


def gemm_steps(target, k: int) -> GemmSteps:
    """The K loop of `k` for `target` (a Target): PRODUCER_FED_STEPS where
    its family feeds wgmma K loops from a producer (Backend.producer_prefix),
    the chip has such instructions and K holds two of its steps (a loop of
    one step takes no TMA pipeline, and so no wgmma), else the default, which
    every shipped chip's shared memory holds."""
    from tilemlir.cost.facts import model_facts
    from tilemlir.targets import backend

    prefix = backend(target.family).producer_prefix
    if prefix and any(row.name.startswith(prefix) for row in target.mma) \
            and k >= 2 * PRODUCER_FED_STEPS.block_k:
        # The CUs as the cost model takes them (an unknown count assumed: tilemlir.cost.facts).
        return dataclasses.replace(PRODUCER_FED_STEPS, wide_tiles=model_facts(target).compute_units)
    return GemmSteps()


# A 128 x 256 block of two consumer warpgroups does the work of two 128 x
# 128 blocks in about 0.95 of their time (measured on the H200, bench/
# results/gemm-defaults-h200.md: large GEMMs at 0.97-1.02 of cuBLAS against
# 0.91-0.98).
WIDE_BLOCK_TIME = 2 * 0.95


def gemm_blocks(m: int, n: int, batches: int, steps: GemmSteps) -> tuple[int, int, int]:
    """(block M, block N, threads) of an M x N product, `batches` of them:
    64 rows or columns where the extent is that small, else 128; and
    128 x `steps.wide_n` blocks where the grid still makes `steps.wide_tiles`
    (the chip's CUs) and its waves take no longer than the narrow blocks'
    (ResNet-50's 3 x 3 convolutions at 7 x 7, b128: 162 wide blocks take two
    waves of 132 CUs, 1.9 narrow ones' time each; 324 narrow ones take three)."""
    block_m = 64 if m <= 64 else 128
    narrow_n = 64 if n <= 64 else 128

    def waves(block_n: int) -> int:
        return -(-(batches * -(-m // block_m) * -(-n // block_n)) // max(steps.wide_tiles, 1))
    wide = block_m == 128 and n >= steps.wide_n and steps.wide_tiles \
        and batches * -(-m // block_m) * -(-n // steps.wide_n) >= steps.wide_tiles \
        and waves(steps.wide_n) * WIDE_BLOCK_TIME <= waves(narrow_n)
    return block_m, (steps.wide_n if wide else narrow_n), (steps.wide_threads if wide else THREADS)


def gemm_kernel(group: Group, specs: list[TensorSpec], layouts: tuple[GemmOperand, GemmOperand],
                name: str, steps: GemmSteps = GemmSteps()) -> tuple[str, list]:
    """(source, output views, inputs read at offsets) of a GEMM group: the anchor's product into a
    register fragment, the group's element-wise epilogue on it, the outputs
    stored from fragments; its K loop as `steps` says."""
    anchor = group.anchor
    a_node, b_node = gemm_operands(anchor)
    a_spec, b_spec = specs[group.inputs.index(a_node)], specs[group.inputs.index(b_node)]
    if a_spec.dtype != b_spec.dtype or a_spec.dtype not in pointwise.FLOATS:
        raise Unsupported(f"a product of {a_spec.dtype} and {b_spec.dtype}")
    batched = len(group.shape) == 3
    *_, m, n = group.shape
    k = a_spec.shape[-1]
    writer = KernelWriter(group, specs, name)
    dtype = DTYPES[a_spec.dtype]
    a_layout, b_layout = layouts
    writer.operand_params += [f"A: T.Tensor({a_layout.shape}, '{dtype}')", f"B: T.Tensor({b_layout.shape}, '{dtype}')"]
    block_m, block_n, threads = gemm_blocks(m, n, math.prod(group.shape[:-2]), steps)
    block_k = steps.block_k
    rows = f"(by * {block_m} + i)" if m % block_m == 0 else f"T.min(by * {block_m} + i, {m - 1})"
    cols = f"(bx * {block_n} + j)" if n % block_n == 0 else f"T.min(bx * {block_n} + j, {n - 1})"
    coords = (["bz"] if batched else []) + [rows, cols]

    def anchor_value(c):
        if anchor.target is torch.ops.aten.addmm.default:
            bias, beta, alpha = anchor.args[0], anchor.kwargs.get("beta", 1), anchor.kwargs.get("alpha", 1)
            product = "C_l[i, j]" if alpha == 1 else f"(C_l[i, j] * {float(alpha)!r})"
            added = writer.value(bias, c)
            return f"({product} + {added if beta == 1 else f'({added} * {float(beta)!r})'})"
        return "C_l[i, j]"
    writer.anchor_value = anchor_value
    outputs = writer.outputs(lambda node: group.shape)
    batch = "bz, " if batched else ""
    a_tile = f"({block_k}, {block_m})" if a_layout.transposed else f"({block_m}, {block_k})"
    b_tile = f"({block_n}, {block_k})" if b_layout.transposed else f"({block_k}, {block_n})"
    a_at = f"A[{batch}k * {block_k}, by * {block_m}]" if a_layout.transposed else f"A[{batch}by * {block_m}, k * {block_k}]"
    b_at = f"B[{batch}bx * {block_n}, k * {block_k}]" if b_layout.transposed else f"B[{batch}k * {block_k}, bx * {block_n}]"
    body = writer.body
    body(f"A_s = T.alloc_shared({a_tile}, '{dtype}')")
    body(f"B_s = T.alloc_shared({b_tile}, '{dtype}')")
    body(f"C_l = T.alloc_fragment(({block_m}, {block_n}), 'float32')")
    body("T.clear(C_l)")
    body(f"for k in T.Pipelined({-(-k // block_k)}, num_stages={steps.stages}):")
    body(f"    T.copy({a_at}, A_s)")
    body(f"    T.copy({b_at}, B_s)")
    body(f"    T.gemm(A_s, B_s, C_l, transpose_A={a_layout.transposed}, transpose_B={b_layout.transposed})")
    if anchor.target is not torch.ops.aten.addmm.default:
        writer.fragment[anchor] = "C_l"
    writer.emit_group_values((str(block_m), str(block_n)), coords, coords, n)
    for node, param in outputs:
        body(f"T.copy({writer.fragment[node]}, {param}[{batch}by * {block_m}, bx * {block_n}])")
    grid = f"{-(-n // block_n)}, {-(-m // block_m)}" + (f", {group.shape[0]}" if batched else "")
    return writer.source(grid, body.lines, threads), [group.shape] * len(outputs), list(writer.param_of)


LOG2E = 1.4426950408889634


@dataclass(frozen=True)
class AttentionCall:
    """What a scaled-dot-product-attention node asks for."""

    query: fx.Node
    key: fx.Node
    value: fx.Node
    mask: fx.Node | None
    causal: bool
    scale: float | None


def attention_call(node: fx.Node) -> AttentionCall:
    """The operands of any of ATen's attention ops (each orders them its own way)."""
    aten = torch.ops.aten
    args, kwargs = list(node.args), dict(node.kwargs)

    def arg(position, name, default=None):
        return args[position] if len(args) > position else kwargs.get(name, default)

    q, k, v = args[:3]
    if node.target in (aten._scaled_dot_product_efficient_attention.default,
                       aten._scaled_dot_product_cudnn_attention.default):
        mask, dropout, causal = arg(3, "attn_bias"), arg(5, "dropout_p", 0.0), arg(6, "is_causal", False)
    elif node.target in (aten.scaled_dot_product_attention.default, ops.attention_op()):
        mask, dropout, causal = arg(3, "attn_mask"), arg(4, "dropout_p", 0.0), arg(5, "is_causal", False)
        return _attention(node, q, k, v, mask, dropout, causal, arg(6, "scale"))
    else:  # the flash variants
        mask, dropout, causal = kwargs.get("attn_mask"), arg(3, "dropout_p", 0.0), arg(4, "is_causal", False)
    return _attention(node, q, k, v, mask, dropout, causal, kwargs.get("scale"))


def _attention(node, q, k, v, mask, dropout, causal, scale) -> AttentionCall:
    if dropout:
        raise Unsupported(f"attention with dropout_p={dropout}")
    return AttentionCall(q, k, v, mask, bool(causal), scale)


def compared_dtype(node: fx.Node) -> torch.dtype:
    """The dtype torch compares a comparison's two operands in: their type
    promotion, in which a Python number or a 0-dim tensor does not widen a
    tensor of its own category (an fp16 `x > 0.7` compares x with 0.7 rounded
    to fp16; an fp16 tensor and an f32 one compare in f32)."""
    proxies = []
    for a in node.args[:2]:
        if isinstance(a, fx.Node):
            proxies.append(torch.empty(() if shape_of(a) == () else (1,), dtype=dtype_of(a)))
        else:
            proxies.append(a)
    return torch.result_type(*proxies)


def head_layout(spec: TensorSpec) -> str | None:
    """'bhsd' or 'bshd' when the [B, H, S, D] tensor is dense in that order, else None."""
    b, h, s, d = spec.shape
    sb, sh, ss, sd = spec.stride
    if (sd == 1 or d == 1) and (ss == d or s == 1) and (sh == s * d or h == 1) and (sb == h * s * d or b == 1):
        return "bhsd"
    if (sd == 1 or d == 1) and (sh == d or h == 1) and (ss == h * d or s == 1) and (sb == h * s * d or b == 1):
        return "bshd"
    return None


# Head sizes the attention kernel's gemms take as they are: multiples of 16,
# the K of every chip's 16-bit matrix instructions (MFMA 16x16x16, mma.sync
# m16n8k16) and a whole number of 32x32 MFMA tiles' K.
HEAD_DIM_STEP = 16


def padded_head_dim(dim: int) -> int:
    """The head size the attention kernel computes with: `dim` rounded up to
    HEAD_DIM_STEP. A smaller model's head (8, 12, 24) is passed zero-padded:
    the zero columns add nothing to Q K^T and give O zero columns, which are
    dropped (dynamo's "padded" layout)."""
    return -(-dim // HEAD_DIM_STEP) * HEAD_DIM_STEP


@dataclass(frozen=True)
class AttentionTiling:
    """How the attention kernel splits its work: blocks of `block_m` query
    rows by `block_n` keys, `threads` threads a block, K and V tiles in
    `stages` pipeline stages."""

    block_m: int
    block_n: int
    threads: int = THREADS
    stages: int = 2


ATTENTION_BLOCKS = (64, 64)  # query rows x key columns of a block, every shipped chip's default
DEFAULT_ATTENTION_TILING = AttentionTiling(*ATTENTION_BLOCKS)  # in THREADS threads, 2 stages
# Where a wave is 32 lanes, 128 query rows give each of the kernel's 4 warps
# 32 (FlashAttention-2's split), for head sizes up to WIDE_ATTENTION_DIM
# (beyond, the output rows alone take a thread's registers: d 192 spilled
# and 256 did not compile in ptxas 13). Measured on the H200
# (bench/torch_attention.py, 2026-12-04, microseconds for 64x64 / 128x64 /
# 128x128 blocks): d 64, 8x16x2048: 767 / 611 / 566, causal 515 / 433 / 479;
# BERT's 32x12x512 with its mask 278 / 250 / 250; d 128, 16x16x1024: 805 /
# 626 (64x128: 868), causal 4x32x4096: 3178 / 2486.
WIDE_ATTENTION_DIM = 128
SHORT_HEAD_BLOCKS = (128, 128)  # head size <= 64, no causal mask
WIDE_ATTENTION_BLOCKS = (128, 64)  # the others up to WIDE_ATTENTION_DIM
# Where the chip's matrix instructions include ones a group of waves issues
# (sm_90a's wgmma, which the kernel's gemms take: backends/nvidia/
# wgmma_threads.py), 64 query rows, one warpgroup's band, by 64 keys, or by
# 128 where the keys number LONG_KEYS or more (causal or not): fewer, longer
# key steps pay where there are many; with few, the 128-key block's share of
# masked and ragged work and its registers (240 against 153 a thread at d 128
# under a causal mask) cost more. Measured with the backend's own kernel,
# microseconds for 64x64 / 64x128 blocks: on the H200 (bench/torch_attention.py,
# 2026-12-05, contiguous [B, H, S, D]) BERT's 32x12x512 with its mask 201 / 220;
# d 64, 8x16x2048: 466 / 462, causal 382 / 358; d 128, 16x16x1024: 472 / 529;
# causal 4x32x4096: 1959 / 1883. On an H100 (bench/attention.py's _backend_
# candidates, 2026-12-07, transposed [B, S, H, D] views, f16 then bf16, in
# TFLOP/s): d 128 16x16x1024 340.8 / 340.5 and 351.4 / 353.8, causal 268.2 /
# 234.9 and 265.9 / 237.5; 4x32x4096 455.8 / 471.2 and 463.4 / 483.4, causal
# 415.8 / 404.7 and 425.2 / 416.1; 1x32x16384 472.2 / 491.8 and 494.0 / 504.1,
# causal 456.2 / 463.6 and 457.7 / 470.7; d 64 8x16x2048 350.3 / 364.4 and
# 359.4 / 372.9, causal 291.4 / 288.7 and 294.2 / 291.3.
GROUP_ATTENTION_BLOCKS = (64, 64)
GROUP_LONG_ATTENTION_BLOCKS = (64, 128)
LONG_KEYS = 2048


# Where waves are 64 lanes (CDNA's MFMA, MetaX), four waves of 32 query rows
# each (one 32x32 MFMA row band) by 64 keys: in one stage up to head size 64
# (two workgroups share gfx942's 64 KiB: 2 waves a SIMD), in two up to
# WIDE_ATTENTION_DIM (tile-pipeline reads Q into registers from global memory
# where that lets a CU run two waves a SIMD, in one stage on gfx942). Busy
# ratio per wave at 2 waves a SIMD (bench/amd_attention_vs_triton.py,
# llvm-mca, S = 4096, 2026-12-06, with the isa stage's schedule trial;
# results/attention-amd.md), full / causal, f16 then bf16: gfx942 d 128
# 0.762 / 0.658, 0.569 / 0.567; d 64 0.604 / 0.594, 0.504 / 0.502; gfx950
# (f16 and bf16 alike) d 128 0.573 / 0.552 (the full loop's tail peeled, 2026-12-07), d 64 0.502 / 0.492 (64x64 blocks
# of 2 waves, before the trial: gfx942 d 128 f16 0.530 / 0.428, 1 wave a SIMD). 128x128 blocks in two stages reach more per wave at d 128
# (gfx942 f16 0.723, bf16 0.624) but at one wave a SIMD.
SHORT_HEAD_WAVE64 = AttentionTiling(128, 64, 256, 1)
WIDE_HEAD_WAVE64 = AttentionTiling(128, 64, 256, 2)


def attention_tilings(target, dim: int, causal: bool, keys: int | None = None) -> list[AttentionTiling]:
    """The tilings of the torch backend's attention kernel for head size
    `dim` over `keys` keys (None: not known when compiling) on `target` (a
    Target), best first; the kernel takes the first the compiler accepts
    (dynamo's GroupKernel.build), DEFAULT_ATTENTION_TILING last of all:

    * 32-lane waves, head size at most WIDE_ATTENTION_DIM, the blocks' Q, K
      and V tiles (K and V in two stages) within a workgroup's shared memory:
      GROUP_ATTENTION_BLOCKS, or GROUP_LONG_ATTENTION_BLOCKS over LONG_KEYS
      keys or more, if the chip has group-level matrix instructions and the
      head's 16-bit rows are a multiple of 128 bytes (`gpu_builders.
      BOX_BYTES`), else SHORT_HEAD_BLOCKS or WIDE_ATTENTION_BLOCKS;
    * 64-lane waves with matrix instructions: SHORT_HEAD_WAVE64 up to head
      size 64, WIDE_HEAD_WAVE64 then SHORT_HEAD_WAVE64 up to
      WIDE_ATTENTION_DIM."""
    from tilemlir.passes.gpu_builders import BOX_BYTES
    from tilemlir.passes.lower_to_gpu.api import matrix_core_for

    fallback = DEFAULT_ATTENTION_TILING
    wave = target.compute.wave_size
    if wave == 64 and target.mma:
        if dim <= 64:
            return [SHORT_HEAD_WAVE64, fallback]
        return [WIDE_HEAD_WAVE64, SHORT_HEAD_WAVE64, fallback] if dim <= WIDE_ATTENTION_DIM else [fallback]
    core = matrix_core_for(target)
    # wgmma takes the gemms where Q, K and V rows (16-bit) are 128-byte multiples.
    if dim * 2 % BOX_BYTES == 0 and any(core.waves_per_instruction(row.name) > 1 for row in target.mma):
        long_keys = keys is not None and keys >= LONG_KEYS
        blocks = GROUP_LONG_ATTENTION_BLOCKS if long_keys else GROUP_ATTENTION_BLOCKS
    else:
        blocks = SHORT_HEAD_BLOCKS if dim <= 64 and not causal else WIDE_ATTENTION_BLOCKS
    shared = (blocks[0] + 2 * 2 * blocks[1]) * dim * 2  # 16-bit elements
    limit = target.memory.shared_bytes_per_workgroup
    if wave == 32 and dim <= WIDE_ATTENTION_DIM and not is_unknown(limit) and shared <= limit \
            and blocks != ATTENTION_BLOCKS:
        return [AttentionTiling(*blocks), fallback]
    return [fallback]


def attention_kernel(group: Group, specs: list[TensorSpec], layouts: tuple[str, str, str, str],
                     name: str, tiling: AttentionTiling = DEFAULT_ATTENTION_TILING) -> tuple[str, list]:
    """(source, inputs read at offsets) of flash attention over [B, H, S, D]
    tensors in the given memory orders (query, key, value, output: "bhsd",
    "bshd", or "padded": dense [B, H, S, padded_head_dim(D)]): the
    scores of a block of `tiling`'s query rows by keys (`attention_tilings`) in
    registers, online softmax in exp2 with the
    scale folded in, masks (causal, an additive or boolean mask, ragged
    key blocks) applied to the scores, P from registers into the second gemm."""
    call = attention_call(group.anchor)
    q_spec = specs[group.inputs.index(call.query)]
    k_spec = specs[group.inputs.index(call.key)]
    if q_spec.dtype not in (torch.float16, torch.bfloat16) or k_spec.dtype != q_spec.dtype:
        raise Unsupported(f"attention on {q_spec.dtype}")
    v_spec = specs[group.inputs.index(call.value)]
    batch, heads, sq, dim = q_spec.shape
    kv_heads, sk = k_spec.shape[1], k_spec.shape[2]
    if heads % kv_heads:
        raise Unsupported(f"{heads} query heads over {kv_heads} key heads")
    if k_spec.shape[0] != batch or v_spec.shape != k_spec.shape or k_spec.shape[3] != dim:
        raise Unsupported(f"attention of query {q_spec.shape}, key {k_spec.shape}, value {v_spec.shape} "
                          "(a broadcast batch or another head size)")
    group_size = heads // kv_heads
    writer = KernelWriter(group, specs, name)
    dtype = DTYPES[q_spec.dtype]
    scale = (call.scale if call.scale is not None else 1.0 / math.sqrt(dim)) * LOG2E
    if "padded" in layouts:
        dim = padded_head_dim(dim)
    block_m, block_n = tiling.block_m, tiling.block_n
    shapes = []
    for layout, (b, h, s, d) in zip(layouts, (q_spec.shape, k_spec.shape, k_spec.shape, q_spec.shape)):
        shapes.append((b, h, s, dim) if layout == "padded" else (b, h, s, d) if layout == "bhsd" else (b, s, h, d))
    writer.operand_params += [f"{n}: T.Tensor({shape}, '{dtype}')" for n, shape in zip("QKV", shapes[:3])]
    writer.output_params.append(f"O: T.Tensor({shapes[3]}, '{dtype}')")

    def tile(tensor: str, layout: str, head: str, start: str, block: int) -> str:
        rows = f"{start}:{start} + {block}"
        return f"{tensor}[bz, {rows}, {head}, :]" if layout == "bshd" else f"{tensor}[bz, {head}, {rows}, :]"

    kv_head = "by" if group_size == 1 else f"by // {group_size}"
    blocks = -(-sk // block_n)
    valid = []
    if call.causal:
        valid.append(f"bx * {block_m} + i >= k * {block_n} + j")
    if sk % block_n:
        valid.append(f"k * {block_n} + j < {sk}")
    # Without an additive mask, a positive scale that stays a normal f32 number
    # (so that -inf times it is -inf) is applied after the row max (max(s) c =
    # max(s c)), inside exp2's argument as one multiply-add, as TileLang's
    # kernels write it; otherwise the scores are scaled first.
    normal = float(torch.tensor(scale, dtype=torch.float32)) >= torch.finfo(torch.float32).tiny
    additive = call.mask is not None and specs[group.inputs.index(call.mask)].dtype != torch.bool
    folded = f" * {scale!r}" if normal and not additive else ""
    score = "s" if folded else f"s * {scale!r}"
    if call.mask is not None:
        row = f"T.min(bx * {block_m} + i, {sq - 1})" if sq % block_m else f"(bx * {block_m} + i)"
        col = f"T.min(k * {block_n} + j, {sk - 1})" if sk % block_n else f"(k * {block_n} + j)"
        loaded = writer.load(call.mask, ["bz", "by", row, col])  # broadcast against the scores
        if additive:
            score = f"({score} + {loaded} * {LOG2E!r})"
        else:
            valid.append(loaded)
    if valid:  # a select of the score (a value, not a load): tile-split-loops drops it before the diagonal
        score = f"T.if_then_else({' and '.join(f'({c})' for c in valid)}, {score}, -T.infinity('float32'))"
    loop = f"T.min(T.ceildiv((bx + 1) * {block_m}, {block_n}), {blocks})" if call.causal else str(blocks)
    q_layout, k_layout, v_layout, o_layout = layouts
    body = writer.body
    body(f"Q_s = T.alloc_shared(({block_m}, {dim}), '{dtype}')")
    body(f"K_s = T.alloc_shared(({block_n}, {dim}), '{dtype}')")
    body(f"V_s = T.alloc_shared(({block_n}, {dim}), '{dtype}')")
    body(f"acc_s = T.alloc_fragment(({block_m}, {block_n}), 'float32')")
    body(f"acc_s_cast = T.alloc_fragment(({block_m}, {block_n}), '{dtype}')")
    body(f"acc_o = T.alloc_fragment(({block_m}, {dim}), 'float32')")
    for fragment in ("scores_max", "scores_max_prev", "scores_max_scaled", "scores_scale", "scores_sum", "logsum"):
        body(f"{fragment} = T.alloc_fragment(({block_m},), 'float32')")
    body(f"T.copy({tile('Q', q_layout, 'by', f'bx * {block_m}', block_m)}, Q_s)")
    body("T.fill(acc_o, 0)")
    body("T.fill(logsum, 0)")
    body("T.fill(scores_max, -T.infinity('float32'))")
    body(f"for k in T.Pipelined({loop}, num_stages={tiling.stages}):")
    body.depth += 1
    body(f"T.copy({tile('K', k_layout, kv_head, f'k * {block_n}', block_n)}, K_s)")
    body("T.clear(acc_s)")
    body("T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)")
    if score != "s":
        body(f"for i, j in T.Parallel({block_m}, {block_n}):")
        body("    s = acc_s[i, j]")
        body(f"    acc_s[i, j] = {score}")
    body("T.copy(scores_max, scores_max_prev)")
    body("T.reduce_max(acc_s, scores_max, dim=1, clear=False)")
    # A row whose scores so far are all -inf (masked, or -inf from the inputs)
    # has max -inf: its probabilities are 0 (exp2 of -inf) and its scale 0 (its
    # sums so far are 0), never exp2(-inf - -inf). Per row, not per score.
    body(f"for i in T.Parallel({block_m}):")
    body(f"    scores_max_scaled[i] = T.if_then_else(scores_max[i] == -T.infinity('float32'), 0.0, "
         f"scores_max[i]{folded})")
    body(f"    scores_scale[i] = T.exp2(scores_max_prev[i]{folded} - scores_max_scaled[i])")
    body(f"for i, j in T.Parallel({block_m}, {block_n}):")
    body(f"    acc_s[i, j] = T.exp2(acc_s[i, j]{folded} - scores_max_scaled[i])")
    body("T.reduce_sum(acc_s, scores_sum, dim=1)")
    body(f"for i in T.Parallel({block_m}):")
    body("    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]")
    body("T.copy(acc_s, acc_s_cast)")
    body(f"for i, j in T.Parallel({block_m}, {dim}):")
    body("    acc_o[i, j] *= scores_scale[i]")
    body(f"T.copy({tile('V', v_layout, kv_head, f'k * {block_n}', block_n)}, V_s)")
    body("T.gemm(acc_s_cast, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)")
    body.depth -= 1
    body(f"for i, j in T.Parallel({block_m}, {dim}):")  # a row with every key masked is 0, as torch's
    body("    acc_o[i, j] = T.if_then_else(logsum[i] == 0.0, 0.0, acc_o[i, j] / logsum[i])")
    body(f"T.copy(acc_o, {tile('O', o_layout, 'by', f'bx * {block_m}', block_m)})")
    grid = f"{-(-sq // block_m)}, {heads}, {batch}"
    return writer.source(grid, body.lines, tiling.threads), list(writer.param_of)


def channels_last(spec: TensorSpec) -> bool:
    """Whether a 4-D tensor is dense in (N, H, W, C) order (torch's channels-last)."""
    _, channels, height, width = spec.shape
    return tuple(spec.stride) == (height * width * channels, 1, width * channels, channels)


def pointwise_conv(x_spec: TensorSpec, w_spec: TensorSpec, stride, padding) -> bool:
    """A 1x1 convolution, stride 1, no padding, of a channels-last image by a
    weight dense as [out, in]: a GEMM of the image's pixels (N*H*W rows of C
    channels, a view of it) by the weight's transpose (ResNet's bottleneck
    projections)."""
    channels = x_spec.shape[1]
    kh, kw = w_spec.shape[2:]
    dense_weight = tuple(w_spec.stride[:2]) == (channels, 1)
    return (kh, kw) == (1, 1) and tuple(stride) == (1, 1) and tuple(padding) == (0, 0) \
        and channels_last(x_spec) and dense_weight


@dataclass(frozen=True)
class PixelRows:
    """An input a convolution reads as its pixels' rows of channels, a tile
    a block (a channels-last tensor of the output's shape: the residual of a
    ResNet block); passed as that 2-D view."""

    node: fx.Node


@dataclass(frozen=True)
class PhaseImage:
    """How a shifted convolution (`shifted_conv`) is passed its image, as
    rows of channels-last pixels:

    * zero-padded by `pad` (top, bottom, left, right) to whole cells of the
      stride (sh x sw pixels);
    * split by phase into planes, the pixels at (a, b) of every cell, for
      a < planes[0] and b < planes[1] (the phases some tap reads), each N x
      cells high x cells wide pixels, one after the other (a, then b);
    * with `fold` > 1, instead of phases across the width, the pixels of
      every sw-th column (cells wide of them), each followed by the fold - 1
      pixels `fold_step` apart to its right (zeros past the edge) as more
      channels, in (tap, channel) order: that many column taps of the kernel
      in one K step (planes[1] is 1);
      with `patches` (kh, kw, dh, dw), instead of phases and folds, each
      output pixel's whole window as its channels, in (r, t, channel) order
      (im2col: the rows are the output's pixels); folded or windowed, each
      pixel's channels zero-padded to `pixel_channels` first (a multiple of
      4, so that its taps are copied 8 bytes at a time);
    * channels zero-padded to `channels`.

    A channels-last image of stride 1 and no padding is passed as a view,
    any other as a copy. Folds and patches serve images of few channels (a
    ResNet stem's 3), whose K steps would otherwise be mostly padding. Every
    channel a K step reads is a tap of the kernel or a zero: a pixel no tap
    reads is never multiplied (by a zero weight, which would turn an inf
    there into NaN)."""

    channels: int
    pad: tuple[int, int, int, int]
    stride: tuple[int, int]
    planes: tuple[int, int]
    fold: int = 1
    fold_step: int = 1
    patches: tuple[int, int, int, int] | None = None
    pixel_channels: int = 0


def writable_in_place(layout: PhaseImage, channels: int) -> bool:
    """Whether the producer of a shifted convolution's image can write it
    straight into the rows `layout` passes (conv_kernel's `padded`): phase
    planes with no folds or windows, one for every phase of the stride (so
    that each pixel has its row), where its channels need no padding. (Of
    stride 1 and no padding, those rows are the channels-last image, which
    a 1x1 convolution reads as it is: pointwise_conv.)"""
    return layout.planes == layout.stride and copyable(layout, channels) \
        and (any(layout.pad) or layout.stride != (1, 1))


@dataclass(frozen=True)
class PixelsAnd:
    """The view of a convolution output stored as its pixels' rows and into
    the rows `image` passes as well (conv_kernel's `copied`)."""

    image: PhaseImage


def copyable(layout: PhaseImage, channels: int) -> bool:
    """Whether a producer can store an image into the rows `layout` passes
    as well as into the image (conv_kernel's `copied`): phase planes with no
    folds or windows, where its channels need no padding."""
    return layout.fold == 1 and layout.patches is None and layout.channels == channels


def is_view(layout: PhaseImage) -> bool:
    """Whether the rows of `layout` (writable_in_place) hold the image as a
    strided view of them: of stride 1, they are the padded image itself."""
    return layout.stride == (1, 1)


def layout_cells(layout: PhaseImage | Border, height: int, width: int) -> tuple[int, int]:
    """The cells (stride x stride pixels) down and across an image of
    `height` x `width` spans, padded as `layout` pads it (to whole cells)."""
    top, bottom, left, right = layout.pad
    (sh, sw) = layout.stride
    return (top + height + bottom) // sh, (left + width + right) // sw


@dataclass(frozen=True)
class Border:
    """An output written inside a border of `fill` (conv_kernel's `padded`):
    the channels-last tensor a 2-D `constant_pad_nd` of it by `pad` (top,
    bottom, left, right) makes, which that pad then passes as it is
    (ResNet's max pooling pads its stem's output with -inf)."""

    pad: tuple[int, int, int, int]
    fill: float
    stride = planes = (1, 1)  # its rows are the padded tensor's pixels, in one plane


def bordered(node: fx.Node) -> Border | None:
    """The Border of a constant_pad_nd that pads a 4-D float tensor's height
    and width alone, by non-negative amounts (None for another node)."""
    if node.target is not torch.ops.aten.constant_pad_nd.default or len(shape_of(node) or ()) != 4 \
            or dtype_of(node) not in pointwise.FLOATS:  # f64 pads too, which no kernel takes
        return None
    pads = list(node.args[1]) + [0] * (8 - len(node.args[1]))
    if any(p < 0 for p in pads) or any(pads[4:]):
        return None
    fill = node.args[2] if len(node.args) > 2 else node.kwargs.get("value", 0)
    return Border((pads[2], pads[3], pads[0], pads[1]), float(fill))


@dataclass(frozen=True)
class Taps:
    """How a shifted convolution is passed its weight: [out, (kh, kw, c)],
    folded column taps or whole windows (`image`) joining the channels, the
    channels zero-padded as the image's; a view of a channels-last weight
    that needs no padding, else a copy."""

    image: PhaseImage


@dataclass(frozen=True)
class ShiftedConv:
    """A convolution computed as shifted GEMMs over a PhaseImage.

    Output pixel (n, h, w) is row q = (n * cells_h + h) * cells_w + w of a
    plane, and its tap (r, t) reads image row y = h * sh + r * dh, column
    x = w * sw + t * dw of the padded image: phase (y % sh, x % sw), pixel
    (h + r * dh // sh, w + t * dw // sw) of that phase's plane, which is
    row q + `tap_offset` of the planes, the same for every pixel. So each K
    step (one tap, a run of channels) is a plain 2-D tile of the planes'
    rows, and the loop pipelines as a GEMM's does (TMA and wgmma on
    sm_90a). A plane's rows with no output pixel (past the output's last
    row or column) are computed and not stored. With column taps folded, or
    windows as channels, the kernel, stride and dilation here are those of
    the convolution over the image as passed."""

    image: PhaseImage
    cells: tuple[int, int]  # each image's height and width in cells
    plane_rows: int  # N x cells high x cells wide
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    block_k: int

    def tap_offset(self, tap: str) -> str:
        """The row offset of the tap numbered `tap` (r * kw + t), as source."""
        kw, (dh, dw), (sh, sw) = self.kernel[1], self.dilation, self.stride
        y, x = f"({tap} // {kw} * {dh})", f"({tap} % {kw} * {dw})"
        if (sh, sw) == (1, 1):
            return f"{y} * {self.cells[1]} + {x}"
        plane = f"(({y} % {sh}) * {self.image.planes[1]} + {x} % {sw})"
        return f"{plane} * {self.plane_rows} + {y} // {sh} * {self.cells[1]} + {x} // {sw}"


FEW_CHANNELS = 16  # images of at most this many channels fold their taps into a K step's channels


def shifted_conv(x_spec: TensorSpec, w_spec: TensorSpec, stride, padding, dilation, out_size: tuple[int, int],
                 block_k: int) -> ShiftedConv | None:
    """The convolution of a 16-bit float image as shifted GEMMs (None for
    another type), of any layout, kernel, stride, padding and dilation.

    An image of few channels (at most FEW_CHANNELS) folds its taps into
    them: the kernel's column taps (a kh x 1 kernel over kw x C channels, of
    stride (sh, 1) over windows every sw columns: ResNet's 7x7 stride-2
    stem over 3 channels becomes a 7 x 1 convolution over 7 x 4, of 2
    phase planes of 115 x 112 windows at 224 x 224), or for a strided kh x 1
    kernel its whole window (im2col: a 1x1 convolution over kh x C). Channels are
    padded to a multiple of 16 (a K step reads whole 32-byte rows and makes
    whole instruction steps), below `block_k` to a power of two, above it to
    a multiple of it; block K is the largest of `block_k`, 32 and 16 that
    divides them."""
    if x_spec.dtype not in (torch.float16, torch.bfloat16):
        return None
    batch, channels, height, width = x_spec.shape
    kh, kw = w_spec.shape[2:]
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    few = channels <= FEW_CHANNELS
    words = -(-channels // 4) * 4  # a folded or windowed pixel's channels, whole 8-byte words
    if few and (sh, sw) != (1, 1) and kw == 1 < kh:  # im2col: rows are the output's pixels
        out_h, out_w = out_size
        image = PhaseImage(_padded_channels(words * kh * kw, block_k), (ph, ph, pw, pw), (sh, sw), (1, 1),
                           patches=(kh, kw, dh, dw), pixel_channels=words)
        return ShiftedConv(image, (out_h, out_w), batch * out_h * out_w, (1, 1), (1, 1), (1, 1),
                           _block_k(image.channels, block_k))
    cells_h, cells_w = -(-(height + 2 * ph) // sh), -(-(width + 2 * pw) // sw)
    pad = (ph, cells_h * sh - height - ph, pw, cells_w * sw - width - pw)
    planes = (max(r * dh % sh for r in range(kh)) + 1, max(t * dw % sw for t in range(kw)) + 1)
    fold = kw if few and kw > 1 else 1
    if fold > 1:  # windows of the column taps every sw columns: a kh x 1 kernel of stride (sh, 1) over them
        planes = (planes[0], 1)
    image = PhaseImage(_padded_channels((words if fold > 1 else channels) * fold, block_k), pad, (sh, sw), planes,
                       fold, dw if fold > 1 else 1, pixel_channels=words if fold > 1 else 0)
    return ShiftedConv(image, (cells_h, cells_w), batch * cells_h * cells_w, (kh, 1 if fold > 1 else kw),
                       (sh, 1 if fold > 1 else sw), (dh, 1 if fold > 1 else dw), _block_k(image.channels, block_k))


def _padded_channels(channels: int, block_k: int) -> int:
    """`channels` padded to a multiple of 16; below `block_k` to a power of
    two, above it to a multiple of `block_k`, else of 32, where that adds at
    most 1/8 (fewer, longer K steps)."""
    padded = -(-channels // 16) * 16
    if padded < block_k:
        return 1 << (padded - 1).bit_length()
    for step in (block_k, 32):
        whole = -(-padded // step) * step
        if whole * 8 <= padded * 9:
            return whole
    return padded


def _block_k(channels: int, block_k: int) -> int:
    return next(k for k in (block_k, 32, 16) if k <= max(block_k, 16) and channels % k == 0)


def conv_kernel(group: Group, specs: list[TensorSpec], name: str, steps: GemmSteps = GemmSteps(),
                padded: dict[int, PhaseImage | Border] | None = None,
                copied: dict[int, PhaseImage] | None = None) -> tuple[str, list, tuple | None, list]:
    """(source, inputs read at offsets, operand layouts, output views) of a 2-D convolution
    as an implicit GEMM: rows are output pixels (n, ho, wo), columns output
    channels, K the taps (kh, kw, c), channels fastest. `steps` is the K
    loop of K = kh * kw * C. Three forms:

    * a `pointwise_conv` reads its operands as 2-D views (layouts "pixels"
      and "rows"), tile by tile in a pipelined loop;
    * a `shifted_conv` (any other of a 16-bit image) reads the zero-padded
      image split by the stride's phases (layout PhaseImage) and the weight
      as [out, taps] (layout Taps), a tile of each per K step, in the same
      pipelined loop;
    * an f32 image's gathers each K step's tile of the image (zeros in the
      padding) and of the weight into shared memory through their strides
      (NCHW, channels-last or any other); layouts None: both operands passed
      as the memory they span.

    The products accumulate in registers and the epilogue (bias, batch norm,
    activation, residual) is stored through the outputs' own strides (view
    "span", element by element); a channels-last output of the first two
    forms as its pixels' rows (view "pixels"): by tiles, or for a shifted
    convolution element by element where the grid's row is an output pixel's.
    An output `padded` names (by index) is the image of a shifted convolution
    that reads it as that PhaseImage (`writable_in_place`), or of a pad
    (Border): each pixel's channels are stored in its row of the padded
    rows, which the caller fills (its view: that PhaseImage or Border), so
    the reader copies nothing. An output `copied` names, stored as its
    pixels' rows, is also stored into the rows of that PhaseImage (view
    PixelsAnd), for the convolutions that read it so beside other
    readers (ResNet's strided 1x1 projection of a block's input)."""
    anchor, padded, copied = group.anchor, padded or {}, copied or {}
    image, weight, bias, stride, padding, dilation, transposed, _, groups = anchor.args[:9]
    x_spec, w_spec = specs[group.inputs.index(image)], specs[group.inputs.index(weight)]
    if transposed or groups != 1 or len(x_spec.shape) != 4:
        raise Unsupported("a transposed, grouped or non-2-D convolution")
    if x_spec.dtype != w_spec.dtype or x_spec.dtype not in pointwise.FLOATS:
        raise Unsupported(f"a convolution of {x_spec.dtype} by {w_spec.dtype}")
    batch, channels, height, width = x_spec.shape
    out_channels, _, kh, kw = w_spec.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    _, _, out_h, out_w = group.shape
    m_total, k_total = batch * out_h * out_w, channels * kh * kw
    writer = KernelWriter(group, specs, name)
    dtype = DTYPES[x_spec.dtype]
    as_gemm = pointwise_conv(x_spec, w_spec, stride, padding)
    shifted = None if as_gemm else shifted_conv(x_spec, w_spec, stride, padding, dilation, (out_h, out_w),
                                                steps.block_k)
    threads = THREADS
    if shifted:
        channels = shifted.image.channels
        k_total = channels * shifted.kernel[0] * shifted.kernel[1]
        (cells_h, cells_w), (planes_h, planes_w) = shifted.cells, shifted.image.planes
        # A plane's rows up to the last output pixel's.
        grid_rows = ((batch - 1) * cells_h + out_h - 1) * cells_w + out_w
        rows_in = planes_h * planes_w * shifted.plane_rows
        writer.operand_params += [f"X: T.Tensor(({rows_in}, {channels}), '{dtype}')",
                                  f"W: T.Tensor(({out_channels}, {k_total}), '{dtype}')"]
        block_m, block_n, threads = gemm_blocks(grid_rows, out_channels, 1, steps)
        block_k = shifted.block_k
    elif as_gemm:
        writer.operand_params += [f"X: T.Tensor(({m_total}, {channels}), '{dtype}')",
                                  f"W: T.Tensor(({out_channels}, {channels}), '{dtype}')"]
        block_m, block_n, threads = gemm_blocks(m_total, out_channels, 1, dataclasses.replace(steps, wide_tiles=0))
        block_k = steps.block_k
    else:
        writer.operand_params += [f"X: T.Tensor(({x_spec.span},), '{dtype}')",
                                  f"W: T.Tensor(({w_spec.span},), '{dtype}')"]
        block_m, block_n, block_k = 64, (32 if out_channels <= 32 else 64), 32
    co = f"(by * {block_n} + j)" if out_channels % block_n == 0 else f"T.min(by * {block_n} + j, {out_channels - 1})"
    if shifted:  # row q of a plane; its pixel clamped into the output (a row of none is not stored)
        q = f"(bx * {block_m} + i)"
        grid_h, grid_w = f"(({q} // {cells_w}) % {cells_h})", f"({q} % {cells_w})"
        coords = [f"T.min({q} // {cells_h * cells_w}, {batch - 1})", co, f"T.min({grid_h}, {out_h - 1})",
                  f"T.min({grid_w}, {out_w - 1})"]
        stored = f"({q} < {grid_rows}) and ({grid_h} < {out_h}) and ({grid_w} < {out_w})"
    else:
        m = f"T.min(bx * {block_m} + i, {m_total - 1})"
        coords = [f"({m}) // {out_h * out_w}", co, f"(({m}) // {out_w}) % {out_h}", f"({m}) % {out_w}"]
        stored = f"bx * {block_m} + i < {m_total}"

    def anchor_value(_coords):
        return "C_l[i, j]" if bias is None else f"(C_l[i, j] + {writer.load(bias, [co])})"
    writer.anchor_value = anchor_value
    body = writer.body
    body(f"A_s = T.alloc_shared(({block_m}, {block_k}), '{dtype}')")
    body(f"B_s = T.alloc_shared(({block_n}, {block_k}), '{dtype}')" if as_gemm or shifted else
         f"B_s = T.alloc_shared(({block_k}, {block_n}), '{dtype}')")
    body(f"C_l = T.alloc_fragment(({block_m}, {block_n}), 'float32')")
    body("T.clear(C_l)")
    if as_gemm or shifted:
        a_row = f"bx * {block_m}"
        a_col = f"k * {block_k}"
        if shifted:  # K step k: tap k // blocks, channels from (k % blocks) * block_k
            blocks = channels // block_k
            a_row += " + " + shifted.tap_offset(f"(k // {blocks})" if blocks > 1 else "k")
            a_col = f"(k % {blocks}) * {block_k}" if blocks > 1 else "0"
        body(f"for k in T.Pipelined({-(-k_total // block_k)}, num_stages={steps.stages}):")
        body(f"    T.copy(X[{a_row}, {a_col}], A_s)")
        body(f"    T.copy(W[by * {block_n}, k * {block_k}], B_s)")
        body("    T.gemm(A_s, B_s, C_l, transpose_B=True)")
    else:  # each tap of the image and the weight gathered through their strides
        xs, ws = x_spec.stride, w_spec.stride
        row, tap = f"bx * {block_m} + i", f"k * {block_k} + kk"
        n, ho, wo = f"(({row}) // {out_h * out_w})", f"((({row}) // {out_w}) % {out_h})", f"(({row}) % {out_w})"
        c, r, s = f"(({tap}) % {channels})", f"((({tap}) // {channels}) // {kw})", \
            f"((({tap}) // {channels}) % {kw})"
        ih, iw = f"({ho} * {sh} - {ph} + {r} * {dh})", f"({wo} * {sw} - {pw} + {s} * {dw})"
        inside = f"({row} < {m_total}) and ({tap} < {k_total}) and ({ih} >= 0) and ({ih} < {height}) and " \
                 f"({iw} >= 0) and ({iw} < {width})"
        x_at = f"T.max(T.min({n} * {xs[0]} + {c} * {xs[1]} + {ih} * {xs[2]} + {iw} * {xs[3]}, " \
               f"{x_spec.span - 1}), 0)"
        column = f"by * {block_n} + j"
        w_at = f"T.min(({column}) * {ws[0]} + {c} * {ws[1]} + {r} * {ws[2]} + {s} * {ws[3]}, {w_spec.span - 1})"
        body(f"for k in T.serial({-(-k_total // block_k)}):")
        body(f"    for i, kk in T.Parallel({block_m}, {block_k}):")
        body(f"        A_s[i, kk] = T.if_then_else({inside}, X[{x_at}], T.cast(0, '{dtype}'))")
        body(f"    for kk, j in T.Parallel({block_k}, {block_n}):")
        body(f"        B_s[kk, j] = T.if_then_else(({tap} < {k_total}) and ({column} < {out_channels}), "
             f"W[{w_at}], T.cast(0, '{dtype}'))")
        body("    T.gemm(A_s, B_s, C_l)")
    if bias is None:
        writer.fragment[anchor] = "C_l"
    # Outputs stored a tile a block read their inputs of the same layout (a residual) so too.
    tiled = (as_gemm or shifted and shifted.cells == (out_h, out_w)) and any(
        channels_last(TensorSpec.of(node.meta["val"])) for node in group.outputs)
    pixel_rows = {}
    if tiled:
        for node in group.inputs:
            spec = writer.specs[node]
            if node not in (image, weight, bias) and tuple(spec.shape) == tuple(group.shape) \
                    and channels_last(spec) and spec.dtype in (torch.float16, torch.bfloat16, torch.float32):
                pixel_rows[node] = writer.pixel_rows_input(node, coords, f"bx * {block_m}, by * {block_n}",
                                                           (block_m, block_n))
    writer.emit_group_values((str(block_m), str(block_n)), coords, coords, out_channels)
    # Stored under a condition on the row alone where the blocks cover the
    # channels: a row's channels are one vector store (fragment_ops.guarded_store).
    in_columns = "" if out_channels % block_n == 0 else f" and by * {block_n} + j < {out_channels}"

    def store_rows(param: str, layout: PhaseImage | Border, value: str, dtype_out: str) -> None:
        """`value` stored into `param`, the rows `layout` passes: pixel (n, h, w)
        at (h + top, w + left) of the padded image, in its phase's plane, where
        that phase has one (every phase of a writable_in_place layout)."""
        top, _, left, _ = layout.pad
        (sh, sw), (planes_h, planes_w) = layout.stride, layout.planes
        cells_h, cells_w = layout_cells(layout, out_h, out_w)
        y, x = f"({coords[2]} + {top})", f"({coords[3]} + {left})"
        plane = f"(({y} % {sh}) * {planes_w} + {x} % {sw}) * {batch} + " if (sh, sw) != (1, 1) else ""
        cell_y, cell_x = (f"{y} // {sh}" if sh > 1 else y), (f"{x} // {sw}" if sw > 1 else x)
        writer.output_params.append(f"{param}: T.Tensor(({planes_h * planes_w * batch * cells_h * cells_w}, "
                                    f"{out_channels}), '{dtype_out}')")
        pixel = f"(({plane}{coords[0]}) * {cells_h} + {cell_y}) * {cells_w} + {cell_x}"
        # Every row of the grid is a pixel where the blocks cover the output's pixels exactly.
        every_row = not shifted and m_total % block_m == 0
        conditions = [] if every_row else [stored]
        conditions += [f"{y} % {sh} < {planes_h}"] if planes_h < sh else []
        conditions += [f"{x} % {sw} < {planes_w}"] if planes_w < sw else []
        condition = " and ".join(conditions) + in_columns if conditions else in_columns.removeprefix(" and ")
        body(f"for i, j in T.Parallel({block_m}, {block_n}):")
        if condition:
            body(f"    if {condition}:")
        body(f"{'    ' if condition else ''}    {param}[{pixel}, by * {block_n} + j] = {value}")
    views = []
    for index, node in enumerate(group.outputs):
        spec = TensorSpec.of(node.meta["val"])
        dtype_out = DTYPES[spec.dtype]
        value = writer.value(node, coords)
        if spec.dtype != torch.float32 and spec.dtype in pointwise.FLOATS:
            value = f"T.cast({value}, '{dtype_out}')"
        if index in padded:  # the rows a convolution or pad reads, alone
            store_rows(f"O{index}", padded[index], value, dtype_out)
            views.append(padded[index])
            continue
        if (as_gemm or shifted and shifted.cells == (out_h, out_w)) and channels_last(spec):
            # Channels-last: the output is its pixels' rows of channels, a tile a block (a
            # shifted convolution's where its planes' rows are the output's pixels: no border).
            writer.output_params.append(f"O{index}: T.Tensor(({m_total}, {out_channels}), '{dtype_out}')")
            body(f"O{index}_l = T.alloc_fragment(({block_m}, {block_n}), '{dtype_out}')")
            body(f"for i, j in T.Parallel({block_m}, {block_n}):")
            body(f"    O{index}_l[i, j] = {value}")
            body(f"T.copy(O{index}_l, O{index}[bx * {block_m}, by * {block_n}])")
            if index in copied:  # and the rows another convolution reads, as well
                store_rows(f"E{index}", copied[index], f"O{index}_l[i, j]", dtype_out)
                views.append(PixelsAnd(copied[index]))
                continue
            views.append("pixels")
            continue
        if shifted and channels_last(spec):
            # Its pixels' rows of channels, each stored where the grid's row is an output pixel's.
            writer.output_params.append(f"O{index}: T.Tensor(({m_total}, {out_channels}), '{dtype_out}')")
            pixel = f"({coords[0]} * {out_h} + {coords[2]}) * {out_w} + {coords[3]}"
            body(f"for i, j in T.Parallel({block_m}, {block_n}):")
            body(f"    if {stored}{in_columns}:")
            body(f"        O{index}[{pixel}, by * {block_n} + j] = {value}")
            views.append("pixels")
            continue
        offset = " + ".join(f"{coord} * {st}" for coord, st, size in zip(coords, spec.stride, spec.shape) if size > 1)
        writer.output_params.append(f"O{index}: T.Tensor(({spec.span},), '{dtype_out}')")
        body(f"for i, j in T.Parallel({block_m}, {block_n}):")
        body(f"    if {stored}{in_columns}:")
        body(f"        O{index}[{offset or '0'}] = {value}")
        views.append("span")
    rows = grid_rows if shifted else m_total
    grid = f"{-(-rows // block_m)}, {-(-out_channels // block_n)}"  # pixels on x: up to 2^31 - 1 blocks
    layouts = ("pixels", "rows") if as_gemm else (shifted.image, Taps(shifted.image)) if shifted else None
    return writer.source(grid, body.lines, threads), [pixel_rows.get(node, node) for node in writer.param_of], \
        layouts, views
