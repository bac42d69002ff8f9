# tilemlir: `make demo` runs the main job, `make test` runs the whole suite.
# Both set the machine up first (idempotent): Debian's LLVM 22 tools and a
# .venv with the project installed editable and the pinned stack of DESIGN.md.

SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
BIN   := $(VENV)/bin
APT_PACKAGES := llvm-22 lld-22 mlir-22-tools
# Debian's LLVM binaries (llc-22, FileCheck-22, mlir-opt-22, ...) live here.
export PATH := $(CURDIR)/$(BIN):/usr/lib/llvm-22/bin:$(PATH)

.PHONY: setup demo test lit pytest irdl lint clean

setup: $(VENV)/.installed
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip >/dev/null
	$(PY) -m pip install -q -e '.[test]'
	touch $@

demo: setup
	@echo "== tile-opt: the seed's FP8 GEMM (kernel form), verified and canonicalized"
	$(BIN)/tile-opt examples/seed_fp8_gemm.mlir --tile-verify --canonicalize --cse
	@echo "== stock mlir-opt-22 reads the examples through the exported IRDL"
	for f in examples/*.mlir; do mlir-opt-22 --irdl-file=tilemlir/dialects/tile.irdl.mlir $$f >/dev/null && echo "  $$f: ok"; done
	@echo "== tile-compile: the seed's FP8 GEMM for gfx942 -> ISA and HSACO; its MFMA lines and report"
	@mkdir -p build
	$(BIN)/tile-compile examples/seed_fp8_gemm.mlir --target amdgpu:gfx942 --emit hsaco -o build/seed_fp8_gemm.gfx942.hsaco
	$(BIN)/tile-compile examples/seed_fp8_gemm.mlir --target amdgpu:gfx942 --emit isa -o build/seed_fp8_gemm.gfx942.s
	@grep -E '^\s+v_mfma' build/seed_fp8_gemm.gfx942.s
	$(BIN)/tile-compile examples/seed_fp8_gemm.mlir --target amdgpu:gfx942 --report
	@echo "== the whole-problem form for gfx950 (OCP fp8): the compiler chose the tiles"
	$(BIN)/tile-compile examples/gemm_whole_problem.mlir --target amdgpu:gfx950 --emit isa | grep -E '^\s+v_mfma' | sort | uniq -c
	@echo "== tile-run: the seed's GEMM in the reference engine and in the SIMT emulator, vs float64 NumPy"
	$(BIN)/tile-run examples/seed_fp8_gemm.mlir --engine reference
	$(BIN)/tile-run examples/seed_fp8_gemm.mlir --engine emulator

test: setup
	$(BIN)/ruff check tilemlir test bench
	$(BIN)/lit -sv --order=lexical test
	$(BIN)/pytest -q test/python

irdl: setup
	$(BIN)/tile-opt --export-irdl -o tilemlir/dialects/tile.irdl.mlir

lint: setup
	$(BIN)/ruff check tilemlir test bench

clean:
	rm -rf $(VENV) test/**/Output build
