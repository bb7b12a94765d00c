/*
 * The CUDA C++ built-ins that vram4j's kernels (src/main/cuda/vram4j_kernels.cu) use, for compiling those kernels
 * unchanged as host C++ and running them on the CPU (kernel_emulator.cpp). Test-only: never shipped.
 *
 * Threads of a block are fibers of one host thread (kernel_emulator.cpp schedules them); threadIdx and the other
 * index variables read the running fiber's. Only what the kernels use is here; a kernel using anything else fails to
 * compile, which the emulator's test reports.
 */
#ifndef VRAM4J_CUDA_EMULATION_H
#define VRAM4J_CUDA_EMULATION_H

#include <cmath>
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

namespace emu {
struct dim3 { unsigned x, y, z; };
/* the running fiber's thread index, its block's index, and the launch's dimensions */
extern dim3 thread_idx, block_idx, block_dim, grid_dim;
/* suspends the running fiber until every thread of its block reached a barrier */
void syncthreads();
/* ends the launch with an error, as a device-side trap does */
[[noreturn]] void trap();
/* ends the launch with an error naming what the running thread did that a GPU does not allow (a misaligned
   warp-matrix load, say): message, formatted as printf */
[[noreturn]] void misuse(const char *format, ...);
/* the running fiber's lane in its warp: its flat thread index modulo 32, as a GPU forms warps */
inline unsigned lane() { return (thread_idx.x + block_dim.x * (thread_idx.y + block_dim.y * thread_idx.z)) % 32; }
/* suspends the running fiber until every lane of its warp reached a __syncwarp() or a shuffle; mask must name the
   whole warp (the kernels use no other) */
void syncwarp(unsigned mask);
/* a shuffle: v as lane `src` of the running fiber's warp passed it, once every lane of the warp got there */
float shuffle(unsigned mask, float v, unsigned src);
/* the launch's dynamic shared memory */
void *dynamic_shared();
}

#define threadIdx (emu::thread_idx)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)
#define __syncthreads() emu::syncthreads()
#define __trap() emu::trap()

inline void __syncwarp(unsigned mask = 0xffffffffu) { emu::syncwarp(mask); }
inline float __shfl_sync(unsigned mask, float v, int src_lane) { return emu::shuffle(mask, v, (unsigned) src_lane % 32); }
inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
    return emu::shuffle(mask, v, emu::lane() ^ ((unsigned) lane_mask % 32));
}

#define CUDART_INF_F (__builtin_inff())
#define CUDART_NAN_F (__builtin_nanf(""))

using std::isfinite;
using std::isinf;
using std::isnan;

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }

/* CUDA's 16-byte vectors of floats and of unsigned ints (a 128-bit shared or global load or store) */
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

/* Fibers run one at a time, so an atomic add is a plain one. */
inline float atomicAdd(float *address, float v) { float old = *address; *address = old + v; return old; }
inline int atomicAdd(int *address, int v) { int old = *address; *address = old + v; return old; }

/* IEEE binary16 through the compiler's _Float16: conversions round to nearest even, as __float2half_rn. */
struct __half { _Float16 v; };
inline __half __float2half_rn(float f) { return __half{(_Float16) f}; }
inline float __half2float(__half h) { return (float) h.v; }
/* the bits of a half, and a half from its bits, as CUDA's reinterpreting intrinsics */
inline unsigned short __half_as_ushort(__half h) { unsigned short u; std::memcpy(&u, &h.v, 2); return u; }
inline __half __ushort_as_half(unsigned short u) { __half h; std::memcpy(&h.v, &u, 2); return h; }

/* bfloat16 as its bits (the kernels convert with their own bf16_bits / bf16_value) */
struct __nv_bfloat16 { unsigned short x; };

#endif
