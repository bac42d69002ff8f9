"""tile-compile --plot-layout FILE.png: where a compiled kernel's data lives,
drawn from its decisions (`tilemlir.backends.decisions`).

* a fragment's lane layout: every element coloured by the thread that holds
  it (the lowest, where threads hold replicas); fragments larger than 16x16
  get a second panel, their top-left 16x16 corner, each element labelled
  with its thread (t) and register (r);
* a shared buffer's bank map: one stage as stored (transposed buffers as
  stored, padding columns hatched, swizzled positions), every slot coloured
  by its bank; the slots one wave reads in one access of its gemm operand
  read are marked, in red where their bank serves more than one dword in
  that clock (a conflict), with the number of ways.

`--plot-buffer NAME` (repeatable) draws only the named fragments and
buffers (the names of the report's decisions: the SSA names of the source,
`%` optional). matplotlib is an optional dependency (`pip install
tilemlir[plot]`); the figure is drawn with the non-interactive Agg canvas,
without pyplot's global state.
"""

from __future__ import annotations

import io

import numpy as np

from tilemlir.backends.decisions import FragmentDecision, KernelDecisions, SharedBufferDecision
from tilemlir.diagnostics import UserError

MISSING = "--plot-layout needs matplotlib: pip install tilemlir[plot]"
DETAIL = 16  # the labelled corner of a large fragment, in elements per side


def require_matplotlib() -> None:
    """A UserError naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError(MISSING) from None


def selected(decisions: list[KernelDecisions], names: list[str] | None
             ) -> list[tuple[KernelDecisions, FragmentDecision | SharedBufferDecision]]:
    """The fragments and shared buffers to draw: all of them, or those named
    (an unknown name is an error listing the known ones)."""
    items = [(kernel, item) for kernel in decisions for item in kernel.named().values()]
    if not names:
        return items
    wanted = {name.lstrip("%") for name in names}
    known = {item.name.lstrip("%"): item.name for _, item in items}
    unknown = sorted(name for name in wanted if name not in known)
    if unknown:
        raise UserError(f"--plot-buffer: no fragment or shared buffer named {', '.join(unknown)} "
                        f"(this kernel has {', '.join(sorted(known.values())) or 'none'})")
    return [(kernel, item) for kernel, item in items if item.name.lstrip("%") in wanted]


def drawable(item: FragmentDecision | SharedBufferDecision) -> bool:
    if isinstance(item, FragmentDecision):
        return item.owners() is not None
    return item.model is not None


def render_png(decisions: list[KernelDecisions], names: list[str] | None = None) -> bytes:
    """The figure as PNG bytes (UserError when there is nothing to draw)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    chosen = [(kernel, item) for kernel, item in selected(decisions, names) if drawable(item)]
    panels = []
    for kernel, item in chosen:
        if isinstance(item, FragmentDecision):
            panels.append((kernel, item, False))
            if max(item.shape[-2:] or [1]) > DETAIL or np.prod(item.shape) > DETAIL * DETAIL:
                panels.append((kernel, item, True))
        else:
            panels.append((kernel, item, False))
    if not panels:
        raise UserError("--plot-layout: nothing to draw (no fragment with a known lane layout and no "
                        "shared buffer with a bank model in this kernel)")
    columns = 2 if len(panels) > 1 else 1
    rows = -(-len(panels) // columns)
    figure = Figure(figsize=(7.5 * columns, 6.5 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    for index, (kernel, item, detail) in enumerate(panels):
        axes = figure.add_subplot(rows, columns, index + 1)
        if isinstance(item, FragmentDecision):
            _draw_fragment(axes, kernel, item, detail)
        else:
            _draw_bank_map(axes, kernel, item)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()


def _as_2d(array: np.ndarray) -> np.ndarray:
    return array.reshape(1, -1) if array.ndim == 1 else array


def _draw_fragment(axes, kernel: KernelDecisions, item: FragmentDecision, detail: bool) -> None:
    owner, register, holders = (_as_2d(a) for a in item.owners())
    if detail:
        owner, register = owner[:DETAIL, :DETAIL], register[:DETAIL, :DETAIL]
    image = axes.imshow(np.ma.masked_less(owner, 0), cmap="turbo", vmin=0, vmax=max(item.threads - 1, 1),
                        interpolation="nearest", aspect="auto")
    axes.figure.colorbar(image, ax=axes, label="thread")
    shape = "x".join(map(str, item.shape))
    replicas = int(holders.max()) if holders.size else 1
    held = f", each element held by {replicas} threads" if replicas > 1 else ""
    what = f"top-left {owner.shape[0]}x{owner.shape[1]} (t: thread, r: register)" if detail else \
        f"{item.threads} threads, {item.registers_per_thread} registers each{held}"
    axes.set_title(f"{kernel.kernel or kernel.at}: fragment {item.name} {shape}x{item.dtype}\n"
                   f"{item.layout} layout: {what}", fontsize=9)
    if detail or owner.size <= DETAIL * DETAIL:
        for (row, col), thread in np.ndenumerate(owner):
            if thread >= 0:
                axes.text(col, row, f"t{thread}\nr{register[row, col]}", ha="center", va="center",
                          fontsize=5, color="white")
    axes.set_xlabel("column")
    axes.set_ylabel("row")


def _draw_bank_map(axes, kernel: KernelDecisions, item: SharedBufferDecision) -> None:
    model = item.model
    banks = model.bank_map()
    ways = model.read_ways()
    image = axes.imshow(banks, cmap="tab20" if model.banks <= 20 else "viridis", vmin=0, vmax=model.banks - 1,
                        interpolation="nearest", aspect="auto")
    axes.figure.colorbar(image, ax=axes, label=f"bank (of {model.banks} x {model.bank_bytes} bytes)")
    if model.pad:
        first = model.row_elements - model.pad
        axes.axvspan(first - 0.5, model.row_elements - 0.5, facecolor="none", edgecolor="black",
                     hatch="//", linewidth=0)
    clear = np.argwhere(ways == 1)
    conflicting = np.argwhere(ways > 1)
    if len(clear):
        axes.scatter(clear[:, 1], clear[:, 0], s=4, c="black", marker="o", label="read, conflict-free")
    if len(conflicting):
        axes.scatter(conflicting[:, 1], conflicting[:, 0], s=10, c="red", marker="x",
                     label="read, bank conflict")
        if len(conflicting) <= 256:
            for row, col in conflicting:
                axes.text(col, row, str(ways[row, col]), color="red", fontsize=5, ha="left", va="bottom")
    if len(clear) or len(conflicting):
        axes.legend(loc="upper right", fontsize=7)
    shape = "x".join(map(str, item.shape))
    stored = f"stored {model.rows}x{model.row_elements}" + (" transposed" if item.transposed else "") + \
        (f", rows padded by {model.pad}" if model.pad else "") + \
        (f", swizzle {model.swizzle}" if model.swizzle else "") + \
        (f", padding of {item.padding_dropped} dropped" if item.padding_dropped else "")
    read = (f"one access of one wave's operand read: {model.conflicts()} conflict clocks; "
            f"{item.bank_conflicts_per_iteration} per iteration" if model.read is not None else "not read by a gemm")
    axes.set_title(f"{kernel.kernel or kernel.at}: shared {item.name} {shape}x{item.dtype} ({stored})\n{read}",
                   fontsize=9)
    axes.set_xlabel("element in the stored row")
    axes.set_ylabel("stored row")
