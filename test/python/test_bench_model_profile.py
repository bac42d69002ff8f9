"""bench/model_profile.py's labels and per-forward totals (the profile itself needs a GPU)."""

from __future__ import annotations

from bench_modules import load

profile = load("model_profile")


def test_group_labels_name_a_convolution_by_its_geometry():
    assert profile.group_label("conv", [(32, 64, 56, 56), (64, 64, 3, 3)], [1, 1], [1, 1]) == \
        "conv x(32, 64, 56, 56) w(64, 64, 3, 3) s(1, 1) p(1, 1)"
    assert profile.group_label("pointwise", [(2, 3), (3,), (4, 5), (6,)]) == "pointwise [(2, 3), (3,), (4, 5)]"


def test_totals_per_forward():
    assert profile.per_forward({"k": (300.0, 6)}, 3) == {"k": (100.0, 2)}
