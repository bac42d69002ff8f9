"""Which lane holds which element of a matrix instruction's operands.

The lowering needs, for one wave-level matrix instruction D(m x n) = A(m x k) *
B(k x n) + C, the map from (lane, element of that lane's register vector) to
matrix coordinates. For the dense single-block AMD MFMAs the compiler selects
(m = n = 16 or 32, any operand type), AMD documents one family of layouts:

* A: lane l holds row `l % m` and, in its `m*k/64` consecutive elements,
  K indices `(l // m) * (m*k/64) + i`;
* B: lane l holds column `l % n` and K indices `(l // n) * (n*k/64) + i`;
* C/D: lane l holds column `l % n`; its j-th element lies in row
  `8 * (j // 4) + 4 * (l // n) + j % 4` for 32x32 and `4 * (l // 16) + j` for
  16x16 (groups of four rows, one group per 64/n lanes) -- except for f64
  results (v_mfma_f64_16x16x4f64), where it lies in row `4 * j + l // 16`.

Sources: AMD Matrix Instruction Calculator (ROCm/amd_matrix_instruction_calculator,
`--detail-instruction` register layouts, cdna3 and cdna2 tables); AMD CDNA3 ISA
reference guide, section 7.1 "Matrix Fused-Multiply-Add (MFMA)" operand layouts;
ROCm blog "Matrix Core Programming on AMD CDNA3 and CDNA4" (the doubled-K gfx950
f16/bf16/i8 and fp8 instructions keep the A/B "K-contiguous per lane group" form
with twice the elements per lane). For a GEMM, any permutation of K applied to
A and B alike gives the same sum; rows and columns are what must be right.

For RDNA's WMMAs (16x16x16, wave32) AMD documents two generations of layouts,
both with lane l holding column `l % 16` of B and of C/D and row `l % 16` of A:

* RDNA3 (gfx11): A and B are replicated: lanes 16-31 hold the same 16 K values
  as lanes 0-15 (all of K, 16 elements per lane); C/D element j of lane l lies
  in row `2 * j + l // 16` (the two lane halves interleave rows);
* RDNA4 (gfx12): lanes 0-15 hold K 0-7, lanes 16-31 K 8-15 (8 elements per
  lane, the MFMA form); C/D element j of lane l lies in row `j + 8 * (l // 16)`.

Sources: AMD RDNA3 and RDNA4 ISA reference guides, "Wave Matrix Multiply
Accumulate (WMMA)" register layouts; GPUOpen, "How to accelerate AI
applications on RDNA 3 using WMMA" (replicated A/B, interleaved C); AMD Matrix
Instruction Calculator (`rdna3`, `rdna4` register layouts). Which one a target
uses is its descriptor's `architecture` (`WMMA_GENERATIONS`).

MetaX's 16x16 wave64 instructions are described in their own descriptor work.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MfmaLayout:
    """Lane layout of one dense single-block wave-level matrix instruction."""

    m: int
    n: int
    k: int
    wave_size: int = 64
    c_bits: int = 32  # width of the accumulator elements (64 for f64 MFMAs)

    @property
    def a_per_lane(self) -> int:
        return self.m * self.k // self.wave_size

    @property
    def b_per_lane(self) -> int:
        return self.n * self.k // self.wave_size

    @property
    def c_per_lane(self) -> int:
        return self.m * self.n // self.wave_size

    def a_coord(self, lane: int, i: int) -> tuple[int, int]:
        """(row, k) of element i of lane's A operand."""
        return lane % self.m, (lane // self.m) * self.a_per_lane + i

    def b_coord(self, lane: int, i: int) -> tuple[int, int]:
        """(k, column) of element i of lane's B operand."""
        return (lane // self.n) * self.b_per_lane + i, lane % self.n

    @property
    def a_group_stride(self) -> int:
        """K offset between the A elements of consecutive lane groups (lane // m)."""
        return self.a_per_lane

    @property
    def b_group_stride(self) -> int:
        return self.b_per_lane

    def c_row_terms(self, j: int) -> tuple[int, int]:
        """Row of element j of a lane's C/D vector as
        `constant + per_group * (lane // n)`: returns (constant, per_group)."""
        if self.c_bits == 64:
            return 4 * j, 1
        lane_groups = self.wave_size // self.n
        return (j // 4) * 4 * lane_groups + j % 4, 4

    def c_coord(self, lane: int, j: int) -> tuple[int, int]:
        constant, per_group = self.c_row_terms(j)
        return constant + per_group * (lane // self.n), lane % self.n


def supported(m: int, n: int, k: int, blocks: int, wave_size: int = 64) -> bool:
    """Whether this module knows the lane layout of such an instruction."""
    if blocks != 1 or m != n or m not in (16, 32) or wave_size != 64:
        return False
    return (m * k) % wave_size == 0


def layout_for(m: int, n: int, k: int, wave_size: int = 64, c_bits: int = 32) -> MfmaLayout:
    if not supported(m, n, k, 1, wave_size):
        raise ValueError(f"no documented lane layout for a {m}x{n}x{k} instruction on wave{wave_size}")
    return MfmaLayout(m, n, k, wave_size, c_bits)


# WMMA lane layouts by the descriptor's `architecture`: whether lanes 16-31
# replicate A and B (RDNA3) and the C/D row of element j as (row step per
# element, row step per lane half) (module docstring).
WMMA_GENERATIONS = {
    "RDNA3": (True, (2, 1)),
    "RDNA3.5": (True, (2, 1)),  # gfx1150/1151: GFX11's WMMAs (LLVM's GFX11 feature set)
    "RDNA4": (False, (1, 8)),
}
WMMA_WAVE = 32


def replicates_operands(architecture: object) -> bool:
    """Whether the WMMAs of `architecture` take A and B repeated in both lane
    halves (RDNA3): a wave's lanes then hold its operands twice."""
    return WMMA_GENERATIONS.get(architecture, (False,))[0]


@dataclass(frozen=True)
class WmmaLayout:
    """Lane layout of a 16x16x16 RDNA WMMA in wave32 (module docstring); the
    same interface as `MfmaLayout`."""

    architecture: str
    m: int = 16
    n: int = 16
    k: int = 16
    wave_size: int = WMMA_WAVE
    c_bits: int = 32

    @property
    def replicated(self) -> bool:
        return replicates_operands(self.architecture)

    @property
    def a_per_lane(self) -> int:
        return self.k if self.replicated else self.m * self.k // self.wave_size

    @property
    def b_per_lane(self) -> int:
        return self.k if self.replicated else self.n * self.k // self.wave_size

    @property
    def c_per_lane(self) -> int:
        return self.m * self.n // self.wave_size

    @property
    def a_group_stride(self) -> int:
        return 0 if self.replicated else self.a_per_lane

    @property
    def b_group_stride(self) -> int:
        return 0 if self.replicated else self.b_per_lane

    def a_coord(self, lane: int, i: int) -> tuple[int, int]:
        return lane % self.m, (lane // self.m) * self.a_group_stride + i

    def b_coord(self, lane: int, i: int) -> tuple[int, int]:
        return (lane // self.n) * self.b_group_stride + i, lane % self.n

    def c_row_terms(self, j: int) -> tuple[int, int]:
        per_element, per_half = WMMA_GENERATIONS[self.architecture][1]
        return per_element * j, per_half

    def c_coord(self, lane: int, j: int) -> tuple[int, int]:
        constant, per_group = self.c_row_terms(j)
        return constant + per_group * (lane // self.n), lane % self.n


# Either kind of lane layout: the same members, read alike by the amdgpu lowering.
Layout = MfmaLayout | WmmaLayout


def wmma_supported(architecture: str, m: int, n: int, k: int, blocks: int, wave_size: int) -> bool:
    """Whether this module knows the layout of such a WMMA on `architecture`."""
    return (architecture in WMMA_GENERATIONS and (m, n, k, blocks) == (16, 16, 16, 1)
            and wave_size == WMMA_WAVE)
