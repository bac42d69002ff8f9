"""The inputs and expectations of a whole-problem GEMM measured on a device
(`tile-tune --measure device --prepare DIR`), for `tilemlir.runtime.gemm_timing`.

`write_gemm_inputs(folder, function_op, seed)` draws the entry function's
arguments as tile-run does (`arguments.random_arguments`), computes the GEMM
output's float64 reference and its per-element bound (`oracle.tolerance`, the
bound tile-run checks against), and writes, as .npy files that NumPy alone
reads back: each argument as its raw bits (`argN.npy`), the reference as
float32 (`want.npy`; 13 more bits than the f16/bf16 outputs) and the bound,
rounded down to float32 so it never grows (`bound.npy`). It returns what
`gemm_timing` needs to know of them (the manifest's "inputs").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mlir import ir

from tilemlir.diagnostics import UserError
from tilemlir.runtime import dtypes
from tilemlir.runtime.arguments import parameters, random_arguments
from tilemlir.runtime.oracle import gemm_outputs, tolerance

# Output types gemm_timing decodes with NumPy alone (its DECODERS).
DECODED_OUTPUTS = ("f16", "bf16", "f32")


def _dtype_of(mlir_type: ir.Type) -> np.dtype:
    return dtypes.ELEMENT_TYPES[str(mlir_type)].dtype


def write_gemm_inputs(folder: Path, function_op: ir.Operation, seed: int) -> dict:
    """Writes the arguments, reference and bound of the function's GEMM into
    `folder`; a UserError when the function is not one a launcher can feed
    from these files alone (memref arguments of static shape, one GEMM output
    of a type NumPy decodes)."""
    name = ir.StringAttr(function_op.attributes["sym_name"]).value
    params = parameters(function_op, _dtype_of)
    for p in params:
        if not p.is_memref or any(d is None for d in p.shape):
            raise UserError(f"measuring on a device needs @{name}'s arguments to be memrefs of static shape; "
                            f"{p.label()} is {p.type}")
    outputs = gemm_outputs(function_op)
    if len(outputs) != 1:
        raise UserError(f"measuring on a device checks one GEMM output of @{name}, found {len(outputs)}")
    (index, gemm), = outputs.items()
    element = params[index].element
    if element not in DECODED_OUTPUTS:
        raise UserError(f"measuring on a device checks outputs of type {', '.join(DECODED_OUTPUTS)}; "
                        f"@{name}'s output is {element}")
    values = random_arguments(params, seed)
    exact = [dtypes.convert(v, np.float64) for v in values]
    reference, magnitude, k = gemm.reference(exact)
    bound = tolerance(reference, magnitude, k + 1, gemm.accum, element)
    arguments = []
    for p, value in zip(params, values):
        raw = np.ascontiguousarray(value).view(f"u{value.dtype.itemsize}")
        np.save(folder / f"arg{p.index}.npy", raw)
        arguments.append({"index": p.index, "file": f"arg{p.index}.npy", "dtype": p.element,
                          "shape": list(p.shape)})
    np.save(folder / "want.npy", reference.astype(np.float32))
    np.save(folder / "bound.npy", np.nextafter(bound.astype(np.float32), np.float32(0)))
    return {"entry": name, "arguments": arguments, "output": index,
            "output_read": gemm.start_argument == index, "want": "want.npy", "bound": "bound.npy",
            "seed": seed}
