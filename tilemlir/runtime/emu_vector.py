"""vector ops that do not touch memory, for the SIMT emulator. A vector value
is an array (L, *shape); elementwise arith on vectors is handled by
emu_arith through broadcasting."""

from __future__ import annotations

import numpy as np
from mlir import ir

from tilemlir.runtime.dtypes import convert
from tilemlir.runtime.emu_core import (
    DYNAMIC,
    INDEX,
    Compiler,
    UnsupportedOp,
    attr_ints,
    handles,
    is_float,
    is_narrow_float,
    value_type,
)


def _out_shape(op) -> tuple[int, ...]:
    return value_type(op.results[0].type, op)[1]


@handles("vector.broadcast", "vector.splat")
def _broadcast(compiler, op):
    source = compiler.slot(op.operands[0])
    shape = _out_shape(op)
    out = compiler.slot(op.results[0])

    def step(frame):
        value = frame.vals[source]
        lead = value.shape[0]
        padded = value.reshape((lead,) + (1,) * (len(shape) + 1 - value.ndim) + value.shape[1:])
        frame.vals[out] = np.broadcast_to(padded, (lead,) + shape)
    return step


@handles("vector.from_elements")
def _from_elements(compiler, op):
    elements = compiler.slots_of(op.operands)
    shape = _out_shape(op)
    out = compiler.slot(op.results[0])

    def step(frame):
        parts = np.broadcast_arrays(*[frame.vals[e] for e in elements])
        frame.vals[out] = np.stack(parts, axis=1).reshape((parts[0].shape[0],) + shape)
    return step


def _positions(compiler: Compiler, op) -> list:
    """Static positions, with ('slot', n) where the position is dynamic."""
    dynamic = iter(compiler.slots_of(list(op.operands)[2 if op.name == "vector.insert" else 1:]))
    return [("slot", next(dynamic)) if p == DYNAMIC else p for p in attr_ints(op, "static_position")]


def _index_tuple(frame, positions, lanes: int):
    """A NumPy index for positions (lane axis first): ints, or per-lane arrays."""
    index: list = [slice(None)]
    per_lane = False
    for p in positions:
        if isinstance(p, tuple):
            value = np.asarray(frame.vals[p[1]]).reshape(-1)
            if value.size == 1 or (value == value[0]).all():
                index.append(int(value[0]))
            else:
                per_lane = True
                index.append(value)
        else:
            index.append(p)
    if per_lane:  # advanced indexing: lane axis paired with the per-lane positions
        index[0] = np.arange(lanes)
    return tuple(index), per_lane


@handles("vector.extract")
def _extract(compiler, op):
    source = compiler.slot(op.operands[0])
    positions = _positions(compiler, op)
    shape = value_type(op.operands[0].type, op)[1]
    out = compiler.slot(op.results[0])

    def step(frame):
        value = frame.vals[source]
        index, per_lane = _index_tuple(frame, positions, frame.wg.threads)
        if per_lane and value.shape[0] == 1:
            value = np.broadcast_to(value, (frame.wg.threads,) + shape)
        frame.vals[out] = value[index]
    return step


def _written(target: np.ndarray, lanes: int, shape, index, value) -> np.ndarray:
    """A copy of `target` over `lanes` lanes with `value` stored at `index`."""
    result = np.array(np.broadcast_to(target, (lanes,) + shape))
    result[index] = value
    return result


@handles("vector.insert")
def _insert(compiler, op):
    source, dest = compiler.slots_of(list(op.operands)[:2])
    positions = _positions(compiler, op)
    shape = _out_shape(op)
    out = compiler.slot(op.results[0])

    def step(frame):
        value, target = frame.vals[source], frame.vals[dest]
        index, per_lane = _index_tuple(frame, positions, frame.wg.threads)
        lanes = frame.wg.threads if per_lane else max(value.shape[0], target.shape[0])
        frame.vals[out] = _written(target, lanes, shape, index, value)
    return step


@handles("vector.shuffle")
def _shuffle(compiler, op):
    first, second = compiler.slots_of(list(op.operands))
    mask = np.asarray(attr_ints(op, "mask"), dtype=np.int64)
    shape = _out_shape(op)
    if (mask < 0).any():  # poison positions: nothing here produces them
        raise UnsupportedOp("vector.shuffle with poison positions", op)
    out = compiler.slot(op.results[0])

    def step(frame):
        a, b = frame.vals[first], frame.vals[second]
        lanes = max(a.shape[0], b.shape[0])
        both = np.concatenate([np.broadcast_to(a, (lanes,) + a.shape[1:]),
                               np.broadcast_to(b, (lanes,) + b.shape[1:])], axis=1)
        frame.vals[out] = both[:, mask].reshape((both.shape[0],) + shape)
    return step


@handles("vector.interleave")
def _interleave(compiler, op):
    first, second = compiler.slots_of(list(op.operands))
    shape = _out_shape(op)
    out = compiler.slot(op.results[0])

    def step(frame):
        a, b = np.broadcast_arrays(frame.vals[first], frame.vals[second])
        frame.vals[out] = np.stack([a, b], axis=-1).reshape((a.shape[0],) + shape)
    return step


@handles("vector.deinterleave")
def _deinterleave(compiler, op):
    source = compiler.slot(op.operands[0])
    even, odd = (compiler.slot(result) for result in op.results)

    def step(frame):
        value = frame.vals[source]
        frame.vals[even], frame.vals[odd] = value[..., 0::2], value[..., 1::2]
    return step


@handles("vector.extract_strided_slice")
def _extract_strided_slice(compiler, op):
    source = compiler.slot(op.operands[0])
    offsets, sizes, strides = (attr_ints(op, n) for n in ("offsets", "sizes", "strides"))
    index = (slice(None),) + tuple(slice(o, o + s * st, st) for o, s, st in
                                   zip(offsets, sizes, strides))
    out = compiler.slot(op.results[0])

    def step(frame):
        frame.vals[out] = frame.vals[source][index]
    return step


@handles("vector.insert_strided_slice")
def _insert_strided_slice(compiler, op):
    source, dest = compiler.slots_of(op.operands)
    offsets, strides = attr_ints(op, "offsets"), attr_ints(op, "strides")
    source_shape = value_type(op.operands[0].type, op)[1]
    shape = _out_shape(op)
    lead = len(offsets) - len(source_shape)  # leading dims indexed by a single offset
    index = (slice(None),) + tuple(offsets[:lead]) + tuple(
        slice(o, o + s * st, st) for o, s, st in zip(offsets[lead:], source_shape, strides))
    out = compiler.slot(op.results[0])

    def step(frame):
        value, target = frame.vals[source], frame.vals[dest]
        lanes = max(value.shape[0], target.shape[0])
        frame.vals[out] = _written(target, lanes, shape, index, value)
    return step


@handles("vector.shape_cast")
def _shape_cast(compiler, op):
    source = compiler.slot(op.operands[0])
    shape = _out_shape(op)
    out = compiler.slot(op.results[0])

    def step(frame):
        value = frame.vals[source]
        frame.vals[out] = value.reshape((value.shape[0],) + shape)
    return step


@handles("vector.bitcast")
def _vector_bitcast(compiler, op):
    source = compiler.slot(op.operands[0])
    dtype, shape = value_type(op.results[0].type, op)
    if dtype == np.bool_ or value_type(op.operands[0].type, op)[0] == np.bool_:
        raise UnsupportedOp("vector.bitcast of i1 vectors", op)
    out = compiler.slot(op.results[0])

    def step(frame):
        value = np.ascontiguousarray(frame.vals[source])
        frame.vals[out] = value.view(dtype).reshape((value.shape[0],) + shape)
    return step


@handles("vector.transpose")
def _transpose(compiler, op):
    source = compiler.slot(op.operands[0])
    permutation = [0] + [1 + p for p in attr_ints(op, "permutation")]
    out = compiler.slot(op.results[0])

    def step(frame):
        frame.vals[out] = np.transpose(frame.vals[source], permutation)
    return step


@handles("vector.step")
def _step(compiler, op):
    value = np.arange(_out_shape(op)[0], dtype=INDEX)[None]
    out = compiler.slot(op.results[0])

    def step(frame):
        frame.vals[out] = value
    return step


@handles("vector.constant_mask", "vector.create_mask")
def _mask(compiler, op):
    shape = _out_shape(op)
    bounds = compiler.slots_of(op.operands)
    static = attr_ints(op, "mask_dim_sizes") if op.name == "vector.constant_mask" else None
    out = compiler.slot(op.results[0])

    def step(frame):
        limits = static if static is not None else [frame.vals[b] for b in bounds]
        mask = np.ones((1,) + shape, dtype=bool)
        for d, limit in enumerate(limits):
            limit = np.asarray(limit).reshape((-1,) + (1,) * len(shape))
            position = np.arange(shape[d]).reshape((1,) + tuple(
                shape[d] if a == d else 1 for a in range(len(shape))))
            mask = mask & (position < limit)
        frame.vals[out] = mask
    return step


_REDUCE = {
    "add": np.sum, "mul": np.prod, "minnumf": np.nanmin, "maxnumf": np.nanmax,
    "minimumf": np.min, "maximumf": np.max, "minsi": np.min, "maxsi": np.max,
    "minui": np.min, "maxui": np.max, "and": np.bitwise_and.reduce,
    "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce,
}
_COMBINE = {
    "add": np.add, "mul": np.multiply, "minnumf": np.fmin, "maxnumf": np.fmax,
    "minimumf": np.minimum, "maximumf": np.maximum, "minsi": np.minimum, "maxsi": np.maximum,
    "minui": np.minimum, "maxui": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def _kind(op) -> str:
    text = str(op.attributes["kind"])  # #vector.kind<add>
    return text[text.index("<") + 1:text.index(">")]


def _compute(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32) if is_narrow_float(values.dtype) else values


@handles("vector.reduction")
def _reduction(compiler, op):
    kind = _kind(op)
    if kind in ("minui", "maxui"):
        raise UnsupportedOp(f"vector.reduction <{kind}>", op)
    source, *acc = compiler.slots_of(op.operands)
    dtype = value_type(op.results[0].type, op)[0]
    reduce, combine = _REDUCE[kind], _COMBINE[kind]
    out = compiler.slot(op.results[0])

    def step(frame):
        values = _compute(frame.vals[source])
        with np.errstate(all="ignore"):
            result = reduce(values, axis=tuple(range(1, values.ndim)))
            if acc:
                result = combine(result, _compute(frame.vals[acc[0]]))
        frame.vals[out] = convert(result, dtype) if is_float(dtype) else result.astype(dtype)
    return step


@handles("vector.contract")
def _contract(compiler, op):
    if _kind(op) != "add" or len(op.operands) != 3:
        raise UnsupportedOp("vector.contract other than <add> without masks", op)
    letters = "abcdefghijklmnopqrstuvw"
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    subscripts = []
    for amap in maps:
        dims = []
        for expr in amap.results:
            if not isinstance(expr, ir.AffineDimExpr):
                raise UnsupportedOp("vector.contract with non-permutation indexing maps", op)
            dims.append(letters[expr.position])
        subscripts.append("z" + "".join(dims))
    equation = f"{subscripts[0]},{subscripts[1]}->{subscripts[2]}"
    lhs, rhs, acc = compiler.slots_of(op.operands)
    dtype = value_type(op.results[0].type, op)[0]
    out = compiler.slot(op.results[0])

    def step(frame):
        a, b, c = (frame.vals[s] for s in (lhs, rhs, acc))
        lanes = max(a.shape[0], b.shape[0])
        a = np.broadcast_to(a, (lanes,) + a.shape[1:]).astype(np.float64 if is_float(dtype)
                                                              else np.int64)
        b = np.broadcast_to(b, (lanes,) + b.shape[1:]).astype(a.dtype)
        total = c.astype(a.dtype) + np.einsum(equation, a, b)
        frame.vals[out] = convert(total, dtype) if is_float(dtype) else total.astype(dtype)
    return step
