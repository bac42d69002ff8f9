"""A lit test format: every positive tile-dialect test and every example,
read by stock Debian mlir-opt-22 through the exported IRDL (see
test/Interop/mlir-opt/lit.local.cfg). A file is positive when none of its RUN
lines expects failure."""

import os
import re
import subprocess

import lit.formats
import lit.Test


class StockMlirOpt(lit.formats.TestFormat):
    corpus = ("test/Dialect/tile", "examples")

    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig, localConfig):
        repo = os.path.dirname(testSuite.source_root)
        for directory in self.corpus:
            full = os.path.join(repo, directory)
            for name in sorted(os.listdir(full)):
                if not name.endswith(".mlir"):
                    continue
                with open(os.path.join(full, name), encoding="utf-8") as handle:
                    text = handle.read()
                run_lines = re.findall(r"RUN:(.*)", text)
                if any("verify-diagnostics" in r or "not " in r for r in run_lines):
                    continue
                yield lit.Test.Test(testSuite, path_in_suite + (directory.replace("/", "_") + "__" + name,),
                                    localConfig, file_path=os.path.join(full, name))

    def execute(self, test, litConfig):
        repo = os.path.dirname(test.suite.source_root)
        irdl = os.path.join(repo, "tilemlir", "dialects", "tile.irdl.mlir")
        with open(test.file_path, encoding="utf-8") as handle:
            split = "// -----" in handle.read()
        command = ["mlir-opt-22", f"--irdl-file={irdl}", test.file_path, "-o", os.devnull]
        if split:
            command.insert(1, "--split-input-file")
        result = subprocess.run(command, capture_output=True, text=True,
                                env=test.config.environment, check=False)
        if result.returncode == 0:
            return lit.Test.PASS, ""
        return lit.Test.FAIL, " ".join(command) + "\n" + result.stderr

