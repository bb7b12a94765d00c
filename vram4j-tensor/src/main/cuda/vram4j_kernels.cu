// vram4j's CUDA kernels: the device side of io.vram4j.compute.Kernels and of the tensor ops that have no
// Kernels method yet (broadcasting, strided gathers, embedding, dropout, casts, optimizer updates, NLL loss).
//
// Compiled to PTX for a virtual architecture, which the driver JIT-compiles for the GPU at hand:
//   nvcc -ptx -arch=compute_80 -O3 -fmad=false -std=c++17 (build-ptx.sh beside this file runs it)
// (vram4j-tensor/src/main/cuda/README.md says how the committed PTX is kept in step with this file).
//
// Conventions, shared with the Java launch descriptors (io.vram4j.compute.cuda.CudaKernelTable):
//  - every function is extern "C" (unmangled PTX entry names) and starts with v4j_;
//  - pointers arrive already offset to their first element; element counts are unsigned 64-bit (n);
//    row counts, column counts and extents are 32-bit;
//  - element-wise kernels use grid-stride loops, so any grid covers any n;
//  - row kernels run one block per row (blockDim.x a power of two from 32 to 1024) and reduce by warp shuffles and
//    through shared memory in a fixed order, so repeating a launch gives the same bits;
//  - -fmad=false: a * b + c is not contracted into an FMA, as Java does not contract it either; the float32
//    results agree with the scalar CPU kernels (which compute some functions in double) within 1e-5 relative.
//  - no argument range checks here: the Java checking layer validates sizes and offsets before a launch.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math_constants.h>

typedef unsigned long long u64;
typedef long long s64;

#define GRID_STRIDE(i, n) \
    for (u64 i = (u64) blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64) blockDim.x * gridDim.x)

// ------------------------------------------------------------------------------------------------ 8 a thread
// The contiguous kernels that most of a 16-bit training step's element-wise bytes go through (the casts, the 16-bit
// unary ops and their backward, axpy) move 8 elements a thread per step, 16 bytes a load and a store, where every
// pointer is 16-byte aligned (the caching allocator's blocks are 512-byte aligned; a view's offset may break it),
// then the rest one at a time. Their launches are sized for n / 8 threads (LaunchConfig.elementwise8). Each element
// is computed as it is one at a time, so the bits do not depend on the path.
#define VEC8 8

__device__ __forceinline__ bool aligned16(const void* p) { return ((u64) p & 15u) == 0; }

// a *4 walk folded into one run of elements that both operands read in order (a residual add): the broadcasting
// binary kernels then take 8 a thread too
__device__ __forceinline__ bool one_run(int d0, int d1, int d2, s64 as3, s64 bs3) {
    return d0 == 1 && d1 == 1 && d2 == 1 && as3 == 1 && bs3 == 1;
}

// elements from `start` on, one a thread per step, over the same grid
#define GRID_STRIDE_FROM(i, start, n) \
    for (u64 i = (start) + (u64) blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (u64) blockDim.x * gridDim.x)

// 8 16-bit values (one uint4), first element in the low half of the first word (little-endian, as in memory)
struct H8 {
    unsigned short h[8];
};

__device__ __forceinline__ H8 load8(const unsigned short* p, u64 g) {
    uint4 u = ((const uint4*) p)[g];
    unsigned w[4] = {u.x, u.y, u.z, u.w};
    H8 r;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        r.h[2 * j] = (unsigned short) (w[j] & 0xFFFFu);
        r.h[2 * j + 1] = (unsigned short) (w[j] >> 16);
    }
    return r;
}

__device__ __forceinline__ void store8(unsigned short* p, u64 g, const H8& r) {
    ((uint4*) p)[g] = make_uint4(r.h[0] | ((unsigned) r.h[1] << 16), r.h[2] | ((unsigned) r.h[3] << 16),
                                 r.h[4] | ((unsigned) r.h[5] << 16), r.h[6] | ((unsigned) r.h[7] << 16));
}

// 8 floats (two float4)
__device__ __forceinline__ void load8f(const float* p, u64 g, float v[8]) {
    float4 a = ((const float4*) p)[2 * g];
    float4 b = ((const float4*) p)[2 * g + 1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

__device__ __forceinline__ void store8f(float* p, u64 g, const float v[8]) {
    float4 a;
    float4 b;
    a.x = v[0]; a.y = v[1]; a.z = v[2]; a.w = v[3];
    b.x = v[4]; b.y = v[5]; b.z = v[6]; b.w = v[7];
    ((float4*) p)[2 * g] = a;
    ((float4*) p)[2 * g + 1] = b;
}

// ------------------------------------------------------------------------------------------------ binary

// op: 0 add, 1 sub, 2 mul, 3 div (as Ops.Bin)
__device__ __forceinline__ float binop(int op, float x, float y) {
    switch (op) {
        case 0: return x + y;
        case 1: return x - y;
        case 2: return x * y;
        default: return x / y;
    }
}

// x[j] = x[j] op y[j] for the 8 values of a group (the vector paths of the broadcasting kernels)
__device__ __forceinline__ void binop8(int op, float x[8], const float y[8]) {
#pragma unroll
    for (int j = 0; j < 8; j++) {
        x[j] = binop(op, x[j], y[j]);
    }
}

extern "C" __global__ void v4j_add_f32(const float* a, const float* b, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = a[i] + b[i]; }
}

extern "C" __global__ void v4j_sub_f32(const float* a, const float* b, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = a[i] - b[i]; }
}

extern "C" __global__ void v4j_mul_f32(const float* a, const float* b, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = a[i] * b[i]; }
}

extern "C" __global__ void v4j_div_f32(const float* a, const float* b, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = a[i] / b[i]; }
}

// The indices of linear index i of a row-major [d0, d1, d2, d3] walk, found once and shared by every operand of a
// launch (offset: in a layout of strides s0..s3). Integer division costs tens of instructions a thread on a GPU, so
// leading extents of 1, which the Java side's folding (Layout4) leaves, cost none: a walk folded into one run of
// elements divides nothing, a [rows, cols] walk (a bias add) once; only 3- and 4-dimensional walks divide three
// times. The branches depend on the launch's extents alone, so every thread of a launch takes the same one.
struct Index4 {
    u64 i0, i1, i2, i3;
    __device__ __forceinline__ s64 offset(s64 s0, s64 s1, s64 s2, s64 s3) const {
        return (s64) i0 * s0 + (s64) i1 * s1 + (s64) i2 * s2 + (s64) i3 * s3;
    }
};

__device__ __forceinline__ Index4 index4(u64 i, int d0, int d1, int d2, int d3) {
    Index4 x{0, 0, 0, i};
    if (d0 == 1 && d1 == 1 && d2 == 1) {
        return x;
    }
    x.i3 = i % (u64) d3;
    i /= (u64) d3;
    if (d0 == 1 && d1 == 1) {
        x.i2 = i;
        return x;
    }
    x.i2 = i % (u64) d2;
    i /= (u64) d2;
    x.i1 = i % (u64) d1;
    x.i0 = i / (u64) d1;
    return x;
}

// Broadcasting binary op into a contiguous output of up to 4 dimensions (extents d0..d3, outermost first;
// unused leading dimensions have extent 1). a and b are read with their own element strides, 0 where they
// are broadcast.
extern "C" __global__ void v4j_binary_bcast4_f32(int op, const float* a, const float* b, float* out, u64 n,
                                                 int d0, int d1, int d2, int d3,
                                                 s64 as0, s64 as1, s64 as2, s64 as3,
                                                 s64 bs0, s64 bs1, s64 bs2, s64 bs3) {
    u64 done = 0;
    if (one_run(d0, d1, d2, as3, bs3) && aligned16(a) && aligned16(b) && aligned16(out)) {
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            float x[8];
            float y[8];
            load8f(a, g, x);
            load8f(b, g, y);
            binop8(op, x, y);
            store8f(out, g, x);
        }
    }
    GRID_STRIDE_FROM(i, done, n) {
        Index4 x = index4(i, d0, d1, d2, d3);
        out[i] = binop(op, a[x.offset(as0, as1, as2, as3)], b[x.offset(bs0, bs1, bs2, bs3)]);
    }
}

// Gathers a strided float32 view of up to 4 dimensions into contiguous memory (contiguous(), expand()).
extern "C" __global__ void v4j_gather4_f32(const float* src, float* dst, u64 n, int d0, int d1, int d2, int d3,
                                           s64 s0, s64 s1, s64 s2, s64 s3) {
    GRID_STRIDE(i, n) { dst[i] = src[index4(i, d0, d1, d2, d3).offset(s0, s1, s2, s3)]; }
}

// ------------------------------------------------------------------------------------------------ with a scalar

extern "C" __global__ void v4j_axpy_f32(float alpha, const float* x, float* y, u64 n) {
    u64 done = 0;
    if (aligned16(x) && aligned16(y)) {   // 8 a thread (see "8 a thread" above)
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            float xs[8];
            float ys[8];
            load8f(x, g, xs);
            load8f(y, g, ys);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                ys[j] += alpha * xs[j];
            }
            store8f(y, g, ys);
        }
    }
    GRID_STRIDE_FROM(i, done, n) { y[i] += alpha * x[i]; }
}

extern "C" __global__ void v4j_scale_f32(float s, const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = s * x[i]; }
}

extern "C" __global__ void v4j_add_scalar_f32(float s, const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = x[i] + s; }
}

extern "C" __global__ void v4j_fill_f32(float v, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = v; }
}

// ------------------------------------------------------------------------------------------------ unary

extern "C" __global__ void v4j_neg_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = -x[i]; }
}

extern "C" __global__ void v4j_exp_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = expf(x[i]); }
}

extern "C" __global__ void v4j_log_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = logf(x[i]); }
}

extern "C" __global__ void v4j_sqrt_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = sqrtf(x[i]); }
}

extern "C" __global__ void v4j_tanh_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = tanhf(x[i]); }
}

extern "C" __global__ void v4j_sigmoid_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = 1.0f / (1.0f + expf(-x[i])); }
}

// max(x, 0) with NaN kept, as PyTorch's relu
__device__ __forceinline__ float relu_of(float v) { return v > 0.0f || v != v ? v : 0.0f; }

__device__ __forceinline__ float relu_grad(float dy, float x) { return x > 0.0f ? dy : 0.0f; }

extern "C" __global__ void v4j_relu_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = relu_of(x[i]); }
}

extern "C" __global__ void v4j_relu_backward_f32(const float* dy, const float* x, float* dx, u64 n) {
    GRID_STRIDE(i, n) { dx[i] = relu_grad(dy[i], x[i]); }
}

#define GELU_C 0.7978845608028654f
#define GELU_K 0.044715f

// tanh-approximation GELU in the form x / (1 + exp(-2u)) that the CPU kernels use (no cancellation near -1)
__device__ __forceinline__ float gelu_of(float v) {
    float u = GELU_C * (v + GELU_K * v * v * v);
    return v / (1.0f + expf(-2.0f * u));
}

__device__ __forceinline__ float gelu_grad(float dy, float v) {
    float v2 = v * v;
    float e = expf(-2.0f * GELU_C * (v + GELU_K * v2 * v));
    float d;
    if (isinf(e)) {
        d = 0.0f;
    } else {
        float s = 1.0f / (1.0f + e);
        d = s + 2.0f * v * (e * s * s) * GELU_C * (1.0f + 3.0f * GELU_K * v2);
    }
    return dy * d;
}

extern "C" __global__ void v4j_gelu_f32(const float* x, float* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = gelu_of(x[i]); }
}

extern "C" __global__ void v4j_gelu_backward_f32(const float* dy, const float* x, float* dx, u64 n) {
    GRID_STRIDE(i, n) { dx[i] = gelu_grad(dy[i], x[i]); }
}

// ------------------------------------------------------------------------------------------------ reductions

// op: 0 sum, 1 max (NaN wins)
__device__ __forceinline__ float reduce_op(int op, float m, float o) {
    return op == 0 ? m + o : (m != m || o != o ? CUDART_NAN_F : fmaxf(m, o));
}

// v reduced over the 32 lanes of the warp by a butterfly of shuffles: every lane gets the same bits (each step
// combines a lane's partial result with its partner's, and both operations are commutative)
__device__ __forceinline__ float warp_reduce(float v, int op) {
    for (int o = 16; o > 0; o /= 2) {
        v = reduce_op(op, v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    return v;
}

// Block-wide reduction in a fixed order (blockDim.x a multiple of 32, at most 1024): each warp reduces its lanes by
// shuffles, then warp 0 reduces the warps' results, which pass through sh (at least blockDim.x / 32 floats); three
// barriers where a tree in shared memory took one per halving (ten for a block of 1024). Every thread returns the
// result, and sh is free again on return.
__device__ float block_reduce(float v, int op, float* sh) {
    unsigned lane = threadIdx.x % 32;
    unsigned w = threadIdx.x / 32;
    v = warp_reduce(v, op);
    if (lane == 0) {
        sh[w] = v;
    }
    __syncthreads();
    if (w == 0) {
        float x = lane < blockDim.x / 32 ? sh[lane] : (op == 0 ? 0.0f : -CUDART_INF_F);
        x = warp_reduce(x, op);
        if (lane == 0) {
            sh[0] = x;
        }
    }
    __syncthreads();
    float r = sh[0];
    __syncthreads();
    return r;
}

// One partial result per block over x[0..n): op 0 sum, 1 max, 2 sum of squares, 3 dot with y,
// 4 count of non-finite values (as a float). A second launch with one block and op 0 (1 for max) over the
// partials gives the total; Kernels.sum/max/sumOfSquares/dot/anyNonFinite are these two launches.
extern "C" __global__ void v4j_reduce_partial_f32(int op, const float* x, const float* y, float* partial, u64 n) {
    extern __shared__ float sh[];
    float acc = op == 1 ? -CUDART_INF_F : 0.0f;
    GRID_STRIDE(i, n) {
        float v = x[i];
        switch (op) {
            case 0: acc += v; break;
            case 1: acc = (acc != acc || v != v) ? CUDART_NAN_F : fmaxf(acc, v); break;
            case 2: acc += v * v; break;
            case 3: acc += v * y[i]; break;
            default: acc += isfinite(v) ? 0.0f : 1.0f; break;
        }
    }
    float r = block_reduce(acc, op == 1 ? 1 : 0, sh);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = r;
    }
}

// ------------------------------------------------------------------------------------------------ rows

// The maximum of a row (NaN if any value is NaN) and the sum of exp(x - max) over it, reduced over the block.
__device__ void row_max_sum_exp(const float* xr, int cols, float* sh, float* maxOut, float* sumOut) {
    float m = -CUDART_INF_F;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = xr[j];
        m = (m != m || v != v) ? CUDART_NAN_F : fmaxf(m, v);
    }
    m = block_reduce(m, 1, sh);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        s += expf(xr[j] - m);
    }
    *maxOut = m;
    *sumOut = block_reduce(s, 0, sh);
}

extern "C" __global__ void v4j_softmax_rows_f32(const float* x, float* out, int rows, int cols) {
    extern __shared__ float sh[];
    const float* xr = x + (s64) blockIdx.x * cols;
    float* orow = out + (s64) blockIdx.x * cols;
    float m, s;
    row_max_sum_exp(xr, cols, sh, &m, &s);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        orow[j] = expf(xr[j] - m) / s;
    }
    (void) rows;
}

extern "C" __global__ void v4j_log_softmax_rows_f32(const float* x, float* out, int rows, int cols) {
    extern __shared__ float sh[];
    const float* xr = x + (s64) blockIdx.x * cols;
    float* orow = out + (s64) blockIdx.x * cols;
    float m, s;
    row_max_sum_exp(xr, cols, sh, &m, &s);
    float lse = m + logf(s);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        orow[j] = xr[j] - lse;
    }
    (void) rows;
}

// dx = y * (dy - sum(dy * y))
extern "C" __global__ void v4j_softmax_backward_rows_f32(const float* y, const float* dy, float* dx, int rows, int cols) {
    extern __shared__ float sh[];
    s64 base = (s64) blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        s += dy[base + j] * y[base + j];
    }
    s = block_reduce(s, 0, sh);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        dx[base + j] = y[base + j] * (dy[base + j] - s);
    }
    (void) rows;
}

// dx = dy - exp(y) * sum(dy)
extern "C" __global__ void v4j_log_softmax_backward_rows_f32(const float* y, const float* dy, float* dx, int rows, int cols) {
    extern __shared__ float sh[];
    s64 base = (s64) blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        s += dy[base + j];
    }
    s = block_reduce(s, 0, sh);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        dx[base + j] = dy[base + j] - expf(y[base + j]) * s;
    }
    (void) rows;
}

// out = (x - mean) * rstd * gamma + beta over each row, biased variance; gamma, beta, mean, rstd may be null
extern "C" __global__ void v4j_layer_norm_rows_f32(const float* x, const float* gamma, const float* beta, float eps,
                                                   float* out, float* mean, float* rstd, int rows, int cols) {
    extern __shared__ float sh[];
    s64 base = (s64) blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        s += x[base + j];
    }
    float mu = block_reduce(s, 0, sh) / cols;
    float q = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float d = x[base + j] - mu;
        q += d * d;
    }
    float r = 1.0f / sqrtf(block_reduce(q, 0, sh) / cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = (x[base + j] - mu) * r;
        if (gamma != nullptr) {
            v *= gamma[j];
        }
        if (beta != nullptr) {
            v += beta[j];
        }
        out[base + j] = v;
    }
    if (threadIdx.x == 0) {
        if (mean != nullptr) {
            mean[blockIdx.x] = mu;
        }
        if (rstd != nullptr) {
            rstd[blockIdx.x] = r;
        }
    }
    (void) rows;
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, one block per row
extern "C" __global__ void v4j_layer_norm_backward_rows_f32(const float* dy, const float* x, const float* mean,
                                                            const float* rstd, const float* gamma, float* dx,
                                                            int rows, int cols) {
    extern __shared__ float sh[];
    s64 base = (s64) blockIdx.x * cols;
    float mu = mean[blockIdx.x];
    float r = rstd[blockIdx.x];
    float sg = 0.0f;
    float sgx = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float g = dy[base + j] * (gamma != nullptr ? gamma[j] : 1.0f);
        sg += g;
        sgx += g * (x[base + j] - mu) * r;
    }
    float mg = block_reduce(sg, 0, sh) / cols;
    float mgx = block_reduce(sgx, 0, sh) / cols;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float g = dy[base + j] * (gamma != nullptr ? gamma[j] : 1.0f);
        float xh = (x[base + j] - mu) * r;
        dx[base + j] = r * (g - mg - xh * mgx);
    }
    (void) rows;
}

// Column sums run in parallel in a fixed order, so repeating a launch gives the same bits: a block takes 32 adjacent
// columns (one coalesced 128-byte row segment per warp) and `chunk` rows of them; its blockDim.x / 32 lanes of
// threads add every (blockDim.x / 32)-th row of the chunk, and a tree over the lanes in shared memory adds their sums.
// gridDim.x is (column groups) x (chunks); a grid of several chunks writes one partial sum per chunk, which a second
// launch over [chunks, columns] adds up (CudaKernels). The sequential one thread per column these replace left most
// of the GPU idle: a bias gradient of [8192 rows, 768] had 768 threads in all.

// dgamma[j] = sum_r dy * xhat, dbeta[j] = sum_r dy over rows [c * chunk, (c + 1) * chunk), written to row c of
// [chunks, cols] (the results themselves when there is one chunk); either output may be null. Shared memory:
// 2 * blockDim.x floats.
extern "C" __global__ void v4j_layer_norm_param_grads_f32(const float* dy, const float* x, const float* mean,
                                                          const float* rstd, float* dgamma, float* dbeta,
                                                          int rows, int cols, int chunk) {
    extern __shared__ float param_sums[];
    float* sg = param_sums;
    float* sb = param_sums + blockDim.x;
    int lanes = blockDim.x / 32;
    int tx = threadIdx.x % 32;
    int ty = threadIdx.x / 32;
    int groups = (cols + 31) / 32;
    int c = blockIdx.x / groups;
    int j = (blockIdx.x % groups) * 32 + tx;
    int r1 = min(rows, (c + 1) * chunk);
    float g = 0.0f;
    float b = 0.0f;
    if (j < cols) {
        for (int r = c * chunk + ty; r < r1; r += lanes) {
            s64 k = (s64) r * cols + j;
            g += dy[k] * (x[k] - mean[r]) * rstd[r];
            b += dy[k];
        }
    }
    sg[threadIdx.x] = g;
    sb[threadIdx.x] = b;
    __syncthreads();
    for (int h = lanes / 2; h > 0; h /= 2) {
        if (ty < h) {
            sg[threadIdx.x] += sg[threadIdx.x + h * 32];
            sb[threadIdx.x] += sb[threadIdx.x + h * 32];
        }
        __syncthreads();
    }
    if (ty == 0 && j < cols) {
        if (dgamma != nullptr) {
            dgamma[(s64) c * cols + j] = sg[tx];
        }
        if (dbeta != nullptr) {
            dbeta[(s64) c * cols + j] = sb[tx];
        }
    }
}

// Copies x to out over mats matrices of t x s, writing fill where column > row (causal mask; fill -inf
// forward, 0 backward).
extern "C" __global__ void v4j_mask_upper_f32(const float* x, float* out, u64 n, int t, int s, float fill) {
    GRID_STRIDE(i, n) {
        u64 inMat = i % ((u64) t * s);
        int row = (int) (inMat / s);
        int col = (int) (inMat % s);
        out[i] = col > row ? fill : x[i];
    }
}

// ------------------------------------------------------------------------------------------------ embedding

// out[i, :] = weight[idx[i], :]; an index outside [0, rows) leaves its row unwritten and sets *bad to 1
// (the caller reports it as the CPU op does), or, when bad is null, traps (the stream fails).
extern "C" __global__ void v4j_embedding_f32(const float* weight, const s64* idx, float* out, u64 count, int cols,
                                             s64 rows, int* bad) {
    u64 n = count * (u64) cols;
    GRID_STRIDE(i, n) {
        u64 k = i / cols;
        s64 row = idx[k];
        if (row < 0 || row >= rows) {
            if (bad == nullptr) {
                __trap();   // no flag to set: fail the stream, as PyTorch's device-side assert does
            }
            *bad = 1;
        } else {
            out[i] = weight[row * cols + (s64) (i % cols)];
        }
    }
}

// The embedding backward, reproducible: dweight[r, :] is the sum of g[i, :] over the positions i with idx[i] == r, added
// in index order from 0, as the CPU kernels add them (and as PyTorch, which sorts the indices, sums each row in a fixed
// order). Four launches after a zero fill of counts: count each row's positions, scan the counts into offsets, list
// each row's positions in index order (a counting sort), sum each row's list. Indices outside [0, rows) are skipped
// (the forward gather reported them).

// counts[r] = the positions of row r (counts zeroed first; integer adds, so the counts do not depend on the order)
extern "C" __global__ void v4j_embedding_count(const s64* idx, int* counts, u64 count, s64 rows) {
    GRID_STRIDE(i, count) {
        s64 r = idx[i];
        if (r >= 0 && r < rows) {
            atomicAdd(&counts[r], 1);
        }
    }
}

// One block: offsets[r] = counts[0] + ... + counts[r - 1] for r in [0, rows] and cursor[r] = offsets[r]. Each thread
// sums a run of rows, thread 0 scans the runs' sums (in shared memory, blockDim.x ints), each thread writes its run.
extern "C" __global__ void v4j_embedding_offsets(const int* counts, int* offsets, int* cursor, int rows) {
    extern __shared__ float offsets_shared[];
    int* run_sums = (int*) offsets_shared;
    int per = (rows + (int) blockDim.x - 1) / (int) blockDim.x;
    int lo = min(rows, (int) threadIdx.x * per);
    int hi = min(rows, lo + per);
    int sum = 0;
    for (int r = lo; r < hi; r++) {
        sum += counts[r];
    }
    run_sums[threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        int at = 0;
        for (int t = 0; t < (int) blockDim.x; t++) {
            int v = run_sums[t];
            run_sums[t] = at;
            at += v;
        }
        offsets[rows] = at;
    }
    __syncthreads();
    int at = run_sums[threadIdx.x];
    for (int r = lo; r < hi; r++) {
        offsets[r] = at;
        cursor[r] = at;
        at += counts[r];
    }
}

// One block lists each row's positions in index order: order[offsets[r] + k] is the k-th position of row r. The block
// walks the indices in tiles of blockDim.x (shared memory: blockDim.x int64 keys); a position goes to its row's cursor
// plus the tile's earlier positions of that row, and the tile's last position of a row advances the row's cursor.
extern "C" __global__ void v4j_embedding_place(const s64* idx, int* cursor, int* order, u64 count, s64 rows) {
    extern __shared__ __align__(8) float place_shared[];
    s64* tile_keys = (s64*) place_shared;
    for (u64 t0 = 0; t0 < count; t0 += blockDim.x) {
        u64 i = t0 + threadIdx.x;
        s64 r = i < count ? idx[i] : -1;
        bool valid = r >= 0 && r < rows;
        tile_keys[threadIdx.x] = valid ? r : -1;
        __syncthreads();
        int n = count - t0 < (u64) blockDim.x ? (int) (count - t0) : (int) blockDim.x;
        int before = 0;
        bool last = true;
        int at = 0;
        if (valid) {
            for (int j = 0; j < n; j++) {
                if (tile_keys[j] == r) {
                    if (j < (int) threadIdx.x) {
                        before++;
                    } else if (j > (int) threadIdx.x) {
                        last = false;
                    }
                }
            }
            at = cursor[r] + before;
            order[at] = (int) i;
        }
        __syncthreads();   // every position of the tile has read its row's cursor
        if (valid && last) {
            cursor[r] = at + 1;
        }
        __syncthreads();
    }
}

// dweight[r, c] = 0 + g[order[k], c] for k from offsets[r] to offsets[r + 1] - 1, in that order: every row written.
// The loop is unrolled so that a thread has several loads in flight while its additions stay in order (a row named
// by many positions, the space of a character vocabulary, is one long chain).
#ifdef __CUDACC__
#define V4J_UNROLL_8 _Pragma("unroll 8")
#else
#define V4J_UNROLL_8
#endif
extern "C" __global__ void v4j_embedding_row_sums(const float* g, const int* offsets, const int* order,
                                                  float* dweight, s64 rows, int cols) {
    GRID_STRIDE(e, (u64) rows * cols) {
        s64 r = (s64) (e / cols);
        int c = (int) (e % cols);
        int end = offsets[r + 1];
        float sum = 0.0f;
        V4J_UNROLL_8
        for (int k = offsets[r]; k < end; k++) {
            sum += g[(s64) order[k] * cols + c];
        }
        dweight[e] = sum;
    }
}

// ------------------------------------------------------------------------------------------------ dropout

// SplitMix64's finalizer, as io.vram4j.tensor.Generator.mix
__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// The counter-based uniform [0, 1) of element i for a seed, bit for bit as Ops.uniform on the CPU, so a mask
// drawn on the GPU equals the CPU's and checkpoint recomputation reproduces it.
__device__ __forceinline__ float uniform01(u64 seed, u64 i) {
    return (float) (mix64(seed + i * 0x9E3779B97F4A7C15ULL) >> 40) * 0x1.0p-24f;
}

extern "C" __global__ void v4j_dropout_f32(const float* x, float* out, unsigned char* mask, u64 n, float p,
                                           float scale, u64 seed) {
    GRID_STRIDE(i, n) {
        bool keep = uniform01(seed, i) >= p;
        mask[i] = keep ? 1 : 0;
        out[i] = keep ? x[i] * scale : 0.0f;
    }
}

extern "C" __global__ void v4j_dropout_backward_f32(const float* dy, const unsigned char* mask, float* dx, u64 n,
                                                    float scale) {
    GRID_STRIDE(i, n) { dx[i] = mask[i] != 0 ? dy[i] * scale : 0.0f; }
}

// ------------------------------------------------------------------------------------------------ casts

// round to nearest even, as Float.floatToFloat16
__device__ __forceinline__ unsigned short f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }

__device__ __forceinline__ float f16_value(unsigned short h) { return __half2float(__ushort_as_half(h)); }

// round to nearest even; any NaN becomes the quiet NaN 0x7FC0 with its sign, as Half.floatToBf16
__device__ __forceinline__ unsigned short bf16_bits(float f) {
    unsigned bits = __float_as_uint(f);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
        return (unsigned short) (((bits >> 16) & 0x8000u) | 0x7FC0u);
    }
    unsigned lsb = (bits >> 16) & 1u;
    return (unsigned short) ((bits + 0x7FFFu + lsb) >> 16);
}

__device__ __forceinline__ float bf16_value(unsigned short h) { return __uint_as_float(((unsigned) h) << 16); }

// a 16-bit value of `type` (0 float16, 1 bfloat16) from its bits, and back (round to nearest even)
__device__ __forceinline__ float widen16(unsigned short h, int type) { return type == 0 ? f16_value(h) : bf16_value(h); }

__device__ __forceinline__ unsigned short narrow16(float v, int type) { return type == 0 ? f16_bits(v) : bf16_bits(v); }

// Group g of 8 16-bit elements of out = f(a's, b's), element by element: each pair widened from type, f's float
// rounded to type. Element by element into the 16-bit group takes 30 registers, where whole float groups (load8w,
// binop8, store8n) take 36 to 38 (the 16-bit binary op, the pointwise backward).
template <typename F>
__device__ __forceinline__ void zip8_16(const unsigned short* a, const unsigned short* b, unsigned short* out, u64 g,
                                        int type, F f) {
    H8 x = load8(a, g);
    H8 y = load8(b, g);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        x.h[j] = narrow16(f(widen16(x.h[j], type), widen16(y.h[j], type)), type);
    }
    store8(out, g, x);
}

// the 8 16-bit values of group g, widened; and 8 values narrowed and stored as group g
__device__ __forceinline__ void load8w(const unsigned short* p, u64 g, int type, float v[8]) {
    H8 h = load8(p, g);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        v[j] = widen16(h.h[j], type);
    }
}

__device__ __forceinline__ void store8n(unsigned short* p, u64 g, int type, const float v[8]) {
    H8 h;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        h.h[j] = narrow16(v[j], type);
    }
    store8(p, g, h);
}

// float32 to 16 bits and back, 8 a thread where aligned (the kernels below pass a constant type)
__device__ __forceinline__ void narrow_all(int type, const float* src, unsigned short* dst, u64 n) {
    u64 done = 0;
    if (aligned16(src) && aligned16(dst)) {
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            float v[8];
            load8f(src, g, v);
            store8n(dst, g, type, v);
        }
    }
    GRID_STRIDE_FROM(i, done, n) { dst[i] = narrow16(src[i], type); }
}

__device__ __forceinline__ void widen_all(int type, const unsigned short* src, float* dst, u64 n) {
    u64 done = 0;
    if (aligned16(src) && aligned16(dst)) {
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            float v[8];
            load8w(src, g, type, v);
            store8f(dst, g, v);
        }
    }
    GRID_STRIDE_FROM(i, done, n) { dst[i] = widen16(src[i], type); }
}

extern "C" __global__ void v4j_f32_to_f16(const float* src, __half* dst, u64 n) {
    narrow_all(0, src, (unsigned short*) dst, n);
}

extern "C" __global__ void v4j_f16_to_f32(const __half* src, float* dst, u64 n) {
    widen_all(0, (const unsigned short*) src, dst, n);
}

extern "C" __global__ void v4j_f32_to_bf16(const float* src, unsigned short* dst, u64 n) { narrow_all(1, src, dst, n); }

extern "C" __global__ void v4j_bf16_to_f32(const unsigned short* src, float* dst, u64 n) { widen_all(1, src, dst, n); }

// ------------------------------------------------------------------------------------------------ 16-bit element-wise

// Element-wise kernels over float16 (type 0) or bfloat16 (type 1) data, one type for every operand of a launch, as
// PyTorch's kernels run on 16-bit tensors under autocast: each value is widened in a register, computed as the
// float32 kernel computes it, and rounded once, so the bits equal those of widening to float32, the float32 kernel
// and narrowing back, with no float32 copy of the tensors in device memory.
__device__ __forceinline__ float load16(const unsigned short* p, u64 i, int type) {
    return type == 0 ? __half2float(((const __half*) p)[i]) : bf16_value(p[i]);
}

__device__ __forceinline__ void store16(unsigned short* p, u64 i, int type, float v) {
    if (type == 0) {
        ((__half*) p)[i] = __float2half_rn(v);
    } else {
        p[i] = bf16_bits(v);
    }
}

// Inputs that kernels read as float32: float32 memory, or float16/bfloat16 memory widened as it is read (the fused
// attention and the dimension sums are templates over these).
struct F32In {
    const float* p;
    __device__ __forceinline__ float operator[](s64 i) const { return p[i]; }
    __device__ __forceinline__ F32In operator+(s64 o) const { return F32In{p + o}; }
};

struct H16In {
    const unsigned short* p;
    int type;
    __device__ __forceinline__ float operator[](s64 i) const { return load16(p, (u64) i, type); }
    __device__ __forceinline__ H16In operator+(s64 o) const { return H16In{p + o, type}; }
};

// op: 0 neg, 1 exp, 2 log, 3 sqrt, 4 tanh, 5 relu, 6 gelu (as the float32 kernels above)
__device__ __forceinline__ float unary_of(int op, float v) {
    switch (op) {
        case 0: return -v;
        case 1: return expf(v);
        case 2: return logf(v);
        case 3: return sqrtf(v);
        case 4: return tanhf(v);
        case 5: return relu_of(v);
        default: return gelu_of(v);
    }
}

extern "C" __global__ void v4j_unary16(int op, int type, const unsigned short* x, unsigned short* out, u64 n) {
    u64 done = 0;
    if (aligned16(x) && aligned16(out)) {
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            float v[8];
            load8w(x, g, type, v);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                v[j] = unary_of(op, v[j]);
            }
            store8n(out, g, type, v);
        }
    }
    GRID_STRIDE_FROM(i, done, n) { store16(out, i, type, unary_of(op, load16(x, i, type))); }
}

// Broadcasting binary op on 16-bit operands into a contiguous 16-bit output, as v4j_binary_bcast4_f32 (op and
// layout alike); a, b and out all of one type.
extern "C" __global__ void v4j_binary16_bcast4(int op, int type, const unsigned short* a, const unsigned short* b,
                                               unsigned short* out, u64 n, int d0, int d1, int d2, int d3,
                                               s64 as0, s64 as1, s64 as2, s64 as3,
                                               s64 bs0, s64 bs1, s64 bs2, s64 bs3) {
    u64 done = 0;
    if (one_run(d0, d1, d2, as3, bs3) && aligned16(a) && aligned16(b) && aligned16(out)) {
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            zip8_16(a, b, out, g, type, [&](float va, float vb) { return binop(op, va, vb); });
        }
    }
    GRID_STRIDE_FROM(i, done, n) {
        Index4 x = index4(i, d0, d1, d2, d3);
        float va = load16(a, (u64) x.offset(as0, as1, as2, as3), type);
        float vb = load16(b, (u64) x.offset(bs0, bs1, bs2, bs3), type);
        store16(out, i, type, binop(op, va, vb));
    }
}

// The same with one 16-bit operand (half16: 0 a, 1 b) of type and the other float32, into a contiguous float32 out:
// the 16-bit operand widened as read (Kernels.binaryMixed: a float32 residual plus a bf16 projection, no copy)
extern "C" __global__ void v4j_binary_mixed_bcast4(int op, int type, int half16, const void* a, const void* b,
                                                   float* out, u64 n, int d0, int d1, int d2, int d3,
                                                   s64 as0, s64 as1, s64 as2, s64 as3,
                                                   s64 bs0, s64 bs1, s64 bs2, s64 bs3) {
    u64 done = 0;
    if (one_run(d0, d1, d2, as3, bs3) && aligned16(a) && aligned16(b) && aligned16(out)) {
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            float x[8];
            float y[8];
            if (half16 == 0) {
                load8w((const unsigned short*) a, g, type, x);
                load8f((const float*) b, g, y);
            } else {
                load8f((const float*) a, g, x);
                load8w((const unsigned short*) b, g, type, y);
            }
            binop8(op, x, y);
            store8f(out, g, x);
        }
    }
    GRID_STRIDE_FROM(i, done, n) {
        Index4 at = index4(i, d0, d1, d2, d3);
        s64 ia = at.offset(as0, as1, as2, as3);
        s64 ib = at.offset(bs0, bs1, bs2, bs3);
        float x = half16 == 0 ? load16((const unsigned short*) a, (u64) ia, type) : ((const float*) a)[ia];
        float y = half16 == 1 ? load16((const unsigned short*) b, (u64) ib, type) : ((const float*) b)[ib];
        out[i] = binop(op, x, y);
    }
}

// op: 0 relu backward, 1 gelu backward (as v4j_relu_backward_f32 and v4j_gelu_backward_f32)
extern "C" __global__ void v4j_pointwise_backward16(int op, int type, const unsigned short* dy,
                                                    const unsigned short* x, unsigned short* dx, u64 n) {
    u64 done = 0;
    if (aligned16(dy) && aligned16(x) && aligned16(dx)) {
        done = n / VEC8 * VEC8;
        GRID_STRIDE(g, n / VEC8) {
            zip8_16(dy, x, dx, g, type, [&](float gv, float xv) {
                return op == 0 ? relu_grad(gv, xv) : gelu_grad(gv, xv);
            });
        }
    }
    GRID_STRIDE_FROM(i, done, n) {
        float g = load16(dy, i, type);
        float v = load16(x, i, type);
        store16(dx, i, type, op == 0 ? relu_grad(g, v) : gelu_grad(g, v));
    }
}

// ------------------------------------------------------------------------------------------------ optimizers

// One launch per parameter group: blockIdx.y picks the tensor; params, grads, bufs and sizes are device arrays
// of count entries (pointers as u64). SGD with momentum as optim.SGD (PyTorch's torch.optim.SGD without
// dampening): d = g + wd * p; buf = first ? d : momentum * buf + d; d = nesterov ? d + momentum * buf : buf;
// p -= lr * d. With momentum 0, bufs may be null.
extern "C" __global__ void v4j_sgd_multi_f32(const u64* params, const u64* grads, const u64* bufs, const u64* sizes,
                                             int count, float lr, float momentum, float wd, int nesterov, int first) {
    int t = blockIdx.y;
    if (t >= count) {
        return;
    }
    float* p = (float*) params[t];
    const float* g = (const float*) grads[t];
    float* buf = bufs == nullptr ? nullptr : (float*) bufs[t];
    u64 n = sizes[t];
    GRID_STRIDE(i, n) {
        float pv = p[i];
        float d = g[i];
        if (wd != 0.0f) {
            d += wd * pv;
        }
        if (buf != nullptr) {
            float b = first ? d : momentum * buf[i] + d;
            buf[i] = b;
            d = nesterov ? d + momentum * b : b;
        }
        p[i] = pv - lr * d;
    }
}

// AdamW as optim.AdamW (PyTorch's torch.optim.AdamW): m += (g - m) * (1 - beta1); v = beta2 v + (1 - beta2) g^2;
// p = p * decay - stepSize * m / (sqrt(v) / bc2Sqrt + eps), with decay = 1 - lr * wd, stepSize = lr / (1 - beta1^t),
// bc2Sqrt = sqrt(1 - beta2^t) computed on the host for the step.
extern "C" __global__ void v4j_adamw_multi_f32(const u64* params, const u64* grads, const u64* ms, const u64* vs,
                                               const u64* sizes, int count, float beta1, float beta2, float eps,
                                               float decay, float stepSize, float bc2Sqrt) {
    int t = blockIdx.y;
    if (t >= count) {
        return;
    }
    float* p = (float*) params[t];
    const float* g = (const float*) grads[t];
    float* m = (float*) ms[t];
    float* v = (float*) vs[t];
    u64 n = sizes[t];
    GRID_STRIDE(i, n) {
        float gv = g[i];
        float mv = m[i];
        mv += (gv - mv) * (1.0f - beta1);
        float vv = beta2 * v[i] + (1.0f - beta2) * gv * gv;
        m[i] = mv;
        v[i] = vv;
        float denom = sqrtf(vv) / bc2Sqrt + eps;
        p[i] = p[i] * decay - stepSize * mv / denom;
    }
}

// ------------------------------------------------------------------------------------------------ loss

// NLL loss over log-probabilities [n, c] (cross-entropy is log_softmax then this): out = -sum(logp[i, t_i]) /
// count over targets != ignoreIndex, count written to *count. One block, fixed summation order. A target
// outside [0, c) (and not ignored) sets *bad to 1, or traps when bad is null.
extern "C" __global__ void v4j_nll_loss_f32(const float* logp, const s64* targets, float* out, int* count,
                                            int n, int c, s64 ignoreIndex, int* bad) {
    extern __shared__ float sh[];
    float s = 0.0f;
    float k = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        s64 t = targets[i];
        if (t == ignoreIndex) {
            continue;
        }
        if (t < 0 || t >= c) {
            if (bad == nullptr) {
                __trap();   // as in v4j_embedding_f32
            }
            *bad = 1;
            continue;
        }
        s += logp[(s64) i * c + t];
        k += 1.0f;
    }
    float total = block_reduce(s, 0, sh);
    float cnt = block_reduce(k, 0, sh);
    if (threadIdx.x == 0) {
        *out = -total / cnt;
        *count = (int) cnt;
    }
}

// dlogp (zeroed first) gets -g / count at each target class; g is the loss gradient, a scalar in device memory.
extern "C" __global__ void v4j_nll_loss_backward_f32(const float* g, const s64* targets, float* dlogp, int n, int c,
                                                     s64 ignoreIndex, const int* count) {
    GRID_STRIDE(i, (u64) n) {
        s64 t = targets[i];
        if (t != ignoreIndex) {
            dlogp[(s64) i * c + t] = -*g / (float) *count;
        }
    }
}

// ------------------------------------------------------------------------------------------------ dimension reductions

// The sum over the middle dimension of [outer, n, inner], in parallel and in a fixed order (as the column sums above):
// block (g, o) adds rows [c * chunk, (c + 1) * chunk) of columns [32 g, 32 g + 32) of problem o (gridDim.y blocks
// take the problems in turn), writing out[c][o][i]: the sums themselves when there is one chunk, else partial sums
// that a second launch adds. With inner 1 a block's threads all take the one column (a row's sum). out holds floats
// (outType -1) or values of a 16-bit type (0 float16, 1 bfloat16), each sum rounded once as stored: a bias gradient
// under autocast needs no cast of float32 sums after it. Problem o's sums start outStride elements after problem
// o - 1's (inner: one array; layer norm's dgamma and dbeta summed by one launch: wherever the two lie). Shared
// memory: blockDim.x floats.
template <typename In>
__device__ __forceinline__ void sum_dim(In x, void* out, int outType, s64 outStride, int outer, int n, int inner,
                                        int chunk) {
    extern __shared__ float dim_sums[];
    int width = inner == 1 ? 1 : 32;
    int lanes = blockDim.x / width;
    int tx = threadIdx.x % width;
    int ty = threadIdx.x / width;
    int groups = (inner + width - 1) / width;
    int c = blockIdx.x / groups;
    int i = (blockIdx.x % groups) * width + tx;
    int j1 = min(n, (c + 1) * chunk);
    for (int o = blockIdx.y; o < outer; o += gridDim.y) {
        float s = 0.0f;
        if (i < inner) {
            In p = x + ((s64) o * n * inner + i);
            for (int j = c * chunk + ty; j < j1; j += lanes) {
                s += p[(s64) j * inner];
            }
        }
        __syncthreads();   // the previous problem's tree is done with dim_sums
        dim_sums[threadIdx.x] = s;
        __syncthreads();
        for (int h = lanes / 2; h > 0; h /= 2) {
            if (ty < h) {
                dim_sums[threadIdx.x] += dim_sums[threadIdx.x + h * width];
            }
            __syncthreads();
        }
        if (ty == 0 && i < inner) {
            s64 at = (s64) c * outer * inner + (s64) o * outStride + i;
            if (outType < 0) {
                ((float*) out)[at] = dim_sums[tx];
            } else {
                store16((unsigned short*) out, (u64) at, outType, dim_sums[tx]);
            }
        }
    }
}

extern "C" __global__ void v4j_sum_dim_f32(const float* x, void* out, int outer, int n, int inner, int chunk,
                                           int outType, s64 outStride) {
    sum_dim(F32In{x}, out, outType, outStride, outer, n, inner, chunk);
}

// The same over float16 (type 0) or bfloat16 (type 1) values, widened as read: the sums (or partial sums) have the
// bits of the float32 kernel over the widened block, and no widened copy is made (Kernels.sumDim16).
extern "C" __global__ void v4j_sum_dim16(int type, const unsigned short* x, void* out, int outer, int n, int inner,
                                         int chunk, int outType, s64 outStride) {
    sum_dim(H16In{x, type}, out, outType, outStride, outer, n, inner, chunk);
}

// The maximum over the middle dimension of [outer, n, inner] and its first index (NaN wins, then the first of
// equal maxima), as torch.max(x, dim); values may be null (argmax).
extern "C" __global__ void v4j_max_dim_f32(const float* x, float* values, s64* indices, int outer, int n, int inner) {
    GRID_STRIDE(k, (u64) outer * inner) {
        u64 o = k / inner;
        u64 i = k % inner;
        const float* p = x + o * n * inner + i;
        float best = p[0];
        s64 arg = 0;
        for (int j = 1; j < n && !isnan(best); j++) {
            float v = p[(u64) j * inner];
            if (v > best || isnan(v)) {
                best = v;
                arg = j;
            }
        }
        indices[k] = arg;
        if (values != nullptr) {
            values[k] = best;
        }
    }
}

// ------------------------------------------------------------------------------------------------ strided copy

// Copies a strided float32 view of up to 4 dimensions into another strided layout (a slice written,
// Kernels.copy4); destination elements are distinct.
extern "C" __global__ void v4j_copy4_f32(const float* src, float* dst, u64 n, int d0, int d1, int d2, int d3,
                                         s64 s0, s64 s1, s64 s2, s64 s3, s64 t0, s64 t1, s64 t2, s64 t3) {
    GRID_STRIDE(i, n) {
        Index4 x = index4(i, d0, d1, d2, d3);
        dst[x.offset(t0, t1, t2, t3)] = src[x.offset(s0, s1, s2, s3)];
    }
}

// v4j_copy4_f32 over 16-bit elements (float16 or bfloat16 alike: the bits are copied)
extern "C" __global__ void v4j_copy4_16(const unsigned short* src, unsigned short* dst, u64 n, int d0, int d1, int d2,
                                        int d3, s64 s0, s64 s1, s64 s2, s64 s3, s64 t0, s64 t1, s64 t2, s64 t3) {
    GRID_STRIDE(i, n) {
        Index4 x = index4(i, d0, d1, d2, d3);
        dst[x.offset(t0, t1, t2, t3)] = src[x.offset(s0, s1, s2, s3)];
    }
}

// ------------------------------------------------------------------------------------------------ positions

// out[i] = i as int64 (torch.arange(n, dtype=torch.long); Kernels.iota)
extern "C" __global__ void v4j_iota_s64(s64* out, u64 n) {
    GRID_STRIDE(i, n) { out[i] = (s64) i; }
}

// ------------------------------------------------------------------------------------------------ fused attention
// Causal (or full) scaled dot-product attention without the t x t probabilities (FlashAttention's method): each
// problem b of blockIdx.y is [t, d] row-major in q, k, v, out, dout, dq, dk, dv (pointers at problem 0), lse is
// [t] per problem. One thread per query row (forward, dq) or key row (dk/dv), blocks of blockDim.x rows; tiles of
// `tile` rows of the other operand are staged in dynamic shared memory; the online softmax keeps a running
// maximum m and sum l per row and rescales the row's output by exp(m_old - m_new) when m grows. The backward
// recomputes p = exp(scale q.k - lse) (FlashAttention-2) in two passes, dk/dv then dq, so no atomics are needed
// and repeating a launch gives the same bits.

// The attention kernels read q, k, v, out and dout through F32In or H16In (above) and write out, dq, dk and dv through
// AttnOut (below): the 16-bit entries take one 16-bit type for all of them; lse stays float32.

// Where the rows of problem p lie in an input: p is (p / heads, p % heads) of a [batch, heads, t, d] view with element
// strides (sb, sh, st, 1), as the heads split off one projection give them; a contiguous [problems, t, d] input has
// heads 1, sb = t * d, sh 0, st = d.
struct AttnRows {
    int heads;
    s64 sb, sh, st;
    __device__ __forceinline__ s64 base(int p) const { return (s64) (p / heads) * sb + (s64) (p % heads) * sh; }
};

// Where a result goes, in the layout rows (the output's: PyTorch's [batch, t, heads, d] for the Transformer's heads):
// float32 at f, or 16-bit values of type at h, rounded as stored. A result's row i of problem p is accumulated in
// acc_row(p, i) by the generic paths (d above 64): the float32 row itself, or row (p, i) of a float32 workspace
// [problems, t, d] that the 16-bit entries are given.
struct AttnOut {
    float* f;
    unsigned short* h;
    int type;
    AttnRows rows;
    float* work;
    int t, d;
    __device__ __forceinline__ void set(int p, int i, int x, float v) const {
        if (f != nullptr) {
            f[rows.base(p) + (s64) i * rows.st + x] = v;
        } else {
            store16(h, (u64) (rows.base(p) + (s64) i * rows.st + x), type, v);
        }
    }
    __device__ __forceinline__ float* acc_row(int p, int i) const {
        return f != nullptr ? f + (rows.base(p) + (s64) i * rows.st) : work + ((s64) p * t + i) * d;
    }
};

__device__ __forceinline__ AttnOut attn_out_f32(float* f, AttnRows rows, int t, int d) {
    return AttnOut{f, nullptr, 0, rows, nullptr, t, d};
}

__device__ __forceinline__ AttnOut attn_out16(unsigned short* h, int type, AttnRows rows, float* work, int t, int d) {
    return AttnOut{nullptr, h, type, rows, work, t, d};
}

template <typename A, typename B>
__device__ __forceinline__ float attn_dot(A a, B b, int d) {
    float s = 0.0f;
    for (int x = 0; x < d; x++) {
        s += a[x] * b[x];
    }
    return s;
}

// stages rows [r0, r0 + rows) of a (rows st_a apart) and of b (st_b apart) into sa and sb (rows of d), cooperatively;
// each thread keeps its element's row and column and steps them by the block's size, so the loop divides only once
template <typename In>
__device__ __forceinline__ void attn_stage(In a, s64 st_a, In b, s64 st_b, float* sa, float* sb, int r0, int rows,
                                           int d) {
    int r = threadIdx.x / d;
    int x = threadIdx.x % d;
    int dr = blockDim.x / d;
    int dx = blockDim.x % d;
    for (int e = threadIdx.x; e < rows * d; e += blockDim.x) {
        sa[e] = a[(s64) (r0 + r) * st_a + x];
        sb[e] = b[(s64) (r0 + r) * st_b + x];
        r += dr;
        x += dx;
        if (x >= d) {
            x -= d;
            r++;
        }
    }
}

// Stages the key/value tiles of this block's query rows (causal: keys up to its last row) into shared memory, two
// tiles of `tile` rows of d floats, and calls row(kt, vt, n) for each on the threads whose query row i exists, n
// being the tile's keys that row sees (j <= i when causal). Every thread reaches every __syncthreads().
template <typename In, typename Row>
__device__ __forceinline__ void attn_key_tiles(In k, In v, s64 st, int t, int d, int causal, int tile, int i, Row row) {
    extern __shared__ float attn_tiles[];
    float* kt = attn_tiles;
    float* vt = attn_tiles + (s64) tile * d;
    int keys = causal ? min(t, (int) ((blockIdx.x + 1) * blockDim.x)) : t;
    for (int j0 = 0; j0 < keys; j0 += tile) {
        int cols = min(tile, keys - j0);
        __syncthreads();
        attn_stage(k, st, v, st, kt, vt, j0, cols, d);
        __syncthreads();
        if (i < t) {
            row(kt, vt, causal ? min(cols, i - j0 + 1) : cols);
        }
    }
}

// q, k and v share the layout rows; the output goes to out, its rows accumulated in out.acc_row; lse is contiguous.
// Shared memory: 2 * tile * d floats (k and v tiles)
template <typename In>
__device__ __forceinline__ void attention_forward(In q, In k, In v, AttnRows rows, AttnOut out, float* lse, int t,
                                                  int d, float scale, int causal, int tile) {
    int p = blockIdx.y;
    s64 base = rows.base(p);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    In qi = q + (base + (s64) i * rows.st);
    float* oi = out.acc_row(p, i);
    float m = -CUDART_INF_F;
    float l = 0.0f;
    if (i < t) {
        for (int x = 0; x < d; x++) {
            oi[x] = 0.0f;
        }
    }
    attn_key_tiles(k + base, v + base, rows.st, t, d, causal, tile, i, [&](const float* kt, const float* vt, int n) {
        for (int c = 0; c < n; c++) {
            float s = attn_dot(qi, kt + (s64) c * d, d) * scale;
            if (s > m) {
                float a = expf(m - s);
                l *= a;
                for (int x = 0; x < d; x++) {
                    oi[x] *= a;
                }
                m = s;
            }
            float pr = expf(s - m);
            l += pr;
            for (int x = 0; x < d; x++) {
                oi[x] += pr * vt[(s64) c * d + x];
            }
        }
    });
    if (i < t) {
        for (int x = 0; x < d; x++) {
            out.set(p, i, x, oi[x] / l);
        }
        lse[(s64) p * t + i] = m + logf(l);
    }
}

// D_i = dout_i . out_i of query row i of problem p, the backward's row statistic: dout in the layout grows, out in
// orows; 0 past t
template <typename In>
__device__ __forceinline__ float attn_row_delta(In out, AttnRows orows, In dout, AttnRows grows, int p, int i, int t,
                                                int d) {
    return i < t ? attn_dot(dout + (grows.base(p) + (s64) i * grows.st), out + (orows.base(p) + (s64) i * orows.st), d)
                 : 0.0f;
}

// Stages the query-side tiles a block of key rows needs (causal: the queries from its first key row on): `tile` rows
// of q and of dout into shared memory with each row's lse and D = dout . out, and calls row(qr, gr, lse_r, D_r) for
// each query row that key row j sees, on the threads whose key row exists. q shares the layout rows with k and v,
// dout has its own (grows), out its own (orows); lse is contiguous. Shared memory: 2 * tile * d + 2 * tile floats.
// Every thread reaches every __syncthreads().
template <typename In, typename Row>
__device__ __forceinline__ void attn_query_tiles(In q, In dout, In out, const float* lse, AttnRows rows,
                                                 AttnRows orows, AttnRows grows, int t, int d, int causal, int tile,
                                                 int j, Row row) {
    extern __shared__ float attn_rows[];
    float* qt = attn_rows;
    float* gt = attn_rows + (s64) tile * d;
    float* lt = gt + (s64) tile * d;
    float* dt = lt + tile;
    int p = blockIdx.y;
    s64 base = rows.base(p);
    s64 gbase = grows.base(p);
    for (int i0 = causal ? (int) (blockIdx.x * blockDim.x) : 0; i0 < t; i0 += tile) {
        int nrows = min(tile, t - i0);
        __syncthreads();
        attn_stage(q + base, rows.st, dout + gbase, grows.st, qt, gt, i0, nrows, d);
        for (int r = threadIdx.x; r < nrows; r += blockDim.x) {
            lt[r] = lse[(s64) p * t + i0 + r];
            dt[r] = attn_row_delta(out, orows, dout, grows, p, i0 + r, t, d);
        }
        __syncthreads();
        if (j >= t) {
            continue;
        }
        for (int r = 0; r < nrows; r++) {
            if (!causal || i0 + r >= j) {
                row(qt + (s64) r * d, gt + (s64) r * d, lt[r], dt[r]);
            }
        }
    }
}

// dk, dv for one key row per thread (layouts as attn_query_tiles; the results' rows accumulated in their acc_row)
template <typename In>
__device__ __forceinline__ void attention_backward_dkdv(In q, In k, In v, AttnRows rows, In out, AttnRows orows,
                                                        const float* lse, In dout, AttnRows grows, AttnOut dk,
                                                        AttnOut dv, int t, int d, float scale, int causal, int tile) {
    int p = blockIdx.y;
    s64 base = rows.base(p);
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    In kj = k + (base + (s64) j * rows.st);
    In vj = v + (base + (s64) j * rows.st);
    float* dkj = dk.acc_row(p, j);
    float* dvj = dv.acc_row(p, j);
    if (j < t) {
        for (int x = 0; x < d; x++) {
            dkj[x] = 0.0f;
            dvj[x] = 0.0f;
        }
    }
    attn_query_tiles(q, dout, out, lse, rows, orows, grows, t, d, causal, tile, j,
                     [&](const float* qr, const float* gr, float lr, float dr) {
        float pr = expf(attn_dot(qr, kj, d) * scale - lr);
        float ds = pr * (attn_dot(gr, vj, d) - dr) * scale;
        for (int x = 0; x < d; x++) {
            dvj[x] += pr * gr[x];
            dkj[x] += ds * qr[x];
        }
    });
    if (j < t) {
        for (int x = 0; x < d; x++) {
            dk.set(p, j, x, dkj[x]);
            dv.set(p, j, x, dvj[x]);
        }
    }
}

// The query row a dq thread owns (both dq paths): problem p, row i, its q and dout rows, and its backward statistics
// D_i and lse_i (0 past t)
template <typename In>
struct AttnQueryRow {
    int p, i;
    In qi, gi;
    float di, lsei;
    __device__ __forceinline__ AttnQueryRow(In q, In out, const float* lse, In dout, AttnRows rows, AttnRows orows,
                                            AttnRows grows, int t, int d)
        : p(blockIdx.y), i(blockIdx.x * blockDim.x + threadIdx.x),
          qi(q + (rows.base(blockIdx.y) + (s64) i * rows.st)),
          gi(dout + (grows.base(blockIdx.y) + (s64) i * grows.st)),
          di(attn_row_delta(out, orows, dout, grows, blockIdx.y, i, t, d)),
          lsei(i < t ? lse[(s64) blockIdx.y * t + i] : 0.0f) {}
};

// dq for one query row per thread; layouts as attention_backward_dkdv, the rows accumulated in dq.acc_row. Shared
// memory: 2 * tile * d floats (k and v tiles)
template <typename In>
__device__ __forceinline__ void attention_backward_dq(In q, In k, In v, AttnRows rows, In out, AttnRows orows,
                                                      const float* lse, In dout, AttnRows grows, AttnOut dq, int t,
                                                      int d, float scale, int causal, int tile) {
    AttnQueryRow<In> r(q, out, lse, dout, rows, orows, grows, t, d);
    s64 base = rows.base(r.p);
    float* dqi = dq.acc_row(r.p, r.i);
    if (r.i < t) {
        for (int x = 0; x < d; x++) {
            dqi[x] = 0.0f;
        }
    }
    attn_key_tiles(k + base, v + base, rows.st, t, d, causal, tile, r.i, [&](const float* kt, const float* vt, int n) {
        for (int c = 0; c < n; c++) {
            const float* kc = kt + (s64) c * d;
            float pr = expf(attn_dot(r.qi, kc, d) * scale - r.lsei);
            float ds = pr * (attn_dot(r.gi, vt + (s64) c * d, d) - r.di) * scale;
            for (int x = 0; x < d; x++) {
                dqi[x] += ds * kc[x];
            }
        }
    });
    if (r.i < t) {
        for (int x = 0; x < d; x++) {
            dq.set(r.p, r.i, x, dqi[x]);
        }
    }
}

// Head dimensions up to 64 (GPT-2's is 64) take the paths below: a thread keeps its own rows (its query or key row,
// the output's gradient row) and its accumulators in registers, where the generic versions above keep the
// accumulators in the result's memory and read and write them d times for every key (or query) of the inner loop.
// D is the compile-time bound of d; the arithmetic and its order are the generic versions', so are the bits.
#ifdef __CUDACC__
#define V4J_UNROLL _Pragma("unroll")
#else
#define V4J_UNROLL
#endif

// a[0..d) . b[0..d), a in registers, b a row staged in shared memory, summed in order of x. When d is a multiple of 4
// every staged row starts 16 bytes aligned, and b is read 4 floats per load (a 128-bit load serves four FMAs; one
// 32-bit load per FMA would leave the FMA units waiting for the shared memory pipe).
template <int D>
__device__ __forceinline__ float attn_dot_r(const float (&a)[D], const float* b, int d) {
    float s = 0.0f;
    if ((d & 3) == 0) {
        V4J_UNROLL
        for (int x = 0; x < D; x += 4) {
            if (x < d) {
                float4 b4 = *reinterpret_cast<const float4*>(b + x);
                s += a[x] * b4.x;
                s += a[x + 1] * b4.y;
                s += a[x + 2] * b4.z;
                s += a[x + 3] * b4.w;
            }
        }
    } else {
        V4J_UNROLL
        for (int x = 0; x < D; x++) {
            if (x < d) {
                s += a[x] * b[x];
            }
        }
    }
    return s;
}

// acc[x] += f * b[x] for x < d, acc in registers, b a staged row (read as attn_dot_r reads it)
template <int D>
__device__ __forceinline__ void attn_axpy_r(float (&acc)[D], float f, const float* b, int d) {
    if ((d & 3) == 0) {
        V4J_UNROLL
        for (int x = 0; x < D; x += 4) {
            if (x < d) {
                float4 b4 = *reinterpret_cast<const float4*>(b + x);
                acc[x] += f * b4.x;
                acc[x + 1] += f * b4.y;
                acc[x + 2] += f * b4.z;
                acc[x + 3] += f * b4.w;
            }
        }
    } else {
        V4J_UNROLL
        for (int x = 0; x < D; x++) {
            if (x < d) {
                acc[x] += f * b[x];
            }
        }
    }
}

template <int D, typename In>
__device__ __forceinline__ void attention_forward_r(In q, In k, In v, AttnRows rows, AttnOut out, float* lse, int t,
                                                    int d, float scale, int causal, int tile) {
    int p = blockIdx.y;
    s64 base = rows.base(p);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    In qi = q + (base + (s64) i * rows.st);
    float qr[D];
    float o[D];
    V4J_UNROLL
    for (int x = 0; x < D; x++) {
        qr[x] = i < t && x < d ? qi[x] : 0.0f;
        o[x] = 0.0f;
    }
    float m = -CUDART_INF_F;
    float l = 0.0f;
    attn_key_tiles(k + base, v + base, rows.st, t, d, causal, tile, i, [&](const float* kt, const float* vt, int n) {
        for (int c = 0; c < n; c++) {
            float s = attn_dot_r(qr, kt + (s64) c * d, d) * scale;
            if (s > m) {
                float a = expf(m - s);
                l *= a;
                V4J_UNROLL
                for (int x = 0; x < D; x++) {
                    o[x] *= a;
                }
                m = s;
            }
            float pr = expf(s - m);
            l += pr;
            attn_axpy_r(o, pr, vt + (s64) c * d, d);
        }
    });
    if (i < t) {
        V4J_UNROLL
        for (int x = 0; x < D; x++) {
            if (x < d) {
                out.set(p, i, x, o[x] / l);
            }
        }
        lse[(s64) p * t + i] = m + logf(l);
    }
}

// KV: the thread's key and value rows in registers too (d up to 32); at 64, four rows of registers would spill, so
// only the accumulators are, and the dot products read the thread's own k and v rows from memory (cached)
template <int D, bool KV, typename In>
__device__ __forceinline__ void attention_backward_dkdv_r(In q, In k, In v, AttnRows rows, In out, AttnRows orows,
                                                          const float* lse, In dout, AttnRows grows, AttnOut dk,
                                                          AttnOut dv, int t, int d, float scale, int causal,
                                                          int tile) {
    int p = blockIdx.y;
    s64 base = rows.base(p);
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    bool active = j < t;
    In kj = k + (base + (s64) j * rows.st);
    In vj = v + (base + (s64) j * rows.st);
    float kr[D];
    float vr[D];
    float dka[D];
    float dva[D];
    V4J_UNROLL
    for (int x = 0; x < D; x++) {
        kr[x] = KV && active && x < d ? kj[x] : 0.0f;
        vr[x] = KV && active && x < d ? vj[x] : 0.0f;
        dka[x] = 0.0f;
        dva[x] = 0.0f;
    }
    attn_query_tiles(q, dout, out, lse, rows, orows, grows, t, d, causal, tile, j,
                     [&](const float* qr, const float* gr, float lr, float dr) {
        if (!KV) {
            asm volatile("" ::: "memory");   // k's and v's rows are read here each time, not hoisted into registers
        }
        float sq;
        float sg;
        if (KV) {
            sq = attn_dot_r(kr, qr, d);
            sg = attn_dot_r(vr, gr, d);
        } else {
            sq = attn_dot(qr, kj, d);
            sg = attn_dot(gr, vj, d);
        }
        float pr = expf(sq * scale - lr);
        float ds = pr * (sg - dr) * scale;
        attn_axpy_r(dva, pr, gr, d);
        attn_axpy_r(dka, ds, qr, d);
    });
    if (active) {
        V4J_UNROLL
        for (int x = 0; x < D; x++) {
            if (x < d) {
                dk.set(p, j, x, dka[x]);
                dv.set(p, j, x, dva[x]);
            }
        }
    }
}

template <int D, typename In>
__device__ __forceinline__ void attention_backward_dq_r(In q, In k, In v, AttnRows rows, In out, AttnRows orows,
                                                        const float* lse, In dout, AttnRows grows, AttnOut dq, int t,
                                                        int d, float scale, int causal, int tile) {
    AttnQueryRow<In> r(q, out, lse, dout, rows, orows, grows, t, d);
    s64 base = rows.base(r.p);
    float qr[D];
    float gr[D];
    float dqa[D];
    V4J_UNROLL
    for (int x = 0; x < D; x++) {
        qr[x] = r.i < t && x < d ? r.qi[x] : 0.0f;
        gr[x] = r.i < t && x < d ? r.gi[x] : 0.0f;
        dqa[x] = 0.0f;
    }
    attn_key_tiles(k + base, v + base, rows.st, t, d, causal, tile, r.i, [&](const float* kt, const float* vt, int n) {
        for (int c = 0; c < n; c++) {
            const float* kc = kt + (s64) c * d;
            float pr = expf(attn_dot_r(qr, kc, d) * scale - r.lsei);
            float ds = pr * (attn_dot_r(gr, vt + (s64) c * d, d) - r.di) * scale;
            attn_axpy_r(dqa, ds, kc, d);
        }
    });
    if (r.i < t) {
        V4J_UNROLL
        for (int x = 0; x < D; x++) {
            if (x < d) {
                dq.set(r.p, r.i, x, dqa[x]);
            }
        }
    }
}

// Each entry below takes the register paths for d up to 32 and up to 64, else the generic one, which accumulates in
// the results' acc_row.
template <typename In>
__device__ __forceinline__ void attention_forward_any(In q, In k, In v, AttnRows rows, AttnOut out, float* lse, int t,
                                                      int d, float scale, int causal, int tile) {
    if (d <= 32) {
        attention_forward_r<32>(q, k, v, rows, out, lse, t, d, scale, causal, tile);
    } else if (d <= 64) {
        attention_forward_r<64>(q, k, v, rows, out, lse, t, d, scale, causal, tile);
    } else {
        attention_forward(q, k, v, rows, out, lse, t, d, scale, causal, tile);
    }
}

template <typename In>
__device__ __forceinline__ void attention_backward_dkdv_any(In q, In k, In v, AttnRows rows, In out, AttnRows orows,
                                                            const float* lse, In dout, AttnRows grows, AttnOut dk,
                                                            AttnOut dv, int t, int d, float scale, int causal,
                                                            int tile) {
    if (d <= 32) {
        attention_backward_dkdv_r<32, true>(q, k, v, rows, out, orows, lse, dout, grows, dk, dv, t, d, scale, causal,
                                            tile);
    } else if (d <= 64) {
        attention_backward_dkdv_r<64, false>(q, k, v, rows, out, orows, lse, dout, grows, dk, dv, t, d, scale, causal,
                                             tile);
    } else {
        attention_backward_dkdv(q, k, v, rows, out, orows, lse, dout, grows, dk, dv, t, d, scale, causal, tile);
    }
}

template <typename In>
__device__ __forceinline__ void attention_backward_dq_any(In q, In k, In v, AttnRows rows, In out, AttnRows orows,
                                                          const float* lse, In dout, AttnRows grows, AttnOut dq,
                                                          int t, int d, float scale, int causal, int tile) {
    if (d <= 32) {
        attention_backward_dq_r<32>(q, k, v, rows, out, orows, lse, dout, grows, dq, t, d, scale, causal, tile);
    } else if (d <= 64) {
        attention_backward_dq_r<64>(q, k, v, rows, out, orows, lse, dout, grows, dq, t, d, scale, causal, tile);
    } else {
        attention_backward_dq(q, k, v, rows, out, orows, lse, dout, grows, dq, t, d, scale, causal, tile);
    }
}

// The entries' layouts: q, k and v in (heads, sb, sh, st) (AttnRows), out in (heads, osb, osh, ost), dout in
// (heads, gsb, gsh, gst), dq, dk and dv in (heads, dsb, dsh, dst) (the output's layout, or q's where the gradients
// go into one tensor laid out as the projection the heads were split from); lse float32 and contiguous
// [problems, t]. A contiguous [problems, t, d] operand is (1, t * d, 0, d).

// float32 operands, read and written in place (PyTorch's memory-efficient attention reads the heads split off one
// projection as they lie, too)
extern "C" __global__ void v4j_attention_forward_f32(const float* q, const float* k, const float* v, float* out,
                                                     float* lse, int t, int d, float scale, int causal, int tile,
                                                     int heads, s64 sb, s64 sh, s64 st, s64 osb, s64 osh, s64 ost) {
    AttnRows orows{heads, osb, osh, ost};
    attention_forward_any(F32In{q}, F32In{k}, F32In{v}, AttnRows{heads, sb, sh, st}, attn_out_f32(out, orows, t, d),
                          lse, t, d, scale, causal, tile);
}

extern "C" __global__ void v4j_attention_backward_dkdv_f32(const float* q, const float* k, const float* v,
                                                           const float* out, const float* lse, const float* dout,
                                                           float* dk, float* dv, int t, int d, float scale, int causal,
                                                           int tile, int heads, s64 sb, s64 sh, s64 st, s64 osb,
                                                           s64 osh, s64 ost, s64 gsb, s64 gsh, s64 gst, s64 dsb,
                                                           s64 dsh, s64 dst) {
    AttnRows orows{heads, osb, osh, ost};
    AttnRows drows{heads, dsb, dsh, dst};
    attention_backward_dkdv_any(F32In{q}, F32In{k}, F32In{v}, AttnRows{heads, sb, sh, st}, F32In{out}, orows, lse,
                                F32In{dout}, AttnRows{heads, gsb, gsh, gst}, attn_out_f32(dk, drows, t, d),
                                attn_out_f32(dv, drows, t, d), t, d, scale, causal, tile);
}

extern "C" __global__ void v4j_attention_backward_dq_f32(const float* q, const float* k, const float* v,
                                                         const float* out, const float* lse, const float* dout,
                                                         float* dq, int t, int d, float scale, int causal, int tile,
                                                         int heads, s64 sb, s64 sh, s64 st, s64 osb, s64 osh, s64 ost,
                                                         s64 gsb, s64 gsh, s64 gst, s64 dsb, s64 dsh, s64 dst) {
    AttnRows orows{heads, osb, osh, ost};
    attention_backward_dq_any(F32In{q}, F32In{k}, F32In{v}, AttnRows{heads, sb, sh, st}, F32In{out}, orows, lse,
                              F32In{dout}, AttnRows{heads, gsb, gsh, gst},
                              attn_out_f32(dq, AttnRows{heads, dsb, dsh, dst}, t, d), t, d, scale, causal, tile);
}

// 16-bit operands of one type (0 float16, 1 bfloat16), read widened and in place, the results rounded once as stored:
// under autocast no float32 copy of an input or a result is made. work: d above 64 only (else null), the generic
// paths' float32 accumulators: [problems, t, d] for the forward and dq, twice that (dk's, then dv's) for dk and dv.
extern "C" __global__ void v4j_attention_forward16(int type, const unsigned short* q, const unsigned short* k,
                                                   const unsigned short* v, unsigned short* out, float* lse,
                                                   float* work, int t, int d, float scale, int causal, int tile,
                                                   int heads, s64 sb, s64 sh, s64 st, s64 osb, s64 osh, s64 ost) {
    attention_forward_any(H16In{q, type}, H16In{k, type}, H16In{v, type}, AttnRows{heads, sb, sh, st},
                          attn_out16(out, type, AttnRows{heads, osb, osh, ost}, work, t, d), lse, t, d, scale, causal,
                          tile);
}

extern "C" __global__ void v4j_attention_backward_dkdv16(int type, const unsigned short* q, const unsigned short* k,
                                                         const unsigned short* v, const unsigned short* out,
                                                         const float* lse, const unsigned short* dout,
                                                         unsigned short* dk, unsigned short* dv, float* work, int t,
                                                         int d, float scale, int causal, int tile, int heads, s64 sb,
                                                         s64 sh, s64 st, s64 osb, s64 osh, s64 ost, s64 gsb, s64 gsh,
                                                         s64 gst, s64 dsb, s64 dsh, s64 dst) {
    AttnRows orows{heads, osb, osh, ost};
    AttnRows drows{heads, dsb, dsh, dst};
    attention_backward_dkdv_any(H16In{q, type}, H16In{k, type}, H16In{v, type}, AttnRows{heads, sb, sh, st},
                                H16In{out, type}, orows, lse, H16In{dout, type}, AttnRows{heads, gsb, gsh, gst},
                                attn_out16(dk, type, drows, work, t, d),
                                attn_out16(dv, type, drows, work == nullptr ? nullptr : work + (s64) gridDim.y * t * d,
                                           t, d),
                                t, d, scale, causal, tile);
}

extern "C" __global__ void v4j_attention_backward_dq16(int type, const unsigned short* q, const unsigned short* k,
                                                       const unsigned short* v, const unsigned short* out,
                                                       const float* lse, const unsigned short* dout,
                                                       unsigned short* dq, float* work, int t, int d, float scale,
                                                       int causal, int tile, int heads, s64 sb, s64 sh, s64 st,
                                                       s64 osb, s64 osh, s64 ost, s64 gsb, s64 gsh, s64 gst, s64 dsb,
                                                       s64 dsh, s64 dst) {
    AttnRows orows{heads, osb, osh, ost};
    attention_backward_dq_any(H16In{q, type}, H16In{k, type}, H16In{v, type}, AttnRows{heads, sb, sh, st},
                              H16In{out, type}, orows, lse, H16In{dout, type}, AttnRows{heads, gsb, gsh, gst},
                              attn_out16(dq, type, AttnRows{heads, dsb, dsh, dst}, work, t, d), t, d, scale, causal,
                              tile);
}

// ------------------------------------------------------------------------------------------------ attention on tensor cores
// The 16-bit attention above at head dimensions up to 64, with its matrix products on tensor cores (the warp matrix
// functions, 16 x 16 x 16 tiles of float16 or bfloat16 with float32 accumulators), as FlashAttention-2 runs under
// autocast. Same entries' arguments and results; what differs from the CUDA-core kernels:
//  - q k^T, p v and the backward's products multiply 16-bit values and add in float32: the probabilities p and the
//    backward's ds = p (dp - D) are rounded to the inputs' type before their products, and the output divides by
//    the sum of the rounded p (so it stays a weighted mean of v's rows);
//  - a block of TC_THREADS threads (four warps) owns TC_ROWS query rows (forward, dq) or key rows (dk/dv), 16 per
//    warp, and walks tiles of TC_TILE rows of the other operand; every operand is staged into shared memory as
//    16-bit, head dimension d padded with zeros to D (32 or 64), rows past t as zeros;
//  - the element-wise steps (online softmax, p, ds) run on float32 tiles the products stored in shared memory (a
//    fragment's layout across a warp is unspecified, so no kernel reads a fragment's elements). The forward's
//    online softmax is warp-local: two lanes take each of the warp's own 16 rows, half its keys each, one shuffle
//    joining their maximum and sum, their walks rotated so that no two lanes of the warp touch one bank of S or O
//    at once; only __syncwarp() stands between the warp's products and its softmax. The backward's p and ds
//    are warp-local the same way (a warp's own rows, a column per lane), so a tile of either pass has two block
//    barriers, around the staging; the row statistic D takes a warp per row;
// The order of every sum is fixed, so a launch repeated gives the same bits. Shared memory stays under 48 KiB
// (CudaKernels.attentionTensorCoreShared computes the kernels' layout).

#include <mma.h>

#define TC_THREADS 128
#define TC_ROWS 64
#define TC_TILE 32
// Every tile row in shared memory is TC_SKEW elements longer than its data (TC_LD), so that the 8 rows a fragment
// load or store touches at once start in different banks: rows of 64 16-bit values (128 bytes) or of 32 or 64 floats
// all start in bank 0, and a fragment's rows then queue on the same 4 banks (8-way conflicts); 8 more elements
// shift each row by 4 banks (16-bit) or 8 banks (float). The padding is never read.
#define TC_SKEW 8
#define TC_LD(cols) ((cols) + TC_SKEW)

namespace wmma = nvcuda::wmma;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> tc_acc;
template <typename T>
using tc_rows = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;

// the type code of load16 and store16 for a fragment's 16-bit type
template <typename T> struct TcType;
template <> struct TcType<__half> { static constexpr int code = 0; };
template <> struct TcType<__nv_bfloat16> { static constexpr int code = 1; };

// rows [r0, r0 + n) of a 16-bit input (rows st apart, d elements each) into dst, an operand tile (rows of TC_LD(D)):
// zeros past d up to D and in rows past t. Where d is D and every row starts 16-byte aligned (GPT-2's heads: d 64,
// rows 2304 elements apart), 8 elements move per load and store (uint4); else one element at a time.
template <int D>
__device__ __forceinline__ void tc_stage(const unsigned short* src, s64 st, int r0, int n, int t, int d,
                                         unsigned short* dst) {
    if (d == D && st % 8 == 0 && (unsigned long long) src % 16 == 0) {
        for (int e = threadIdx.x; e < n * (D / 8); e += blockDim.x) {
            int r = e / (D / 8);
            int x = e % (D / 8) * 8;
            *(uint4*) (dst + r * TC_LD(D) + x) =
                    r0 + r < t ? *(const uint4*) (src + (s64) (r0 + r) * st + x) : make_uint4(0, 0, 0, 0);
        }
        return;
    }
    for (int e = threadIdx.x; e < n * D; e += blockDim.x) {
        int r = e / D;
        int x = e % D;
        dst[r * TC_LD(D) + x] = r0 + r < t && x < d ? src[(s64) (r0 + r) * st + x] : (unsigned short) 0;
    }
}

// a warp's 16 rows of an operand tile (rows of TC_LD(D)) as D / 16 fragments, for tc_abt
template <int D, typename T>
__device__ __forceinline__ void tc_load_rows(tc_rows<T>* fa, const unsigned short* a) {
    for (int k = 0; k < D / 16; k++) {
        wmma::load_matrix_sync(fa[k], (const T*) (a + k * 16), TC_LD(D));
    }
}

// out (16 rows, ld ldo, float) = fa (16 rows of D, from tc_load_rows) times the transpose of b (N rows of an
// operand tile)
template <int D, int N, typename T>
__device__ __forceinline__ void tc_abt(const tc_rows<T>* fa, const unsigned short* b, float* out, int ldo) {
    for (int n0 = 0; n0 < N; n0 += 16) {
        tc_acc acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < D / 16; k++) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
            wmma::load_matrix_sync(fb, (const T*) (b + n0 * TC_LD(D) + k * 16), TC_LD(D));
            wmma::mma_sync(acc, fa[k], fb, acc);
        }
        wmma::store_matrix_sync(out + n0, acc, ldo, wmma::mem_row_major);
    }
}

// acc[D / 16] (16 rows of D) += a (16 rows of K, rows of TC_LD(K), 16-bit) times b (K rows of an operand tile)
template <int D, int K, typename T>
__device__ __forceinline__ void tc_ab(tc_acc* acc, const unsigned short* a, const unsigned short* b) {
    for (int n = 0; n < D / 16; n++) {
        for (int k0 = 0; k0 < K; k0 += 16) {
            tc_rows<T> fa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
            wmma::load_matrix_sync(fa, (const T*) (a + k0), TC_LD(K));
            wmma::load_matrix_sync(fb, (const T*) (b + k0 * TC_LD(D) + n * 16), TC_LD(D));
            wmma::mma_sync(acc[n], fa, fb, acc[n]);
        }
    }
}

// whether query i sees key j
__device__ __forceinline__ bool tc_visible(int i, int j, int t, int causal) {
    return i < t && j < t && (!causal || j <= i);
}

#define TC_WARP_ALL 0xffffffffu

static_assert(TC_TILE == 32, "the online softmax gives each lane of a warp one key of a tile");
static_assert(TC_ROWS == 16 * (TC_THREADS / 32), "each warp owns 16 rows");

// v summed over the 32 lanes of the warp, in the same order on every lane (a butterfly: each step adds the partner's
// partial sum, and a + b == b + a), so every lane gets the same bits
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) {
        v += __shfl_xor_sync(TC_WARP_ALL, v, o);
    }
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o /= 2) {
        v = fmaxf(v, __shfl_xor_sync(TC_WARP_ALL, v, o));
    }
    return v;
}

// v rounded to the 16-bit type (0 float16, 1 bfloat16) and widened back, as store16 then load16 would give it
__device__ __forceinline__ float round16(float v, int type) {
    return type == 0 ? __half2float(__float2half_rn(v)) : bf16_value(bf16_bits(v));
}

// One tile of the forward's online softmax, for a warp's 16 query rows i0 + r against keys j0 .. j0 + 31: S holds the
// rows' scores (rows of TC_LD(TC_TILE) floats), P gets their probabilities rounded to the type (rows of
// TC_LD(TC_TILE)). Two lanes take a row, r = lane / 2, each one half of its keys (h = lane % 2); they keep the row's
// maximum m and sum l of rounded probabilities in mOwn and lOwn (both the same), and one shuffle joins their halves.
// Each lane walks its half from column r on (a rotation), so that the 32 lanes' loads of S fall in 32 different
// banks at every step (the rows are 40 floats apart). Returns exp(m_old - m_new), the factor of the row's output so
// far (1 where its maximum did not grow), on both of the row's lanes. All 32 lanes call it.
__device__ __forceinline__ float tc_softmax_tile(const float* S, unsigned short* P, float& mOwn, float& lOwn, int i0,
                                                 int j0, int t, int causal, float scale, int type) {
    const int half = TC_TILE / 2;
    int lane = threadIdx.x % 32;
    int r = lane / 2;
    int h = lane % 2;
    int i = i0 + r;
    const float* Sr = S + r * TC_LD(TC_TILE) + h * half;
    unsigned short* Pr = P + r * TC_LD(TC_TILE) + h * half;
    int jh = j0 + h * half;
    float mx = -CUDART_INF_F;
    for (int c = 0; c < half; c++) {
        int col = (c + r) % half;
        if (tc_visible(i, jh + col, t, causal)) {
            mx = fmaxf(mx, Sr[col] * scale);
        }
    }
    float mt = fmaxf(mOwn, fmaxf(mx, __shfl_xor_sync(TC_WARP_ALL, mx, 1)));
    float a = mt == -CUDART_INF_F ? 1.0f : expf(mOwn - mt);
    float sum = 0.0f;
    for (int c = 0; c < half; c++) {
        int col = (c + r) % half;
        float pr = round16(tc_visible(i, jh + col, t, causal) ? expf(Sr[col] * scale - mt) : 0.0f, type);
        store16(Pr, (u64) col, type, pr);
        sum += pr;
    }
    sum += __shfl_xor_sync(TC_WARP_ALL, sum, 1);   // the two halves: the same bits on both lanes
    lOwn = lOwn * a + sum;
    mOwn = mt;
    return a;
}

// The row (0 to 15) of each of this lane's elements of an accumulator fragment. The CUDA programming guide leaves
// the mapping of a fragment's elements to lanes unspecified (it differs between architectures, and the emulator has
// its own), so it is read back from a tile whose elements hold their row, loaded into a fragment: every accumulator
// fragment of the type maps its elements the same way. W: 16 rows of ld floats of this warp's shared memory, 32-byte
// aligned, free. All 32 lanes call it.
__device__ __forceinline__ void tc_fragment_rows(float* W, int ld, int* rowOf) {
    int lane = threadIdx.x % 32;
    for (int e = lane; e < 256; e += 32) {
        W[(e / 16) * ld + e % 16] = (float) (e / 16);
    }
    __syncwarp();
    tc_acc rows;
    wmma::load_matrix_sync(rows, W, ld, wmma::mem_row_major);
    for (int i = 0; i < tc_acc::num_elements; i++) {
        rowOf[i] = (int) rows.x[i];
    }
    __syncwarp();   // W is free again
}

// Each element of the warp's 16-row accumulators o[D / 16] times the factor of its row (held by lane 2 r of row r,
// and by lane 2 r + 1: tc_softmax_tile's pairs), or divided by it (div). All 32 lanes call it.
template <int D>
__device__ __forceinline__ void tc_scale_rows(tc_acc* o, const int* rowOf, float factor, bool div) {
    for (int i = 0; i < tc_acc::num_elements; i++) {
        float f = __shfl_sync(TC_WARP_ALL, factor, 2 * rowOf[i]);
        for (int n = 0; n < D / 16; n++) {
            o[n].x[i] = div ? o[n].x[i] / f : o[n].x[i] * f;
        }
    }
}

// Forward. Shared memory: O [TC_ROWS, TC_LD(D)] and S [TC_ROWS, TC_LD(TC_TILE)] of floats, then 16-bit K and V
// [TC_TILE, TC_LD(D)] and P [TC_ROWS, TC_LD(TC_TILE)]. Warp w owns rows 16 w to 16 w + 15 of O, S and P, and keeps
// its 16 rows of q in fragments and of the output in accumulators for the whole loop (as FlashAttention-2 keeps them
// in registers): each tile rescales the accumulators by their rows' factors (tc_scale_rows) and adds p v to them. q
// is staged once, as 16-bit rows, where O is; O takes the output on its way out.
template <int D, typename T>
__device__ __forceinline__ void attention_forward_tc(const unsigned short* q, const unsigned short* k,
                                                     const unsigned short* v, AttnRows rows, AttnOut out, float* lse,
                                                     int t, int d, float scale, int causal) {
    extern __shared__ __align__(128) float attn_tc[];
    const int type = TcType<T>::code;
    int p = blockIdx.y;
    int w = threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    int q0 = blockIdx.x * TC_ROWS;
    int i0 = q0 + w * 16;   // this warp's first row
    float* O = attn_tc + w * 16 * TC_LD(D);
    float* S = attn_tc + TC_ROWS * TC_LD(D) + w * 16 * TC_LD(TC_TILE);
    unsigned short* Ks = (unsigned short*) (attn_tc + TC_ROWS * TC_LD(D) + TC_ROWS * TC_LD(TC_TILE));
    unsigned short* Vs = Ks + TC_TILE * TC_LD(D);
    unsigned short* P = Vs + TC_TILE * TC_LD(D) + w * 16 * TC_LD(TC_TILE);
    s64 base = rows.base(p);
    unsigned short* Qs = (unsigned short*) attn_tc;
    tc_stage<D>(q + base, rows.st, q0, TC_ROWS, t, d, Qs);
    __syncthreads();
    tc_rows<T> qa[D / 16];
    tc_load_rows<D, T>(qa, Qs + w * 16 * TC_LD(D));
    int rowOf[tc_acc::num_elements];
    tc_fragment_rows(S, TC_LD(TC_TILE), rowOf);
    tc_acc oa[D / 16];
    for (int n = 0; n < D / 16; n++) {
        wmma::fill_fragment(oa[n], 0.0f);
    }
    float mOwn = -CUDART_INF_F;   // lanes 2r and 2r + 1: row i0 + r's running maximum and sum
    float lOwn = 0.0f;
    int keys = causal ? min(t, q0 + TC_ROWS) : t;
    for (int j0 = 0; j0 < keys; j0 += TC_TILE) {
        __syncthreads();
        tc_stage<D>(k + base, rows.st, j0, TC_TILE, t, d, Ks);
        tc_stage<D>(v + base, rows.st, j0, TC_TILE, t, d, Vs);
        __syncthreads();
        tc_abt<D, TC_TILE, T>(qa, Ks, S, TC_LD(TC_TILE));
        __syncwarp();
        float a = tc_softmax_tile(S, P, mOwn, lOwn, i0, j0, t, causal, scale, type);
        __syncwarp();
        tc_scale_rows<D>(oa, rowOf, a, false);
        tc_ab<D, TC_TILE, T>(oa, P, Vs);
    }
    // the warp's rows out through O, a lane per column: O / l, and lse = m + log l
    tc_scale_rows<D>(oa, rowOf, lOwn, true);
    __syncthreads();   // every warp has its q before O, where q was staged, takes the output
    for (int n = 0; n < D / 16; n++) {
        wmma::store_matrix_sync(O + n * 16, oa[n], TC_LD(D), wmma::mem_row_major);
    }
    __syncwarp();
    for (int r = 0; r < 16; r++) {
        if (i0 + r < t) {
            for (int x = lane; x < d; x += 32) {
                out.set(p, i0 + r, x, O[r * TC_LD(D) + x]);
            }
        }
    }
    if (lane % 2 == 0 && i0 + lane / 2 < t) {
        lse[(s64) p * t + i0 + lane / 2] = mOwn + logf(lOwn);
    }
}

// The backward passes' shared memory: 16-bit operand tiles of the block's own TC_ROWS rows (own0, own1) and of a tile
// of TC_TILE rows of the other operand (oth0, oth1), rows of TC_LD(D); a float32 product tile F [TC_ROWS,
// TC_LD(TC_TILE)]; 16-bit p and ds tiles of that shape; lse and D of the query rows the block holds (stats of them).
// At the end own0 and own1 (at least TC_ROWS * D floats together) hold a result on its way out (tc_write_rows).
template <int D>
struct TcBackwardTiles {
    unsigned short *own0, *own1, *oth0, *oth1, *p, *ds;
    float *f, *lse, *delta;
    __device__ __forceinline__ TcBackwardTiles(float* base, int stats) {
        own0 = (unsigned short*) base;
        own1 = own0 + TC_ROWS * TC_LD(D);
        oth0 = own1 + TC_ROWS * TC_LD(D);
        oth1 = oth0 + TC_TILE * TC_LD(D);
        f = (float*) (oth1 + TC_TILE * TC_LD(D));
        p = (unsigned short*) (f + TC_ROWS * TC_LD(TC_TILE));
        ds = p + TC_ROWS * TC_LD(TC_TILE);
        lse = (float*) (ds + TC_ROWS * TC_LD(TC_TILE));
        delta = lse + stats;
    }
};

// lse and D = rowsum(dout * out) of query rows [i0, i0 + n) into ls and ds (0 past t), and D of the rows that exist
// into delta (problem p's row i at p t + i) for the dk/dv pass: a warp per row, its lanes reading the row's elements
// side by side, their products summed by warp_sum
__device__ __forceinline__ void tc_query_stats(const float* lse, const unsigned short* out, AttnRows orows,
                                               const unsigned short* dout, AttnRows grows, int p, int i0, int n, int t,
                                               int d, int type, float* ls, float* ds, float* delta) {
    int lane = threadIdx.x % 32;
    for (int r = threadIdx.x / 32; r < n; r += blockDim.x / 32) {
        int i = i0 + r;
        float s = 0.0f;
        if (i < t) {
            const unsigned short* o = out + orows.base(p) + (s64) i * orows.st;
            const unsigned short* g = dout + grows.base(p) + (s64) i * grows.st;
            for (int x = lane; x < d; x += 32) {
                s += load16(g, (u64) x, type) * load16(o, (u64) x, type);
            }
        }
        s = warp_sum(s);
        if (lane == 0) {
            ls[r] = i < t ? lse[(s64) p * t + i] : 0.0f;
            ds[r] = s;
            if (i < t) {
                delta[(s64) p * t + i] = s;
            }
        }
    }
}

// lse and D of query rows [i0, i0 + n) into ls and ds (0 past t), from the forward's lse and the dq pass's delta
__device__ __forceinline__ void tc_load_stats(const float* lse, const float* delta, int p, int i0, int n, int t,
                                              float* ls, float* ds) {
    for (int r = threadIdx.x; r < n; r += blockDim.x) {
        int i = i0 + r;
        ls[r] = i < t ? lse[(s64) p * t + i] : 0.0f;
        ds[r] = i < t ? delta[(s64) p * t + i] : 0.0f;
    }
}

// Over a warp's 16 rows r0 + r of the block's own operand against the tile's columns c0 + lane (F, P and DS: the
// warp's rows, rows of TC_LD(TC_TILE)), a lane per column: with keysOwn the rows are keys and the columns queries
// (dk/dv), else the reverse (dq). First p = exp(scale s - lse) from the scores in F, 0 where the query does not see
// the key, into P; then, with F holding dp, ds = p (dp - D) into DS. lse and D are read at the query's position in
// ls and ds (the tile's columns with keysOwn, else the warp's rows). All 32 lanes call them.
__device__ __forceinline__ void tc_probabilities(const float* F, const float* ls, unsigned short* P, bool keysOwn,
                                                 int r0, int c0, int t, int causal, float scale, int type) {
    int lane = threadIdx.x % 32;
    #pragma unroll 1
    for (int r = 0; r < 16; r++) {
        int i = keysOwn ? c0 + lane : r0 + r;
        int j = keysOwn ? r0 + r : c0 + lane;
        int at = r * TC_LD(TC_TILE) + lane;
        float pr = tc_visible(i, j, t, causal) ? expf(F[at] * scale - ls[keysOwn ? lane : r]) : 0.0f;
        store16(P, (u64) at, type, pr);
    }
}

__device__ __forceinline__ void tc_score_grads(const float* F, const float* ds, const unsigned short* P,
                                               unsigned short* DS, bool keysOwn, int type) {
    int lane = threadIdx.x % 32;
    #pragma unroll 1
    for (int r = 0; r < 16; r++) {
        int at = r * TC_LD(TC_TILE) + lane;
        float delta = ds[keysOwn ? lane : r];
        store16(DS, (u64) at, type, load16(P, (u64) at, type) * (F[at] - delta));
    }
}

// Stores each warp's 16 rows of acc (D / 16 fragments) through R (TC_ROWS * D floats of shared memory) into rows
// r0 + r of problem p of dst, times scale, the rows that exist and columns below d. Every thread reaches every
// barrier; R must be free when called.
template <int D>
__device__ __forceinline__ void tc_write_rows(tc_acc* acc, float* R, AttnOut dst, int p, int r0, int t, int d,
                                              float scale) {
    int w = threadIdx.x / 32;
    __syncthreads();
    for (int n = 0; n < D / 16; n++) {
        wmma::store_matrix_sync(R + w * 16 * D + n * 16, acc[n], D, wmma::mem_row_major);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < TC_ROWS * D; e += blockDim.x) {
        int r = r0 + e / D;
        if (r < t && e % D < d) {
            dst.set(p, r, e % D, R[e] * scale);
        }
    }
}

// Backward, dk and dv of this block's TC_ROWS keys (own tiles: k, v; other: a tile of q and dout; lse and D of
// TC_TILE query rows, D as the dq pass left it in delta), walking the query tiles that see them. Two block barriers a
// tile (the staging); between them each warp works on its own 16 keys' rows of F, P and DS behind __syncwarp().
template <int D, typename T>
__device__ __forceinline__ void attention_backward_dkdv_tc(const unsigned short* q, const unsigned short* k,
                                                           const unsigned short* v, AttnRows rows,
                                                           const float* delta, const float* lse,
                                                           const unsigned short* dout, AttnRows grows, AttnOut dk,
                                                           AttnOut dv, int t, int d, float scale, int causal) {
    extern __shared__ __align__(128) float attn_tc[];
    const int type = TcType<T>::code;
    TcBackwardTiles<D> sm(attn_tc, TC_TILE);
    int p = blockIdx.y;
    int w = threadIdx.x / 32;
    int k0 = blockIdx.x * TC_ROWS;
    int r0 = k0 + w * 16;   // this warp's first key
    s64 base = rows.base(p);
    unsigned short* ownK = sm.own0 + w * 16 * TC_LD(D);
    unsigned short* ownV = sm.own1 + w * 16 * TC_LD(D);
    float* F = sm.f + w * 16 * TC_LD(TC_TILE);
    unsigned short* P = sm.p + w * 16 * TC_LD(TC_TILE);
    unsigned short* DS = sm.ds + w * 16 * TC_LD(TC_TILE);
    tc_stage<D>(k + base, rows.st, k0, TC_ROWS, t, d, sm.own0);
    tc_stage<D>(v + base, rows.st, k0, TC_ROWS, t, d, sm.own1);
    tc_acc dka[D / 16];
    tc_acc dva[D / 16];
    for (int n = 0; n < D / 16; n++) {
        wmma::fill_fragment(dka[n], 0.0f);
        wmma::fill_fragment(dva[n], 0.0f);
    }
    for (int i0 = causal ? k0 : 0; i0 < t; i0 += TC_TILE) {
        __syncthreads();
        tc_stage<D>(q + base, rows.st, i0, TC_TILE, t, d, sm.oth0);
        tc_stage<D>(dout + grows.base(p), grows.st, i0, TC_TILE, t, d, sm.oth1);
        tc_load_stats(lse, delta, p, i0, TC_TILE, t, sm.lse, sm.delta);
        __syncthreads();
        tc_rows<T> fa[D / 16];
        tc_load_rows<D, T>(fa, ownK);
        tc_abt<D, TC_TILE, T>(fa, sm.oth0, F, TC_LD(TC_TILE));           // s^T = k q^T
        __syncwarp();
        tc_probabilities(F, sm.lse, P, true, r0, i0, t, causal, scale, type);
        __syncwarp();
        tc_load_rows<D, T>(fa, ownV);
        tc_abt<D, TC_TILE, T>(fa, sm.oth1, F, TC_LD(TC_TILE));           // dp^T = v dout^T
        tc_ab<D, TC_TILE, T>(dva, P, sm.oth1);                           // dv += p^T dout
        __syncwarp();
        tc_score_grads(F, sm.delta, P, DS, true, type);
        __syncwarp();
        tc_ab<D, TC_TILE, T>(dka, DS, sm.oth0);                          // dk += ds^T q
    }
    float* R = (float*) sm.own0;   // TC_ROWS * D floats over K and V, no longer read
    tc_write_rows<D>(dva, R, dv, p, k0, t, d, 1.0f);
    tc_write_rows<D>(dka, R, dk, p, k0, t, d, scale);
}

// Backward, dq of this block's TC_ROWS queries (own tiles: q, dout, with their stats, D also written to delta for
// the dk/dv pass that runs next; other: a tile of k and v), walking the key tiles they see. Each warp keeps its 16
// rows of q and dout in fragments for the whole loop, and works on its own rows of F, P and DS behind __syncwarp()
// between the two block barriers of a tile.
template <int D, typename T>
__device__ __forceinline__ void attention_backward_dq_tc(const unsigned short* q, const unsigned short* k,
                                                         const unsigned short* v, AttnRows rows,
                                                         const unsigned short* out, AttnRows orows, const float* lse,
                                                         const unsigned short* dout, AttnRows grows, AttnOut dq,
                                                         float* delta, int t, int d, float scale, int causal) {
    extern __shared__ __align__(128) float attn_tc[];
    const int type = TcType<T>::code;
    TcBackwardTiles<D> sm(attn_tc, TC_ROWS);
    int p = blockIdx.y;
    int w = threadIdx.x / 32;
    int q0 = blockIdx.x * TC_ROWS;
    s64 base = rows.base(p);
    float* F = sm.f + w * 16 * TC_LD(TC_TILE);
    unsigned short* P = sm.p + w * 16 * TC_LD(TC_TILE);
    unsigned short* DS = sm.ds + w * 16 * TC_LD(TC_TILE);
    tc_stage<D>(q + base, rows.st, q0, TC_ROWS, t, d, sm.own0);
    tc_stage<D>(dout + grows.base(p), grows.st, q0, TC_ROWS, t, d, sm.own1);
    tc_query_stats(lse, out, orows, dout, grows, p, q0, TC_ROWS, t, d, type, sm.lse, sm.delta, delta);
    __syncthreads();
    tc_rows<T> qa[D / 16];
    tc_rows<T> ga[D / 16];
    tc_load_rows<D, T>(qa, sm.own0 + w * 16 * TC_LD(D));
    tc_load_rows<D, T>(ga, sm.own1 + w * 16 * TC_LD(D));
    tc_acc dqa[D / 16];
    for (int n = 0; n < D / 16; n++) {
        wmma::fill_fragment(dqa[n], 0.0f);
    }
    int keys = causal ? min(t, q0 + TC_ROWS) : t;
    for (int j0 = 0; j0 < keys; j0 += TC_TILE) {
        __syncthreads();
        tc_stage<D>(k + base, rows.st, j0, TC_TILE, t, d, sm.oth0);
        tc_stage<D>(v + base, rows.st, j0, TC_TILE, t, d, sm.oth1);
        __syncthreads();
        tc_abt<D, TC_TILE, T>(qa, sm.oth0, F, TC_LD(TC_TILE));           // s = q k^T
        __syncwarp();
        tc_probabilities(F, sm.lse + w * 16, P, false, q0 + w * 16, j0, t, causal, scale, type);
        __syncwarp();
        tc_abt<D, TC_TILE, T>(ga, sm.oth1, F, TC_LD(TC_TILE));           // dp = dout v^T
        __syncwarp();
        tc_score_grads(F, sm.delta + w * 16, P, DS, false, type);
        __syncwarp();
        tc_ab<D, TC_TILE, T>(dqa, DS, sm.oth0);                          // dq += ds k
    }
    tc_write_rows<D>(dqa, (float*) sm.own0, dq, p, q0, t, d, scale);   // over Q and dout, no longer read
}

// The padded head dimension D as a type, for tc_dispatch
template <int D> struct TcDim { static constexpr int value = D; };

// Calls f(TcDim<D>{}, T{}) with the padded head dimension D of d (32 up to 32, else 64) and the 16-bit type T of type
// (0 float16, 1 bfloat16): the four instantiations each tensor-core entry has
template <typename F>
__device__ __forceinline__ void tc_dispatch(int type, int d, F f) {
    if (d <= 32) {
        if (type == 0) {
            f(TcDim<32>{}, __half{});
        } else {
            f(TcDim<32>{}, __nv_bfloat16{});
        }
    } else if (type == 0) {
        f(TcDim<64>{}, __half{});
    } else {
        f(TcDim<64>{}, __nv_bfloat16{});
    }
}

// The entries: arguments as v4j_attention_forward16 and the backward's passes, without the CUDA-core kernels' tile
// and workspace; d at most 64, blocks of TC_THREADS threads, one per TC_ROWS rows. The backward runs dq first: it
// writes D = rowsum(dout * out) of every query row into delta ([problems, t] floats), which dk/dv then reads in
// place of out (FlashAttention-2 computes D once too, in a kernel of its own). The forward is held to 128 registers
// a thread (__launch_bounds__), so that 4 blocks fit an SM as they did before its output stayed in registers
// (ptxas, sm_90: 128 and no spills; 168 when left to itself, 3 blocks); the backward's passes use fewer unbidden.
extern "C" __global__ void __launch_bounds__(TC_THREADS, 4)
v4j_attention_forward_tc(int type, const unsigned short* q, const unsigned short* k, const unsigned short* v,
                         unsigned short* out, float* lse, int t, int d, float scale, int causal, int heads, s64 sb,
                         s64 sh, s64 st, s64 osb, s64 osh, s64 ost) {
    AttnRows rows{heads, sb, sh, st};
    AttnOut o = attn_out16(out, type, AttnRows{heads, osb, osh, ost}, nullptr, t, d);
    tc_dispatch(type, d, [&](auto dim, auto half) {
        attention_forward_tc<decltype(dim)::value, decltype(half)>(q, k, v, rows, o, lse, t, d, scale, causal);
    });
}

extern "C" __global__ void v4j_attention_backward_dkdv_tc(int type, const unsigned short* q, const unsigned short* k,
                                                          const unsigned short* v, const float* delta,
                                                          const float* lse, const unsigned short* dout,
                                                          unsigned short* dk, unsigned short* dv, int t, int d,
                                                          float scale, int causal, int heads, s64 sb, s64 sh, s64 st,
                                                          s64 osb, s64 osh, s64 ost, s64 gsb, s64 gsh, s64 gst,
                                                          s64 dsb, s64 dsh, s64 dst) {
    AttnRows rows{heads, sb, sh, st};
    AttnRows grows{heads, gsb, gsh, gst};
    AttnRows drows{heads, dsb, dsh, dst};
    AttnOut ok = attn_out16(dk, type, drows, nullptr, t, d);
    AttnOut ov = attn_out16(dv, type, drows, nullptr, t, d);
    tc_dispatch(type, d, [&](auto dim, auto half) {
        attention_backward_dkdv_tc<decltype(dim)::value, decltype(half)>(q, k, v, rows, delta, lse, dout, grows, ok,
                                                                          ov, t, d, scale, causal);
    });
}

extern "C" __global__ void v4j_attention_backward_dq_tc(int type, const unsigned short* q, const unsigned short* k,
                                                        const unsigned short* v, const unsigned short* out,
                                                        const float* lse, const unsigned short* dout,
                                                        unsigned short* dq, float* delta, int t, int d, float scale,
                                                        int causal,
                                                        int heads, s64 sb, s64 sh, s64 st, s64 osb, s64 osh, s64 ost,
                                                        s64 gsb, s64 gsh, s64 gst, s64 dsb, s64 dsh, s64 dst) {
    AttnRows rows{heads, sb, sh, st};
    AttnRows orows{heads, osb, osh, ost};
    AttnRows grows{heads, gsb, gsh, gst};
    AttnOut oq = attn_out16(dq, type, AttnRows{heads, dsb, dsh, dst}, nullptr, t, d);
    tc_dispatch(type, d, [&](auto dim, auto half) {
        attention_backward_dq_tc<decltype(dim)::value, decltype(half)>(q, k, v, rows, out, orows, lse, dout, grows,
                                                                        oq, delta, t, d, scale, causal);
    });
}
