"""A static model of LDS bank conflicts for one wave's shared-memory access.

The LDS is `banks` banks of `bank_bytes` each; a dword at byte address a lives
in bank (a / bank_bytes) mod banks. It serves banks * bank_bytes bytes per
clock, so an access of W bytes per lane is processed `banks * bank_bytes / W`
lanes at a time (e.g. on 32 x 4-byte banks: 32 lanes for ds_read_b32, 16 for
b64, 8 for b128). Within one such group, lanes that touch *different* dwords
of the same bank serialize; lanes reading the same dword are served together
(broadcast). The extra clocks of a group are (most distinct dwords in one
bank) - 1; an access's conflicts are the sum over its groups.

Sources: AMD's LDS description in the CDNA3 ISA reference guide (LDS banks,
dword-wide; conflicts serialize) and the ROCm CK-Tile bank-conflict article
(32 banks x 4 bytes on CDNA, 128 bytes per clock); the descriptor gives
`memory.shared_banks` and `memory.shared_bank_bytes` per chip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def _clock_groups(addresses: Sequence[int], width: int, banks: int, bank_bytes: int):
    """The lanes served in one clock, group by group, each with the distinct
    dwords its lanes touch in every bank (bank -> set of dwords)."""
    lanes_per_clock = max(1, (banks * bank_bytes) // max(width, 1))
    for start in range(0, len(addresses), lanes_per_clock):
        lanes = range(start, min(start + lanes_per_clock, len(addresses)))
        per_bank: dict[int, set[int]] = {}
        for lane in lanes:
            for dword in _dwords(addresses[lane], width, bank_bytes):
                per_bank.setdefault(dword % banks, set()).add(dword)
        yield lanes, per_bank


def _dwords(address: int, width: int, bank_bytes: int) -> range:
    return range(address // bank_bytes, (address + max(width, 1) - 1) // bank_bytes + 1)


def access_conflicts(addresses: Sequence[int], width: int, banks: int, bank_bytes: int = 4) -> int:
    """Extra clocks of one wave-wide access: `addresses[lane]` is the first
    byte each lane touches, `width` the bytes per lane."""
    return sum(max(len(words) for words in per_bank.values()) - 1
               for _, per_bank in _clock_groups(addresses, width, banks, bank_bytes))


def lane_ways(addresses: Sequence[int], width: int, banks: int, bank_bytes: int = 4) -> list[int]:
    """For each lane of one wave-wide access, how many distinct dwords the
    busiest bank it touches must serve in its clock group: 1 is conflict-free,
    w > 1 means that bank serializes w ways."""
    ways = [0] * len(addresses)
    for lanes, per_bank in _clock_groups(addresses, width, banks, bank_bytes):
        for lane in lanes:
            ways[lane] = max(len(per_bank[dword % banks])
                             for dword in _dwords(addresses[lane], width, bank_bytes))
    return ways


def operand_read_conflicts(row_of_lane: Sequence[int], k_of_lane: Sequence[int], row_bytes: int,
                           element_bytes: int, elements: int, banks: int,
                           bank_bytes: int = 4, swizzle: int = 0) -> int:
    """Conflicts of one matrix-operand read: lane l reads `elements` consecutive
    elements starting at (row_of_lane[l], k_of_lane[l]) of a K-contiguous
    buffer whose rows are `row_bytes` apart, as one vector access; with
    `swizzle`, the rows' 16-byte chunks are XOR-swizzled (`swizzled_byte`)."""
    addresses = [row * row_bytes + swizzled_byte(row, k * element_bytes, swizzle, row_bytes)
                 for row, k in zip(row_of_lane, k_of_lane)]
    return access_conflicts(addresses, elements * element_bytes, banks, bank_bytes)


# The XOR swizzle of LDS rows: the 16-byte chunk c of row r is stored at chunk
# c ^ (((r + k (r div C)) * s) mod C), C the chunks per row (a power of two),
# s the swizzle and k = s div C. A swizzle below C is the plain one, k = 0;
# from C to 2C - 1 (s mod C as the factor) each run of C rows is skewed by
# one more, so that rows C apart take other phases: a 16x16x32 MFMA's
# transpose reads of B reach rows k and k + 8 in one clock of 64 banks, which
# no plain swizzle of 8-chunk rows keeps apart. The searches try the plain
# swizzles first (the skew costs a shift and an add per address).
SWIZZLE_CHUNK_BYTES = 16


def swizzled_byte(row: int, byte: int, swizzle: int, row_bytes: int) -> int:
    """Where byte `byte` of row `row` is stored within the row."""
    if not swizzle:
        return byte
    chunks = row_bytes // SWIZZLE_CHUNK_BYTES
    skewed = row + swizzle // chunks * (row // chunks)
    return byte ^ ((skewed * swizzle) % chunks) * SWIZZLE_CHUNK_BYTES


def _swizzles(row_bytes: int) -> range | None:
    """The swizzles of rows of `row_bytes`, plain then skewed; None when a
    row is not a power of two (at least 2) of 16-byte chunks."""
    chunks = row_bytes // SWIZZLE_CHUNK_BYTES
    if row_bytes % SWIZZLE_CHUNK_BYTES or chunks < 2 or chunks & (chunks - 1):
        return None
    return range(1, 2 * chunks)


def conflict_free_swizzle(row_bytes: int, conflict_free: Callable[[int], bool]) -> int | None:
    """The smallest XOR swizzle s of a row's 16-byte chunks (unpadded rows)
    for which `conflict_free(s)` holds; None when a row is not a power of two
    (at least 2) of chunks, or when no s is."""
    swizzles = _swizzles(row_bytes)
    return None if swizzles is None else next((s for s in swizzles if conflict_free(s)), None)


def least_conflicted_swizzle(row_bytes: int, cost: Callable[[int], int]) -> int | None:
    """The XOR swizzle s of a row's 16-byte chunks (unpadded rows) with the
    least `cost(s)`, the smallest such s, where that is below the unswizzled
    rows' cost(0); None when it is not, or when a row is not a power of two
    (at least 2) of chunks."""
    swizzles = _swizzles(row_bytes)
    if swizzles is None:
        return None
    best = min(swizzles, key=lambda swizzle: (cost(swizzle), swizzle))
    return best if cost(best) < cost(0) else None


def choose_swizzle(row_of_lane: Sequence[int], k_of_lane: Sequence[int], row_elements: int,
                   element_bytes: int, elements: int, banks_options: Sequence[int],
                   bank_bytes: int = 4) -> tuple[int, int] | None:
    """The smallest XOR swizzle s (unpadded rows) with no conflicts for every
    bank count in `banks_options`, as (s, 0); None when the rows are not a
    power of two of 16-byte chunks or no s is conflict-free."""
    row_bytes = row_elements * element_bytes
    swizzle = conflict_free_swizzle(row_bytes, lambda s: all(
        operand_read_conflicts(row_of_lane, k_of_lane, row_bytes, element_bytes, elements,
                               banks, bank_bytes, s) == 0 for banks in banks_options))
    return None if swizzle is None else (swizzle, 0)


# The widest row padding choose_padding tries, in elements.
LARGEST_PADDING = 64


def least_conflicted_padding(conflicts: Callable[[int], int], step: int = 1,
                             largest: int = LARGEST_PADDING) -> tuple[int, int]:
    """The smallest row padding (in elements, a multiple of `step`, at most
    `largest`) whose `conflicts(padding)` is 0; without one, the padding with
    the fewest. Returns (padding, its conflicts)."""
    best = None
    for padding in range(0, largest + 1, max(1, step)):
        here = conflicts(padding)
        if best is None or here < best[1]:
            best = (padding, here)
        if here == 0:
            break
    return best


def choose_padding(row_of_lane: Sequence[int], k_of_lane: Sequence[int], row_elements: int,
                   element_bytes: int, elements: int, banks_options: Sequence[int],
                   bank_bytes: int = 4, largest: int = LARGEST_PADDING) -> tuple[int, int]:
    """The smallest row padding (in elements, keeping each lane's vector aligned)
    with no conflicts for every bank count in `banks_options`; returns
    (padding, conflicts at that padding for the worst bank count). Without a
    conflict-free padding, the one with the fewest conflicts."""
    def worst(padding: int) -> int:
        row_bytes = (row_elements + padding) * element_bytes
        return max(operand_read_conflicts(row_of_lane, k_of_lane, row_bytes, element_bytes,
                                          elements, banks, bank_bytes) for banks in banks_options)

    return least_conflicted_padding(worst, elements, largest)  # vectors stay aligned to their width
