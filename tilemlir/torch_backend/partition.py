"""Fusion groups of an ATen FX graph, as Inductor forms them.

Nodes are visited in order. A matrix product (`mm`, `bmm`, `addmm`) anchors a
GEMM group; an element-wise op or a reduction over the trailing dims joins the
group of one of its operands when the group's domain takes it and the join
makes no cycle (an operand from outside the group that depends on the group),
else it starts a group of its own. A value some node outside its group uses is
an output of the group. Every other node runs in torch: views and metadata
(`pointwise.VIEWS`) cost nothing; the rest are fallbacks, listed by the backend.

A group's domain is the shape of its widest values, split into leading dims
(rows) and the trailing dims a reduction folds (columns). Every value in a
group has the domain's shape ("full") or the domain's shape with every column
dim 1 ("row"); a reduction that drops its dims may only be an output.

A group whose reductions fold more than MAX_COLUMNS values per row is
computed in two stages (`split`): partial results per chunk of each row,
then their reduction. Its full values are the first stage's, so none of them
may be computed from a reduction of the group (a softmax over such rows is
three groups: the max, the sum of exponentials, the division); the group of
such a value computes the element-wise values of the split group it reads
again (`recomputed`) rather than reading them from memory.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import torch
from torch import fx

from tilemlir.torch_backend import ops, pointwise

aten = torch.ops.aten
GEMMS = {aten.mm.default, aten.bmm.default, aten.addmm.default}
CONVOLUTIONS = {aten.convolution.default}
ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention.default,
    aten._scaled_dot_product_efficient_attention.default,
    aten._scaled_dot_product_cudnn_attention.default,
    aten.scaled_dot_product_attention.default,
    ops.attention_op(),  # what the backend makes of dynamo's scaled_dot_product_attention
}
# Values a reducing kernel's block folds per row; a group that reduces more is split (Group.split).
MAX_COLUMNS = 16384

# Ops that only take or make views and metadata; operator.getitem of a node
# outside any group too.
METADATA = pointwise.VIEWS | {operator.getitem}


def shape_of(node) -> tuple[int, ...] | None:
    """A node's static shape; None for a non-tensor or a symbolic shape (no kernel takes it)."""
    value = node.meta.get("val") if isinstance(node, fx.Node) else None
    if isinstance(value, torch.Tensor) and all(type(d) is int for d in value.shape) and \
            all(type(s) is int for s in value.stride()):
        return tuple(value.shape)
    return None


def dtype_of(node) -> torch.dtype | None:
    value = node.meta.get("val") if isinstance(node, fx.Node) else None
    return value.dtype if isinstance(value, torch.Tensor) else None


def tensor_inputs(node: fx.Node) -> list[fx.Node]:
    return [a for a in node.all_input_nodes if shape_of(a) is not None]


def trailing_dims(dims, rank: int) -> int | None:
    """How many trailing dims `dims` names (all of them for None or []), or
    None when they are not the trailing ones."""
    if dims is None or len(dims) == 0:
        return rank
    normal = sorted(d % rank for d in dims) if rank else []
    return len(normal) if normal == list(range(rank - len(normal), rank)) else None


def reducible(node: fx.Node) -> bool:
    """A reduction whose kernel is written: of floats; sum, amax and amin of
    signed integers, and sums of booleans and uint8 (summed in 64 bits, as
    torch does; the extremes of those the kernel language does not compare:
    they would compare as signed)."""
    source = dtype_of(node.args[0])
    if source in pointwise.FLOATS:
        return True
    if node.target not in pointwise.REDUCTIONS or pointwise.REDUCTIONS[node.target][1]:  # no means
        return False
    if source in (torch.bool, torch.uint8):
        return pointwise.REDUCTIONS[node.target][0] == "sum"  # a count, a sum
    return source in (torch.int8, torch.int32, torch.int64)


def is_reduction(node: fx.Node) -> bool:
    return node.target in pointwise.REDUCTIONS or node.target in pointwise.VARIANCES


def after_reductions(nodes: list[fx.Node]) -> set[fx.Node]:
    """Of a group's nodes (in order), the reductions, a variance's items
    and the values computed from them."""
    after: set[fx.Node] = set()
    for node in nodes:
        if is_reduction(node) or node.target == operator.getitem or any(a in after for a in node.all_input_nodes):
            after.add(node)
    return after


def reduction_dims(node: fx.Node):
    if node.target in pointwise.VARIANCES:
        return node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")


def keeps_dims(node: fx.Node) -> bool:
    if node.target in pointwise.VARIANCES:
        return bool(node.kwargs.get("keepdim", False))
    return bool(node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False))


# Ops that read their first operand (cat: each of its operands) at coordinates other than their own.
INDEXED = (aten.embedding.default, aten.gather.default, aten.constant_pad_nd.default, aten.cat.default,
           aten.index.Tensor)


def indexed_sources(node: fx.Node) -> list:
    """The operands an INDEXED node reads at other coordinates (cat: each of them)."""
    return list(node.args[0]) if node.target is aten.cat.default else [node.args[0]]


def is_pointwise(node: fx.Node) -> bool:
    """An op whose every output element is computed from the inputs at its
    coordinates (embedding, gather: from the element an index names)."""
    if node.target in pointwise.POINTWISE or node.target in pointwise.CONVERSIONS or \
            node.target in pointwise.CREATION or node.target in INDEXED:
        return shape_of(node) is not None
    return False


@dataclass
class Group:
    """Nodes computed by one kernel."""

    kind: str  # "pointwise", "gemm", "conv" or "attention"
    shape: tuple[int, ...]  # the domain
    columns: int  # how many trailing dims of the domain are columns
    nodes: list[fx.Node] = field(default_factory=list)
    anchor: fx.Node | None = None  # the GEMM of a GEMM group, the attention op of an attention group
    reduces: bool = False
    outputs: list[fx.Node] = field(default_factory=list)  # set by `partition`
    inputs: list[fx.Node] = field(default_factory=list)

    @property
    def reduced_extent(self) -> int:
        """How many values each of the group's reductions folds per row."""
        return math.prod(self.shape[len(self.shape) - self.columns:]) if self.reduces else 1

    @property
    def split(self) -> bool:
        """Whether its reductions are computed in two stages (more than MAX_COLUMNS values a row)."""
        return self.reduces and self.reduced_extent > MAX_COLUMNS

    @property
    def row_shape(self) -> tuple[int, ...]:
        return self.shape[:len(self.shape) - self.columns] + (1,) * self.columns

    def level(self, node: fx.Node) -> str:
        """'row' for a value constant along the columns (a reduction's, or one
        of the row shape), else 'full'."""
        if is_reduction(node) or node.target == operator.getitem:
            return "row"
        shape = shape_of(node)
        columns = shape[len(shape) - self.columns:] if self.columns else ()
        return "row" if self.reduces and shape != self.shape and all(d == 1 for d in columns) else "full"

    def broadcasts(self, shape) -> bool:
        """Whether a value of `shape` reads at the domain's coordinates (its rank, each dim equal or 1)."""
        return shape is not None and len(shape) == len(self.shape) and \
            all(d in (1, e) for d, e in zip(shape, self.shape))

    def takes(self, node: fx.Node) -> bool:
        """Whether `node` may join: its operands in the group are values it
        can read at the domain's coordinates, and its shape fits the domain."""
        if node.target == operator.getitem:
            if self.kind == "attention":
                return node.args[0] is self.anchor and node.args[1] == 0
            return node.args[0] in self.nodes and node.args[0].target in pointwise.VARIANCES
        if self.kind == "attention":
            return False
        if node.target in INDEXED and any(source in self.nodes for source in indexed_sources(node)):
            return False  # it reads its source at other coordinates: from memory, in a group of its own
        inside = [a for a in tensor_inputs(node) if a in self.nodes]
        if not all(self.broadcasts(shape_of(a)) for a in inside):
            return False  # a dropped-dims reduction is an output only
        if is_reduction(node):
            if self.kind != "pointwise" or not reducible(node):
                return False
            source = shape_of(node.args[0])
            count = trailing_dims(reduction_dims(node), len(source))
            if source != self.shape or count is None or count == 0 or node.args[0] not in self.nodes:
                return False
            if self.reduces:
                return count == self.columns
            return True
        shape = shape_of(node)
        if self.split and shape == self.shape and set(inside) & after_reductions(self.nodes):
            return False  # a split group's full values are computed before its reductions
        return shape == self.shape or (self.reduces and shape == self.row_shape)

    def detached(self) -> Group:
        """The group over copies of its nodes in a graph of its own (inputs as
        placeholders, outputs returned), so that its kernel can be written again
        for other strides after the model's graph replaced these nodes."""
        graph = fx.Graph()
        copies: dict[fx.Node, fx.Node] = {}
        for node in self.inputs:
            copies[node] = graph.placeholder(node.name)
            copies[node].meta = dict(node.meta)
        for node in self.nodes:
            copies[node] = graph.node_copy(node, lambda n: copies[n])
        graph.output(tuple(copies[n] for n in self.outputs))
        return Group(self.kind, self.shape, self.columns, [copies[n] for n in self.nodes],
                     copies.get(self.anchor), self.reduces, [copies[n] for n in self.outputs],
                     [copies[n] for n in self.inputs])

    def add(self, node: fx.Node) -> None:
        if is_reduction(node) and not self.reduces:
            self.columns = trailing_dims(reduction_dims(node), len(self.shape))
            self.reduces = True
        self.nodes.append(node)


def absorb(group: Group, node: fx.Node, group_of: dict, groups: list, position: dict) -> None:
    """Merges into `group` the element-wise groups of `node`'s other operands
    that only `node` and `group` use and whose values broadcast to its domain
    (a batch norm's rsqrt(var + eps) of shape [1, C, 1, 1], recomputed per
    element rather than stored by a kernel of its own)."""
    # An operand an INDEXED member reads at other coordinates stays in memory.
    read_from_memory = {s for n in group.nodes if n.target in INDEXED for s in indexed_sources(n)}
    for source in tensor_inputs(node):
        other = group_of.get(source)
        if other is None or other is group or other.kind != "pointwise" or other.reduces or \
                any(n in read_from_memory for n in other.nodes):
            continue
        members = set(group.nodes) | set(other.nodes)
        if not all(group.broadcasts(shape_of(n)) for n in other.nodes) or \
                any(u not in members for n in other.nodes for u in n.users):
            continue
        group.nodes = sorted(group.nodes + other.nodes, key=position.__getitem__)
        for n in other.nodes:
            group_of[n] = group
        groups.remove(other)


def depends_on(node: fx.Node, group: Group, group_of: dict) -> bool:
    """Whether `node` (outside `group`) is computed from a value of `group`,
    each group taken as one kernel: a node depends on everything its group's
    nodes read (two groups that each read the other's value would be a cycle)."""
    members = set(group.nodes)
    stack, seen, expanded = [node], set(), set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in members:
            return True
        stack.extend(current.all_input_nodes)
        other = group_of.get(current)
        if other is not None and other is not group and id(other) not in expanded:
            expanded.add(id(other))
            stack.extend(other.nodes)
    return False


def reductions_to_trailing_dims(graph: fx.Graph) -> None:
    """A reduction over dims that are not the trailing ones (`x.mean(1)` of a
    [B, S, D] tensor) becomes the same reduction of a permuted view that puts
    them last, and a permute of its result back where it keeps its dims:
    views cost nothing, and a group reduces trailing dims only."""
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in pointwise.REDUCTIONS and \
                node.target is not aten.var.correction:
            continue
        source = shape_of(node.args[0])
        if source is None or shape_of(node) is None or not source:
            continue
        rank = len(source)
        dims = reduction_dims(node)
        if trailing_dims(dims, rank) is not None:
            continue
        reduced = sorted({d % rank for d in dims})
        kept = [d for d in range(rank) if d not in reduced]
        order = kept + reduced
        value = node.args[0].meta["val"]
        with graph.inserting_before(node):
            permuted = graph.call_function(aten.permute.default, (node.args[0], order))
        with value.fake_mode:
            permuted.meta["val"] = value.permute(order)
        trailing = list(range(len(kept), rank))
        if node.target is aten.var.correction:
            node.kwargs = {**node.kwargs, "dim": trailing}
            node.args = (permuted, *node.args[1:])
        else:
            node.args = (permuted, trailing, *node.args[2:])
        if keeps_dims(node):  # its result is [kept..., 1...]: back to the source's order
            back = [0] * rank
            for position, d in enumerate(order):
                back[d] = position
            result = node.meta["val"]
            with result.fake_mode:
                node.meta["val"] = value.permute(order).sum(trailing, keepdim=True).to(result.dtype)
            with graph.inserting_after(node):
                restored = graph.call_function(aten.permute.default, (node, back))
            restored.meta["val"] = result
            node.replace_all_uses_with(restored, delete_user_cb=lambda user, r=restored: user is not r)


RECOMPUTED = 16  # at most this many element-wise values of a split group are computed again


def recomputed(graph: fx.Graph, node: fx.Node, group_of: dict, position: dict) -> list[fx.Node]:
    """Copies, inserted before `node`, of the element-wise values of a split
    group that `node` reads (its full values, with the group's values they
    are computed from), where `node` is of the group's shape and computed
    from the group's reductions (so that the group refused it): `node`'s
    own group computes them again from the group's inputs, as Inductor does,
    rather than the group writing them (a softmax's or a layer norm's input
    in f32) for it to read. [] where a value to copy is no element-wise op,
    or there would be more than RECOMPUTED."""
    copies: list[fx.Node] = []
    limit = RECOMPUTED * len(node.all_input_nodes)  # copies at most
    for group in {id(g): g for a in node.all_input_nodes if (g := group_of.get(a)) is not None}.values():
        if not group.split or shape_of(node) != group.shape:
            continue
        after = after_reductions(group.nodes)
        if not any(a in after for a in node.all_input_nodes):
            continue
        members = set(group.nodes)
        stack, values = [a for a in node.all_input_nodes if a in members and a not in after], set()
        while stack:
            current = stack.pop()
            if current in values:
                continue
            if current.target not in pointwise.POINTWISE and current.target not in pointwise.CONVERSIONS or \
                    len(values) == RECOMPUTED:
                values = set()
                break
            values.add(current)
            stack.extend(a for a in current.all_input_nodes if a in members)
        made: dict[fx.Node, fx.Node] = {}
        for k, original in enumerate(sorted(values, key=position.__getitem__)):
            with graph.inserting_before(node):
                made[original] = graph.node_copy(original, lambda a, made=made: made.get(a, a))
            # between `node` and the node before it
            position[made[original]] = position[node] - 1 + (len(copies) + k + 1) / (limit + 1)
        for original, copy in made.items():
            node.replace_input_with(original, copy)
        copies += sorted(made.values(), key=position.__getitem__)
    return copies


def partition(graph: fx.Graph) -> tuple[list[Group], list[fx.Node]]:
    """(groups in graph order, nodes that fall back to torch)."""
    groups: list[Group] = []
    group_of: dict[fx.Node, Group] = {}
    fallbacks: list[fx.Node] = []
    position = {node: index for index, node in enumerate(graph.nodes)}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if node.target in GEMMS and shape_of(node) is not None:
            shape = shape_of(node)
            group = Group("gemm", shape, 1, [node], anchor=node)
        elif node.target in CONVOLUTIONS and shape_of(node) is not None and len(shape_of(node)) == 4:
            group = Group("conv", shape_of(node), 1, [node], anchor=node)
        elif node.target in ATTENTION:
            query = shape_of(node.args[0])
            if query is None or len(query) != 4:
                node.meta["tilemlir_refused"] = (
                    "the attention kernel takes query, key and value of 4 dims [B, H, S, D]; this query "
                    + ("has a symbolic shape" if query is None else f"has {len(query)}: {list(query)}"))
                fallbacks.append(node)
                continue
            group = Group("attention", query, 1, [node], anchor=node)
        elif is_pointwise(node) or is_reduction(node) or node.target == operator.getitem:
            group = None
            for source in tensor_inputs(node) if node.target != operator.getitem else [node.args[0]]:
                candidate = group_of.get(source)
                if candidate is None or candidate is group or not candidate.takes(node):
                    continue
                outside = [a for a in node.all_input_nodes if a not in candidate.nodes]
                if any(depends_on(a, candidate, group_of) for a in outside):
                    continue
                candidate.add(node)
                group = candidate
                absorb(group, node, group_of, groups, position)
                break
            if group is not None:
                group_of[node] = group
                continue
            if node.target == operator.getitem:
                continue  # of a node torch runs
            shape = shape_of(node) if not is_reduction(node) else shape_of(node.args[0])
            if shape is None or any(d == 0 for d in shape):
                fallbacks.append(node)
                continue
            group = Group("pointwise", shape, 1 if shape else 0)
            if is_reduction(node):
                count = trailing_dims(reduction_dims(node), len(shape))
                if count is None or not reducible(node):
                    fallbacks.append(node)
                    continue
                group.columns, group.reduces = count, True
            else:
                for copy in recomputed(graph, node, group_of, position):
                    group.nodes.append(copy)
                    group_of[copy] = group
            group.nodes.append(node)
        else:
            if node.target not in METADATA:
                fallbacks.append(node)
            continue
        groups.append(group)
        group_of[node] = group
    for group in groups:
        members = set(group.nodes)
        group.outputs = [n for n in group.nodes  # var_mean's pair leaves through its items
                         if n.target is not aten.var_mean.correction and any(u not in members for u in n.users)
                         and shape_of(n) is not None]
        seen = []
        for n in group.nodes:
            for a in tensor_inputs(n):
                if a not in members and a not in seen:
                    seen.append(a)
        group.inputs = seen
    return groups, fallbacks
