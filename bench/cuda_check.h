// CHECK(call): a CUDA runtime call that must succeed, else the program says
// which call failed and why, and exits 1 (bench/memory_latency.cu, bench/mma_rate.cu).
#pragma once
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(err_));                \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
