# tilemlir: `make demo` runs the main job, `make test` runs the whole suite.
# Both set the machine up first (idempotent): Debian's LLVM 22 tools (version-
# checked) and a .venv installed from requirements.lock (every Python package,
# direct and transitive, pinned with hashes), the project editable on top.

SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
BIN   := $(VENV)/bin
LLVM_PACKAGES := llvm-22 lld-22 mlir-22-tools
# python3-venv: Debian's python3 makes no venv without it; g++: the tests build
# the MetaX backend's C++ (kernels and launcher) against test/metax/maca_host.h.
APT_PACKAGES := $(LLVM_PACKAGES) python3-venv g++
# The LLVM the Python bindings are built from (DESIGN.md section 1): Debian's
# code generators must be the same 22.1 release.
LLVM_VERSION := 22.1
LOCK  := requirements.lock
UV_VERSION := 0.13.9
# Debian's LLVM binaries (llc-22, FileCheck-22, mlir-opt-22, ...) live here.
export PATH := $(CURDIR)/$(BIN):/usr/lib/llvm-22/bin:$(PATH)

.PHONY: setup system demo test irdl lint lock fuzz clean

setup: system $(VENV)/.installed

# Debian's packages first: the venv needs python3-venv, the tests LLVM 22.1.
system:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@for p in $(LLVM_PACKAGES); do \
	  v=$$(dpkg-query -W -f='$${Version}' $$p 2>/dev/null); \
	  case "$$v" in \
	    $(LLVM_VERSION).*|*:$(LLVM_VERSION).*) ;; \
	    *) echo "error: Debian package $$p is version '$$v', but tilemlir needs LLVM $(LLVM_VERSION).x" \
	            "(the release of its MLIR Python bindings); install $$p $(LLVM_VERSION).x" >&2; exit 1;; \
	  esac; \
	done

# Exactly the lock: hashes required, no dependency resolution; then tilemlir itself.
$(VENV)/.installed: $(LOCK) pyproject.toml | system
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes --no-deps -r $(LOCK)
	PYTHONWARNINGS=ignore $(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	touch $@

# Refreshes requirements.lock from pyproject.toml (+ the installers) with uv,
# which runs from its own throwaway venv. Commit the result, then `make test`.
lock:
	test -x build/uv/bin/uv || { python3 -m venv build/uv && build/uv/bin/pip install -q uv==$(UV_VERSION); }
	build/uv/bin/uv pip compile pyproject.toml requirements-setup.in --extra test \
	  --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 --find-links /opt/wheels \
	  --custom-compile-command 'make lock' -o $(LOCK)

demo: setup
	@echo "== the seed article's Python kernel (examples/python/seed_mixed_precision_gemm.py), as printed,"
	@echo "   on gfx942 then gfx950: built from its source, compiled, run in the SIMT emulator vs float64 NumPy"
	$(PY) examples/python/seed_mixed_precision_gemm.py
	TILEMLIR_TARGET=amdgpu:gfx950 $(PY) examples/python/seed_mixed_precision_gemm.py
	@echo "== tile-opt: the seed's FP8 GEMM (kernel form), verified and canonicalized"
	$(BIN)/tile-opt examples/seed_fp8_gemm.mlir --tile-verify --canonicalize --cse
	@echo "== stock mlir-opt-22 reads the examples through the exported IRDL"
	for f in examples/*.mlir examples/kernels/*.mlir; do mlir-opt-22 --irdl-file=tilemlir/dialects/tile.irdl.mlir $$f >/dev/null && echo "  $$f: ok"; done
	@echo "== tile-compile: the seed's FP8 GEMM for gfx942 -> ISA and HSACO; its MFMA lines and report"
	@mkdir -p build
	$(BIN)/tile-compile examples/seed_fp8_gemm.mlir --target amdgpu:gfx942 --emit hsaco -o build/seed_fp8_gemm.gfx942.hsaco
	$(BIN)/tile-compile examples/seed_fp8_gemm.mlir --target amdgpu:gfx942 --emit isa -o build/seed_fp8_gemm.gfx942.s
	@grep -E '^\s+v_mfma' build/seed_fp8_gemm.gfx942.s
	$(BIN)/tile-compile examples/seed_fp8_gemm.mlir --target amdgpu:gfx942 --report -o build/seed_fp8_gemm.gfx942.s
	@echo "== the whole-problem form for gfx950, its fp8 re-typed OCP (the chip's fp8; FNUZ has no exact OCP form): the compiler chose the tiles"
	sed 's/f8E4M3FNUZ/f8E4M3FN/g' examples/gemm_whole_problem.mlir | $(BIN)/tile-compile - --target amdgpu:gfx950 --emit isa | grep -E '^\s+v_mfma' | sort | uniq -c
	@echo "== tile-run: the seed's GEMM in the reference engine and in the SIMT emulator, vs float64 NumPy"
	$(BIN)/tile-run examples/seed_fp8_gemm.mlir --engine reference
	$(BIN)/tile-run examples/seed_fp8_gemm.mlir --engine emulator
	@echo "== beyond GEMM (docs/kernels.md): layernorm on gfx950 and flash attention on gfx942 in the emulator,"
	@echo "   each output against the reference engine; softmax's 128-bit accesses on gfx942"
	$(BIN)/tile-run examples/kernels/layernorm.mlir --engine emulator --target amdgpu:gfx950
	$(BIN)/tile-run examples/kernels/flash_attention.mlir --engine emulator --target amdgpu:gfx942
	$(BIN)/tile-compile examples/kernels/softmax.mlir --target amdgpu:gfx942 --report -o build/softmax.gfx942.s | grep -E '"(global_load_bits|global_store_bits|spills|shared_bytes)"'

# --dist loadgroup: a module with a module-scoped fixture (a g++ build, a tuning
# run) goes to one worker, which builds it once (test/python/conftest.py, xdist_scope).
# compileall first: the lit tests alone start some 550 tool processes, and where
# PYTHONDONTWRITEBYTECODE is set (this project's machines set it) each of them
# would compile tilemlir's modules from source again (0.27 s of CPU a process,
# measured on tile-compile; about a minute of the suite on 2 cores).
test: setup
	$(BIN)/ruff check tilemlir test bench examples
	$(PY) -m compileall -q -j 2 tilemlir
	$(BIN)/lit -sv --order=lexical test
	$(BIN)/pytest -q -n 2 --dist loadgroup test/python

# The long token-level fuzz campaign of tile-opt and tile-compile (all three
# families); `make test` runs 600 cases of it. FUZZ_COUNT=... FUZZ_SEED=... to vary.
FUZZ_COUNT ?= 10000
FUZZ_SEED  ?= 1
fuzz: setup
	$(PY) test/python/fuzz_worker.py --count $(FUZZ_COUNT) --jobs 2 --seed $(FUZZ_SEED) --workdir build/fuzz

irdl: setup
	$(BIN)/tile-opt --export-irdl -o tilemlir/dialects/tile.irdl.mlir

lint: setup
	$(BIN)/ruff check tilemlir test bench examples

clean:
	rm -rf $(VENV) test/**/Output build
