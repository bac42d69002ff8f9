"""`import tilemlir as tilelang; tilelang.profiler.do_bench(...)`: TileLang's
module path for the profiler, which lives in tilemlir.language.profiler."""

from tilemlir.language.profiler import Profiler, do_bench

__all__ = ["Profiler", "do_bench"]
