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
