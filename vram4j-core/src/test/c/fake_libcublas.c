/*
 * A stand-in for cuBLAS (libcublas.so) for vram4j's tests on machines without a GPU, beside the stand-in driver
 * (fake_libcuda.c). It exports the entry points vram4j's FFM bindings look up (Cublas.java) with cuBLAS's
 * prototypes as cublas_api.h declares them (no cuBLAS header is needed: the types are spelled out below), computes
 * nothing, and keeps the rules a test can check:
 *  - a handle must come from cublasCreate_v2 and not be destroyed (CUBLAS_STATUS_NOT_INITIALIZED otherwise);
 *  - the products check their sizes and leading dimensions as cuBLAS documents them ("cublasGemmEx": m, n, k and
 *    the batch count not negative, lda >= max(1, rows of op(A) as stored), ldb likewise, ldc >= max(1, m)),
 *    returning CUBLAS_STATUS_INVALID_VALUE, and need the three matrix types equal and one of 32F, 16F, 16BF;
 *  - counters (fake_cublas_count) of live handles and of calls, and the workspace size last set, so tests can see
 *    that the products reached cuBLAS and what workspace they were given.
 * Test-only: never shipped.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
typedef struct fake_cublas_handle { void *stream; void *workspace; size_t workspace_bytes; int magic; } *cublasHandle_t;

#define STATUS_SUCCESS 0
#define STATUS_NOT_INITIALIZED 1
#define STATUS_INVALID_VALUE 7
#define STATUS_NOT_SUPPORTED 15
#define MAGIC 0x0b1a5
#define OP_N 0
#define OP_T 1
#define R_32F 0
#define R_16F 2
#define R_16BF 14
#define COMPUTE_32F 68
#define COMPUTE_32F_FAST_TF32 77

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long live_handles, gemm_calls, batched_calls, workspace_calls, stream_calls;
static long last_workspace_bytes = -1;

long fake_cublas_count(const char *what) {
    long r = -1;
    pthread_mutex_lock(&lock);
    if (!strcmp(what, "handles")) r = live_handles;
    else if (!strcmp(what, "gemm")) r = gemm_calls;
    else if (!strcmp(what, "gemm_batched")) r = batched_calls;
    else if (!strcmp(what, "set_workspace")) r = workspace_calls;
    else if (!strcmp(what, "set_stream")) r = stream_calls;
    else if (!strcmp(what, "workspace_bytes")) r = last_workspace_bytes;
    pthread_mutex_unlock(&lock);
    return r;
}

void fake_cublas_reset(void) {
    pthread_mutex_lock(&lock);
    gemm_calls = batched_calls = workspace_calls = stream_calls = 0;
    last_workspace_bytes = -1;
    pthread_mutex_unlock(&lock);
}

static void count(long *counter) { pthread_mutex_lock(&lock); (*counter)++; pthread_mutex_unlock(&lock); }

static int valid(cublasHandle_t h) { return h != NULL && h->magic == MAGIC; }

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
    if (!handle) return STATUS_INVALID_VALUE;
    cublasHandle_t h = calloc(1, sizeof(*h));
    if (!h) return STATUS_NOT_INITIALIZED;
    h->magic = MAGIC;
    *handle = h;
    count(&live_handles);
    return STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    if (!valid(handle)) return STATUS_NOT_INITIALIZED;
    handle->magic = 0;
    free(handle);
    pthread_mutex_lock(&lock); live_handles--; pthread_mutex_unlock(&lock);
    return STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, void *stream) {
    if (!valid(handle)) return STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    count(&stream_calls);
    return STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t bytes) {
    if (!valid(handle)) return STATUS_NOT_INITIALIZED;
    if (bytes > 0 && (workspace == NULL || ((size_t) workspace & 255) != 0)) return STATUS_INVALID_VALUE;
    handle->workspace = workspace;
    handle->workspace_bytes = bytes;
    pthread_mutex_lock(&lock); workspace_calls++; last_workspace_bytes = (long) bytes; pthread_mutex_unlock(&lock);
    return STATUS_SUCCESS;
}

static int at_least(int ld, int rows) { return ld >= (rows > 1 ? rows : 1); }

/* cuBLAS's checks of a product's shape: op(A) m x k, op(B) k x n, C m x n, column-major. */
static cublasStatus_t check(int transa, int transb, int m, int n, int k, int atype, int lda, int btype, int ldb,
                            int ctype, int ldc, int compute) {
    if ((transa != OP_N && transa != OP_T) || (transb != OP_N && transb != OP_T)) return STATUS_INVALID_VALUE;
    if (m < 0 || n < 0 || k < 0) return STATUS_INVALID_VALUE;
    if (!at_least(lda, transa == OP_N ? m : k) || !at_least(ldb, transb == OP_N ? k : n) || !at_least(ldc, m))
        return STATUS_INVALID_VALUE;
    if (atype != btype || atype != ctype || (atype != R_32F && atype != R_16F && atype != R_16BF))
        return STATUS_NOT_SUPPORTED;
    if (compute != COMPUTE_32F && compute != COMPUTE_32F_FAST_TF32) return STATUS_NOT_SUPPORTED;
    return STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, int transa, int transb, int m, int n, int k, const void *alpha,
                            const void *A, int atype, int lda, const void *B, int btype, int ldb, const void *beta,
                            void *C, int ctype, int ldc, int compute, int algo) {
    (void) A; (void) B; (void) C; (void) algo;
    if (!valid(handle)) return STATUS_NOT_INITIALIZED;
    if (!alpha || !beta) return STATUS_INVALID_VALUE;
    cublasStatus_t s = check(transa, transb, m, n, k, atype, lda, btype, ldb, ctype, ldc, compute);
    if (s == STATUS_SUCCESS) count(&gemm_calls);
    return s;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                                          const void *alpha, const void *A, int atype, int lda, long long strideA,
                                          const void *B, int btype, int ldb, long long strideB, const void *beta,
                                          void *C, int ctype, int ldc, long long strideC, int batch, int compute,
                                          int algo) {
    (void) A; (void) B; (void) C; (void) algo; (void) strideA; (void) strideB;
    if (!valid(handle)) return STATUS_NOT_INITIALIZED;
    if (!alpha || !beta || batch < 0 || strideC < 0) return STATUS_INVALID_VALUE;
    cublasStatus_t s = check(transa, transb, m, n, k, atype, lda, btype, ldb, ctype, ldc, compute);
    if (s == STATUS_SUCCESS) count(&batched_calls);
    return s;
}

const char *cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
        case STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        default: return NULL;
    }
}
