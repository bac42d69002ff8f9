"""TileLang's `tilelang.layout` names (`import tilemlir as tilelang`): the
layouts a program may hand to `T.annotate_layout`, which tilemlir accepts and
does not follow (it lays out shared memory by its bank model and fragments by
tile-infer-layout; docs/language.md). Inside a kernel body the layouts in the
annotation are not evaluated; called in plain Python, each of these returns a
`LayoutHint` naming what was asked for."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LayoutHint:
    """A layout a program asked for: its helper's name and arguments."""

    kind: str
    arguments: tuple = ()


def _hint(kind: str):
    def make(*arguments, **_options) -> LayoutHint:
        return LayoutHint(kind, arguments)

    make.__name__ = kind
    make.__doc__ = f"TileLang's `tilelang.layout.{kind}`: a LayoutHint (accepted by T.annotate_layout, not followed)."
    return make


make_swizzled_layout = _hint("make_swizzled_layout")
make_wgmma_swizzled_layout = _hint("make_wgmma_swizzled_layout")
make_full_bank_swizzled_layout = _hint("make_full_bank_swizzled_layout")
make_half_bank_swizzled_layout = _hint("make_half_bank_swizzled_layout")
make_quarter_bank_swizzled_layout = _hint("make_quarter_bank_swizzled_layout")
make_linear_layout = _hint("make_linear_layout")
Layout = _hint("Layout")
Fragment = _hint("Fragment")
