// maca_host.h -- the MACA constructs tilemlir's MetaX emitter uses, on the CPU.
//
// Part of the tests, not of the product: tile-compile --emit maca writes a
// .maca source for MetaX's mxcc; the tests compile that same source with
//   g++ -std=c++20 -O1 -include test/metax/maca_host.h ... -lpthread
// and run it. This header supplies what mxcc and the MACA runtime would:
//
// * execution: a launch runs the grid's blocks one after another; the threads
//   of a block are real std::threads, `__syncthreads()` is a std::barrier of
//   the block, `__shared__` variables are function statics (one block at a
//   time, so one copy per running block), waves are 64 consecutive threads;
// * element types: f16, bf16 and fp8 held as their bit patterns, with the
//   conversions the emitter calls (`tm_cvt_<from>_<to>`, round to nearest
//   even), written here independently of the emitter's own prelude;
// * the MMA built-ins `__builtin_mxc_mma_16x16x{16,32}*`, one rendezvous of
//   the wave's 64 lanes per call, implemented from MetaX's public lane
//   layouts (below), not from tilemlir's lowering;
// * the runtime calls of the host launcher: mcMalloc, mcMemcpy, mcMemset, mcFree,
//   mcLaunchKernel, mcDeviceSynchronize, mcGetErrorString;
// * the wave shuffles `__shfl_sync`, `__shfl_xor_sync`, `__shfl_up_sync`,
//   `__shfl_down_sync` (64-bit lane mask, 32-bit values, optional width), one
//   rendezvous of the wave's 64 lanes per call, with CUDA's documented meaning
//   of width (segments of `width` lanes; idx wraps modulo width; up, down and
//   xor return the lane's own value when the source is past its segment).
//
// MMA lane layouts (wave of 64 lanes; kpl = K/4 items per lane):
//   first operand  X (16 x K): lane t, item l -> X[t % 16][(t / 16) * kpl + l]
//   second operand Y (K x 16): lane t, item l -> Y[(t / 16) * kpl + l][t % 16]
//   accumulator/result (16 x 16): lane t, item l -> D[(t / 16) * 4 + l][t % 16]
//   D = X * Y + C.
// Sources: tile-ai/tilelang-metax tilelang/maca/intrinsics/layout/mma_layout.py
// (thread_id_shared_access_64x4_to_16x16_layout_A / _B and the 64x8 forms for
// K = 32; ..._layout_C_m_n for an instruction's own output); MetaX-MACA/mcTriton
// MMAMACA.cpp (4 or 8 operand items per lane, 4 results; 8-bit items packed
// into 32-bit words). Products are exact and each output's K products are
// summed in double and rounded once to float (int8: exact, wrapped to 32 bits).
#pragma once
#define TILEMLIR_MACA_HOST 1

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace tm_host {

template <class T, int N> struct vec {
  T v[N];
  T& operator[](int i) { return v[i]; }
  const T& operator[](int i) const { return v[i]; }
};

constexpr int kWave = 64;

struct Wave {
  std::barrier<> sync{kWave};
  uint32_t shuffled[kWave];
  double x[kWave][8], y[kWave][8], c[kWave][4];
  int64_t xi[kWave][8], yi[kWave][8], ci[kWave][4];
};

struct Block {
  explicit Block(unsigned threads) : sync(threads), waves((threads + kWave - 1) / kWave) {
    for (auto& w : waves) w = std::make_unique<Wave>();
  }
  std::barrier<> sync;
  std::vector<std::unique_ptr<Wave>> waves;
};

inline thread_local Block* current = nullptr;

}  // namespace tm_host

inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

inline void __syncthreads() { tm_host::current->sync.arrive_and_wait(); }

#define TM_VECTOR(element, lanes) tm_host::vec<element, lanes>

// ---- element types: bit patterns ------------------------------------------
typedef uint16_t tm_f16;
typedef uint16_t tm_bf16;
typedef uint8_t tm_f8e4m3;
typedef uint8_t tm_f8e5m2;
typedef uint8_t tm_f8e4m3fnuz;
typedef uint8_t tm_f8e5m2fnuz;

template <class To, class From> inline To tm_bitcast(From from) {
  static_assert(sizeof(To) == sizeof(From), "tm_bitcast: sizes differ");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}
template <class V, class T> inline V tm_vload(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <class V, class T> inline void tm_vstore(T* p, V v) { std::memcpy(p, &v, sizeof(V)); }

inline float tm_maximumf(float a, float b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::fmax(a, b); }
inline float tm_minimumf(float a, float b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::fmin(a, b); }
inline float tm_rsqrt(float a) { return 1.0f / std::sqrt(a); }
inline int64_t tm_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
inline int64_t tm_ceildiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q; }

namespace tm_host {

// A binary float format: `exponent_bits`, `mantissa_bits`, the exponent bias,
// and its special values. Decoding builds the value from the fields; encoding
// picks the nearest representable value, ties to the even code.
struct Format {
  int exponent_bits, mantissa_bits, bias;
  bool infinities;      // all-ones exponent: inf (mantissa 0) / NaN, IEEE style
  bool nan_all_ones;    // E4M3FN: only S.1111.111 is NaN, no infinities
  uint32_t nan_code;
};

constexpr Format kHalf{5, 10, 15, true, false, 0x7e00};
constexpr Format kE4M3{4, 3, 7, false, true, 0x7f};
constexpr Format kE5M2{5, 2, 15, true, false, 0x7e};

inline double decode(uint32_t code, const Format& f) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = (code >> (total - 1)) & 1;
  const uint32_t exponent = (code >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const uint32_t mantissa = code & ((1u << f.mantissa_bits) - 1);
  const uint32_t top = (1u << f.exponent_bits) - 1;
  double value;
  if (f.infinities && exponent == top) {
    value = mantissa ? NAN : INFINITY;
  } else if (f.nan_all_ones && exponent == top && mantissa == (1u << f.mantissa_bits) - 1) {
    value = NAN;
  } else if (exponent == 0) {
    value = std::ldexp((double)mantissa, 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp((double)(mantissa + (1u << f.mantissa_bits)), (int)exponent - f.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

inline uint32_t encode(double x, const Format& f) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const uint32_t sign = std::signbit(x) ? (1u << (total - 1)) : 0u;
  if (std::isnan(x)) return sign | f.nan_code;
  const double a = std::fabs(x);
  // The largest finite magnitude code and its value.
  const uint32_t largest = f.infinities ? (((1u << f.exponent_bits) - 1) << f.mantissa_bits) - 1
                                        : (1u << (total - 1)) - 2;
  const double largest_value = decode(largest, f);
  const double half_step = (largest_value - decode(largest - 1, f)) / 2;
  if (a > largest_value) {
    const bool rounds_up = a > largest_value + half_step ||
                           (a == largest_value + half_step && (largest & 1));  // tie to even
    if (!rounds_up) return sign | largest;
    return sign | (f.infinities ? largest + 1 : f.nan_code);  // inf, or NaN when there is none
  }
  // Binary search for the first code whose value is >= a (magnitudes are monotonic in the code).
  uint32_t lo = 0, hi = largest;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (decode(mid, f) < a) lo = mid + 1; else hi = mid;
  }
  if (lo == 0 || decode(lo, f) == a) return sign | lo;
  const double above = decode(lo, f) - a, below = a - decode(lo - 1, f);
  if (below < above || (below == above && ((lo - 1) & 1) == 0)) return sign | (lo - 1);
  return sign | lo;
}

inline float bf16_to_float(uint16_t bits) { return tm_bitcast<float>((uint32_t)bits << 16); }

inline uint16_t float_to_bf16(float x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xffc0 : 0x7fc0;
  // Exact: the float is split into the kept half and the dropped half.
  const uint32_t u = tm_bitcast<uint32_t>(x);
  const uint32_t kept = u >> 16, dropped = u & 0xffff;
  if (dropped > 0x8000 || (dropped == 0x8000 && (kept & 1))) return (uint16_t)(kept + 1);
  return (uint16_t)kept;
}

}  // namespace tm_host

inline float tm_cvt_f16_f32(tm_f16 x) { return (float)tm_host::decode(x, tm_host::kHalf); }
inline tm_f16 tm_cvt_f32_f16(float x) { return (tm_f16)tm_host::encode(x, tm_host::kHalf); }
inline float tm_cvt_bf16_f32(tm_bf16 x) { return tm_host::bf16_to_float(x); }
inline tm_bf16 tm_cvt_f32_bf16(float x) { return tm_host::float_to_bf16(x); }
inline float tm_cvt_f8e4m3_f32(tm_f8e4m3 x) { return (float)tm_host::decode(x, tm_host::kE4M3); }
inline tm_f8e4m3 tm_cvt_f32_f8e4m3(float x) { return (tm_f8e4m3)tm_host::encode(x, tm_host::kE4M3); }
inline float tm_cvt_f8e5m2_f32(tm_f8e5m2 x) { return (float)tm_host::decode(x, tm_host::kE5M2); }
inline tm_f8e5m2 tm_cvt_f32_f8e5m2(float x) { return (tm_f8e5m2)tm_host::encode(x, tm_host::kE5M2); }

// ---- the MMA built-ins -----------------------------------------------------
namespace tm_host {

inline int lane() { return (int)(threadIdx.x % kWave); }
inline Wave& wave() { return *current->waves[threadIdx.x / kWave]; }

// One instruction of the calling lane's wave: X and Y items (as double or as
// integers), C's four items; the lane's four results in `out`.
template <bool Integer>
inline void wave_mma(int k, const double* x, const double* y, const double* c,
                     const int64_t* xi, const int64_t* yi, const int64_t* ci,
                     double* out, int64_t* out_i) {
  Wave& w = wave();
  const int t = lane(), kpl = k / 4;
  for (int l = 0; l < kpl; ++l) {
    w.x[t][l] = x ? x[l] : 0; w.y[t][l] = y ? y[l] : 0;
    w.xi[t][l] = xi ? xi[l] : 0; w.yi[t][l] = yi ? yi[l] : 0;
  }
  for (int l = 0; l < 4; ++l) { w.c[t][l] = c ? c[l] : 0; w.ci[t][l] = ci ? ci[l] : 0; }
  w.sync.arrive_and_wait();
  // Whole matrices from every lane's items (the forward maps of the layouts).
  double X[16][32], Y[32][16], C[16][16];
  int64_t Xi[16][32], Yi[32][16], Ci[16][16];
  for (int s = 0; s < kWave; ++s) {
    for (int l = 0; l < kpl; ++l) {
      X[s % 16][(s / 16) * kpl + l] = w.x[s][l];   Xi[s % 16][(s / 16) * kpl + l] = w.xi[s][l];
      Y[(s / 16) * kpl + l][s % 16] = w.y[s][l];   Yi[(s / 16) * kpl + l][s % 16] = w.yi[s][l];
    }
    for (int l = 0; l < 4; ++l) { C[(s / 16) * 4 + l][s % 16] = w.c[s][l]; Ci[(s / 16) * 4 + l][s % 16] = w.ci[s][l]; }
  }
  for (int l = 0; l < 4; ++l) {
    const int row = (t / 16) * 4 + l, col = t % 16;
    if constexpr (Integer) {
      int64_t sum = Ci[row][col];
      for (int kk = 0; kk < k; ++kk) sum += Xi[row][kk] * Yi[kk][col];
      out_i[l] = sum;
    } else {
      double sum = C[row][col];
      for (int kk = 0; kk < k; ++kk) sum += X[row][kk] * Y[kk][col];
      out[l] = sum;
    }
  }
  w.sync.arrive_and_wait();  // nobody refills the slots before every lane has read them
}

template <class Decode, class V>
inline vec<float, 4> float_mma(int k, const V& b, const V& a, const vec<float, 4>& c, Decode decode, int items) {
  double x[8], y[8], cc[4], out[4];
  for (int l = 0; l < items; ++l) { x[l] = decode(b[l]); y[l] = decode(a[l]); }
  for (int l = 0; l < 4; ++l) cc[l] = c[l];
  wave_mma<false>(k, x, y, cc, nullptr, nullptr, nullptr, out, nullptr);
  vec<float, 4> d;
  for (int l = 0; l < 4; ++l) d[l] = (float)out[l];
  return d;
}

// 8-bit items packed into 32-bit words, the lowest byte first.
template <int Words> inline void unpack(const int32_t (&words)[Words], uint8_t* bytes) {
  for (int i = 0; i < Words; ++i)
    for (int b = 0; b < 4; ++b) bytes[4 * i + b] = (uint8_t)((uint32_t)words[i] >> (8 * b));
}

inline vec<int32_t, 4> int8_mma(int k, const uint8_t* b, const uint8_t* a, const vec<int32_t, 4>& c) {
  int64_t x[8], y[8], cc[4], out[4];
  for (int l = 0; l < k / 4; ++l) { x[l] = (int8_t)b[l]; y[l] = (int8_t)a[l]; }
  for (int l = 0; l < 4; ++l) cc[l] = c[l];
  wave_mma<true>(k, nullptr, nullptr, nullptr, x, y, cc, nullptr, out);
  vec<int32_t, 4> d;
  for (int l = 0; l < 4; ++l) d[l] = (int32_t)(uint32_t)(uint64_t)out[l];  // wraps to 32 bits
  return d;
}

}  // namespace tm_host

inline tm_host::vec<float, 4> __builtin_mxc_mma_16x16x16f16(tm_host::vec<tm_f16, 4> b, tm_host::vec<tm_f16, 4> a,
                                                            tm_host::vec<float, 4> c) {
  return tm_host::float_mma(16, b, a, c, [](uint16_t v) { return tm_host::decode(v, tm_host::kHalf); }, 4);
}
inline tm_host::vec<float, 4> __builtin_mxc_mma_16x16x16bf16(tm_host::vec<tm_bf16, 4> b, tm_host::vec<tm_bf16, 4> a,
                                                             tm_host::vec<float, 4> c) {
  return tm_host::float_mma(16, b, a, c, [](uint16_t v) { return (double)tm_host::bf16_to_float(v); }, 4);
}
inline tm_host::vec<int32_t, 4> __builtin_mxc_mma_16x16x16i8(int32_t b, int32_t a, tm_host::vec<int32_t, 4> c) {
  int32_t bw[1] = {b}, aw[1] = {a};
  uint8_t bb[4], ab[4];
  tm_host::unpack(bw, bb); tm_host::unpack(aw, ab);
  return tm_host::int8_mma(16, bb, ab, c);
}
inline tm_host::vec<int32_t, 4> __builtin_mxc_mma_16x16x32i8(tm_host::vec<int32_t, 2> b, tm_host::vec<int32_t, 2> a,
                                                            tm_host::vec<int32_t, 4> c) {
  int32_t bw[2] = {b[0], b[1]}, aw[2] = {a[0], a[1]};
  uint8_t bb[8], ab[8];
  tm_host::unpack(bw, bb); tm_host::unpack(aw, ab);
  return tm_host::int8_mma(32, bb, ab, c);
}
inline tm_host::vec<float, 4> tm_host_f8_mma(tm_host::vec<int32_t, 2> b, tm_host::vec<int32_t, 2> a,
                                             tm_host::vec<float, 4> c, const tm_host::Format& format) {
  int32_t bw[2] = {b[0], b[1]}, aw[2] = {a[0], a[1]};
  tm_host::vec<uint8_t, 8> bb, ab;
  tm_host::unpack(bw, bb.v); tm_host::unpack(aw, ab.v);
  return tm_host::float_mma(32, bb, ab, c, [&](uint8_t v) { return tm_host::decode(v, format); }, 8);
}
inline tm_host::vec<float, 4> __builtin_mxc_mma_16x16x32f8(tm_host::vec<int32_t, 2> b, tm_host::vec<int32_t, 2> a,
                                                           tm_host::vec<float, 4> c) {
  return tm_host_f8_mma(b, a, c, tm_host::kE4M3);
}
inline tm_host::vec<float, 4> __builtin_mxc_mma_16x16x32bf8(tm_host::vec<int32_t, 2> b, tm_host::vec<int32_t, 2> a,
                                                            tm_host::vec<float, 4> c) {
  return tm_host_f8_mma(b, a, c, tm_host::kE5M2);
}

// ---- the wave shuffles ------------------------------------------------------
namespace tm_host {

// Every lane of the wave publishes its 32 bits, then reads lane `source`'s.
template <class T> inline T wave_exchange(T value, int source) {
  static_assert(sizeof(T) == 4, "the wave shuffles move 32-bit values");
  Wave& w = wave();
  w.shuffled[lane()] = tm_bitcast<uint32_t>(value);
  w.sync.arrive_and_wait();
  const uint32_t bits = w.shuffled[source];
  w.sync.arrive_and_wait();
  return tm_bitcast<T>(bits);
}

inline int segment_start(int width) { return lane() / width * width; }

}  // namespace tm_host

template <class T> inline T __shfl_sync(uint64_t, T value, int source, int width = tm_host::kWave) {
  return tm_host::wave_exchange(value, tm_host::segment_start(width) + ((source % width) + width) % width);
}
template <class T> inline T __shfl_up_sync(uint64_t, T value, int delta, int width = tm_host::kWave) {
  const int source = tm_host::lane() - delta;
  return tm_host::wave_exchange(value, source < tm_host::segment_start(width) ? tm_host::lane() : source);
}
template <class T> inline T __shfl_down_sync(uint64_t, T value, int delta, int width = tm_host::kWave) {
  const int source = tm_host::lane() + delta;
  const bool past = source >= tm_host::segment_start(width) + width;
  return tm_host::wave_exchange(value, past ? tm_host::lane() : source);
}
template <class T> inline T __shfl_xor_sync(uint64_t, T value, int mask, int width = tm_host::kWave) {
  const int source = tm_host::lane() ^ mask;
  const bool past = source >= tm_host::segment_start(width) + width || source >= tm_host::kWave;
  return tm_host::wave_exchange(value, past ? tm_host::lane() : source);
}

// ---- the runtime -------------------------------------------------------------
typedef int mcError_t;
typedef void* mcStream_t;
constexpr mcError_t mcSuccess = 0;
constexpr mcError_t mcErrorLaunchFailure = 1;
enum mcMemcpyKind { mcMemcpyHostToDevice = 1, mcMemcpyDeviceToHost = 2 };

inline const char* mcGetErrorString(mcError_t error) { return error == mcSuccess ? "success" : "launch failure"; }
inline mcError_t mcMalloc(void** pointer, size_t bytes) {
  *pointer = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  return *pointer ? mcSuccess : mcErrorLaunchFailure;
}
inline mcError_t mcFree(void* pointer) { std::free(pointer); return mcSuccess; }
inline mcError_t mcMemcpy(void* to, const void* from, size_t bytes, mcMemcpyKind) {
  std::memcpy(to, from, bytes);
  return mcSuccess;
}
inline mcError_t mcMemset(void* to, int value, size_t bytes) {
  std::memset(to, value, bytes);
  return mcSuccess;
}
inline mcError_t mcDeviceSynchronize() { return mcSuccess; }

// MACA's atomicAdd, atomicMax, atomicMin and atomicCAS (the old value),
// atomic among the block's std::threads.
template <class T> inline T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}
template <class T> inline T atomicMax(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (old < value && !ref.compare_exchange_weak(old, value)) {}
  return old;
}
template <class T> inline T atomicMin(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (value < old && !ref.compare_exchange_weak(old, value)) {}
  return old;
}
template <class T> inline T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;
}

namespace tm_host {

// What TM_KERNEL(k) gives mcLaunchKernel: the kernel called with its arguments
// unpacked from `void* args[]` (pointers to the argument values, as in MACA).
struct KernelRef {
  std::function<void(void**)> invoke;
};

template <class... P, size_t... I>
void call_unpacked(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_reference_t<P>*>(args[I])...);
}

template <class... P> KernelRef kernel_ref(void (*kernel)(P...)) {
  return KernelRef{[kernel](void** args) { call_unpacked(kernel, args, std::index_sequence_for<P...>{}); }};
}

}  // namespace tm_host

#define TM_KERNEL(kernel) tm_host::kernel_ref(kernel)

inline mcError_t mcLaunchKernel(const tm_host::KernelRef& kernel, dim3 grid, dim3 block, void** args,
                                size_t /*dynamic shared bytes: unused*/, mcStream_t) {
  const unsigned threads = block.x * block.y * block.z;
  if (block.y != 1 || block.z != 1 || threads % tm_host::kWave) return mcErrorLaunchFailure;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        tm_host::Block state(threads);
        std::vector<std::thread> workers;
        workers.reserve(threads);
        for (unsigned t = 0; t < threads; ++t)
          workers.emplace_back([&, t] {
            tm_host::current = &state;
            threadIdx = dim3(t, 0, 0);
            blockIdx = dim3(x, y, z);
            blockDim = block;
            gridDim = grid;
            kernel.invoke(args);
          });
        for (auto& worker : workers) worker.join();
      }
  return mcSuccess;
}
