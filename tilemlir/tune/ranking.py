"""The ranking of one tile-tune run, and the database entry it makes.

`Ranking` collects each candidate's result as it arrives (in any order),
knows the best so far and the default's, and gives the `TuningEntry` to
record: after every result once the default's is known, so that an
interrupted run leaves the best of what it ranked (`complete` False), and at
the end. Ties go to the default, then to the earlier candidate (the model's
order), so a tuned configuration differs from the default only where it is
strictly faster under the same measure.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from tilemlir.tune.db import TunedConfig, TuningEntry, TuningKey


@dataclass(frozen=True)
class Result:
    """One candidate's outcome: its seconds under the run's measure, or why it has none."""

    index: int
    config: TunedConfig
    default: bool  # tile-compile's own choice
    seconds: float | None
    error: str = ""
    compile_seconds: float | None = None


def tilemlir_version() -> str:
    from tilemlir.version import __version__

    return __version__


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Ranking:
    key: TuningKey
    total: int  # candidates in the run
    measure: str  # "model" or "device"
    results: dict[int, Result] = field(default_factory=dict)

    def add(self, result: Result) -> None:
        self.results[result.index] = result

    def ranked(self) -> list[Result]:
        """Every result, fastest first (the rest after, in candidate order)."""
        return sorted(self.results.values(),
                      key=lambda r: (r.seconds is None, r.seconds or 0.0, not r.default, r.index))

    def best(self) -> Result | None:
        ranked = self.ranked()
        return ranked[0] if ranked and ranked[0].seconds is not None else None

    def default(self) -> Result | None:
        return next((r for r in self.results.values() if r.default), None)

    def done(self) -> bool:
        return len(self.results) == self.total

    def entry(self) -> TuningEntry | None:
        """The database entry this ranking supports: None before the default's
        result is in (or when nothing succeeded)."""
        best, default = self.best(), self.default()
        if best is None or default is None:
            return None
        return TuningEntry(
            key=self.key,
            config=best.config,
            seconds=best.seconds,
            default=default.config,
            default_seconds=default.seconds,
            measure=self.measure,
            candidates=sum(r.seconds is not None for r in self.results.values()),
            complete=self.done(),
            when=utc_now(),
            tilemlir=tilemlir_version(),
        )
