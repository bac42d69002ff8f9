"""The tuning database (tilemlir.tune.db): its file form, its errors, where it
is looked for, and the ranking that fills it (tilemlir.tune.ranking)."""

from __future__ import annotations

import dataclasses
import json
import re
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
KEY = TuningKey("amdgpu:gfx942", "gfx942", "0123456789abcdef", SIGNATURE)
TUNED = TunedConfig((32, 32, 64), 256, 2, "", "v_mfma_f32_16x16x16_f16")
DEFAULT = TunedConfig((32, 32, 32), 256, 2, "", "v_mfma_f32_16x16x16_f16")


def entry(key: TuningKey = KEY, seconds: float = 1e-6) -> TuningEntry:
    return TuningEntry(key, TUNED, seconds, DEFAULT, 2e-6, "model", 8, True, "2026-12-01T00:00:00Z", "0.1.0")


def test_entries_round_trip_one_per_line_sorted(tmp_path):
    """The file is JSON, one entry a line with sorted keys, entries in key
    order; reading it back gives the same entries."""
    path = tmp_path / "tuning.json"
    other = TuningKey("metax:xcore1000", "xcore1000", "fedcba9876543210", dataclasses.replace(SIGNATURE, m=128))
    record_entry(path, entry(other))
    database = record_entry(path, entry())
    text = path.read_text()
    lines = text.splitlines()
    assert lines[0] == '{"format": "tilemlir-tuning-db", "version": 2, "entries": ['
    assert lines[-1] == "]}" and len(lines) == 4
    assert json.loads(lines[1].rstrip(","))["key"]["target"] == "amdgpu:gfx942"  # sorted by key
    for line in lines[1:3]:
        record = json.loads(line.rstrip(","))
        assert list(record) == sorted(record)
    assert json.loads(text)["version"] == 2
    assert load_database(path).entries == database.entries
    assert load_database(path).lookup(KEY) == entry()
    assert load_database(path).lookup(dataclasses.replace(KEY, target_hash="0" * 16)) is None
    assert load_database(path).lookup(dataclasses.replace(KEY, target="amdgpu:renamed")) == entry()  # not compared


def test_an_entry_replaces_its_key_and_no_temporary_file_is_left(tmp_path):
    path = tmp_path / "sub" / "tuning.json"  # the folder is made
    record_entry(path, entry(seconds=3e-6))
    record_entry(path, entry(seconds=1e-6))
    database = load_database(path)
    assert len(database.entries) == 1 and database.lookup(KEY).seconds == 1e-6
    assert sorted(p.name for p in path.parent.iterdir()) == ["tuning.json", "tuning.json.lock"]


def test_an_entry_its_reader_would_refuse_is_not_written(tmp_path):
    """A key the reader refuses (a descriptor file named with a tab) would make
    every later read of the database fail: the writer refuses it instead."""
    path = tmp_path / "tuning.json"
    record_entry(path, entry())
    bad = TuningKey("amdgpu:gfx942 (from a\tb.toml)", "gfx942", "0123456789abcdef", SIGNATURE)
    with pytest.raises(TuningDatabaseError, match="cannot record this entry: 'key': 'target'"):
        record_entry(path, entry(bad))
    assert set(load_database(path).entries) == {KEY}


def test_stopping_waits_for_the_whole_update_not_only_the_write(tmp_path, monkeypatch):
    """tile-tune's interrupt (`stop_writing`) waits while another thread has
    read the database and not yet written it back: stopping then would leave
    the update undone while the run says it was recorded."""
    import threading

    from tilemlir.tune import db

    path = tmp_path / "tuning.json"
    record_entry(path, entry())
    reading, resume = threading.Event(), threading.Event()
    load = db.load_database

    def slow_load(*args, **kwargs):
        reading.set()
        resume.wait(10)
        return load(*args, **kwargs)

    monkeypatch.setattr(db, "load_database", slow_load)
    other = TuningKey("amdgpu:gfx942", "gfx942", "fedcba9876543210", SIGNATURE)
    updater = threading.Thread(target=record_entry, args=(path, entry(other)), daemon=True)
    updater.start()
    assert reading.wait(10)
    try:
        assert not db.stop_writing(timeout=0.2)  # the update is under way: not stopped
        resume.set()
        updater.join(10)
        assert db.stop_writing(timeout=10)
        db.writing().release()
    finally:
        resume.set()
        updater.join(10)
    assert set(load(path).entries) == {KEY, other}


@pytest.mark.parametrize("text, position, message", [
    # Not JSON at all: the position JSON's parser stopped at.
    ('{"format": "tilemlir-tuning-db",\n "version": 2, "entries": [,]}', ":2:28:", "invalid JSON"),
    # JSON, but not ours (someone's settings file).
    ('{"theme": "dark"}', ":1:1:", 'no "format": "tilemlir-tuning-db"'),
    ('[1, 2]', ":1:1:", 'no "format": "tilemlir-tuning-db"'),
    # Written by a newer tilemlir: refused, not misread.
    ('{"format": "tilemlir-tuning-db", "version": 3, "entries": []}', ":1:1:",
     "version 3 is newer than this tilemlir reads (2)"),
    ('{"format": "tilemlir-tuning-db", "version": "1", "entries": []}', ":1:1:",
     "version must be a positive integer"),
    ('{"format": "tilemlir-tuning-db", "version": 2}', ":1:1:", 'no "entries" list'),
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
    path.write_text('{"format": "tilemlir-tuning-db", "version": 2, "entries": [\n'
                    + json.dumps(json.loads(good)["entries"][0], sort_keys=True) + ",\n"
                    + json.dumps(record, sort_keys=True) + "\n]}\n")
    with pytest.raises(TuningDatabaseError, match=r":3:1: error: tuning database entry 2: 'config': "
                                                  r"'block' must be three integers from 1 to 4096, got \[32, 0, 64\]"):
        load_database(path)
    for field, value, said in (("measure", "guess", "'measure' must be model or device"),
                               ("seconds", -1, "'seconds' must be a positive number"),
                               ("complete", "yes", "'complete' must be true or false")):
        bad = dict(json.loads(good)["entries"][0], **{field: value})
        with pytest.raises(TuningDatabaseError, match=said):
            parse_database(json.dumps({"format": "tilemlir-tuning-db", "version": 2, "entries": [bad]}), "x")


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


# --------------------------------------------------------------------------
# What a database entry can do to a compile: the schema is the only way in
# --------------------------------------------------------------------------

GEMM_TARGET = "amdgpu:gfx942"
# The injection the issue reported: a `select` that closes tile-select-mma's
# options and adds a pass of its own.
INJECTED_SELECT = ("prefer=v_mfma_f32_16x16x16_f16},symbol-dce,"
                   "tile-select-mma{prefer=v_mfma_f32_16x16x16_f16")


@pytest.fixture(scope="module")
def tuned_gemm(tmp_path_factory):
    """A whole-problem gemm, its target, and a clean entry for it (as tile-tune
    writes one): (module, target, source path, entry record)."""
    import sys

    from mlir import ir

    from tilemlir.dialects import tile
    from tilemlir.targets import get_target
    from tilemlir.tune.db import entry_json
    from tilemlir.tune.search import tuning_key

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from kernel_text import whole_problem_gemm

    text = whole_problem_gemm(256, 256, 256, "f16", "f16")
    source = tmp_path_factory.mktemp("gemm") / "gemm.mlir"
    source.write_text(text)
    module = ir.Module.parse(text, tile.make_context()).operation
    target = get_target(GEMM_TARGET)
    key = tuning_key(module, target)
    tuned = TunedConfig((64, 64, 64), 256, 2, "prefer=v_mfma_f32_16x16x16", "v_mfma_f32_16x16x16_f16", 2)
    record = entry_json(TuningEntry(key, tuned, 1e-6, DEFAULT, 2e-6, "model", 8, True,
                                    "2026-12-01T00:00:00Z", "0.1.0"))
    return module, target, source, record


def database_text(*records, raw: dict[str, str] | None = None) -> str:
    """A database of `records`, one a line as the writer puts them; each
    `"PLACEHOLDER"` string of `raw` replaced by its JSON text (what json.dumps
    cannot write: 5,001 digits, duplicate members)."""
    text = ('{"format": "tilemlir-tuning-db", "version": 2, "entries": [\n'
            + ",\n".join(json.dumps(r, sort_keys=True) for r in records) + "\n]}\n")
    for placeholder, value in (raw or {}).items():
        text = text.replace(json.dumps(placeholder), value)
    return text


def tile_passes_applied(path: Path, module, target, database=None) -> list:
    """The tile stage's pipeline tile-compile builds with the database at
    `path` (its TuningLookup, then the backend's tile stage), as pass objects
    and upstream element texts; `database`: the file's, already read."""
    from tilemlir.backends.driver import (
        EMIT_TILE_BEFORE,
        CompileOptions,
        spelled_out,
        target_spec,
        tile_pipeline,
    )
    from tilemlir.passes import is_tile_pass, make_pass
    from tilemlir.passes.pipeline_text import parse_pipeline
    from tilemlir.tools.tile_compile import Options, TuningLookup

    lookup = TuningLookup(Options(tuning_db=str(path)))
    lookup.database = database
    options, _ = lookup.apply(module, target, CompileOptions())
    text = spelled_out(tile_pipeline(stop_before=EMIT_TILE_BEFORE, tiling=options.tiling, select=options.select),
                       target_spec(target))
    return [make_pass(e.name, e.options) if is_tile_pass(e.name) else e.text() for e in parse_pipeline(text)]


def clean_passes(config: TunedConfig | None, target) -> list:
    """The same pipeline built from typed values: the passes' own dataclasses
    with `config`'s values (the defaults without one); no text involved."""
    from tilemlir.backends.driver import EMIT_TILE_BEFORE, TILE_PIPELINE, target_spec
    from tilemlir.passes import is_tile_pass, make_pass
    from tilemlir.passes.select_mma import TileSelectMma
    from tilemlir.passes.tiling import TileTiling

    spec = target_spec(target)
    passes = []
    for name in TILE_PIPELINE[:TILE_PIPELINE.index(EMIT_TILE_BEFORE)]:
        if name == "tile-tiling" and config is not None:
            passes.append(TileTiling(block=config.block, threads=config.threads, stages=config.stages, target=spec,
                                     source="tuning-db", split_k=config.split_k if config.split_k > 1 else 0))
        elif name == "tile-select-mma" and config is not None:
            passes.append(TileSelectMma(target=spec, prefer=config.select.removeprefix("prefer=")))
        elif is_tile_pass(name):
            passes.append(make_pass(name, None, {"target": spec}))
        else:
            passes.append(name)
    return passes


def test_the_reported_select_injection_is_refused_with_its_entry(tmp_path, tuned_gemm, capsys):
    """Issue 27.4: a `select` pasted into the pipeline added symbol-dce (exit
    0). It is refused, naming the file, the entry's line and the field, and
    nothing is compiled."""
    from tilemlir.tools import tile_compile

    module, target, source, record = tuned_gemm
    path = tmp_path / "tuning.json"
    path.write_text(database_text(record))
    assert tile_passes_applied(path, module, target) == clean_passes(TunedConfig(**{
        **record["config"], "block": tuple(record["config"]["block"])}), target)
    hostile = json.loads(json.dumps(record))
    hostile["config"]["select"] = INJECTED_SELECT
    path.write_text(database_text(hostile))
    status = tile_compile.main([str(source), "--target", GEMM_TARGET, "--tuning-db", str(path), "--emit", "tile",
                                "--dump-pass-pipeline"])
    out, err = capsys.readouterr()
    assert status == 1 and out == "" and "builtin.module(" not in err  # refused before any pipeline is built
    assert err.startswith(f"{path}:2:1: error: tuning database entry 1: 'config': 'select' must be \"\" or "
                          f"\"prefer=NAME\""), err

    # Formatted by hand (indented, one member a line): the entry's own line and column.
    path.write_text(json.dumps({"format": json.loads(database_text(hostile))["format"], "version": 2,
                                "entries": [record, hostile]}, indent=2))
    status = tile_compile.main([str(source), "--target", GEMM_TARGET, "--tuning-db", str(path), "--emit", "tile"])
    _, err = capsys.readouterr()
    line = path.read_text().splitlines().index("    {", 5) + 1  # the second entry's opening brace
    assert status == 1 and err.startswith(f"{path}:{line}:5: error: tuning database entry 2: "), err


# Hostile values for every field (JSON texts): pipeline syntax, quotes,
# newlines, numbers out of range or of the wrong kind, wrong types.
HOSTILE_STRINGS = ["}", ",", "{", '"', "'", "},symbol-dce,", ",symbol-dce,", INJECTED_SELECT,
                   "prefer=x},symbol-dce", "prefer=x symbol-dce", "prefer=x\nsymbol-dce", "prefer=", "prefer='x'",
                   "prefer=x,y", "a\nb", "a\u0000b", "x" * 5000, " ", "", "wgmma", "prefer=wgmma"]
HOSTILE_NUMBERS = ["0", "-1", "-64", "1.5", "64.0", "1e400", "NaN", "Infinity", "-Infinity", "true", "false",
                   "null", "[]", "{}", '"64"', "9" * 5001, "18446744073709551616", "4097", "[64, 64]",
                   "[64, 64, 64, 64]", "[64, true, 64]", "[64, 64.0, 64]", "[64, -64, 64]", "[64, 64, 1e999]"]
ENTRY_PATHS = [("key", "target"), ("key", "processor"), ("key", "target_hash"), *(("key", "op", f) for f in
               ("m", "n", "k", "a", "b", "c", "accum", "transpose_a", "transpose_b", "reads_c", "layouts")),
               *((part, f) for part in ("config", "default") for f in
                 ("block", "threads", "stages", "select", "instruction", "split_k")),
               ("config", "block", 0), ("config", "block", 2), ("seconds",), ("default_seconds",), ("measure",),
               ("candidates",), ("complete",), ("when",), ("tilemlir",), ("key",), ("key", "op"), ("config",)]


def mutated(record: dict, path: tuple, value) -> dict:
    copy = json.loads(json.dumps(record))
    holder = copy
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return copy


def test_a_database_fuzz_refuses_or_compiles_exactly_the_clean_pipeline(tmp_path, tuned_gemm):
    """Every field of an entry, given every hostile value, an unknown field at
    every level, a member given twice, two entries for one key: each database
    is refused with an error at the entry's line (file and entry), or gives
    the pipeline built from the passes' typed options: never another pass,
    never other options."""
    from tilemlir.tune.db import entry_from_json

    module, target, _, record = tuned_gemm
    clean_key = entry_from_json(record).key
    path = tmp_path / "tuning.json"
    cases = [(f"{'.'.join(map(str, where))} = {value[:40]!r}", database_text(mutated(record, where, "RAW"),
                                                                           raw={"RAW": value}))
             for where in ENTRY_PATHS for value in [json.dumps(s) for s in HOSTILE_STRINGS] + HOSTILE_NUMBERS]
    for where in ((), ("key",), ("key", "op"), ("config",), ("default",)):
        holder = mutated(record, (*where, "unknown_field"), 1) if where else dict(record, unknown_field=1)
        cases.append((f"unknown field in {where}", database_text(holder)))
    line = json.dumps(record, sort_keys=True)
    for member in ('"threads": 256', '"select": "prefer=v_mfma_f32_16x16x16"', '"block": [64, 64, 64]',
                   '"target_hash": "' + record["key"]["target_hash"] + '"', '"target": "amdgpu:gfx942"'):
        assert member in line, member
        name = member.split(":")[0]
        for first in ("1", '"},symbol-dce,"'):
            cases.append((f"{name} twice", database_text().replace(
                "\n]}", line.replace(member, f"{name}: {first}, {member}") + "\n]}")))
    other = mutated(record, ("config", "threads"), 512)
    cases += [("one key, two configurations", database_text(record, other)),
              ("one key, two seconds", database_text(record, dict(record, seconds=3e-6))),
              ("one key, the same entry twice", database_text(record, record)),
              ("entries twice", database_text(record).replace('"entries": [', '"entries": [], "entries": [', 1)),
              ("an unknown top-level field", database_text(record).replace('"version": 2', '"version": 2, "x": 1'))]
    accepted = refused = 0
    for label, text in cases:
        try:
            database = parse_database(text, str(path))  # load_database's reading, without the file system
        except TuningDatabaseError as error:
            refused += 1
            message = str(error)
            assert "\n" not in message and len(message) < 400, (label, message)
            entry_line = 3 if label.startswith("one key") else 1 if "twice" in label and "entries" in label or \
                "top-level" in label else 2
            assert message.startswith(f"{path}:{entry_line}:"), (label, message)
            assert "tuning database entry" in message or "not a tuning database" in message or \
                "tuning database:" in message, (label, message)
            continue
        accepted += 1
        entry = database.lookup(clean_key)
        assert tile_passes_applied(path, module, target, database) == \
            clean_passes(entry and entry.config, target), label
    assert accepted and refused > 10 * accepted, (accepted, refused)


# --------------------------------------------------------------------------
# The key: the problem and the hardware, not the program's names
# --------------------------------------------------------------------------

def splitless(record: dict) -> dict:
    """`record` with a configuration without split-K (the gemm's f16 C takes none)."""
    return dict(record, config=dict(record["config"], split_k=1))


def compile_tile(source: Path, database: Path, *flags: str) -> tuple[str, str]:
    """tile-compile --emit tile with `database`, in process: (the kernel's
    tile.tiling, stderr)."""
    import contextlib
    import io

    from tilemlir.tools import tile_compile

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = tile_compile.main([str(source), "--target", GEMM_TARGET, "--tuning-db", str(database),
                                    "--emit", "tile", *flags])
    assert status == 0, err.getvalue()
    text = out.getvalue()
    return text[text.index("tile.tiling = {"):].split("}", 1)[0], err.getvalue()


def test_renamed_functions_and_values_still_find_their_entry(tmp_path, tuned_gemm):
    """Issue 32.11: renaming @gemm turned config_source from tuning-db into
    model without a word. The key holds the problem, not the names."""
    _, _, source, record = tuned_gemm
    database = tmp_path / "tuning.json"
    database.write_text(database_text(splitless(record)))
    renamed = tmp_path / "renamed.mlir"
    renamed.write_text(source.read_text().replace("@gemm", "@my_matmul").replace("%A", "%lhs")
                       .replace("%zero", "%z"))
    for path in (source, renamed):
        tiling, err = compile_tile(path, database)
        assert 'source = "tuning-db"' in tiling, path
        assert "remark: tuning database" not in err


def test_a_near_match_is_a_remark_and_the_model_decides(tmp_path, tuned_gemm):
    """K = 128 instead of the entry's 256: a miss, which a remark at the gemm
    explains (the entry, and what differs); the cost model's configuration
    is used. A gemm two respects away (M and K) is no near match."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from kernel_text import whole_problem_gemm

    _, _, _, record = tuned_gemm
    database = tmp_path / "tuning.json"
    database.write_text(database_text(splitless(record)))
    other_k = tmp_path / "k128.mlir"
    other_k.write_text(whole_problem_gemm(256, 256, 128, "f16", "f16"))
    tiling, err = compile_tile(other_k, database)
    assert 'source = "model"' in tiling
    line = next(n for n, text in enumerate(other_k.read_text().splitlines(), 1) if '"tile.gemm"' in text)
    assert (f"{other_k}:{line}:3: remark: tuning database {database} has no entry for this gemm "
            f"(256x256x128 f16 x f16 -> f16 (sum in f32, nn)) on amdgpu:gfx942, and the cost model "
            f"chooses its configuration; near matches: the entry for 256x256x256 f16 x f16 -> f16 "
            f"(sum in f32, nn) on amdgpu:gfx942 (K is 256 there, 128 here)\n") in err, err
    assert "remark" not in compile_tile(other_k, database, "--remarks=none")[1]
    assert "remark: tuning database" in compile_tile(other_k, database, "--remarks=tuning-db")[1]
    far = tmp_path / "far.mlir"
    far.write_text(whole_problem_gemm(128, 256, 128, "f16", "f16"))
    tiling, err = compile_tile(far, database)
    assert 'source = "model"' in tiling and "remark: tuning database" not in err


def test_descriptors_with_the_same_facts_share_entries(tmp_path, tuned_gemm):
    """A chip variant that only renames gfx942 has its facts, so its key is
    gfx942's; one with other facts misses, and is gfx942's near match."""
    from tilemlir.targets import load_target_file
    from tilemlir.tune.db import TuningDatabase, entry_from_json

    module, target, _, record = tuned_gemm
    database = TuningDatabase("x", {entry_from_json(record).key: entry_from_json(record)})
    renamed = tmp_path / "renamed.toml"
    renamed.write_text('base = "amdgpu:gfx942"\nname = "gfx942-copy"\n')
    slower = tmp_path / "slower.toml"
    slower.write_text('base = "amdgpu:gfx942"\nname = "gfx942-slow"\n[compute]\nclock_mhz = 1500\n')
    from tilemlir.tune.search import tuning_key

    assert database.lookup(tuning_key(module, load_target_file(renamed))) is not None
    key = tuning_key(module, load_target_file(slower))
    assert database.lookup(key) is None
    ((_, said),) = database.near_matches(key)
    assert said == ["it was tuned for amdgpu:gfx942, whose descriptor's facts differ from amdgpu:gfx942-slow's"]
    assert tuning_key(module, target).differences(dataclasses.replace(key, processor="gfx950")) == \
        ["it was tuned for amdgpu:gfx942-slow (processor gfx950), this is amdgpu:gfx942 (gfx942)"]


def test_a_version_1_file_is_read_and_written_back_as_version_2(tmp_path, tuned_gemm):
    """Version 1 keyed entries by a hash of the IR: an entry for a packaged
    target becomes that target's key; one for a descriptor file cannot (its
    facts were not recorded) and is left out with a warning; of two entries
    version 1 told apart by their IR, the latest stands. Recording an entry
    writes version 2."""
    from tilemlir.diagnostics import ToolWarning
    from tilemlir.tune.search import tuning_key

    module, target, _, record = tuned_gemm
    old = json.loads(json.dumps(record))
    old["key"] = {"target": "amdgpu:gfx942", "ir_hash": "0123456789abcdef",
                  "op": {k: v for k, v in record["key"]["op"].items() if k != "layouts"}}
    older = dict(json.loads(json.dumps(old)), when="2026-11-01T00:00:00Z", seconds=9e-6)
    older["key"]["ir_hash"] = "fedcba9876543210"
    custom = json.loads(json.dumps(old))
    custom["key"]["target"] = "amdgpu:gfx942 (from mine.toml)"
    path = tmp_path / "tuning.json"
    path.write_text('{"format": "tilemlir-tuning-db", "version": 1, "entries": [\n'
                    + ",\n".join(json.dumps(r, sort_keys=True) for r in (older, old, custom)) + "\n]}\n")
    with pytest.warns(ToolWarning, match=r"1 version 1 entry for amdgpu:gfx942 \(from mine.toml\) left out: "
                                         r"version 1 did not record a descriptor file's facts"):
        database = load_database(path)
    (entry,) = database.entries.values()
    assert entry.key == tuning_key(module, target) and entry.seconds == record["seconds"]
    with pytest.warns(ToolWarning):
        record_entry(path, dataclasses.replace(entry, seconds=5e-7))
    assert json.loads(path.read_text())["version"] == 2 and len(load_database(path).entries) == 1
    # Of two that collapse, a device measurement stands over a later model ranking.
    measured = dict(json.loads(json.dumps(older)), measure="device")
    path.write_text('{"format": "tilemlir-tuning-db", "version": 1, "entries": [\n'
                    + ",\n".join(json.dumps(r, sort_keys=True) for r in (measured, old)) + "\n]}\n")
    (entry,) = load_database(path).entries.values()
    assert entry.measure == "device" and entry.seconds == 9e-6


@pytest.mark.parametrize("field, value, said", [
    ("processor", "gfx942 x", "'processor' must be a processor name"),
    ("target_hash", "0123", "'target_hash' must be a hash (16 hexadecimal digits)"),
    ("layouts", ["", ""], "'layouts' must be three layouts of A, B and C"),
    ("layouts", ["", "affine_map<(d0) -> (d0)>", ""], "'layouts' must be three layouts of A, B and C"),
])
def test_a_malformed_key_is_refused(tuned_gemm, field, value, said):
    record = json.loads(json.dumps(tuned_gemm[3]))
    (record["key"]["op"] if field == "layouts" else record["key"])[field] = value
    with pytest.raises(TuningDatabaseError, match=rf"x:2:1: error: tuning database entry 1: 'key': .*{re.escape(said)}"):
        parse_database(database_text(record), "x")


def test_strided_operands_are_part_of_the_problem(tuned_gemm):
    """The same extents on A rows 512 elements apart: another problem."""
    from mlir import ir

    from tilemlir.dialects import tile
    from tilemlir.tune.search import tuning_key

    module, target, source, _ = tuned_gemm
    text = source.read_text().replace("%A: memref<256x256xf16>", "%A: memref<256x256xf16, strided<[512, 1]>>") \
        .replace("transpose_b = false} : (memref<256x256xf16>,", "transpose_b = false} : "
                 "(memref<256x256xf16, strided<[512, 1]>>,")
    strided = tuning_key(ir.Module.parse(text, tile.make_context()).operation, target)
    assert strided.op.layouts == ("strided<[512, 1], offset: 0>", "", "")
    assert strided != tuning_key(module, target)
    assert tuning_key(module, target).differences(strided) == ["the operands' memory layouts differ"]


# --------------------------------------------------------------------------
# Reading the file: as descriptors are read
# --------------------------------------------------------------------------

def test_a_fifo_is_refused_not_waited_on(tmp_path):
    """Issue 27.5: $TILEMLIR_TUNING_DB naming a FIFO hung tile-compile for
    ever (no writer ever comes); it is refused as not a regular file."""
    import os
    import threading

    fifo = tmp_path / "tuning.fifo"
    os.mkfifo(fifo)
    path = database_path(None, {ENVIRONMENT_VARIABLE: str(fifo)})
    outcome = []

    def read() -> None:
        try:
            load_database(path)
        except TuningDatabaseError as error:
            outcome.append(str(error))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # blocked in open(): let it go before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert outcome == [f"{fifo}: error: cannot read the tuning database: not a regular file"]


def test_a_huge_number_nan_or_deep_nesting_is_a_located_error(tmp_path):
    """Issue 27.5: a 5,001-digit integer ended in `internal error: ValueError`;
    it, NaN and JSON nested past the recursion limit are errors at their
    position in the file."""
    header = '{"format": "tilemlir-tuning-db", "version": 2, "entries": [\n'
    for body, said in ((f'{{"candidates": {"7" * 5001}}}', (":2:16: error: not a tuning database: an integer of "
                                                             "5001 digits (no field holds more than 19)")),
                       ('{"seconds": NaN}', ":2:13: error: not a tuning database: NaN is not a JSON value"),
                       ("[" * 100_000 + "]" * 100_000, ":1:1: error: not a tuning database: JSON nested too deeply")):
        path = tmp_path / "db.json"
        path.write_text(header + body + "\n]}\n")
        with pytest.raises(TuningDatabaseError) as caught:
            load_database(path)
        assert str(caught.value) == f"{path}{said}"


def test_a_device_a_folder_or_a_huge_file_is_refused_unread(tmp_path):
    """Issue 27.5: /dev/zero ended in `internal error: MemoryError`; only a
    regular file of at most MAX_DATABASE_BYTES is read (as descriptors are)."""
    with pytest.raises(TuningDatabaseError) as caught:
        load_database("/dev/zero")
    assert str(caught.value) == "/dev/zero: error: cannot read the tuning database: not a regular file"
    from tilemlir.tune.db import MAX_DATABASE_BYTES

    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_DATABASE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(TuningDatabaseError, match=rf"^{huge}: error: cannot read the tuning database: "
                                                  rf"larger than {MAX_DATABASE_BYTES} bytes$"):
        load_database(huge)
    with pytest.raises(TuningDatabaseError, match="cannot read the tuning database: not a regular file"):
        load_database(tmp_path)
