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
	@echo "== tile-opt: the whole-problem form, in generic form"
	$(BIN)/tile-opt examples/gemm_whole_problem.mlir --mlir-print-op-generic
	@echo "== stock mlir-opt-22 reads both through the exported IRDL"
	for f in examples/*.mlir; do mlir-opt-22 --irdl-file=tilemlir/dialects/tile.irdl.mlir $$f >/dev/null && echo "  $$f: ok"; done
	@echo "== tile-compile: a GPU-level fp8 MFMA kernel for gfx942, its MFMA lines and resource report"
	@mkdir -p build
	$(BIN)/tile-compile examples/gpu/mfma_fp8_gfx942.mlir --target amdgpu:gfx942 --emit hsaco -o build/mfma_fp8_gfx942.hsaco
	$(BIN)/tile-compile examples/gpu/mfma_fp8_gfx942.mlir --target amdgpu:gfx942 --emit isa | grep -E '^\s+v_mfma'
	$(BIN)/tile-compile examples/gpu/mfma_fp8_gfx942.mlir --target amdgpu:gfx942 --report

test: setup
	$(BIN)/lit -sv --order=lexical test
	$(BIN)/pytest -q test/python

irdl: setup
	$(BIN)/tile-opt --export-irdl -o tilemlir/dialects/tile.irdl.mlir

lint: setup
	$(BIN)/ruff check tilemlir test bench

clean:
	rm -rf $(VENV) test/**/Output build
