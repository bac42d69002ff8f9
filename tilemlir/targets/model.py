"""What a hardware target is: frozen dataclasses validated from a descriptor file.

A target is data (`backends/<family>/targets/<name>.toml`, see `descriptor.py`);
a backend is a small manifest saying which family it serves, where its target
files live and which element types its matrix instructions can take. Code never
branches on a chip name: it reads these values, and selection only *chooses*
among the rows of `target.matrix.instructions`.

Facts that are not publicly known are written `"unknown"` in the file and held
as `UNKNOWN` here. Code that needs one calls `target.require("memory.l2_mib")`,
which raises `UnknownFactError` naming the field and the target instead of
letting a guess through. What a chip does not have is written `"none"` where
the field allows it (`NONE`: RDNA's accumulation registers). The tables here
hold what every GPU has; a family's own facts are its manifest's
`target_facts` (`Target.family_facts`, the file's table named after the family).

    target = get_target("amdgpu:gfx942")
    str(target)                                     # "amdgpu:gfx942"
    target.mma_candidates("f16", "f16", "f32")[0]   # v_mfma_f32_16x16x16_f16
    target.flops_per_cu_cycle(instr)                # 2*m*n*k*blocks/cycles * SIMDs per CU
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from tilemlir.diagnostics import UserError
from tilemlir.dialects.element_types import TILE_BUFFER_TYPES, bit_width_of

# --------------------------------------------------------------------------
# Unknown facts
# --------------------------------------------------------------------------


class Unknown:
    """The type of `UNKNOWN`: a fact no public source gives. Compares equal only
    to itself, is falsy, and prints as `unknown` (the spelling in descriptor files)."""

    _instance: Unknown | None = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __str__(self) -> str:
        return "unknown"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()
UNKNOWN_SPELLING = "unknown"


def is_unknown(value: object) -> bool:
    return value is UNKNOWN


class NotPresent:
    """The type of `NONE`: the chip has no such thing (RDNA's accumulation
    registers), as opposed to `UNKNOWN`, a fact no source gives. Only fields
    whose metadata says `none` take it. Falsy, prints as `none` (the spelling
    in descriptor files)."""

    _instance: NotPresent | None = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NONE"

    def __str__(self) -> str:
        return "none"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NONE"


NONE = NotPresent()
NONE_SPELLING = "none"


def is_none(value: object) -> bool:
    return value is NONE


def is_stated(value: object) -> bool:
    """Neither unknown nor none: a value code can compute with."""
    return value is not UNKNOWN and value is not NONE


class TargetError(UserError):
    """A target could not be found or used."""


class UnknownFactError(TargetError):
    """Code needed a fact that the target's descriptor marks as unknown."""

    def __init__(self, target: str, field_path: str, needed_for: str = "", source: str = ""):
        self.target = target
        self.field_path = field_path
        where = f" in {source}" if source else ""
        purpose = f"; it is needed for {needed_for}" if needed_for else ""
        super().__init__(
            f"{target}: '{field_path}' is not publicly known (written as unknown{where}){purpose}; "
            f"give it in a descriptor of your own with --target-desc=FILE"
        )


# --------------------------------------------------------------------------
# Element types of matrix instructions
# --------------------------------------------------------------------------

# MLIR spellings of the fp8 types, by kind: "fp8" = E4M3 variants, "bf8" = E5M2 variants.
FP8_KIND = {
    "f8E4M3FNUZ": "fp8",
    "f8E4M3FN": "fp8",
    "f8E5M2FNUZ": "bf8",
    "f8E5M2": "bf8",
}
# Tags that are not MLIR builtin types: f32 operands the matrix unit rounds to a
# shorter mantissa (AMD gfx942 "xf32"); MetaX's TF32 uses MLIR's builtin `tf32`.
REDUCED_F32_TAGS = frozenset({"xf32", "tf32"})

# Operand types of matrix instructions: the tile buffer types and the f32 tags.
ELEMENT_BITS = {
    **{name: bit_width_of(name) for name in TILE_BUFFER_TYPES},
    **{tag: 32 for tag in REDUCED_F32_TAGS},
}

# Values of `Target.segment`.
SEGMENTS = ("datacenter", "client")

# Keys of `peak_dense_tflops`: the dtype classes AMD and others publish peaks for.
PEAK_KEYS = ("f64", "f32", "xf32", "tf32", "f16", "bf16", "fp8", "i8")


def peak_key(element_type: str) -> str:
    """The `peak_dense_tflops` key an operand type is counted under."""
    return "fp8" if element_type in FP8_KIND else element_type


# --------------------------------------------------------------------------
# The descriptor, as frozen dataclasses (the TOML file mirrors this 1:1)
# --------------------------------------------------------------------------


def describe_field(text: str, **extra: Any) -> dict:
    """A descriptor field's metadata: its `doc` (what --describe-target's
    schema and the reader's messages say) and flags: `none=True` for a fact a
    chip may lack (spelled "none"), `mapping`, `type_check`, `internal`. A
    family's own facts (`Backend.target_facts`) describe their fields with it too."""
    return {"doc": text, **extra}


_doc = describe_field


@dataclass(frozen=True)
class MmaInstr:
    """One matrix instruction: D(m x n) = A(m x k) * B(k x n) + C, `blocks` times
    side by side, issued by one wave in `cycles` cycles of one SIMD's matrix unit."""

    name: str = field(metadata=_doc("mnemonic, e.g. v_mfma_f32_16x16x16_f16"))
    m: int = field(metadata=_doc("rows of A and D"))
    n: int = field(metadata=_doc("columns of B and D"))
    k: int = field(metadata=_doc("reduction depth"))
    blocks: int = field(metadata=_doc("independent blocks computed at once"))
    a: str = field(metadata=_doc("element type of A (MLIR spelling or xf32)", type_check="operand"))
    b: str = field(metadata=_doc("element type of B", type_check="operand"))
    c: str = field(metadata=_doc("element type of C and D", type_check="accumulator"))
    cycles: float | Unknown = field(metadata=_doc(
        "issue cycles on one SIMD (passes x 4 on AMD; measured clocks per instruction on NVIDIA)"))
    keys: tuple[tuple[str, str | Unknown], ...] = field(default=(), metadata=_doc(
        "the family's own per-row keys (`Backend.mma_row_keys`: the LLVM intrinsic for amdgpu, "
        "the C++ built-in for metax), written in the row beside the others", row_keys=True))

    def key(self, name: str) -> str | Unknown:
        """The family's row key `name` (the intrinsic, the built-in), "" when
        the row has none."""
        return dict(self.keys).get(name, "")

    @property
    def flops(self) -> int:
        """Floating-point (or integer) operations of one instruction: 2*m*n*k*blocks."""
        return 2 * self.m * self.n * self.k * self.blocks

    @property
    def types(self) -> tuple[str, str, str]:
        return (self.a, self.b, self.c)

    def flops_per_simd_cycle(self, target: str = "") -> float:
        if is_unknown(self.cycles):
            raise UnknownFactError(target or "this target", f"cycles of {self.name}", "throughput")
        return self.flops / self.cycles

    def register_counts(self, wave_size: int) -> tuple[int, int, int]:
        """32-bit registers per lane for A, B and C/D."""

        def regs(elements: int, element_type: str) -> int:
            return max(1, elements * ELEMENT_BITS[element_type] // (32 * wave_size))

        return (
            regs(self.m * self.k * self.blocks, self.a),
            regs(self.n * self.k * self.blocks, self.b),
            regs(self.m * self.n * self.blocks, self.c),
        )

    def as_dict(self) -> dict:
        row = {
            "name": self.name,
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "blocks": self.blocks,
            "a": self.a,
            "b": self.b,
            "c": self.c,
            "cycles": _jsonable(self.cycles),
            **{key: _jsonable(value) for key, value in self.keys},
        }
        return row


@dataclass(frozen=True)
class Compute:
    """The execution resources of one device package."""

    wave_size: int | Unknown = field(metadata=_doc("lanes per wave (warp)"))
    compute_units: int | Unknown = field(metadata=_doc("CUs of the whole package, as published"))
    logical_devices: int | Unknown = field(
        metadata=_doc("GPUs the runtime exposes for one package in its default mode")
    )
    simds_per_cu: int | Unknown = field(metadata=_doc("SIMDs (each with a matrix unit) per CU"))
    clock_mhz: int | Unknown = field(metadata=_doc("peak engine clock the published peaks use"))
    max_threads_per_workgroup: int | Unknown = field(metadata=_doc("largest workgroup"))
    max_waves_per_simd: int | Unknown = field(metadata=_doc("occupancy ceiling per SIMD"))
    max_grid: tuple[int, ...] | Unknown = field(default=UNKNOWN, metadata=_doc(
        "most blocks (workgroups) a launch may have along x, y and z; "
        "unknown: CUDA's (2^31-1, 65535, 65535) assumed"))
    max_work_items_per_dimension: int | Unknown = field(default=UNKNOWN, metadata=_doc(
        "most work-items (blocks x threads) a launch may have along one dimension; "
        "unknown: none beyond max_grid, as in CUDA, which counts blocks"))
    cross_lane_moves: tuple[str, ...] = field(default=(), metadata=_doc(
        "lane exchanges inside a wave that need no shared memory, which the family's lowering may "
        "use for reductions, e.g. dpp16 (AMD DPP within rows of 16 lanes), dpp_row_bcast "
        "(row_bcast:15/31), permlane_swap (v_permlane16/32_swap); [] if none"))


@dataclass(frozen=True)
class Registers:
    """Per-lane register budgets of one wave."""

    vgprs_per_lane: int | Unknown = field(
        metadata=_doc("vector registers one wave may hold, total")
    )
    arch_vgprs_max: int | Unknown = field(metadata=_doc("of which ordinary (architected) at most"))
    acc_vgprs_max: int | Unknown | NotPresent = field(metadata=_doc(
        "of which accumulation (AGPR) at most; none: the chip has no accumulation registers (RDNA)",
        none=True))
    vgpr_alloc_granule: int | Unknown = field(default=UNKNOWN, metadata=_doc(
        "vector registers are allocated to a wave in blocks of this many per lane"))
    sgprs_per_wave: int | Unknown | NotPresent = field(default=UNKNOWN, metadata=_doc(
        "addressable scalar registers per wave; none: no scalar register file", none=True))
    file_per_lane: int | Unknown = field(default=UNKNOWN, metadata=_doc(
        "vector registers per lane of one SIMD's register file, which the waves resident on it share "
        "(occupancy); unknown: vgprs_per_lane, the file one wave may fill alone"))


@dataclass(frozen=True)
class Memory:
    """Shared memory (LDS), caches and device memory."""

    shared_bytes_per_workgroup: int | Unknown = field(metadata=_doc("largest LDS allocation"))
    shared_bytes_per_cu: int | Unknown = field(metadata=_doc("LDS per CU"))
    shared_banks: int | Unknown = field(metadata=_doc("LDS banks"))
    shared_bank_bytes: int | Unknown = field(metadata=_doc("width of one bank"))
    l2_mib: float | Unknown = field(metadata=_doc("L2 of the whole package, MiB"))
    hbm_gib: float | Unknown = field(metadata=_doc("device memory of the package, GiB"))
    hbm_bandwidth_gbps: float | Unknown = field(metadata=_doc("peak device-memory bandwidth, GB/s"))
    latency_clocks: float | Unknown = field(default=UNKNOWN, metadata=_doc(
        "load-to-use latency of device memory, in clocks of compute.clock_mhz (one dependent load, "
        "no other traffic)"))
    loaded_latency_clocks: float | Unknown = field(default=UNKNOWN, metadata=_doc(
        "the same latency while the other CUs stream device memory near its peak bandwidth"))
    l2_bandwidth_gbps: float | Unknown = field(default=UNKNOWN, metadata=_doc(
        "read bandwidth of the L2 to the CUs, GB/s; unknown: no more than device memory's"))
    shared_transpose_reads: tuple[str, ...] = field(default=(), metadata=_doc(
        "LDS transpose reads (64 bits per lane, exchanged within 16-lane groups), "
        "e.g. ds_read_b64_tr_b16; [] if none"))


@dataclass(frozen=True)
class Matrix:
    """The matrix unit: which fp8 encodings it reads, and its instructions,
    preferred first (selection keeps this order among equally fast rows)."""

    fp8_formats: tuple[str, ...] | Unknown = field(
        metadata=_doc("fp8 types the matrix unit reads ([] if none)", type_check="fp8")
    )
    instructions: tuple[MmaInstr, ...] = field(metadata=_doc("ordered instruction table"))


@dataclass(frozen=True)
class Target:
    """One chip: `str(target)` is `family:name`, which `get_target` parses back."""

    schema: int = field(metadata=_doc("descriptor format version (1)"))
    family: str = field(metadata=_doc("backend family, e.g. amdgpu"))
    name: str = field(metadata=_doc(
        "the target's name for people and for --target (family:name), e.g. gfx942 or gfx942-lite"))
    architecture: str | Unknown = field(metadata=_doc("architecture generation, e.g. CDNA3"))
    describes: str = field(metadata=_doc("the product whose numbers this file gives"))
    products: tuple[str, ...] = field(metadata=_doc("every product built on this chip"))
    sources: tuple[tuple[str, str], ...] = field(
        metadata=_doc("citation keys used in the file's comments", mapping="str")
    )
    compute: Compute = field(metadata=_doc("execution resources"))
    registers: Registers = field(metadata=_doc("register budgets"))
    memory: Memory = field(metadata=_doc("memories"))
    peak_dense_tflops: tuple[tuple[str, float | Unknown], ...] = field(
        metadata=_doc("published dense matrix peaks, TFLOP/s (TOP/s for i8)", mapping="number")
    )
    matrix: Matrix = field(metadata=_doc("matrix unit"))
    # What the toolchain compiles for: llc's -mcpu, ROCDL's chipset, NVPTX's
    # sm_NN, mxcc's --offload-arch. Left out: the base's, else the name.
    processor: str = field(default="", metadata=_doc(
        "the processor the toolchain compiles for (llc -mcpu, mxcc --offload-arch); "
        "default: the base's, else the name"))
    segment: str | Unknown = field(default=UNKNOWN, metadata=_doc(
        "the market the described product is made for: datacenter (AMD Instinct, NVIDIA's SXM "
        "parts, MetaX's C series) or client (desktop and workstation GPUs); the cost model "
        "assumes a fact a descriptor leaves unknown from shipped chips of the same segment"))
    path: str = field(
        default="", compare=False, metadata=_doc("file it was read from", internal=True)
    )
    packaged: bool = field(
        default=False, compare=False,
        metadata=_doc("one of its family's own targets/*.toml", internal=True),
    )
    bases: tuple[str, ...] = field(
        default=(), compare=False,
        metadata=_doc("the `base` chain it was built on, nearest first", internal=True),
    )
    fact_files: tuple[tuple[str, str], ...] = field(
        default=(), compare=False,
        metadata=_doc("(field path, file) for the facts a base gave it", internal=True),
    )
    # The family's own facts: the table named after the family (`[amdgpu]`),
    # read as its Backend's `target_facts` dataclass; None for a family that
    # declares none.
    family_facts: Any = field(
        default=None,
        metadata=_doc("the family's own facts (its Backend.target_facts)", internal=True),
    )

    def __str__(self) -> str:
        """`family:name`, which `get_target` parses back; for a descriptor read
        from a file of the user's (`--target-desc`), the file too:
        `amdgpu:gfx942 (from my_gfx942.toml)`, so messages and reports never
        pass a custom chip off as the packaged one (its path is `self.path`)."""
        if self.path and not self.packaged:
            return f"{self.qualified_name} (from {Path(self.path).name})"
        return self.qualified_name

    @property
    def qualified_name(self) -> str:
        """`family:name`, whichever file the target was read from."""
        return f"{self.family}:{self.name}"

    def file_of(self, field_path: str) -> str:
        """The descriptor file that wrote the fact at `field_path`: for a target
        built on a base, the base's file unless this file overrides it."""
        best, file = -1, self.path
        for prefix, source in self.fact_files:
            if (field_path == prefix or field_path.startswith(prefix + ".")) and len(prefix) > best:
                best, file = len(prefix), source
        return file

    @property
    def mma(self) -> tuple[MmaInstr, ...]:
        return self.matrix.instructions

    # -- facts ---------------------------------------------------------------

    def require(self, field_path: str, needed_for: str = ""):
        """The value at `field_path` ("memory.l2_mib", "peak_dense_tflops.fp8");
        raises `UnknownFactError` when the descriptor says it is unknown."""
        value: Any = self
        parts = field_path.split(".")
        if parts[0] == self.family and self.family_facts is not None:  # the family's own table
            value, parts = self.family_facts, parts[1:]
        for part in parts:
            if isinstance(value, tuple):
                value = dict(value).get(part)
                if value is None:
                    raise TargetError(f"{self}: no '{field_path}' in its descriptor")
            else:
                value = getattr(value, part)
        if is_unknown(value):
            raise UnknownFactError(str(self), field_path, needed_for, self.file_of(field_path))
        if is_none(value):
            purpose = f"; it is needed for {needed_for}" if needed_for else ""
            raise TargetError(f"{self}: has no '{field_path}' (written as none in "
                              f"{self.file_of(field_path)}){purpose}")
        return value

    def peak_tflops(self, dtype: str) -> float:
        """The published dense peak for an operand dtype class (`f16`, `fp8`, ...)."""
        key = peak_key(dtype)
        if key not in dict(self.peak_dense_tflops):
            raise TargetError(f"{self} has no published dense matrix peak for {key}")
        return self.require(f"peak_dense_tflops.{key}", f"the {key} peak")

    # -- selection-facing API ------------------------------------------------

    def flops_per_cu_cycle(self, instr: MmaInstr) -> float:
        """Throughput of `instr` per CU per cycle, from the table: every SIMD of
        the CU issuing it back to back."""
        simds = self.require("compute.simds_per_cu", "matrix throughput")
        return instr.flops_per_simd_cycle(str(self)) * simds

    def peak_from_table(self, dtype: str, accumulator: str | None = None) -> float:
        """Dense TFLOP/s implied by the fastest row whose A and B belong to
        `dtype`'s class (`fp8` covers every fp8 pairing the chip takes)."""
        key = peak_key(dtype)
        rows = [
            r
            for r in self.mma
            if peak_key(r.a) == key
            and peak_key(r.b) == key
            and (accumulator is None or r.c == accumulator)
        ]
        if not rows:
            raise TargetError(f"{self} has no matrix instruction for {key}")
        best = max(self.flops_per_cu_cycle(r) for r in rows)
        cus = self.require("compute.compute_units", "peak throughput")
        mhz = self.require("compute.clock_mhz", "peak throughput")
        return best * cus * mhz * 1e6 / 1e12

    def mma_candidates(self, a: str, b: str, c: str) -> tuple[MmaInstr, ...]:
        """Rows computing C(c) += A(a) * B(b), fastest first; rows of equal
        throughput keep the table's order. When the table gives no cycles the
        table's order is the whole ranking. Empty when the chip has none.

        Asking for an fp8 type on a chip whose fp8 support is unknown raises
        `UnknownFactError`: "none" would be a guess."""
        if (a in FP8_KIND or b in FP8_KIND) and is_unknown(self.matrix.fp8_formats):
            raise UnknownFactError(
                str(self), "matrix.fp8_formats", f"an fp8 matrix instruction ({a} x {b})",
                self.file_of("matrix.fp8_formats"),
            )
        rows = [r for r in self.mma if r.types == (a, b, c)]
        if any(is_unknown(r.cycles) for r in rows) or is_unknown(self.compute.simds_per_cu):
            return tuple(rows)
        return tuple(sorted(rows, key=lambda r: -self.flops_per_cu_cycle(r)))

    def is_full_rate(self, instr: MmaInstr) -> bool:
        """True when no row with the same types is faster: e.g. on gfx950 the
        inherited v_mfma_f32_16x16x16_f16 is not, v_mfma_f32_16x16x32_f16 is."""
        best = self.mma_candidates(*instr.types)[0]
        return self.flops_per_cu_cycle(instr) >= self.flops_per_cu_cycle(best)

    # -- printing -------------------------------------------------------------

    def _row_dict(self, row: MmaInstr) -> dict:
        """A row as data, plus its throughput and whether it is full rate when
        the table gives cycles."""
        out = row.as_dict()
        if not is_unknown(row.cycles) and not is_unknown(self.compute.simds_per_cu):
            rate = self.flops_per_cu_cycle(row)
            out["flops_per_cu_cycle"] = int(rate) if rate == int(rate) else rate
            out["full_rate"] = self.is_full_rate(row)
        return out

    def as_dict(self) -> dict:
        """The resolved descriptor as plain JSON-able data (`--describe-target`)."""
        out: dict[str, Any] = {"target": self.qualified_name}
        # The processor next to the name: what the toolchain is told, beside what people are.
        fields = [f for f in _public_fields(type(self)) if f.name != "processor"]
        fields.insert(next(i for i, f in enumerate(fields) if f.name == "name") + 1,
                      next(f for f in _public_fields(type(self)) if f.name == "processor"))
        for f in fields:
            value = getattr(self, f.name)
            if f.name == "matrix":
                out["matrix"] = {
                    "fp8_formats": _jsonable(value.fp8_formats),
                    "instructions": [self._row_dict(row) for row in value.instructions],
                }
            elif f.metadata.get("mapping"):
                out[f.name] = {k: _jsonable(v) for k, v in value}
            else:
                out[f.name] = _jsonable(value)
        if self.family_facts is not None:
            out[self.family] = _jsonable(self.family_facts)
        return out


def _public_fields(cls: type) -> Iterator:
    import dataclasses

    return (f for f in dataclasses.fields(cls) if not f.metadata.get("internal"))


def _jsonable(value: Any) -> Any:
    import dataclasses

    if is_unknown(value):
        return UNKNOWN_SPELLING
    if is_none(value):
        return NONE_SPELLING
    if dataclasses.is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name)) for f in _public_fields(type(value))}
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


# --------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Backend:
    """A backend family's manifest, registered under the entry-point group
    `tilemlir.backends` (name = family, value = `module:OBJECT`).

    `mma_operand_types` / `mma_accumulator_types` are what the family's matrix
    instructions can take at all; a descriptor row outside them is rejected.
    `mma_row_keys` are the family's own per-row keys, which its rows must
    write and no other key (the LLVM intrinsic for amdgpu, the C++ builtin
    and the intrinsic for metax; `MmaInstr.key`). `target_facts` is the
    dataclass of the family's own facts (`[amdgpu]` in its files). `check_target`, when
    given, is the family's own check of a loaded descriptor (e.g. that LLVM
    knows its chip): None, or (field, message) for the first problem.
    `check_mma_row(row, target)`, when given, refuses a matrix-instruction row
    the family's lowering cannot emit (an instruction of another kind, a name
    that disagrees with its shape): None, or a message that says what the
    lowering supports. Rows of the right kind whose lane layout the lowering
    does not know stay in the table (they are facts; selection skips them).
    `matrix_core` and `lowering_hooks` ("module:Class", imported on first use)
    are the family's part of tile-lower-to-gpu (passes/lower_to_gpu/api.py).

    Compiling (`backends/driver.py`): `stages` names the family's stage list
    ("module:OBJECT", the shared tile and gpu stages first), whose names are
    what --emit takes; `default_emit` is tile-compile's default (else the last
    stage); `report_stage` builds the --report; `passes` are the family's own
    passes, name -> "module:Class", found by name wherever pipelines are read.

    `native_math` ("module:OBJECT", imported on first use) names the family's
    table of the float `math` ops its code generator lowers, element type ->
    op names; `tile-expand-math` expands or refuses the others. Empty: it
    lowers every math op (C++ with libm, PTX with libdevice).

    `converts_fp8`: the family's code generator lowers `arith.extf`/`truncf`
    of its fp8 formats (the descriptor's matrix.fp8_formats) in hardware
    (AMD: v_cvt_*fp8*), and so the other fp8 formats in software (integer
    arithmetic, `passes/fp8_decode.py`). Otherwise tile-lower-to-gpu decodes
    fp8 in software and refuses, at the op, a conversion into fp8.

    `tilelang_names` and `default_chip`: what a target name may say for the
    family in TileLang's spelling ("hip", "cuda"), and the chip it then means
    when neither TILEMLIR_TARGET nor this machine's GPU is of the family.
    `detect_gpu`: the family's probe for its GPUs on this machine, which picks
    the target when none is named (`tilemlir.targets.selection`)."""

    family: str
    summary: str
    targets_dir: Path
    mma_operand_types: frozenset[str]
    mma_accumulator_types: frozenset[str]
    mma_row_keys: tuple[str, ...] = ("intrinsic",)
    # The family's own facts, beside the neutral ones every GPU has: a frozen
    # dataclass whose fields carry `doc` metadata like the neutral sections',
    # read from the descriptor's table named after the family (`[amdgpu]`)
    # into `Target.family_facts`. None: the family has no facts of its own,
    # and a file with such a table is refused.
    target_facts: type | None = None
    check_target: Callable[[Target], tuple[str, str] | None] | None = None
    check_mma_row: Callable[[MmaInstr, Target], str | None] | None = None
    matrix_core: str = ""
    lowering_hooks: str = ""
    stages: str = ""
    default_emit: str = ""
    report_stage: str = ""
    passes: dict[str, str] = field(default_factory=dict, hash=False)
    native_math: str = ""
    converts_fp8: bool = False
    # The target names TileLang's users give this family (`@jit(target="hip")`)
    # and the chip they mean unless TILEMLIR_TARGET or this machine's GPU is of the family.
    tilelang_names: tuple[str, ...] = ()
    default_chip: str = ""
    # "module:function" returning the chip names of this family's GPUs on this
    # machine (empty: none), imported only when no target is named
    # (targets/selection.py); it must be cheap, and whatever it raises means none.
    detect_gpu: str = ""
    # Whether a K loop of one stage still loads its next tiles while its gemms
    # run (tile-pipeline prefetches through registers); False where only loops
    # of 2 stages or more are pipelined. The cost model's latency term reads it.
    prefetches_single_stage: bool = True
    # Whether tile-pipeline runs the last iterations of a loop of 2 stages or
    # more in a loop of their own without prefetches (`peel-tail=auto`), so
    # that the main loop's prefetch needs no clamp to the last tile and its
    # addresses step by a constant from one iteration to the next.
    peels_pipeline_tail: bool = False
    # Whether the pipelined loop's global -> shared copies pass through
    # registers (tile-pipeline's prefetch); False where the hardware copies
    # asynchronously into shared memory (NVIDIA's cp.async and TMA). The cost
    # model's register estimate reads it.
    copies_through_registers: bool = True
    # Registers per lane a K loop holds besides its tiles (addresses, loop
    # counters, barrier phases, descriptors), as measured on the family's
    # compiled kernels; 0 where the cost model's register limits were
    # calibrated without them (amdgpu: gemm_configs.wave_register_limit).
    address_registers: int = 0
    # The name prefix of instructions whose 8-bit forms sum each block K in an
    # accumulator of its own, added to the f32 sum with FADDs (nvidia: wgmma,
    # which keeps fewer bits than f32); the cost model counts its registers.
    partial_sums_prefix: str = ""
    # The name prefix of instructions whose pipelined K loops get a producer
    # warpgroup that issues their loads (nvidia: wgmma, backends/nvidia/
    # warp_specialize.py), the threads it adds and the registers each of them
    # keeps; the cost model counts them in a workgroup's waves and registers.
    producer_prefix: str = ""
    producer_threads: int = 0
    producer_registers: int = 0
    # Clocks per iteration of such a loop in which the matrix units wait for
    # its consumers' synchronization (the slot's barrier, the instructions'
    # fence, commit and wait, the slot's release), as measured on the family's
    # kernels; the cost model adds them to each iteration's matrix time.
    producer_loop_sync_clocks: int = 0
    # A problem extent (M or N) at most this large, less than 32 (a skinny
    # GEMM's rows: decoding's 16), is also tried as a block of this extent,
    # where 32, the smallest otherwise, computes rows for nothing; 0: not tried
    # (nvidia, whose skinny defaults were measured with 32-row blocks).
    skinny_block: int = 0
    # Clocks of one K-loop iteration in which a wave issues or waits for
    # something other than its matrix instructions (global loads, LDS stores
    # and reads, address work, waits, the barrier), as measured on the
    # family's compiled kernels: (processor, clocks) pairs, processor "" for
    # the family's other chips; the cost model adds them to a wave's
    # iteration where it has no measured busy ratio. Empty: not measured (an
    # iteration is then as long as its matrix work).
    loop_issue_clocks: tuple[tuple[str, int], ...] = ()
    # The same measured apart by the matrix instruction's rows (M), where
    # they differ: (processor, rows, clocks) triples, processor "" for the
    # family's other chips; an instruction of rows not listed takes
    # loop_issue_clocks. Empty: not measured apart.
    loop_issue_clocks_by_rows: tuple[tuple[str, int, int], ...] = ()
    # Bytes of A and B tiles a CU must hold in flight for a launch of fewer
    # C tiles than CUs (each CU streaming its own tiles' operands) to draw
    # device memory at its rate, as measured on the family's kernels; 0 where
    # not measured (tile-tiling then tries no deeper pipelines for such
    # launches than for any other: tiling.starved).
    stream_bytes_in_flight: int = 0

    def target_files(self) -> tuple[Path, ...]:
        return tuple(sorted(Path(self.targets_dir).glob("*.toml")))
