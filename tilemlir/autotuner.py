"""`tilelang.autotune` on tilemlir: choose a factory's configuration.

    @tilemlir.autotune(configs=[{"block_M": 64, "block_N": 64}, {"block_M": 32, "block_N": 64}])
    @tilemlir.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=64, block_N=64, ...): ...

    kernel = matmul(256, 256, 256)     # the chosen configuration's JITKernel
    kernel.autotune_result.config      # {"block_M": ..., "block_N": ...}

`configs` is a list of dicts of the factory's keyword arguments, or a callable
taking the call's arguments and returning one. Each configuration is built and
compiled for the kernel's target; one that fails (does not verify, does not fit
the chip) is skipped. The rule that chooses among those that compile:

* the kernel runs on a GPU here (engine "device"): each is timed on the device
  (`tilemlir.profiler.do_bench`, `warmup`/`rep` ms) and the fastest wins;
* otherwise (emulator, reference engine): the cost model (`tilemlir.cost.model`)
  predicts each one's time where the kernel is one T.gemm in a loop that
  tilemlir's model understands (its block from the gemm's tiles, its grid,
  threads and pipeline stages from the kernel), and the fastest prediction
  wins; with no prediction for any, the first configuration that compiles.

With `ref_prog` (and not `skip_check`), the chosen kernel must also match
`ref_prog` on generated inputs (`get_profiler().assert_allclose`, `rtol`,
`atol`, `max_mismatched_ratio`); one that does not is dropped for the next.
The choice is kept per call arguments. TileLang's other keywords
(`timeout`, `supply_type`, `cache_input_tensors`, ...) are accepted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from tilemlir.diagnostics import UserError
from tilemlir.language.api import TileLangError
from tilemlir.language.kernel import JITFunction, JITKernel, jit


@dataclass
class AutotuneResult:
    """The configuration chosen, its time in milliseconds (`measured`: timed on
    the device; else the cost model's prediction, or None without one) and
    each candidate's outcome."""

    config: dict
    latency: float | None
    measured: bool
    candidates: list[tuple[dict, str]] = field(default_factory=list)
    kernel: JITKernel | None = None


def autotune(func: Callable | None = None, *, configs=None, warmup: float = 25, rep: float = 100,
             ref_prog: Callable | None = None, rtol: float = 1e-2, atol: float = 1e-2,
             max_mismatched_ratio: float = 0.01, skip_check: bool = False, supply_type=None, **_ignored):
    """`@tilemlir.autotune(configs=...)` above `@tilemlir.jit(...)` (see the module docstring)."""
    if configs is None:
        raise TileLangError("autotune needs configs= (a list of dicts of the factory's arguments, or a callable)")

    def decorate(function):
        return AutoTunedFunction(function, configs=configs, warmup=warmup, rep=rep, ref_prog=ref_prog,
                                 rtol=rtol, atol=atol, max_mismatched_ratio=max_mismatched_ratio,
                                 skip_check=skip_check, supply_type=supply_type)

    return decorate if func is None else decorate(func)


class AutoTunedFunction:
    """A factory whose configuration `autotune` chooses per call."""

    def __init__(self, function, *, configs, warmup, rep, ref_prog, rtol, atol, max_mismatched_ratio, skip_check,
                 supply_type):
        self.jit = function if isinstance(function, JITFunction) else jit(function)
        if not self.jit.factory:
            raise TileLangError(f"autotune: '{self.jit.function.__name__}' must be a factory returning a "
                                f"@T.prim_func (its configurations are its keyword arguments)")
        functools.update_wrapper(self, self.jit.function)
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.ref_prog, self.skip_check = ref_prog, skip_check
        self.tolerances = {"rtol": rtol, "atol": atol, "max_mismatched_ratio": max_mismatched_ratio}
        self.supply_type = supply_type
        self._chosen: dict = {}

    def __call__(self, *args, **kwargs) -> JITKernel:
        try:
            import os

            from tilemlir.language.kernel import ENGINE_ENV
            from tilemlir.targets.selection import TARGET_ENVIRONMENT

            # The choice holds for the chip and engine it was made on: their settings are in the key.
            key = repr((args, sorted(kwargs.items()), os.environ.get(TARGET_ENVIRONMENT), os.environ.get(ENGINE_ENV)))
            if key not in self._chosen:
                self._chosen[key] = self.tune(args, kwargs)
            return self._chosen[key]
        except UserError as error:
            raise error.with_traceback(None) from None

    def candidate_configs(self, args, kwargs) -> list[dict]:
        configs = self.configs(*args, **kwargs) if callable(self.configs) else self.configs
        configs = [dict(c) for c in configs]
        if not configs or not all(isinstance(c, dict) for c in configs):
            raise TileLangError("autotune: configs must be a non-empty list of dicts")
        merged = []
        for config in configs:
            config.update(kwargs)  # arguments the caller gave win over the configurations'
            if config not in merged:
                merged.append(config)
        return merged

    def tune(self, args, kwargs) -> JITKernel:
        outcomes: list[tuple[dict, str]] = []
        compiled: list[tuple[dict, JITKernel]] = []
        for config in self.candidate_configs(args, kwargs):
            try:
                kernel = self.jit(*args, **config)
                kernel.compile()
            except UserError as error:
                outcomes.append((config, f"does not compile: {str(error).splitlines()[0]}"))
                continue
            compiled.append((config, kernel))
        if not compiled:
            reasons = "; ".join(f"{config}: {why}" for config, why in outcomes)
            raise TileLangError(f"autotune: no configuration of '{self.jit.function.__name__}' compiles ({reasons})")
        measured = compiled[0][1].engine == "device"
        ranked = []
        for position, (config, kernel) in enumerate(compiled):
            if measured:
                try:
                    latency = kernel.get_profiler(self.supply_type).do_bench(warmup=self.warmup, rep=self.rep)
                except UserError as error:  # it compiled but does not launch: skipped, as one that fails
                    outcomes.append((config, f"does not run: {str(error).splitlines()[0]}"))
                    continue
                outcomes.append((config, f"measured {latency:.4g} ms"))
            else:
                seconds = predicted_seconds(kernel)
                latency = None if seconds is None else seconds * 1e3
                outcomes.append((config, "no prediction" if latency is None else f"predicted {latency:.4g} ms"))
            ranked.append((latency if latency is not None else float("inf"), position, config, kernel))
        ranked.sort(key=lambda entry: (entry[0], entry[1]))
        for latency, _, config, kernel in ranked:
            if self.ref_prog is not None and not self.skip_check:
                try:
                    kernel.get_profiler(self.supply_type).assert_allclose(self.ref_prog, **self.tolerances)
                except AssertionError as error:
                    outcomes.append((config, f"does not match ref_prog: {error}"))
                    continue
            chosen = {k: v for k, v in config.items() if k not in kwargs}
            kernel.autotune_result = AutotuneResult(chosen, None if latency == float("inf") else latency,
                                                    measured, outcomes, kernel)
            return kernel
        raise TileLangError(f"autotune: no configuration of '{self.jit.function.__name__}' matches ref_prog")


def predicted_seconds(kernel: JITKernel) -> float | None:
    """The cost model's time for a kernel that is one T.gemm in one counted
    loop (the TileLang gemm): block from the gemm's tiles, the grid's first
    two extents as N and M blocks and its third as split-K, threads and
    `num_stages` as written. None when the kernel is not of that form or the
    model has no instruction for it."""
    from mlir import ir

    from tilemlir.cost.model import DoesNotFit, GemmProblem, KernelConfig, predict
    from tilemlir.dialects import attributes
    from tilemlir.irutil import walk
    from tilemlir.passes.gemm_configs import instruction_for
    from tilemlir.passes.gemm_facts import gemm_shape

    with kernel.built.module.context:
        ops = list(walk(kernel.built.module.operation))
        kernels = [op for op in ops if op.name == "tile.kernel"]
        gemms = [op for op in ops if op.name == "tile.gemm"]
        if len(kernels) != 1 or len(gemms) != 1:
            return None
        grid = list(ir.DenseI64ArrayAttr(kernels[0].attributes["grid"])) + [1, 1]
        threads = ir.IntegerAttr(kernels[0].attributes["threads"]).value
        loop = gemms[0].parent
        while loop is not None and loop.name != "scf.for":
            loop = loop.parent
        trips = _trip_count(loop) if loop is not None else None
        if trips is None:
            return None
        stages = attributes.NUM_STAGES.read(loop) or 1
        shape = gemm_shape(gemms[0])
        split_k = grid[2]
        problem = GemmProblem(m=shape.m * grid[1], n=shape.n * grid[0], k=shape.k * trips * split_k, a=shape.a,
                              b=shape.b, c=shape.c, accum=shape.accum, transpose_a=shape.transpose_a,
                              transpose_b=shape.transpose_b)
        block = (shape.m, shape.n, shape.k)
        chosen = instruction_for(problem, block, threads, kernel.target)
        if isinstance(chosen, str):
            return None
        row, split, group = chosen
        try:
            return predict(problem, KernelConfig(block, threads, stages, row, split, group, split_k),
                           kernel.target).seconds
        except (DoesNotFit, ValueError):
            return None


def _trip_count(loop) -> int | None:
    from mlir import ir

    bounds = []
    for value in list(loop.operands)[:3]:
        owner = value.owner
        if not isinstance(owner, ir.OpView) and not isinstance(owner, ir.Operation):
            return None
        if owner.name != "arith.constant":
            return None
        bounds.append(ir.IntegerAttr(owner.attributes["value"]).value)
    lower, upper, step = bounds
    return max(0, -(-(upper - lower) // step)) if step > 0 else None


__all__ = ["AutoTunedFunction", "AutotuneResult", "autotune", "predicted_seconds"]
