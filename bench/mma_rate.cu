// Issue rate of warp-level mma.sync on an NVIDIA GPU, in SM-sub-partition
// clocks per instruction: the `cycles` of sm_90a.toml's mma.sync rows, which
// the cost model (tilemlir/cost/facts.py) turns into FLOP per SIMD per clock.
//
//     nvcc -O2 -arch=sm_90a -o build/mma_rate bench/mma_rate.cu && build/mma_rate
//
// One block of 16 warps per SM (4 per sub-partition, each with its own tensor
// core); every warp issues ITERATIONS x CHAINS mma.sync, CHAINS independent
// accumulators deep so that no instruction waits for the one before it. The
// block's clock64() span over the instructions one sub-partition issues gives
// the clocks per instruction; the median over the SMs of 5 launches is
// printed, with the TFLOP/s the whole launch reached (CUDA events).
#include <algorithm>
#include <vector>

#include "cuda_check.h"

constexpr int kWarps = 16;  // per block: 4 per sub-partition
constexpr int kChains = 8;
constexpr int kIterations = 4096;

template <int Kind>
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (Kind == 0) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (Kind == 1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

template <int Kind>
__global__ void issue(unsigned seed, long long* clocks, float* sink) {
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = seed * (threadIdx.x + i + 1) & 0x3c003c00u;  // small normal values
  for (int i = 0; i < 2; ++i) b[i] = seed * (threadIdx.x + i + 7) & 0x3c003c00u;
  float d[kChains][4] = {};
  __syncthreads();
  long long begin = clock64();
  for (int it = 0; it < kIterations; ++it) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) mma<Kind>(d[c], a, b);
  }
  __syncthreads();
  long long end = clock64();
  float total = 0.f;
  for (int c = 0; c < kChains; ++c) total += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (total == 1234.5f) sink[0] = total;  // keeps the chains live
  if (threadIdx.x == 0) clocks[blockIdx.x] = end - begin;
}

template <int Kind>
static void measure(const char* name, int flops_per_instruction, int sms) {
  long long* clocks;
  float* sink;
  CHECK(cudaMalloc(&clocks, sms * sizeof(long long)));
  CHECK(cudaMalloc(&sink, sizeof(float)));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  issue<Kind><<<sms, kWarps * 32>>>(1u, clocks, sink);  // warm-up
  CHECK(cudaDeviceSynchronize());
  std::vector<double> per_instruction;
  std::vector<float> tflops;
  for (int r = 0; r < 5; ++r) {
    CHECK(cudaEventRecord(start));
    issue<Kind><<<sms, kWarps * 32>>>(3u + r, clocks, sink);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::vector<long long> host(sms);
    CHECK(cudaMemcpy(host.data(), clocks, sms * sizeof(long long), cudaMemcpyDeviceToHost));
    double issued = static_cast<double>(kIterations) * kChains * (kWarps / 4);  // per sub-partition
    for (long long c : host) per_instruction.push_back(static_cast<double>(c) / issued);
    double total = static_cast<double>(flops_per_instruction) * kIterations * kChains * kWarps * sms;
    tflops.push_back(static_cast<float>(total / (ms * 1e-3) / 1e12));
  }
  std::sort(per_instruction.begin(), per_instruction.end());
  std::sort(tflops.begin(), tflops.end());
  double cycles = per_instruction[per_instruction.size() / 2];
  std::printf("%-52s %6.2f clocks per instruction per sub-partition = %7.1f FLOP per sub-partition-clock; "
              "%7.1f TFLOP/s\n", name, cycles, flops_per_instruction / cycles, tflops[tflops.size() / 2]);
  CHECK(cudaFree(clocks));
  CHECK(cudaFree(sink));
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  measure<0>("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 2 * 16 * 8 * 16, prop.multiProcessorCount);
  measure<1>("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 2 * 16 * 8 * 16, prop.multiProcessorCount);
  measure<2>("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 2 * 16 * 8 * 32, prop.multiProcessorCount);
  return 0;
}
