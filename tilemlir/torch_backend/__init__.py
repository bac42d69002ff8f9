"""`torch.compile(model, backend="tilemlir")`: a model's graph as tile kernels.

Dynamo captures the model; AOT autograd lowers it to core ATen (softmax,
layer norm and log-softmax decomposed too, attention kept whole); the graph is
partitioned into fusion groups (`partition`), and each group becomes one
`tilemlir.language` kernel (`codegen`), compiled for the target a kernel of
`@tilemlir.jit` would take (`TILEMLIR_TARGET`, else this machine's GPU, else
the emulator's chip) and run on the engine it would take (`TILEMLIR_ENGINE`:
on a machine without a GPU, the AMD and MetaX code runs in the emulator or the
reference engine). Kernels are made for the shapes, strides and dtypes of the
first call, compiled once and kept in tilemlir's disk cache.

Nodes with no kernel run in torch and are listed in one log line per graph
(logger `tilemlir.torch`); with `TILEMLIR_TORCH_STRICT=1`, a fallback of a node
that computes values is an error naming the node and its source line.
"""

from __future__ import annotations

from tilemlir.torch_backend.dynamo import TilemlirTorchError, backend, compile_graph

__all__ = ["TilemlirTorchError", "backend", "compile_graph"]
