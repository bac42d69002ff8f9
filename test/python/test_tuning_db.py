"""The tuning database (tilemlir.tune.db): its file form, its errors, where it
is looked for, and the ranking that fills it (tilemlir.tune.ranking)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tilemlir.tune.db import (
    ENVIRONMENT_VARIABLE,
    OpSignature,
    TunedConfig,
    TuningDatabaseError,
    TuningEntry,
    TuningKey,
    cache_path,
    database_path,
    load_database,
    parse_database,
    record_entry,
)
from tilemlir.tune.ranking import Ranking, Result

SIGNATURE = OpSignature(256, 256, 256, "f16", "f16", "f16", "f32", False, False, False)
KEY = TuningKey("amdgpu:gfx942", SIGNATURE, "0123456789abcdef")
TUNED = TunedConfig((32, 32, 64), 256, 2, "", "v_mfma_f32_16x16x16_f16")
DEFAULT = TunedConfig((32, 32, 32), 256, 2, "", "v_mfma_f32_16x16x16_f16")


def entry(key: TuningKey = KEY, seconds: float = 1e-6) -> TuningEntry:
    return TuningEntry(key, TUNED, seconds, DEFAULT, 2e-6, "model", 8, True, "2026-12-01T00:00:00Z", "0.1.0")


def test_entries_round_trip_one_per_line_sorted(tmp_path):
    """The file is JSON, one entry a line with sorted keys, entries in key
    order; reading it back gives the same entries."""
    path = tmp_path / "tuning.json"
    other = TuningKey("metax:xcore1000", dataclasses.replace(SIGNATURE, m=128), "fedcba9876543210")
    record_entry(path, entry(other))
    database = record_entry(path, entry())
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0] == '{"format": "tilemlir-tuning-db", "version": 1, "entries": ['
    assert lines[-1] == "]}" and len(lines) == 4
    assert json.loads(lines[1].rstrip(","))["key"]["target"] == "amdgpu:gfx942"  # sorted by key
    for line in lines[1:3]:
        record = json.loads(line.rstrip(","))
        assert list(record) == sorted(record)
    assert json.loads(text)["version"] == 1
    assert load_database(path).entries == database.entries
    assert load_database(path).lookup(KEY) == entry()
    assert load_database(path).lookup(dataclasses.replace(KEY, ir_hash="0")) is None


def test_an_entry_replaces_its_key_and_no_temporary_file_is_left(tmp_path):
    path = tmp_path / "sub" / "tuning.json"  # the folder is made
    record_entry(path, entry(seconds=3e-6))
    record_entry(path, entry(seconds=1e-6))
    database = load_database(path)
    assert len(database.entries) == 1 and database.lookup(KEY).seconds == 1e-6
    assert sorted(p.name for p in path.parent.iterdir()) == ["tuning.json", "tuning.json.lock"]


@pytest.mark.parametrize("text, position, message", [
    # Not JSON at all: the position JSON's parser stopped at.
    ('{"format": "tilemlir-tuning-db",\n "version": 1, "entries": [,]}', ":2:28:", "invalid JSON"),
    # JSON, but not ours (someone's settings file).
    ('{"theme": "dark"}', ":1:1:", 'no "format": "tilemlir-tuning-db"'),
    ('[1, 2]', ":1:1:", 'no "format": "tilemlir-tuning-db"'),
    # Written by a newer tilemlir: refused, not misread.
    ('{"format": "tilemlir-tuning-db", "version": 2, "entries": []}', ":1:1:",
     "version 2 is newer than this tilemlir reads (1)"),
    ('{"format": "tilemlir-tuning-db", "version": "1", "entries": []}', ":1:1:",
     "version must be a positive integer"),
    ('{"format": "tilemlir-tuning-db", "version": 1}', ":1:1:", 'no "entries" list'),
])
def test_a_corrupt_foreign_or_newer_file_is_an_error_naming_it(tmp_path, text, position, message):
    path = tmp_path / "tuning.json"
    path.write_text(text)
    with pytest.raises(TuningDatabaseError) as caught:
        load_database(path)
    assert str(caught.value).startswith(f"{path}{position} error: ")
    assert message in str(caught.value)


def test_a_malformed_entry_names_its_line_and_field(tmp_path):
    good = json.dumps(json.loads(parse_database_text()), sort_keys=True)
    record = json.loads(parse_database_text())["entries"][0]
    record["config"]["block"] = [32, 0, 64]  # a zero block: an edited file
    path = tmp_path / "tuning.json"
    path.write_text('{"format": "tilemlir-tuning-db", "version": 1, "entries": [\n'
                    + json.dumps(json.loads(good)["entries"][0], sort_keys=True) + ",\n"
                    + json.dumps(record, sort_keys=True) + "\n]}\n")
    with pytest.raises(TuningDatabaseError, match=r":3:1: error: tuning database entry 2: 'config': "
                                                  r"'block' must be three positive integers"):
        load_database(path)
    for field, value, said in (("measure", "guess", "'measure' must be model or device"),
                               ("seconds", -1, "'seconds' must be a positive number"),
                               ("complete", "yes", "'complete' must be true or false")):
        bad = dict(json.loads(good)["entries"][0], **{field: value})
        with pytest.raises(TuningDatabaseError, match=said):
            parse_database(json.dumps({"format": "tilemlir-tuning-db", "version": 1, "entries": [bad]}), "x")


def parse_database_text() -> str:
    from tilemlir.tune.db import TuningDatabase

    return TuningDatabase("x", {KEY: entry()}).text()


def test_a_missing_or_unreadable_file(tmp_path):
    with pytest.raises(TuningDatabaseError, match="does not exist"):
        load_database(tmp_path / "none.json")
    assert load_database(tmp_path / "none.json", missing_ok=True).entries == {}
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(TuningDatabaseError, match="not UTF-8"):
        load_database(binary)
    with pytest.raises(TuningDatabaseError, match="cannot read"):
        load_database(tmp_path)  # a folder


def test_where_the_database_is_looked_for(tmp_path):
    """--tuning-db, else $TILEMLIR_TUNING_DB, else the cache file (when
    reading, only if it exists)."""
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path / "home")}
    assert cache_path(cache) == tmp_path / "cache" / "tilemlir" / "tuning.json"
    assert cache_path({"HOME": str(tmp_path / "home")}) == tmp_path / "home" / ".cache" / "tilemlir" / "tuning.json"
    assert cache_path({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path("/h/.cache/tilemlir/tuning.json")
    assert database_path(None, cache) is None
    assert database_path(None, cache, for_writing=True) == cache_path(cache)
    cache_path(cache).parent.mkdir(parents=True)
    cache_path(cache).write_text("")
    assert database_path(None, cache) == cache_path(cache)
    with_variable = {**cache, ENVIRONMENT_VARIABLE: str(tmp_path / "env.json")}
    assert database_path(None, with_variable) == tmp_path / "env.json"
    assert database_path("given.json", with_variable) == Path("given.json")


def test_the_ranking_keeps_the_best_so_far_and_prefers_the_default_on_a_tie():
    """What an interrupted run records: nothing before the default's result,
    then the best of what came in, marked incomplete."""
    ranking = Ranking(KEY, 4, "model")
    ranking.add(Result(2, TUNED, False, 1e-6, "", 1.0))
    assert ranking.entry() is None  # the default's time is not known yet
    ranking.add(Result(0, DEFAULT, True, 2e-6, "", 1.0))
    partial = ranking.entry()
    assert partial.config == TUNED and partial.default_seconds == 2e-6
    assert not partial.complete and partial.candidates == 2
    ranking.add(Result(1, TunedConfig((64, 64, 32), 256, 2), False, None, "did not compile"))
    ranking.add(Result(3, TunedConfig((64, 32, 32), 256, 2), False, 1e-6, "", 1.0))
    final = ranking.entry()
    assert final.complete and final.candidates == 3
    assert final.config == TUNED  # the tie goes to the earlier candidate
    tie = Ranking(KEY, 2, "model")
    tie.add(Result(1, TUNED, False, 2e-6))
    tie.add(Result(0, DEFAULT, True, 2e-6))
    assert tie.entry().config == DEFAULT and tie.entry().seconds <= tie.entry().default_seconds
