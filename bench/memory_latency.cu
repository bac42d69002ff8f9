// Load-to-use latency of global memory on an NVIDIA GPU, in SM clocks: the
// fact the cost model (tilemlir/cost/model.py) reads as memory.latency_clocks.
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
//
// Then the 1 GiB walk again while every other SM streams through another
// buffer (a GEMM's pipeline waits for its loads with the memory system that
// busy): the loaded latency, printed with the bandwidth the streaming reached.
// The descriptor states the idle figure: the model has one latency, not one
// per load level (bench/results/tune-model-h200.md says what the loaded one
// would change).

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

// Reads `words` 16-byte words `passes` times over, all threads of all blocks
// striding through them; the sum keeps the loads live.
__global__ void stream(const float4* data, size_t words, int passes, float* sink) {
  float total = 0.f;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int p = 0; p < passes; ++p)
    for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words; i += stride) {
      float4 v = __ldcg(data + i);
      total += v.x + v.y + v.z + v.w;
    }
  if (total == 1234.5f) sink[0] = total;
}

static double clocks_per_load(size_t bytes, int loaded_sms = 0) {
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
  cudaStream_t busy, walk;
  CHECK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&walk, cudaStreamNonBlocking));
  float4* load = nullptr;
  float* load_sink = nullptr;
  const size_t load_words = (size_t{2} << 30) / sizeof(float4);
  const int passes = 40;
  if (loaded_sms) {
    CHECK(cudaMalloc(&load, load_words * sizeof(float4)));
    CHECK(cudaMemset(load, 0, load_words * sizeof(float4)));
    CHECK(cudaMalloc(&load_sink, sizeof(float)));
  }
  for (int r = 0; r < 5; ++r) {
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    if (loaded_sms) {  // one block of 1024 threads per other SM, started first
      CHECK(cudaEventRecord(start, busy));
      stream<<<loaded_sms, 1024, 0, busy>>>(load, load_words, passes, load_sink);
      CHECK(cudaEventRecord(stop, busy));
    }
    chase<<<1, 1, 0, walk>>>(next, order[0] * kStride, clocks, sink);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(walk));
    unsigned long long c = 0;
    CHECK(cudaMemcpy(&c, clocks, sizeof(c), cudaMemcpyDeviceToHost));
    runs.push_back(static_cast<double>(c) / kSteps);
    if (loaded_sms) {
      CHECK(cudaEventSynchronize(stop));
      float ms = 0.f;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (r == 0)
        std::printf("  (%d SMs streaming: %.2f TB/s)\n", loaded_sms,
                    load_words * sizeof(float4) * static_cast<double>(passes) / (ms * 1e-3) / 1e12);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
  }
  if (loaded_sms) {
    CHECK(cudaFree(load));
    CHECK(cudaFree(load_sink));
  }
  CHECK(cudaStreamDestroy(busy));
  CHECK(cudaStreamDestroy(walk));
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
  std::printf("%-22s %8.1f clocks per dependent load, the other SMs streaming\n", names[1],
              clocks_per_load(sizes[1], prop.multiProcessorCount - 1));
  return 0;
}
