// Load-to-use latency of global memory on an NVIDIA GPU, in SM clocks: the
// fact the cost model (tilemlir/tune/model.py) reads as memory.latency_clocks.
//
//     nvcc -O2 -arch=sm_90a -o build/memory_latency bench/memory_latency.cu && build/memory_latency
//
// One thread walks a random cycle through a buffer, one 4-byte index per
// 128-byte line (no two steps share a line), so every load depends on the
// last and nothing overlaps; clock64() around STEPS steps over STEPS gives
// the clocks of one load. The loads bypass L1 (ld.global.cg), as the
// kernels' cp.async.cg and TMA copies do. Buffers: 8 MiB (L2 hits: the
// H200's L2 is 60 MB) and 1 GiB (device memory: far beyond L2). Each launch
// walks twice and times the second walk (the first warms the TLB and, for
// the small buffer, the L2); the median of 5 launches is printed.
#include <algorithm>
#include <random>
#include <vector>

#include "cuda_check.h"

constexpr int kStride = 32;  // 4-byte indices per 128-byte line
constexpr int kSteps = 4096;

__global__ void chase(const unsigned* next, unsigned start, unsigned long long* clocks, unsigned* sink) {
  unsigned i = start;
  for (int s = 0; s < kSteps; ++s) i = __ldcg(next + i);  // warm the TLB (and the L2)
  long long begin = clock64();
  for (int s = 0; s < kSteps; ++s) i = __ldcg(next + i);
  long long end = clock64();
  *clocks = static_cast<unsigned long long>(end - begin);
  *sink = i;
}

static double clocks_per_load(size_t bytes) {
  size_t lines = bytes / (kStride * sizeof(unsigned));
  std::vector<unsigned> order(lines);
  for (size_t l = 0; l < lines; ++l) order[l] = static_cast<unsigned>(l);
  std::mt19937 rng(12345);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<unsigned> host(lines * kStride, 0);
  for (size_t l = 0; l < lines; ++l)
    host[static_cast<size_t>(order[l]) * kStride] = order[(l + 1) % lines] * kStride;
  unsigned* next;
  unsigned long long* clocks;
  unsigned* sink;
  CHECK(cudaMalloc(&next, host.size() * sizeof(unsigned)));
  CHECK(cudaMalloc(&clocks, sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMemcpy(next, host.data(), host.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    chase<<<1, 1>>>(next, order[0] * kStride, clocks, sink);
    CHECK(cudaGetLastError());
    unsigned long long c = 0;
    CHECK(cudaMemcpy(&c, clocks, sizeof(c), cudaMemcpyDeviceToHost));
    runs.push_back(static_cast<double>(c) / kSteps);
  }
  CHECK(cudaFree(next));
  CHECK(cudaFree(clocks));
  CHECK(cudaFree(sink));
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const size_t sizes[] = {8u << 20, 1u << 30};
  const char* names[] = {"8 MiB (L2)", "1 GiB (device memory)"};
  for (int s = 0; s < 2; ++s)
    std::printf("%-22s %8.1f clocks per dependent load\n", names[s], clocks_per_load(sizes[s]));
  return 0;
}
