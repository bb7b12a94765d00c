/*
 * A stand-in for cuBLAS (libcublas.so) for vram4j's tests on machines without a GPU, beside the stand-in driver
 * (fake_libcuda.c). It exports the entry points vram4j's FFM bindings look up (Cublas.java) with cuBLAS's
 * prototypes as cublas_api.h declares them (no cuBLAS header is needed: the types are spelled out below), and keeps
 * the rules a test can check:
 *  - a handle must come from cublasCreate_v2 and not be destroyed (CUBLAS_STATUS_NOT_INITIALIZED otherwise);
 *  - the products check their sizes and leading dimensions as cuBLAS documents them ("cublasGemmEx": m, n, k and
 *    the batch count not negative, lda >= max(1, rows of op(A) as stored), ldb likewise, ldc >= max(1, m)),
 *    returning CUBLAS_STATUS_INVALID_VALUE, and need the three matrix types equal and one of 32F, 16F, 16BF;
 *  - counters (fake_cublas_count) of live handles and of calls, and the workspace size last set, so tests can see
 *    that the products reached cuBLAS and what workspace they were given;
 *  - the products compute only where the stand-in driver runs kernels too (VRAM4J_FAKE_KERNELS set when a handle is
 *    created, or fake_cublas_compute(1)): then C = alpha op(A) op(B) + beta C on the stand-in's device memory (host
 *    memory), column-major, each element a float sum over k in eight interleaved parts (as a GPU splits a sum; the
 *    order differs from the CPU kernels'), 16-bit inputs widened and the result rounded to nearest even; C is not
 *    read when beta is 0, as in cuBLAS. A product is queued on the handle's stream of the stand-in driver
 *    (fake_cuda_enqueue_call, found through the soname libcuda.so.1 it is loaded under) and runs in that stream's
 *    order, when the program waits for it; without the stand-in driver it is computed at the call. Elsewhere the
 *    pointers may be a simulated device's, which nothing may dereference, so nothing is computed.
 *  - cuBLASLt's entry points for a product with a bias epilogue (cublasLtMatmul and its descriptors, layouts,
 *    preferences and heuristic; see the section at the end), which vram4j looks for in libcublasLt beside cuBLAS and
 *    else in the cuBLAS library itself, so that this one file stands in for both.
 * Test-only: never shipped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

typedef int cublasStatus_t;
typedef struct fake_cublas_handle { void *stream; void *workspace; size_t workspace_bytes; int magic; } *cublasHandle_t;

#define STATUS_SUCCESS 0
#define STATUS_NOT_INITIALIZED 1
#define STATUS_INVALID_VALUE 7
#define STATUS_EXECUTION_FAILED 13
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
static long lt_live, lt_matmul_calls;  /* cuBLASLt objects alive (handles, descriptors, layouts, preferences); products */
static long lt_misaligned;             /* cublasLtMatmul calls refused for a pointer the algorithm's alignment misses */
static long lt_heuristic_calls;        /* cublasLtMatmulAlgoGetHeuristic calls */
static int lt_algorithms = 1;          /* algorithms the cuBLASLt heuristic offers (fake_cublas_lt_algorithms) */
static int lt_matmul_fails;            /* cublasLtMatmul answers CUBLAS_STATUS_EXECUTION_FAILED (fake_cublas_lt_fail) */
static int computing;

void fake_cublas_compute(int on) { computing = on; }

long fake_cublas_count(const char *what) {
    long r = -1;
    pthread_mutex_lock(&lock);
    if (!strcmp(what, "handles")) r = live_handles;
    else if (!strcmp(what, "gemm")) r = gemm_calls;
    else if (!strcmp(what, "gemm_batched")) r = batched_calls;
    else if (!strcmp(what, "set_workspace")) r = workspace_calls;
    else if (!strcmp(what, "set_stream")) r = stream_calls;
    else if (!strcmp(what, "workspace_bytes")) r = last_workspace_bytes;
    else if (!strcmp(what, "lt_live")) r = lt_live;
    else if (!strcmp(what, "lt_matmul")) r = lt_matmul_calls;
    else if (!strcmp(what, "lt_misaligned")) r = lt_misaligned;
    else if (!strcmp(what, "lt_heuristic")) r = lt_heuristic_calls;
    pthread_mutex_unlock(&lock);
    return r;
}

void fake_cublas_reset(void) {
    pthread_mutex_lock(&lock);
    gemm_calls = batched_calls = workspace_calls = stream_calls = lt_matmul_calls = lt_misaligned = lt_heuristic_calls = 0;
    lt_algorithms = 1;
    lt_matmul_fails = 0;
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
    const char *kernels = getenv("VRAM4J_FAKE_KERNELS");
    if (kernels && *kernels) computing = 1;
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

/* element i of a matrix of type t as a float, and storing one (round to nearest even for the 16-bit types) */
static float load(const void *p, int t, long long i) {
    if (t == R_32F) return ((const float *) p)[i];
    if (t == R_16F) return (float) ((const _Float16 *) p)[i];
    unsigned bits = (unsigned) ((const unsigned short *) p)[i] << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void store(void *p, int t, long long i, float v) {
    if (t == R_32F) { ((float *) p)[i] = v; return; }
    if (t == R_16F) { ((_Float16 *) p)[i] = (_Float16) v; return; }
    unsigned bits;
    memcpy(&bits, &v, 4);
    ((unsigned short *) p)[i] = (unsigned short) ((bits & 0x7FFFFFFFu) > 0x7F800000u ? ((bits >> 16) & 0x8000u) | 0x7FC0u
                                                  : (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

/* op(A) row by row and op(B) column by column, widened to float first, so that the sums read memory in order;
   C = alpha op(A) op(B) + beta Cin (+ bias[i] on row i: cuBLASLt's bias epilogue), Cin read only when beta is not 0 */
static void product(int transa, int transb, int m, int n, int k, float alpha, const void *A, int lda, const void *B,
                    int ldb, float beta, const void *Cin, int ldcin, void *C, int ldc, int type, const void *bias) {
    float *a = malloc(sizeof(float) * ((size_t) m * k + 1));
    float *b = malloc(sizeof(float) * ((size_t) n * k + 1));
    for (int i = 0; i < m; i++)
        for (int l = 0; l < k; l++)
            a[(size_t) i * k + l] = load(A, type, transa == OP_N ? i + (long long) l * lda : l + (long long) i * lda);
    for (int j = 0; j < n; j++)
        for (int l = 0; l < k; l++)
            b[(size_t) j * k + l] = load(B, type, transb == OP_N ? l + (long long) j * ldb : j + (long long) l * ldb);
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            const float *ar = a + (size_t) i * k, *bc = b + (size_t) j * k;
            /* eight running sums, as a GPU splits a dot product, so that the additions do not wait on each other */
            float part[8] = {0};
            int l = 0;
            for (; l + 8 <= k; l += 8)
                for (int u = 0; u < 8; u++) part[u] += ar[l + u] * bc[l + u];
            float s = 0.0f;
            for (; l < k; l++) s += ar[l] * bc[l];
            for (int u = 0; u < 8; u++) s += part[u];
            float v = beta == 0.0f ? alpha * s : alpha * s + beta * load(Cin, type, i + (long long) j * ldcin);
            store(C, type, i + (long long) j * ldc, bias ? v + load(bias, type, i) : v);
        }
    }
    free(a);
    free(b);
}

/* One product's arguments, queued on a stream. */
typedef struct gemm_job {
    int transa, transb, m, n, k, lda, ldb, ldc, type, batch;
    float alpha, beta;
    const void *A, *B;
    void *C;
    long long strideA, strideB, strideC;
    const void *Cin;  /* the C read when beta is not 0 (cuBLASLt's C; cuBLAS's is C itself), leading dimension ldcin */
    int ldcin;
    const void *bias; /* cuBLASLt's bias epilogue, or NULL */
} gemm_job;

static void run_job(void *arg) {
    const gemm_job *j = arg;
    int bytes = j->type == R_32F ? 4 : 2;
    for (int b = 0; b < j->batch; b++) {
        product(j->transa, j->transb, j->m, j->n, j->k, j->alpha, (const char *) j->A + b * j->strideA * bytes, j->lda,
                (const char *) j->B + b * j->strideB * bytes, j->ldb, j->beta,
                j->Cin ? (const char *) j->Cin + b * j->strideC * bytes : (const char *) j->C + b * j->strideC * bytes,
                j->Cin ? j->ldcin : j->ldc, (char *) j->C + b * j->strideC * bytes, j->ldc, j->type, j->bias);
    }
}

typedef void (*enqueue_fn)(void *, void (*)(void *), void *);

/* The stand-in driver's queue, if it is loaded: the product runs in its stream's order. */
static enqueue_fn driver_queue(void) {
    static enqueue_fn found;
    pthread_mutex_lock(&lock);
    if (!found) {
        void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        found = driver ? (enqueue_fn) dlsym(driver, "fake_cuda_enqueue_call") : NULL;
    }
    enqueue_fn r = found;
    pthread_mutex_unlock(&lock);
    return r;
}

static void submit_on(void *stream, const gemm_job *j) {
    enqueue_fn queue = driver_queue();
    if (!queue) { run_job((void *) j); return; }
    gemm_job *copy = malloc(sizeof *copy);
    *copy = *j;
    queue(stream, run_job, copy);
}

static void submit(cublasHandle_t handle, const gemm_job *j) { submit_on(handle->stream, j); }

cublasStatus_t cublasGemmEx(cublasHandle_t handle, int transa, int transb, int m, int n, int k, const void *alpha,
                            const void *A, int atype, int lda, const void *B, int btype, int ldb, const void *beta,
                            void *C, int ctype, int ldc, int compute, int algo) {
    (void) algo;
    if (!valid(handle)) return STATUS_NOT_INITIALIZED;
    if (!alpha || !beta) return STATUS_INVALID_VALUE;
    cublasStatus_t s = check(transa, transb, m, n, k, atype, lda, btype, ldb, ctype, ldc, compute);
    if (s != STATUS_SUCCESS) return s;
    count(&gemm_calls);
    if (computing) {
        gemm_job j = {transa, transb, m, n, k, lda, ldb, ldc, atype, 1, *(const float *) alpha, *(const float *) beta,
                      A, B, C, 0, 0, 0, NULL, 0, NULL};
        submit(handle, &j);
    }
    return s;
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                                          const void *alpha, const void *A, int atype, int lda, long long strideA,
                                          const void *B, int btype, int ldb, long long strideB, const void *beta,
                                          void *C, int ctype, int ldc, long long strideC, int batch, int compute,
                                          int algo) {
    (void) algo;
    if (!valid(handle)) return STATUS_NOT_INITIALIZED;
    if (!alpha || !beta || batch < 0 || strideC < 0) return STATUS_INVALID_VALUE;
    cublasStatus_t s = check(transa, transb, m, n, k, atype, lda, btype, ldb, ctype, ldc, compute);
    if (s != STATUS_SUCCESS) return s;
    count(&batched_calls);
    if (computing) {
        gemm_job j = {transa, transb, m, n, k, lda, ldb, ldc, atype, batch, *(const float *) alpha,
                      *(const float *) beta, A, B, C, strideA, strideB, strideC, NULL, 0, NULL};
        submit(handle, &j);
    }
    return s;
}

const char *cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
        case STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        default: return NULL;
    }
}

/* ---- cuBLASLt (cublasLt.h): a product with a bias epilogue, as vram4j's linear layers run it ----
   Descriptors, layouts and preferences keep the attributes set on them; each attribute is checked for its size, as
   cuBLASLt checks it, and one this stand-in does not know is refused (CUBLAS_STATUS_INVALID_VALUE). The heuristic
   offers one algorithm for a product it can run (A, B, C and D of one type, 16-bit or float32; float32 compute and
   scale; shapes that agree; epilogue DEFAULT or BIAS; one matrix per layout) and none when
   fake_cublas_lt_algorithms(0) says so (CUBLAS_STATUS_NOT_SUPPORTED, cuBLASLt's answer when nothing fits). The
   product D = alpha op(A) op(B) + beta C (+ bias[i] on row i of D) is queued on the stream the call names.
   Alignment, as cuBLASLt's heuristic assumes it: a preference says how far A, B, C and D are aligned
   (MIN_ALIGNMENT_*_BYTES, 256 unless set) and the algorithm the heuristic returns needs that much; cublasLtMatmul
   refuses pointers (the bias counting as D) aligned less than the algorithm needs (CUBLAS_STATUS_INVALID_VALUE,
   counted as lt_misaligned), where a GPU's kernel could fault. */
#define LT_MAGIC 0x1b1a5
#define LT_ALGO 0x1d
#define DESC_COMPUTE_TYPE 0
#define DESC_SCALE_TYPE 1
#define DESC_TRANSA 3
#define DESC_TRANSB 4
#define DESC_EPILOGUE 7
#define DESC_BIAS_POINTER 8
#define DESC_BIAS_DATA_TYPE 26
#define LAYOUT_BATCH_COUNT 5
#define LAYOUT_STRIDED_BATCH_OFFSET 6
#define PREF_MAX_WORKSPACE_BYTES 1
#define PREF_MIN_ALIGNMENT_A_BYTES 5
#define PREF_MIN_ALIGNMENT_D_BYTES 8
#define EPILOGUE_DEFAULT 1
#define EPILOGUE_BIAS 4

typedef struct fake_lt_handle { int magic; } *cublasLtHandle_t;
typedef struct fake_lt_desc { int magic, compute, scale, transa, transb, epilogue, bias_type; const void *bias; } *cublasLtMatmulDesc_t;
typedef struct fake_lt_layout { int magic, type, batch; unsigned long long rows, cols; long long ld, stride; } *cublasLtMatrixLayout_t;
typedef struct fake_lt_pref { int magic; unsigned long long max_workspace; unsigned align[4]; } *cublasLtMatmulPreference_t;
typedef struct { unsigned long long data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4];
} cublasLtMatmulHeuristicResult_t;

/* How many algorithms the heuristic offers from now on (0 or 1), for tests of what a caller does without one. */
void fake_cublas_lt_algorithms(int n) { pthread_mutex_lock(&lock); lt_algorithms = n; pthread_mutex_unlock(&lock); }

/* With 1, cublasLtMatmul fails from now on (CUBLAS_STATUS_EXECUTION_FAILED, nothing queued), for tests of what a
   caller does when cuBLASLt errs. */
void fake_cublas_lt_fail(int on) { pthread_mutex_lock(&lock); lt_matmul_fails = on; pthread_mutex_unlock(&lock); }

static void *lt_new(size_t bytes) {
    int *p = calloc(1, bytes);
    if (p) { *p = LT_MAGIC; count(&lt_live); }
    return p;
}

static cublasStatus_t lt_free(void *p) {
    if (!p || *(int *) p != LT_MAGIC) return STATUS_INVALID_VALUE;
    *(int *) p = 0;
    free(p);
    pthread_mutex_lock(&lock); lt_live--; pthread_mutex_unlock(&lock);
    return STATUS_SUCCESS;
}

#define LT_VALID(p) ((p) != NULL && (p)->magic == LT_MAGIC)

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
    if (!handle) return STATUS_INVALID_VALUE;
    *handle = lt_new(sizeof(struct fake_lt_handle));
    const char *kernels = getenv("VRAM4J_FAKE_KERNELS");
    if (kernels && *kernels) computing = 1;
    return *handle ? STATUS_SUCCESS : STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    return LT_VALID(handle) ? lt_free(handle) : STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, int compute, int scale) {
    if (!desc) return STATUS_INVALID_VALUE;
    cublasLtMatmulDesc_t d = lt_new(sizeof *d);
    if (!d) return STATUS_NOT_INITIALIZED;
    d->compute = compute; d->scale = scale; d->transa = OP_N; d->transb = OP_N; d->epilogue = EPILOGUE_DEFAULT;
    d->bias_type = -1;
    *desc = d;
    return STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) { return lt_free(desc); }

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, int attr, const void *buf, size_t bytes) {
    if (!LT_VALID(desc) || !buf) return STATUS_INVALID_VALUE;
    int *field = attr == DESC_COMPUTE_TYPE ? &desc->compute : attr == DESC_SCALE_TYPE ? &desc->scale
               : attr == DESC_TRANSA ? &desc->transa : attr == DESC_TRANSB ? &desc->transb
               : attr == DESC_EPILOGUE ? &desc->epilogue : attr == DESC_BIAS_DATA_TYPE ? &desc->bias_type : NULL;
    if (field) {
        if (bytes != sizeof(int)) return STATUS_INVALID_VALUE;
        memcpy(field, buf, sizeof(int));
        return STATUS_SUCCESS;
    }
    if (attr == DESC_BIAS_POINTER) {
        if (bytes != sizeof(void *)) return STATUS_INVALID_VALUE;
        memcpy(&desc->bias, buf, sizeof(void *));
        return STATUS_SUCCESS;
    }
    return STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, int type, unsigned long long rows,
                                          unsigned long long cols, long long ld) {
    if (!layout || ld < (long long) (rows > 1 ? rows : 1)) return STATUS_INVALID_VALUE;
    cublasLtMatrixLayout_t l = lt_new(sizeof *l);
    if (!l) return STATUS_NOT_INITIALIZED;
    l->type = type; l->rows = rows; l->cols = cols; l->ld = ld; l->batch = 1; l->stride = 0;
    *layout = l;
    return STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) { return lt_free(layout); }

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout, int attr, const void *buf, size_t bytes) {
    if (!LT_VALID(layout) || !buf) return STATUS_INVALID_VALUE;
    if (attr == LAYOUT_BATCH_COUNT && bytes == sizeof(int)) { memcpy(&layout->batch, buf, bytes); return STATUS_SUCCESS; }
    if (attr == LAYOUT_STRIDED_BATCH_OFFSET && bytes == sizeof(long long)) {
        memcpy(&layout->stride, buf, bytes);
        return STATUS_SUCCESS;
    }
    return STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    if (!pref) return STATUS_INVALID_VALUE;
    *pref = lt_new(sizeof **pref);
    if (*pref) for (int i = 0; i < 4; i++) (*pref)->align[i] = 256;
    return *pref ? STATUS_SUCCESS : STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) { return lt_free(pref); }

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref, int attr, const void *buf,
                                                    size_t bytes) {
    if (!LT_VALID(pref) || !buf) return STATUS_INVALID_VALUE;
    if (attr == PREF_MAX_WORKSPACE_BYTES && bytes == sizeof(unsigned long long)) {
        memcpy(&pref->max_workspace, buf, bytes);
        return STATUS_SUCCESS;
    }
    if (attr >= PREF_MIN_ALIGNMENT_A_BYTES && attr <= PREF_MIN_ALIGNMENT_D_BYTES && bytes == sizeof(unsigned)) {
        unsigned v;
        memcpy(&v, buf, bytes);
        if (v == 0 || (v & (v - 1)) != 0) return STATUS_INVALID_VALUE;
        pref->align[attr - PREF_MIN_ALIGNMENT_A_BYTES] = v;
        return STATUS_SUCCESS;
    }
    return STATUS_INVALID_VALUE;
}

/* The product's checks: m x n from D, k from op(A); A, B and C must agree, all four of one type. */
static cublasStatus_t lt_check(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                               cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t out, int *m, int *n, int *k) {
    if (!LT_VALID(d) || !LT_VALID(a) || !LT_VALID(b) || !LT_VALID(c) || !LT_VALID(out)) return STATUS_INVALID_VALUE;
    if ((d->transa != OP_N && d->transa != OP_T) || (d->transb != OP_N && d->transb != OP_T)) return STATUS_INVALID_VALUE;
    unsigned long long am = d->transa == OP_N ? a->rows : a->cols, ak = d->transa == OP_N ? a->cols : a->rows;
    unsigned long long bk = d->transb == OP_N ? b->rows : b->cols, bn = d->transb == OP_N ? b->cols : b->rows;
    if (am != out->rows || bn != out->cols || ak != bk || c->rows != out->rows || c->cols != out->cols)
        return STATUS_INVALID_VALUE;
    if (a->type != b->type || a->type != c->type || a->type != out->type
        || (a->type != R_32F && a->type != R_16F && a->type != R_16BF)) return STATUS_NOT_SUPPORTED;
    if ((d->compute != COMPUTE_32F && d->compute != COMPUTE_32F_FAST_TF32) || d->scale != R_32F) return STATUS_NOT_SUPPORTED;
    if (d->epilogue != EPILOGUE_DEFAULT && d->epilogue != EPILOGUE_BIAS) return STATUS_NOT_SUPPORTED;
    if (d->bias_type != -1 && d->bias_type != out->type) return STATUS_NOT_SUPPORTED;
    if (a->batch != 1 || b->batch != 1 || c->batch != 1 || out->batch != 1) return STATUS_NOT_SUPPORTED;
    if (out->rows > 0x7fffffff || out->cols > 0x7fffffff || ak > 0x7fffffff) return STATUS_NOT_SUPPORTED;
    *m = (int) out->rows; *n = (int) out->cols; *k = (int) ak;
    return STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t *results, int *returned) {
    if (!LT_VALID(handle)) return STATUS_NOT_INITIALIZED;
    if (!LT_VALID(pref) || requested < 1 || !results || !returned) return STATUS_INVALID_VALUE;
    count(&lt_heuristic_calls);
    int m, n, k;
    cublasStatus_t s = lt_check(desc, a, b, c, d, &m, &n, &k);
    if (s != STATUS_SUCCESS) return s;
    pthread_mutex_lock(&lock);
    int offered = lt_algorithms;
    pthread_mutex_unlock(&lock);
    *returned = 0;
    if (offered < 1) return STATUS_NOT_SUPPORTED;
    memset(&results[0], 0, sizeof results[0]);
    results[0].algo.data[0] = LT_ALGO;
    for (int i = 0; i < 4; i++) results[0].algo.data[1 + i] = pref->align[i];   /* what the algorithm needs */
    results[0].state = STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
    return STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t adesc, const void *B, cublasLtMatrixLayout_t bdesc,
                              const void *beta, const void *C, cublasLtMatrixLayout_t cdesc, void *D,
                              cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, void *stream) {
    if (!LT_VALID(handle)) return STATUS_NOT_INITIALIZED;
    if (!alpha || !beta || !algo || algo->data[0] != LT_ALGO || (workspace_bytes > 0 && !workspace))
        return STATUS_INVALID_VALUE;
    int m, n, k;
    cublasStatus_t s = lt_check(desc, adesc, bdesc, cdesc, ddesc, &m, &n, &k);
    if (s != STATUS_SUCCESS) return s;
    if (desc->epilogue == EPILOGUE_BIAS && !desc->bias) return STATUS_INVALID_VALUE;
    const void *ptrs[5] = {A, B, C, D, desc->epilogue == EPILOGUE_BIAS ? desc->bias : D};
    for (int i = 0; i < 5; i++) {
        if ((unsigned long long) (uintptr_t) ptrs[i] % algo->data[1 + (i < 4 ? i : 3)] != 0) {
            count(&lt_misaligned);
            return STATUS_INVALID_VALUE;
        }
    }
    pthread_mutex_lock(&lock);
    int fails = lt_matmul_fails;
    pthread_mutex_unlock(&lock);
    if (fails) return STATUS_EXECUTION_FAILED;
    count(&lt_matmul_calls);
    if (computing) {
        gemm_job j = {desc->transa, desc->transb, m, n, k, (int) adesc->ld, (int) bdesc->ld, (int) ddesc->ld,
                      adesc->type, 1, *(const float *) alpha, *(const float *) beta, A, B, D, 0, 0, 0,
                      C, (int) cdesc->ld, desc->epilogue == EPILOGUE_BIAS ? desc->bias : NULL};
        submit_on(stream, &j);
    }
    return STATUS_SUCCESS;
}

const char *cublasLtGetStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }
