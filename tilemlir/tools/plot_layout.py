"""tile-compile --plot-layout FILE.png: where a compiled kernel's data lives,
drawn from its decisions (`tilemlir.backends.decisions`).

* a fragment's lane layout: every element coloured by the thread that holds
  it (the lowest, where threads hold replicas), from a discrete palette of 20
  colours that neighbouring threads never share (thread t takes colour
  t mod 20); a fragment larger than one matrix-instruction tile (32x32 for
  gfx942's v_mfma_f32_32x32x*, 16x16 for a 16x16 one, 16x16 where no
  instruction lays it out) gets a second panel, its top-left tile, outlined
  on the first, each element labelled with its thread (t) and register (r)
  in a font sized from the cell (labels at least LABEL_PIXELS high);
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
import math

import numpy as np

from tilemlir.backends.decisions import FragmentDecision, KernelDecisions, SharedBufferDecision
from tilemlir.diagnostics import UserError

MISSING = "--plot-layout needs matplotlib: pip install tilemlir[plot]"
DEFAULT_DETAIL = 16  # the labelled corner of a fragment no matrix instruction lays out, per side
MAX_DETAIL = 32  # cells a side of the labelled corner at most (NVIDIA's wgmma tiles are 64xN)
DPI = 80
PANEL_INCHES = (7.5, 6.5)  # a panel without labels
CELL_PIXELS = 32  # a labelled cell: two lines of LABEL_PIXELS with their spacing, "t255" across
LABEL_PIXELS = 11  # the height of a label's characters (font size in pixels); never below 9
MARGIN_INCHES = 1.6  # a panel's title, axis labels and ticks around the cells


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


def palette() -> list[tuple[float, float, float]]:
    """Matplotlib's tab20, its ten strong colours first and then their ten pale
    ones: any two consecutive entries (and the last and the first) differ in hue."""
    from matplotlib import colormaps

    colours = list(colormaps["tab20"].colors)
    return colours[0::2] + colours[1::2]


def detail_window(kernel: KernelDecisions, item: FragmentDecision) -> tuple[int, int]:
    """Rows and columns of a fragment's labelled corner: one tile of the matrix
    instruction whose C layout it has (else of the kernel's first gemm's
    instruction, else DEFAULT_DETAIL a side), at most MAX_DETAIL a side; a
    1-D fragment is one row."""
    rows, cols = (min(extent, MAX_DETAIL) for extent in _instruction_tile(kernel, item) or
                  (DEFAULT_DETAIL, DEFAULT_DETAIL))
    if len(item.shape) <= 1:
        return 1, max(rows, cols)
    return rows, cols


def _instruction_tile(kernel: KernelDecisions, item: FragmentDecision) -> tuple[int, int] | None:
    if item.instruction_tile is not None:
        return item.instruction_tile
    shapes = [g.instruction_shape for g in kernel.gemms if g.instruction_shape]
    return (shapes[0][0], shapes[0][1]) if shapes else None


def _shape_2d(item: FragmentDecision) -> tuple[int, int]:
    """The fragment as drawn: a 1-D one as one row, leading dims stacked as rows."""
    shape = item.shape or [1]
    return math.prod(shape[:-1]), shape[-1]


def _labelled_cells(kernel: KernelDecisions, item: FragmentDecision) -> tuple[int, int]:
    """Rows and columns of the fragment's labelled panel."""
    rows, cols = detail_window(kernel, item)
    shape = _shape_2d(item)
    return min(rows, shape[0]), min(cols, shape[1])


def _needs_detail(kernel: KernelDecisions, item: FragmentDecision) -> bool:
    return _labelled_cells(kernel, item) != _shape_2d(item)


def build_figure(decisions: list[KernelDecisions], names: list[str] | None = None):
    """The figure (a matplotlib Figure on an Agg canvas); UserError when there
    is nothing to draw."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    chosen = [(kernel, item) for kernel, item in selected(decisions, names) if drawable(item)]
    panels = []
    for kernel, item in chosen:
        panels.append((kernel, item, False))
        if isinstance(item, FragmentDecision) and _needs_detail(kernel, item):
            panels.append((kernel, item, True))
    if not panels:
        raise UserError("--plot-layout: nothing to draw (no fragment with a known lane layout and no "
                        "shared buffer with a bank model in this kernel)")
    # Every panel as large as the largest labelled one needs: CELL_PIXELS a cell.
    labelled = [max(_labelled_cells(kernel, item)) for kernel, item, _ in panels
                if isinstance(item, FragmentDecision)]
    side = max(labelled, default=0) * CELL_PIXELS / DPI + MARGIN_INCHES
    width, height = max(PANEL_INCHES[0], side), max(PANEL_INCHES[1], side)
    columns = 2 if len(panels) > 1 else 1
    rows = -(-len(panels) // columns)
    figure = Figure(figsize=(width * columns, height * rows), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    labels = []
    for index, (kernel, item, detail) in enumerate(panels):
        axes = figure.add_subplot(rows, columns, index + 1)
        if isinstance(item, FragmentDecision):
            labels += _draw_fragment(axes, kernel, item, detail)
        else:
            _draw_bank_map(axes, kernel, item)
    _size_labels(figure, labels)
    return figure


def render_png(decisions: list[KernelDecisions], names: list[str] | None = None) -> bytes:
    """The figure as PNG bytes (UserError when there is nothing to draw)."""
    figure = build_figure(decisions, names)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _as_2d(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1, array.shape[-1]) if array.ndim else array.reshape(1, 1)


def _draw_fragment(axes, kernel: KernelDecisions, item: FragmentDecision, detail: bool) -> list:
    """Draws one fragment panel; returns [(axes, (rows, columns), its labels)]
    for the labels to be sized once the layout is known (empty: no labels)."""
    owner, register, holders = (_as_2d(a) for a in item.owners())
    window = detail_window(kernel, item)
    if detail:
        owner, register = owner[:window[0], :window[1]], register[:window[0], :window[1]]
    colours = np.array(palette())
    image = np.ones(owner.shape + (3,))  # white where no thread holds the element
    held = owner >= 0
    image[held] = colours[owner[held] % len(colours)]
    labelled = detail or not _needs_detail(kernel, item)
    axes.imshow(image, interpolation="nearest", aspect="equal" if labelled else "auto")
    shape = "x".join(map(str, item.shape))
    replicas = int(holders.max()) if holders.size else 1
    replicated = f", each element held by {replicas} threads" if replicas > 1 else ""
    tile = _instruction_tile(kernel, item)
    one = (f"one {tile[0]}x{tile[1]} instruction tile; " if tile is not None and
           tuple(owner.shape) == tuple(tile) else "")
    what = (f"top-left {owner.shape[0]}x{owner.shape[1]} ({one}t: thread, r: register)" if detail else
            f"{item.threads} threads, {item.registers_per_thread} registers each{replicated}")
    axes.set_title(f"{kernel.kernel or kernel.at}: fragment {item.name} {shape}x{item.dtype}\n"
                   f"{item.layout} layout: {what}; colour: thread mod {len(colours)}", fontsize=9)
    axes.set_xlabel("column")
    axes.set_ylabel("row")
    if not labelled:
        from matplotlib.patches import Rectangle

        # Where the labelled panel zooms in.
        axes.add_patch(Rectangle((-0.5, -0.5), window[1], window[0], fill=False, edgecolor="black",
                                 linewidth=1.5))
        return []
    texts = []
    for (row, col), thread in np.ndenumerate(owner):
        if thread >= 0:
            r, g, b = colours[thread % len(colours)]
            ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
            texts.append(axes.text(col, row, f"t{thread}\nr{register[row, col]}", ha="center",
                                   va="center", color=ink, linespacing=1.0, in_layout=False))
    return [(axes, owner.shape, texts)]


def _size_labels(figure, labels: list) -> None:
    """Sets each labelled panel's font from its cell size as laid out: two
    lines of about a third of a cell each, LABEL_PIXELS high at most."""
    if not labels:
        return
    figure.get_layout_engine().execute(figure)  # lays the panels out, drawing nothing
    for axes, (rows, columns), texts in labels:
        axes.apply_aspect()
        box = axes.get_window_extent()
        cell = min(box.width / columns, box.height / rows)
        pixels = min(LABEL_PIXELS, 0.34 * cell)
        for text in texts:
            text.set_fontsize(pixels * 72 / figure.dpi)


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
