"""Every command README.md and docs/*.md print runs as printed.

The convention (docs/testing.md, "The documents' commands"): in fenced blocks
labelled sh, bash, shell or console (there, the lines after `$ `), a block
with a command of tilemlir's (tile-opt, tile-compile, tile-run, tile-tune,
`python -m tilemlir...`, `python examples/...`, or lit for docs/testing.md's
recipe) is run from the repository
root, every command of it in order in one folder (a later one may read what
an earlier one wrote), and each must exit 0, or N where it ends in
`# expect: exit N`. `make X` is not run; X must be a target of the Makefile. On the line before a fence, `<!-- doc-commands: with toygpu -->`
installs the out-of-tree toygpu family first, `<!-- doc-commands: skip
REASON -->` leaves the block out.

The commands run in a temporary folder of links to the repository's top-level
entries, so relative paths read the repository and bare output names land in
the folder; an output path with a folder in it (`-o tilemlir/...`, `--db`,
`--plot-layout`, `--prepare`, `>`) is rewritten to its file name there, so
the repository stays as it is.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BIN, REPO

DOCUMENTS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
SHELL_LANGUAGES = ("sh", "bash", "shell", "console")
# lit: docs/testing.md's recipe runs it on a copy of examples/lit.
TOOLS = ("tile-opt", "tile-compile", "tile-run", "tile-tune", "lit")
SETUPS = ("toygpu",)
MARKER = re.compile(r"<!--\s*doc-commands:\s*(.*?)\s*-->")
EXPECT = re.compile(r"expect:\s*exit\s+(\d+)")
# Flags whose value is a path the command writes, and shell redirections.
OUTPUT = re.compile(r"(?P<flag>(?<!\S)(?:-o|--output|--db|--plot-layout|--prepare)(?:=|\s+)|(?<!>)>>?\s*)"
                    r"(?P<path>[^\s'\"|;&]+)")
COMMAND_SECONDS = 300


@dataclass(frozen=True)
class Command:
    text: str  # the shell command, comment removed
    line: int  # its first line in the document
    expect: int  # the exit status it must give


@dataclass(frozen=True)
class Block:
    document: str  # its path in the repository
    line: int  # the fence's line
    commands: tuple[Command, ...]  # to run: every command but make, if one is tilemlir's
    make_targets: tuple[str, ...]  # targets of `make` lines
    setup: str | None = None
    skip: str | None = None


def strip_comment(line: str) -> tuple[str, str]:
    """(command, comment): a `#` after whitespace, outside quotes, starts the comment."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def programs(command: str) -> list[list[str]]:
    """The words of each simple command of a pipeline or list, variable assignments dropped."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    stages: list[list[str]] = [[]]
    for token in lexer:
        if token in ("|", "||", "&&", ";", "&"):
            stages.append([])
        elif stages[-1] or not re.fullmatch(r"[A-Za-z_]\w*=.*", token):
            stages[-1].append(token)
    return [stage for stage in stages if stage]


def runs_tilemlir(words: list[str]) -> bool:
    """Whether a simple command runs one of tilemlir's tools or example scripts."""
    program = Path(words[0]).name
    if program in TOOLS:
        return True
    if re.fullmatch(r"python3?", program) and len(words) > 1:
        return (words[1] == "-m" and len(words) > 2 and words[2].startswith("tilemlir")) or \
            words[1].startswith("examples/")
    return False


def parse(document: str, text: str) -> tuple[list[Block], list[str]]:
    """The shell blocks of a markdown document, and what breaks the convention."""
    blocks: list[Block] = []
    problems: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, language = i + 1, fence.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith("```")), len(lines))
        marker = MARKER.fullmatch(lines[i - 1].strip()) if i else None
        i = end + 1
        if language not in SHELL_LANGUAGES:
            if marker:
                problems.append(f"{document}:{start - 1}: a doc-commands marker on a {language or 'plain'} block")
            continue
        setup = skip = None
        if marker:
            word, _, rest = marker.group(1).partition(" ")
            if word == "with" and rest in SETUPS:
                setup = rest
            elif word == "skip" and rest:
                skip = rest
            else:
                problems.append(f"{document}:{start - 1}: unknown marker 'doc-commands: {marker.group(1)}' "
                                f"(known: 'with {'|'.join(SETUPS)}', 'skip REASON')")
        commands, targets, ours = [], [], False
        body = lines[start:end]
        k = 0
        while k < len(body):
            first = k
            raw = body[k]
            while raw.endswith("\\") and k + 1 < len(body):
                k += 1
                raw = raw[:-1].rstrip() + " " + body[k].strip()
            k += 1
            if language == "console":
                if not raw.startswith("$ "):
                    continue
                raw = raw[2:]
            command, comment = strip_comment(raw.strip())
            if not command:
                continue
            where = f"{document}:{start + first + 1}"
            try:
                stages = programs(command)
            except ValueError as error:
                problems.append(f"{where}: cannot read the command ({error}): {command}")
                continue
            if stages and Path(stages[0][0]).name == "make":
                targets += [word for word in stages[0][1:] if not word.startswith("-")]
            else:
                ours = ours or any(runs_tilemlir(stage) for stage in stages)
                expect = EXPECT.search(comment)
                commands.append(Command(command, start + first + 1, int(expect.group(1)) if expect else 0))
        blocks.append(Block(document, start, tuple(commands) if ours else (), tuple(targets), setup, skip))
    return blocks, problems


def read_documents() -> tuple[list[Block], list[str]]:
    blocks, problems = [], []
    for path in DOCUMENTS:
        found, wrong = parse(path.relative_to(REPO).as_posix(), path.read_text())
        blocks += found
        problems += wrong
    return blocks, problems


def redirect_outputs(command: str) -> str:
    """`command` with every output path that names a folder cut to its file name."""
    def cut(match: re.Match) -> str:
        path = match.group("path")
        if "/" not in path or path.startswith("/dev/"):
            return match.group(0)
        return match.group("flag") + Path(path).name
    return OUTPUT.sub(cut, command)


BLOCKS, PROBLEMS = read_documents()
RUNNABLE = [block for block in BLOCKS if block.commands]


def test_documents_follow_the_convention():
    assert not PROBLEMS, "\n".join(PROBLEMS)


def test_the_documents_have_commands():
    """The extraction finds the tools' commands where the documents have them."""
    documents = {block.document for block in RUNNABLE}
    assert {"README.md", "docs/kernels.md", "docs/backends.md", "docs/testing.md"} <= documents
    assert sum(len(block.commands) for block in RUNNABLE) >= 20


def test_make_targets_exist():
    makefile = (REPO / "Makefile").read_text()
    targets = {target for block in BLOCKS for target in block.make_targets}
    assert {"demo", "test"} <= targets
    for target in sorted(targets):
        assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), \
            f"`make {target}` is documented but the Makefile has no target {target}"


@pytest.fixture(scope="module")
def toygpu_site(tmp_path_factory) -> Path:
    from test_out_of_tree_backend import install

    return install(tmp_path_factory.mktemp("toygpu-site"))


def workspace(folder: Path) -> Path:
    """A folder of links to the repository's top-level entries."""
    folder.mkdir()
    for entry in REPO.iterdir():
        if entry.name != ".git":
            (folder / entry.name).symlink_to(entry)
    return folder


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda block: f"{block.document}:{block.line}")
def test_block_runs_as_printed(block: Block, tmp_path, request):
    if block.skip:
        pytest.skip(block.skip)
    folder = workspace(tmp_path / "repo")
    env = {name: value for name, value in os.environ.items()
           if name not in ("TILEMLIR_TUNING_DB", "TILEMLIR_TARGET", "TILEMLIR_ENGINE")}
    env["PATH"] = os.pathsep.join([str(BIN), "/usr/lib/llvm-22/bin", env.get("PATH", "")])
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    if block.setup == "toygpu":
        site = request.getfixturevalue("toygpu_site")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    for command in block.commands:
        result = subprocess.run(["bash", "-o", "pipefail", "-c", redirect_outputs(command.text)],
                                cwd=folder, env=env, capture_output=True, text=True,
                                timeout=COMMAND_SECONDS, check=False)
        assert result.returncode == command.expect and "Traceback" not in result.stderr, (
            f"{block.document}:{command.line}: `{command.text}` exited {result.returncode}, "
            f"the document expects {command.expect}\n{result.stderr[-3000:]}")


# -- the convention itself ----------------------------------------------------

SAMPLE = """\
Text with `tile-opt x.mlir`, not a block.

```sh
.venv/bin/tile-opt a.mlir -p 'builtin.module(cse)'   # a comment
tile-run b.mlir --engine reference \\
    --target amdgpu:gfx942
.venv/bin/tile-opt bad.mlir   # expect: exit 1
echo '# not a comment' | tile-opt -
make demo    # everything
mlir-opt-22 a.mlir
TILEMLIR_TARGET=amdgpu:gfx950 .venv/bin/python examples/python/softmax.py
```

```console
$ tile-compile c.mlir -o out/c.s
output line
```

<!-- doc-commands: skip needs a GPU -->
```sh
tile-tune d.mlir --measure device
```

- in a list item:

  ```sh
  tile-opt e.mlir   # expect: exit 1
  ```

```python
tile-opt = 1
```
"""


def test_commands_are_read_by_the_convention():
    blocks, problems = parse("sample.md", SAMPLE)
    assert problems == []
    assert [(c.text, c.line, c.expect) for c in blocks[0].commands] == [
        (".venv/bin/tile-opt a.mlir -p 'builtin.module(cse)'", 4, 0),
        ("tile-run b.mlir --engine reference --target amdgpu:gfx942", 5, 0),
        (".venv/bin/tile-opt bad.mlir", 7, 1),
        ("echo '# not a comment' | tile-opt -", 8, 0),
        ("mlir-opt-22 a.mlir", 10, 0),
        ("TILEMLIR_TARGET=amdgpu:gfx950 .venv/bin/python examples/python/softmax.py", 11, 0),
    ]
    assert blocks[0].make_targets == ("demo",)
    assert [c.text for c in blocks[1].commands] == ["tile-compile c.mlir -o out/c.s"]
    assert blocks[2].skip == "needs a GPU"
    assert [(c.text, c.expect) for c in blocks[3].commands] == [("tile-opt e.mlir", 1)]
    assert len(blocks) == 4  # the python block is not a shell block
    (other,) = parse("sample.md", "```sh\ncp a b\nls tests\n```\n")[0]
    assert other.commands == ()  # no command of tilemlir's: the block is not run


def test_an_unknown_marker_is_a_problem():
    _, problems = parse("sample.md", "<!-- doc-commands: with tooygpu -->\n```sh\ntile-opt x\n```\n")
    assert problems == [("sample.md:1: unknown marker 'doc-commands: with tooygpu' "
                        "(known: 'with toygpu', 'skip REASON')")]
    _, problems = parse("sample.md", "<!-- doc-commands: skip why -->\n```python\nx = 1\n```\n")
    assert problems == ["sample.md:1: a doc-commands marker on a python block"]


def test_outputs_are_redirected_into_the_working_folder():
    assert redirect_outputs("tile-opt --export-irdl -o tilemlir/dialects/tile.irdl.mlir") == \
        "tile-opt --export-irdl -o tile.irdl.mlir"
    assert redirect_outputs("tile-compile a.mlir --plot-layout=out/l.png -o /dev/null") == \
        "tile-compile a.mlir --plot-layout=l.png -o /dev/null"
    assert redirect_outputs("python -m tilemlir.tools.dialect_doc > docs/dialect.md 2>&1") == \
        "python -m tilemlir.tools.dialect_doc > dialect.md 2>&1"
    assert redirect_outputs("tile-tune g.mlir --db tuning.json") == "tile-tune g.mlir --db tuning.json"
