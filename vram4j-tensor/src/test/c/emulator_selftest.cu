// Kernels that hold the kernel emulator (kernel_emulator.cpp) to what a GPU does and to what it must report;
// KernelEmulatorTest builds an emulator over this file instead of vram4j_kernels.cu. Test-only.

#include <cuda_fp16.h>
#include <mma.h>

typedef unsigned long long u64;

// out[b * threads + t] = the flat thread index, block index and dimensions of each thread, packed
extern "C" __global__ void t_indices(unsigned* out) {
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    out[b * threads + t] = (b << 16) | (t << 4) | (gridDim.x * gridDim.y * gridDim.z);
}

// each block reverses its part of in through shared memory: right only if __syncthreads() waits for every thread
extern "C" __global__ void t_reverse(const float* in, float* out) {
    extern __shared__ float sh[];
    unsigned t = threadIdx.x;
    u64 base = (u64) blockIdx.x * blockDim.x;
    sh[t] = in[base + t];
    __syncthreads();
    out[base + t] = sh[blockDim.x - 1 - t];
}

// thread 0 returns before the barrier the others wait at
extern "C" __global__ void t_divergent_barrier(int* out) {
    if (threadIdx.x == 0) {
        return;
    }
    __syncthreads();
    out[threadIdx.x] = 1;
}

// writes shared memory at float index i (past the launch's size when i is large enough)
extern "C" __global__ void t_shared_store(int i, float* out) {
    extern __shared__ float sh[];
    sh[i] = 1.0f;
    out[0] = sh[i];
}

// reads shared memory nobody wrote
extern "C" __global__ void t_shared_unwritten(float* out) {
    extern __shared__ float sh[];
    out[threadIdx.x] = sh[threadIdx.x];
}

// block 1 traps; the others write 1
extern "C" __global__ void t_trap(int* out) {
    if (blockIdx.x == 1) {
        __trap();
    }
    out[blockIdx.x] = 1;
}

// each thread reads its neighbour's shared value without a barrier between the write and the read: a race, whose
// outcome depends on the order the threads run in
extern "C" __global__ void t_race(float* out) {
    extern __shared__ float sh[];
    unsigned t = threadIdx.x;
    sh[t] = (float) t;
    out[t] = sh[(t + 1) % blockDim.x];
}

// one warp: c (16 x 16 floats, row-major) = 1 + a (16 x 16 float16 bits, row-major, from a + offset) times b (16 x 16
// float16 bits, column-major), through the warp matrix functions; an offset that is not a multiple of 16 elements
// misaligns a's pointer, which the emulator must report
extern "C" __global__ void t_wmma(const unsigned short* a, const unsigned short* b, float* c, int offset) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> fa;
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, nvcuda::wmma::col_major> fb;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> fc;
    nvcuda::wmma::fill_fragment(fc, 1.0f);
    nvcuda::wmma::load_matrix_sync(fa, (const __half*) (a + offset), 16);
    nvcuda::wmma::load_matrix_sync(fb, (const __half*) b, 16);
    nvcuda::wmma::mma_sync(fc, fa, fb, fc);
    nvcuda::wmma::store_matrix_sync(c, fc, 16, nvcuda::wmma::mem_row_major);
}

// one warp: each row r of c (16 x 16 floats, row-major) times r + 1, through a fragment's own elements (x[i]),
// each element's row read from a tile of row numbers loaded into a fragment (the way the kernels find it, the
// mapping being unspecified); element index `bad` (8 or more) is out of a lane's range, which must be reported
extern "C" __global__ void t_wmma_elements(float* c, float* rows, int bad) {
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> fc;
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> fr;
    for (int e = threadIdx.x; e < 256; e += 32) {
        rows[e] = (float) (e / 16);
    }
    __syncwarp();
    nvcuda::wmma::load_matrix_sync(fr, rows, 16, nvcuda::wmma::mem_row_major);
    nvcuda::wmma::load_matrix_sync(fc, c, 16, nvcuda::wmma::mem_row_major);
    for (int i = 0; i < fc.num_elements; i++) {
        fc.x[i] *= fr.x[i] + 1.0f;
    }
    if (bad >= fc.num_elements) {
        fc.x[bad] = 0.0f;
    }
    __syncwarp();
    nvcuda::wmma::store_matrix_sync(c, fc, 16, nvcuda::wmma::mem_row_major);
}

// per thread t of lane l: out[2t] = the sum over its warp of (lane + 1) * (warp + 1), by xor shuffles; out[2t + 1] =
// the value 10 * t of lane 5 of its warp, by a broadcast shuffle
extern "C" __global__ void t_shuffle(float* out) {
    unsigned t = threadIdx.x;
    float v = (float) ((t % 32 + 1) * (t / 32 + 1));
    for (int o = 16; o > 0; o /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    out[2 * t] = v;
    out[2 * t + 1] = __shfl_sync(0xffffffffu, 10.0f * t, 5);
}

// warp 0 reverses its lanes' values through shared memory behind __syncwarp() while the other warps wait at
// __syncthreads(): right only if __syncwarp() waits for the warp's lanes, and only for them
extern "C" __global__ void t_syncwarp(float* out) {
    extern __shared__ float sh[];
    unsigned t = threadIdx.x;
    if (t < 32) {
        sh[t] = (float) t;
        __syncwarp();
        out[t] = sh[31 - t];
    }
    __syncthreads();
    if (t >= 32) {
        out[t] = sh[t - 32];
    }
}

// lane 0 returns before the __syncwarp() the rest of its warp waits at
extern "C" __global__ void t_divergent_syncwarp(int* out) {
    if (threadIdx.x == 0) {
        return;
    }
    __syncwarp();
    out[threadIdx.x] = 1;
}
