"""The backend's own torch op: attention kept whole through AOT autograd."""

from __future__ import annotations

import torch


@torch.library.custom_op("tilemlir::attention", mutates_args=())
def attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None = None,
              dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
              enable_gqa: bool = False) -> torch.Tensor:
    """scaled_dot_product_attention kept whole through AOT autograd, whichever
    of torch's implementations it would choose on this device (on a GPU, a
    mask torch's fused kernels refuse sends it to the unfused math, which
    nothing would put back together); run by torch where no kernel takes it."""
    return torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
        enable_gqa=enable_gqa)


@attention.register_fake
def _attention_shape(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                     enable_gqa=False):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def attention_op():
    return torch.ops.tilemlir.attention.default
