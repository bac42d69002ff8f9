"""CUDA graph replay of a compiled forward, as Inductor's mode="reduce-overhead" does.

A forward of a small batch is bound by launches: each fusion group's call
costs the host 10-25 us (issue 30's measure), and BERT-base runs 137
kernels. With static shapes (the backend compiles per shape) the whole
forward is captured once into a CUDA graph and replayed:

* call 1 runs as compiled (it compiles every kernel: nothing may compile
  during a capture); call 2 captures, on a side stream after a warm-up run
  as torch.cuda.graphs requires, and replays;
* the module's parameters and buffers, which AOT autograd passes as inputs
  (its static input indices; where it does not say, the inputs whose storage
  did not move between calls 1 and 2), are read in place; the others are
  copied, the memory their views span, into buffers the graph reads, before
  each replay;
* the graph's outputs are cloned: a later replay overwrites its buffers, and
  a caller may keep the outputs of an earlier call;
* a call whose non-tensor inputs or static inputs' storage differ from the
  captured ones, or whose tensors are not all on one CUDA device, runs as
  compiled; a capture that fails (an op that synchronises with the host)
  is said once in the log and the forward runs as compiled from then on.

Off with `torch.compile(..., options={"cudagraphs": False})` or
TILEMLIR_TORCH_CUDAGRAPHS=0.
"""

from __future__ import annotations

import logging
import os
import traceback
from pathlib import Path

import torch

LOG = logging.getLogger("tilemlir.torch")
ENV = "TILEMLIR_TORCH_CUDAGRAPHS"


def wanted(options: dict) -> bool:
    """Graphs unless the option or the environment turns them off."""
    if "cudagraphs" in options:
        return bool(options["cudagraphs"])
    return os.environ.get(ENV, "1") not in ("0", "false", "no", "off")


class GraphedForward:
    """`forward` (a compiled graph module, called with AOT autograd's flat
    inputs), replayed as one CUDA graph from its second call on (see the
    module docstring)."""

    def __init__(self, forward, static_inputs: list[int] | None = None):
        self.forward = forward
        self.static_inputs = None if static_inputs is None else set(static_inputs)
        self.off = False
        self.graph: torch.cuda.CUDAGraph | None = None
        self.first: list | None = None  # call 1's inputs: data pointers of tensors, other values as they are
        self.static: list[bool] = []  # per input: read in place
        self.buffers: list = []  # per input: what the graph reads
        self.bases: list = []  # per input: the buffer's memory, where the input is copied (else None)
        self.outputs = None

    def __call__(self, *args):
        if self.off or not _on_one_gpu(args):
            return self.forward(*args)
        if self.graph is None:
            if self.first is None:
                self.first = _identity(args)
                return self.forward(*args)
            return self.capture(args)
        if not self.matches(args):
            return self.forward(*args)
        for base, arg in zip(self.bases, args, strict=True):
            if base is not None:
                base.copy_(_span_view(arg))
        self.graph.replay()
        return _cloned(self.outputs)

    def matches(self, args) -> bool:
        """Whether a call can replay the graph: as many inputs, the same
        static inputs (by storage) and non-tensor values, tensors of the
        captured shapes, strides and dtypes."""
        if len(args) != len(self.buffers):
            return False
        for arg, buffer, static in zip(args, self.buffers, self.static, strict=True):
            if isinstance(buffer, torch.Tensor):
                if not isinstance(arg, torch.Tensor) or arg.shape != buffer.shape or arg.dtype != buffer.dtype \
                        or arg.stride() != buffer.stride():
                    return False
                if static and arg.data_ptr() != buffer.data_ptr():
                    return False
            elif isinstance(arg, torch.Tensor) or arg != buffer:
                return False
        return True

    def capture(self, args):
        identity = _identity(args)
        if len(identity) != len(self.first):
            return self.forward(*args)
        graph, cause = torch.cuda.CUDAGraph(), None
        try:
            self.static = [not isinstance(arg, torch.Tensor)
                           or (now == then if self.static_inputs is None else index in self.static_inputs)
                           for index, (arg, now, then) in enumerate(zip(args, identity, self.first, strict=True))]
            # A copied input lives in a buffer of the memory its view spans, so
            # that views whose elements share memory (an expanded bias) copy too.
            self.bases = [None if static else torch.empty(_span(arg), dtype=arg.dtype, device=arg.device)
                          for arg, static in zip(args, self.static, strict=True)]
            self.buffers = [arg if base is None else base.as_strided(arg.shape, arg.stride())
                            for arg, base in zip(args, self.bases, strict=True)]
            for base, arg in zip(self.bases, args, strict=True):
                if base is not None:
                    base.copy_(_span_view(arg))
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.forward(*self.buffers)
            torch.cuda.current_stream().wait_stream(side)
            # The launches allocate nothing (tensor maps travel as kernel
            # parameters, runtime/cuda_launch.py): an unsafe call of this
            # thread's is an error; other threads' (a data loader pinning
            # memory) are theirs, as in Inductor's CUDA graph trees.
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                try:
                    self.outputs = self.forward(*self.buffers)
                except Exception as error:  # the first failure: ending the capture raises another
                    cause = error
                    raise
        except Exception as error:  # noqa: BLE001 - e.g. an op that synchronises with the host
            cause = cause or error
            frames = traceback.extract_tb(cause.__traceback__)[-3:]
            LOG.warning("tilemlir: the compiled forward could not be captured in a CUDA graph, and runs "
                        "without one: %s: %s (at %s)", type(cause).__name__,
                        str(cause).splitlines()[0] if str(cause) else "",
                        " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames)))
            self.off, self.buffers, self.bases, self.outputs = True, [], [], None
            return self.forward(*args)
        self.graph = graph
        graph.replay()
        return _cloned(self.outputs)


def _span(tensor: torch.Tensor) -> int:
    """Elements from a tensor's first to its last, strides included."""
    if tensor.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True))


def _span_view(tensor: torch.Tensor) -> torch.Tensor:
    """The memory a tensor's view spans, as a 1-D view."""
    return torch.as_strided(tensor, (_span(tensor),), (1,))


def _on_one_gpu(args) -> bool:
    devices = {arg.device for arg in args if isinstance(arg, torch.Tensor)}
    return len(devices) == 1 and next(iter(devices)).type == "cuda"


def _identity(args) -> list:
    return [arg.data_ptr() if isinstance(arg, torch.Tensor) else arg for arg in args]


def _cloned(outputs):
    if isinstance(outputs, torch.Tensor):
        return outputs.clone()
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(_cloned(output) for output in outputs)
    return outputs
