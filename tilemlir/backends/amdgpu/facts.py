"""The amdgpu family's own descriptor facts: the `[amdgpu]` table of its
target files, beside the neutral sections every GPU has
(`tilemlir.targets.model`). They are read into `Target.family_facts`.

    get_target("amdgpu:gfx950").family_facts.buffer_load_lds
    # ("buffer_load_dword", "buffer_load_dwordx3", "buffer_load_dwordx4")
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilemlir.targets.model import NotPresent, Unknown, describe_field


@dataclass(frozen=True)
class AmdgpuFacts:
    """What only AMD's GPUs have, or only the amdgpu lowering reads."""

    acc_offset_granule: int | Unknown | NotPresent = field(metadata=describe_field(
        "the block of accumulation registers (AGPRs) of a wave starts at a multiple of this "
        "(.amdhsa_accum_offset); none: the chip has no AGPRs (RDNA)", none=True))
    buffer_load_lds: tuple[str, ...] = field(default=(), metadata=describe_field(
        "buffer loads that take the lds modifier (global memory straight into LDS, lane "
        "i's data at the wave's LDS base + i x its size), e.g. buffer_load_dwordx4; [] if none"))
    bf16_conversions: tuple[str, ...] = field(default=(), metadata=describe_field(
        "instructions that round f32 to bf16 (e.g. v_cvt_pk_bf16_f32); [] if none: "
        "amdgpu-truncate-bf16 then rounds with integer arithmetic"))
