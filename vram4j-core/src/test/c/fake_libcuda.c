/*
 * A stand-in for the CUDA driver (libcuda.so.1) for vram4j's tests on machines without a GPU.
 *
 * It is compiled against the real cuda.h, so every entry point here has the exact prototype (and, through the
 * header's macros, the exported versioned name: cuMemAlloc_v2, cuMemGetInfo_v2, ...) that vram4j's FFM bindings
 * call on a real driver. Device memory is host memory; the fake keeps the rules a test can check:
 *  - every memory, stream and event call needs a current context on the calling thread
 *    (CUDA_ERROR_INVALID_CONTEXT otherwise), as the real driver does;
 *  - a capacity: allocations and physical handles past it fail with CUDA_ERROR_OUT_OF_MEMORY;
 *  - cuMemUnmap must name whole mappings (CUDA_ERROR_INVALID_VALUE otherwise), as the real driver requires;
 *  - work runs in stream order, as late as the program lets it: copies, fills, launches and event records are queued
 *    on their stream and run only when the program waits for them (cuStreamSynchronize, cuEventSynchronize,
 *    cuCtxSynchronize; a synchronous copy waits for the legacy default stream; cuMemFree, cuMemFreeHost, cuMemUnmap
 *    and cuModuleUnload wait for everything, as the driver does). cuStreamWaitEvent queues a wait: a stream reaching
 *    it runs the other stream's work up to the event first. An event completes when its record runs, so
 *    cuEventQuery says CUDA_ERROR_NOT_READY until the program has waited, and "work still in flight" can be tested.
 *    Work ordered wrongly across streams (a read of a side stream's copy without a wait, a page-locked buffer
 *    reused before its copy ran, memory freed to another stream too early) thus reads or writes at the wrong time,
 *    where a GPU would do so only sometimes. Asynchronous copies to and from page-locked memory (cuMemHostAlloc's)
 *    touch the host side when they run; pageable host memory is read at the call and written before it returns, as
 *    the driver stages it;
 *  - counters of live objects (fake_cuda_live) let tests check that nothing leaks; "host_waits" counts the calls
 *    that make the host wait for queued work (synchronizes, synchronous copies), which a GPU program keeps few, and
 *    "launches_at_first_wait" the kernel launches made when the first wait since fake_cuda_reset_first_wait came
 *    (so a test can check that a step queues all its work before it waits);
 *  - a trace (fake_cuda_trace_start / fake_cuda_trace_read) lists the host-alloc, copy, event, wait and launch
 *    calls in order with their streams, so tests can check the order a GPU would see them in;
 *  - modules keep their PTX text: cuModuleGetFunction finds an entry only if the text declares it, and
 *    cuLaunchKernel records the launch (function, dimensions, the parameter values read with the sizes the entry's
 *    .param types give), so tests can check what a launch would pass to a GPU;
 *  - kernels run only where a kernel emulator is loaded (the tensor module's src/test/c/kernel_emulator.cpp, named
 *    by VRAM4J_FAKE_KERNELS at cuInit or by fake_cuda_load_kernels): each launch then runs on the CPU when its
 *    stream's work runs. A kernel that traps makes the context's error sticky, as on a GPU: the launch itself
 *    succeeds, every later synchronizing call, copy and launch returns CUDA_ERROR_LAUNCH_FAILED
 *    (fake_cuda_clear_error ends it, for the next test). An error the emulator finds in a launch (parameters that do
 *    not match the kernel's signature, a divergent barrier, a write past the shared memory) is printed and makes the
 *    error sticky too;
 *  - the stand-in cuBLAS queues its products on the handle's stream (fake_cuda_enqueue_call), found by the soname
 *    libcuda.so.1 this library is built with.
 * Test-only: never shipped.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define GRANULARITY (2u << 20)
#define MAX_MAPPINGS 65536

#define MAX_PARAMS 64
typedef struct fake_stream fake_stream;
typedef struct fake_op fake_op;
/* A stream: its queued work, and how many event records it has been given and has run. A destroyed stream stays
   in memory (marked dead, its work run), so events recorded on it and waits queued on it still read it. */
struct fake_stream { unsigned long long recorded, completed; fake_op *head, *tail; fake_stream *next; int dead; };
/* An event: the stream and record it waits for; with timing (created with flags 0), the stand-in's clock at the record,
   which advances one microsecond per kernel launch, counted when the launch is made (cuEventElapsedTime). */
typedef struct fake_event { fake_stream *stream; unsigned long long seq; int timing; long clock; } fake_event;
typedef struct fake_mapping { CUdeviceptr base; size_t size; CUmemGenericAllocationHandle handle; } fake_mapping;

/* Recursive: queued work runs under it, and running a kernel may set the sticky error. */
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int devices = 1;
static size_t total_bytes = 1ull << 30;
static size_t context_bytes = 8u << 20; /* what the context itself takes, as a real one does */
static size_t used_bytes;
static long live_allocs, live_streams, live_events, live_handles, live_reservations, live_host, ctx_refs;
static long calls_set_current;
static long live_modules, launches;
static long queued_ops, deferred_runs; /* work queued on streams now; queued work run so far */
static long host_waits; /* calls that made the host wait for queued work: synchronizes and synchronous copies */
static long launches_at_first_wait = -1; /* launches made when the first host wait since the last reset came; -1: none */
static fake_stream legacy_stream;
static fake_stream *created_streams; /* every stream cuStreamCreate made, dead ones too */
static fake_mapping mappings[MAX_MAPPINGS];
static int mapping_count;
static __thread CUcontext current_ctx;
static char the_context; /* the primary context's identity */
static CUresult init_result = CUDA_SUCCESS;

/* A host wait: counted, and the launches made by then kept at the first one since fake_cuda_reset_first_wait.
   Called under the lock. */
static void count_host_wait(void) {
    host_waits++;
    if (launches_at_first_wait < 0) {
        launches_at_first_wait = launches;
    }
}

/* Test hooks (not CUDA API). */
void fake_cuda_reset_first_wait(void) {
    pthread_mutex_lock(&lock);
    launches_at_first_wait = -1;
    pthread_mutex_unlock(&lock);
}

void fake_cuda_configure(int device_count, size_t total) {
    pthread_mutex_lock(&lock);
    devices = device_count;
    total_bytes = total;
    pthread_mutex_unlock(&lock);
}

void fake_cuda_fail_init(int result) { init_result = (CUresult) result; }

long fake_cuda_live(const char *what) {
    if (!strcmp(what, "allocs")) return live_allocs;
    if (!strcmp(what, "streams")) return live_streams;
    if (!strcmp(what, "events")) return live_events;
    if (!strcmp(what, "handles")) return live_handles;
    if (!strcmp(what, "reservations")) return live_reservations;
    if (!strcmp(what, "host")) return live_host;
    if (!strcmp(what, "contexts")) return ctx_refs;
    if (!strcmp(what, "mappings")) return mapping_count;
    if (!strcmp(what, "used")) return (long) used_bytes;
    if (!strcmp(what, "set_current")) return calls_set_current;
    if (!strcmp(what, "modules")) return live_modules;
    if (!strcmp(what, "launches")) return launches;
    if (!strcmp(what, "queued")) { pthread_mutex_lock(&lock); long n = queued_ops; pthread_mutex_unlock(&lock); return n; }
    if (!strcmp(what, "deferred_runs")) { pthread_mutex_lock(&lock); long n = deferred_runs; pthread_mutex_unlock(&lock); return n; }
    if (!strcmp(what, "host_waits")) { pthread_mutex_lock(&lock); long n = host_waits; pthread_mutex_unlock(&lock); return n; }
    if (!strcmp(what, "launches_at_first_wait")) {
        pthread_mutex_lock(&lock); long n = launches_at_first_wait; pthread_mutex_unlock(&lock); return n;
    }
    return -1;
}

/* The call trace: one line per traced call, "name stream" (streams as 0x..., 0 for the legacy default stream). */
#define TRACE_CAP (1 << 20)
static char trace_buf[TRACE_CAP];
static size_t trace_len;
static int tracing;

void fake_cuda_trace_start(void) { pthread_mutex_lock(&lock); trace_len = 0; trace_buf[0] = 0; tracing = 1; pthread_mutex_unlock(&lock); }

/* Copies the trace so far (NUL-terminated, truncated to cap) and returns its length. */
long fake_cuda_trace_read(char *out, long cap) {
    pthread_mutex_lock(&lock);
    size_t n = trace_len < (size_t) cap - 1 ? trace_len : (size_t) cap - 1;
    memcpy(out, trace_buf, n);
    out[n] = 0;
    pthread_mutex_unlock(&lock);
    return (long) n;
}

static void trace(const char *name, CUstream s) {
    pthread_mutex_lock(&lock);
    if (tracing && trace_len + 64 < TRACE_CAP)
        trace_len += (size_t) snprintf(trace_buf + trace_len, TRACE_CAP - trace_len, "%s 0x%llx\n", name,
                                       (unsigned long long) (uintptr_t) s);
    pthread_mutex_unlock(&lock);
}

#define NEED_CONTEXT() do { if (current_ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

/* ---- the kernel emulator and the sticky error of a trapped kernel ---- */
typedef int (*emu_launch_fn)(const char *, const unsigned *, void **, const int *, int, char *, size_t);
static emu_launch_fn emu_launch;
static CUresult sticky = CUDA_SUCCESS;
#define NO_STICKY_ERROR() do { if (sticky != CUDA_SUCCESS) return sticky; } while (0)

/* Loads the kernel emulator at path (NULL: launches run nothing again); returns 0, or -1 (with the loader's message
   on stderr). */
int fake_cuda_load_kernels(const char *path) {
    if (!path) { pthread_mutex_lock(&lock); emu_launch = NULL; pthread_mutex_unlock(&lock); return 0; }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    emu_launch_fn f = lib ? (emu_launch_fn) dlsym(lib, "emu_launch") : NULL;
    if (!f) { fprintf(stderr, "fake_libcuda: no kernel emulator at %s: %s\n", path, dlerror()); return -1; }
    pthread_mutex_lock(&lock); emu_launch = f; pthread_mutex_unlock(&lock);
    return 0;
}

void fake_cuda_clear_error(void) { pthread_mutex_lock(&lock); sticky = CUDA_SUCCESS; pthread_mutex_unlock(&lock); }

/* For benchmarks of the host's side: with 1, queued copies and fills are dropped when they run instead of moving
   bytes, so that a synchronize costs what the program queued, not what a GPU would do in microseconds. */
static int discard_data;
void fake_cuda_discard_data(int on) { pthread_mutex_lock(&lock); discard_data = on; pthread_mutex_unlock(&lock); }

/* ---- stream-ordered work ----
   Copies, fills, launches, products and event records are queued on their stream and run only when the program
   waits for them: a synchronizing call (stream, event or context), a synchronous copy (the legacy default stream's
   work first), a free, or a stream that waits on an event of another stream reaching that wait while it runs. Work
   a GPU would run in the background is thus run as late as the program lets it, so work ordered wrongly across
   streams reads or writes at the wrong time here, and a test sees it. */
typedef enum { OP_COPY, OP_FILL, OP_LAUNCH, OP_RECORD, OP_WAIT, OP_CALL } op_kind;
struct fake_op {
    fake_op *next;
    op_kind kind;
    void *dst; const void *src; size_t n; unsigned char value; void *owned; /* copies and fills; owned: captured bytes */
    fake_stream *on; unsigned long long seq;  /* OP_RECORD: the record's number; OP_WAIT: the stream and record waited on */
    char name[128]; unsigned dims[7]; int nparams; int sizes[MAX_PARAMS]; unsigned long long params[MAX_PARAMS];
    void (*call)(void *); void *arg;          /* OP_CALL: work of another stand-in (cuBLAS's products) */
};

static fake_op *new_op(op_kind kind) {
    fake_op *op = calloc(1, sizeof *op);
    if (!op) abort();
    op->kind = kind;
    return op;
}

/* Under the lock. */
static void enqueue(fake_stream *fs, fake_op *op) {
    if (fs->tail) fs->tail->next = op; else fs->head = op;
    fs->tail = op;
    queued_ops++;
}

static void drain(fake_stream *fs, unsigned long long upto);
static fake_stream *stream_of(CUstream s) { return s == NULL ? &legacy_stream : (fake_stream *) s; }

/* Runs one piece of queued work (under the lock). After a kernel has trapped, nothing but event records runs. */
static void run_op(fake_op *op, fake_stream *fs) {
    if (op->kind == OP_RECORD) { if (fs->completed < op->seq) fs->completed = op->seq; return; }
    if (op->kind == OP_WAIT) { drain(op->on, op->seq); return; }
    if (sticky != CUDA_SUCCESS) return;
    deferred_runs++;
    switch (op->kind) {
        case OP_COPY: if (!discard_data) memmove(op->dst, op->owned ? op->owned : op->src, op->n); break;
        case OP_FILL: if (!discard_data) memset(op->dst, op->value, op->n); break;
        case OP_CALL: op->call(op->arg); break;
        case OP_LAUNCH: {
            void *args[MAX_PARAMS];
            for (int i = 0; i < op->nparams; i++) args[i] = &op->params[i];
            char error[512];
            int r = emu_launch ? emu_launch(op->name, op->dims, args, op->sizes, op->nparams, error, sizeof error) : 0;
            if (r == 1) sticky = CUDA_ERROR_LAUNCH_FAILED;
            else if (r != 0) {
                fprintf(stderr, "fake_libcuda: kernel emulator: %s\n", error);
                sticky = CUDA_ERROR_LAUNCH_FAILED;
            }
            break;
        }
        default: break;
    }
}

/* Runs a stream's queued work in order, all of it (upto 0) or until its record number upto has run; a wait on another
   stream runs that stream's work up to the record waited on first. Under the lock. */
static void drain(fake_stream *fs, unsigned long long upto) {
    while (fs->head && (upto == 0 || fs->completed < upto)) {
        fake_op *op = fs->head;
        fs->head = op->next;
        if (!fs->head) fs->tail = NULL;
        queued_ops--;
        run_op(op, fs);
        if (op->kind == OP_CALL && op->arg) free(op->arg);
        free(op->owned);
        free(op);
    }
}

/* Runs every stream's work, as cuCtxSynchronize waits for it (under the lock). */
static void drain_all(void) {
    drain(&legacy_stream, 0);
    for (fake_stream *fs = created_streams; fs; fs = fs->next) drain(fs, 0);
}

/* For the stand-in cuBLAS: queues fn(arg) on a stream (NULL: the legacy default stream); arg is freed with free()
   after it ran. */
void fake_cuda_enqueue_call(CUstream s, void (*fn)(void *), void *arg) {
    fake_op *op = new_op(OP_CALL);
    op->call = fn;
    op->arg = arg;
    pthread_mutex_lock(&lock);
    enqueue(s == NULL ? &legacy_stream : (fake_stream *) s, op);
    pthread_mutex_unlock(&lock);
}

static CUresult charge(size_t n) {
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (n > total_bytes - context_bytes - used_bytes) r = CUDA_ERROR_OUT_OF_MEMORY; else used_bytes += n;
    pthread_mutex_unlock(&lock);
    return r;
}

static void uncharge(size_t n) {
    pthread_mutex_lock(&lock);
    used_bytes -= n;
    pthread_mutex_unlock(&lock);
}

CUresult cuInit(unsigned int flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (init_result != CUDA_SUCCESS) return init_result;
    const char *kernels = getenv("VRAM4J_FAKE_KERNELS");
    if (kernels && *kernels && !emu_launch && fake_cuda_load_kernels(kernels) != 0) return CUDA_ERROR_NOT_INITIALIZED;
    return devices == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
static int driver_version = CUDA_VERSION;
void fake_cuda_set_driver_version(int v) { driver_version = v; }
CUresult cuDriverGetVersion(int *v) { if (!v) return CUDA_ERROR_INVALID_VALUE; *v = driver_version; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *count) { if (!count) return CUDA_ERROR_INVALID_VALUE; *count = devices; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (!d || ordinal < 0 || ordinal >= devices) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal; return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (!name || len <= 0 || d < 0 || d >= devices) return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, "vram4j fake GPU", (size_t) len - 1); name[len - 1] = 0; return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
    if (!bytes || d < 0 || d >= devices) return CUDA_ERROR_INVALID_VALUE;
    *bytes = total_bytes; return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute a, CUdevice d) {
    if (!pi || d < 0 || d >= devices) return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
        case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 0x19 + d; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
    if (!ctx || d < 0 || d >= devices) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock); ctx_refs++; pthread_mutex_unlock(&lock);
    *ctx = (CUcontext) &the_context; return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
    if (d < 0 || d >= devices) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    CUresult r = ctx_refs > 0 ? (ctx_refs--, CUDA_SUCCESS) : CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
    pthread_mutex_lock(&lock); calls_set_current++; pthread_mutex_unlock(&lock);
    current_ctx = ctx; return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) {
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    count_host_wait();
    drain_all();
    CUresult r = sticky;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuGetErrorName(CUresult e, const char **s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
        case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
        case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
        case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
        case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
        case CUDA_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
        case CUDA_ERROR_NOT_READY: *s = "CUDA_ERROR_NOT_READY"; break;
        case CUDA_ERROR_STUB_LIBRARY: *s = "CUDA_ERROR_STUB_LIBRARY"; break;
        case CUDA_ERROR_INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
        case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
        case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
        case CUDA_ERROR_INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
        case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
        default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
        case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
        case CUDA_ERROR_INVALID_CONTEXT: *s = "invalid device context"; break;
        case CUDA_ERROR_NOT_READY: *s = "device not ready"; break;
        case CUDA_ERROR_STUB_LIBRARY: *s = "CUDA driver is a stub library"; break;
        case CUDA_ERROR_INVALID_IMAGE: *s = "device kernel image is invalid"; break;
        case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: *s = "the provided PTX was compiled with an unsupported toolchain."; break;
        case CUDA_ERROR_NOT_FOUND: *s = "named symbol not found"; break;
        case CUDA_ERROR_INVALID_HANDLE: *s = "invalid resource handle"; break;
        case CUDA_ERROR_LAUNCH_FAILED: *s = "unspecified launch failure"; break;
        default: *s = "unknown error"; break;
    }
    return CUDA_SUCCESS;
}

/* ---- memory ---- */
typedef struct alloc_header { size_t size; } alloc_header;

CUresult cuMemAlloc(CUdeviceptr *p, size_t size) {
    NEED_CONTEXT();
    if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (charge(size) != CUDA_SUCCESS) return CUDA_ERROR_OUT_OF_MEMORY;
    void *mem = NULL;
    if (posix_memalign(&mem, 512, size + 512) != 0) { uncharge(size); return CUDA_ERROR_OUT_OF_MEMORY; }
    ((alloc_header *) mem)->size = size;
    memset((char *) mem + 512, 0xA5, size); /* device memory is not zeroed */
    pthread_mutex_lock(&lock); live_allocs++; pthread_mutex_unlock(&lock);
    *p = (CUdeviceptr) ((char *) mem + 512);
    return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p) {
    NEED_CONTEXT();
    if (p == 0 || (p & 511) != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock); drain_all(); pthread_mutex_unlock(&lock); /* as the driver: the GPU finishes first */
    alloc_header *h = (alloc_header *) ((char *) p - 512);
    uncharge(h->size);
    pthread_mutex_lock(&lock); live_allocs--; pthread_mutex_unlock(&lock);
    free(h);
    return CUDA_SUCCESS;
}
CUresult cuMemGetInfo(size_t *f, size_t *t) {
    NEED_CONTEXT();
    if (!f || !t) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *f = total_bytes - context_bytes - used_bytes; *t = total_bytes;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
/* Page-locked host blocks, so that asynchronous copies know which host memory they read or write late. */
typedef struct host_block { struct host_block *next; char *base; size_t size; } host_block;
static host_block *host_blocks;

static int pinned(const void *p, size_t n) {
    pthread_mutex_lock(&lock);
    int found = 0;
    for (host_block *b = host_blocks; b && !found; b = b->next)
        found = (const char *) p >= b->base && (const char *) p + n <= b->base + b->size;
    pthread_mutex_unlock(&lock);
    return found;
}
CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags) {
    NEED_CONTEXT();
    (void) flags;
    if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
    trace("cuMemHostAlloc", NULL);
    host_block *b = malloc(sizeof *b);
    char *mem = malloc(size);
    if (!b || !mem) { free(b); free(mem); return CUDA_ERROR_OUT_OF_MEMORY; }
    *b = (host_block) {NULL, mem, size};
    pthread_mutex_lock(&lock);
    b->next = host_blocks;
    host_blocks = b;
    live_host++;
    pthread_mutex_unlock(&lock);
    *pp = mem;
    return CUDA_SUCCESS;
}
CUresult cuMemFreeHost(void *p) {
    NEED_CONTEXT();
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    drain_all(); /* as the driver: the GPU finishes first */
    host_block **at = &host_blocks;
    while (*at && (*at)->base != p) at = &(*at)->next;
    host_block *b = *at;
    if (b) { *at = b->next; live_host--; }
    pthread_mutex_unlock(&lock);
    if (!b) return CUDA_ERROR_INVALID_VALUE;
    free(b);
    free(p);
    return CUDA_SUCCESS;
}

/* ---- copies: device pointers are host pointers here ----
   A synchronous copy waits for the legacy default stream's work, then copies (the streams vram4j creates are
   non-blocking: their work is not waited for). An asynchronous copy is queued on its stream; from or to page-locked
   memory (cuMemHostAlloc's) the host side is read or written when the copy runs, as the GPU's copy engine does, while
   pageable host memory is read at the call (the driver stages it) and written before the call returns (the driver
   waits for the stream). A fill is queued on its stream. */
static int pinned(const void *p, size_t n);

static CUresult copy_now(void *d, const void *s, size_t n) {
    pthread_mutex_lock(&lock);
    count_host_wait();
    drain(&legacy_stream, 0);
    CUresult r = sticky;
    if (r == CUDA_SUCCESS) memmove(d, s, n);
    pthread_mutex_unlock(&lock);
    return r;
}
static CUresult queue_copy(CUstream st, void *d, const void *s, size_t n, int capture) {
    fake_op *op = new_op(OP_COPY);
    op->dst = d;
    op->src = s;
    op->n = n;
    if (capture) {
        op->owned = malloc(n ? n : 1);
        if (!op->owned) { free(op); return CUDA_ERROR_OUT_OF_MEMORY; }
        memcpy(op->owned, s, n);
    }
    pthread_mutex_lock(&lock);
    CUresult r = sticky;
    if (r == CUDA_SUCCESS) enqueue(stream_of(st), op);
    pthread_mutex_unlock(&lock);
    if (r != CUDA_SUCCESS) { free(op->owned); free(op); }
    return r;
}
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { NEED_CONTEXT(); return copy_now((void *) d, s, n); }
CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { NEED_CONTEXT(); return copy_now(d, (const void *) s, n); }
CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { NEED_CONTEXT(); return copy_now((void *) d, (const void *) s, n); }
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) {
    NEED_CONTEXT();
    trace("cuMemcpyHtoDAsync", st);
    return queue_copy(st, (void *) d, s, n, !pinned(s, n));
}
CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) {
    NEED_CONTEXT();
    if (pinned(d, n)) return queue_copy(st, d, (const void *) s, n, 0);
    pthread_mutex_lock(&lock);
    count_host_wait();
    drain(stream_of(st), 0);
    CUresult r = sticky;
    if (r == CUDA_SUCCESS) memmove(d, (const void *) s, n);
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    NEED_CONTEXT();
    return queue_copy(st, (void *) d, (const void *) s, n, 0);
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
    NEED_CONTEXT();
    fake_op *op = new_op(OP_FILL);
    op->dst = (void *) d;
    op->value = v;
    op->n = n;
    pthread_mutex_lock(&lock);
    enqueue(stream_of(st), op);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) { return cuMemsetD8Async(d, v, n, NULL); }

/* ---- streams and events ---- */
CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
    NEED_CONTEXT();
    /* vram4j creates non-blocking streams only; the fake does not model a blocking stream's implicit waits */
    if (!s || flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    fake_stream *fs = calloc(1, sizeof(fake_stream));
    pthread_mutex_lock(&lock);
    fs->next = created_streams;
    created_streams = fs;
    live_streams++;
    pthread_mutex_unlock(&lock);
    *s = (CUstream) fs;
    return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream s) {
    NEED_CONTEXT();
    if (!s || ((fake_stream *) s)->dead) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    drain((fake_stream *) s, 0); /* the driver lets queued work finish */
    ((fake_stream *) s)->dead = 1;
    live_streams--;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream s) {
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    count_host_wait();
    drain(stream_of(s), 0);
    CUresult r = sticky;
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
    NEED_CONTEXT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE; /* vram4j waits with CU_EVENT_WAIT_DEFAULT */
    trace("cuStreamWaitEvent", s);
    pthread_mutex_lock(&lock);
    fake_event *ev = (fake_event *) e;
    fake_stream *fs = stream_of(s);
    if (ev->stream && ev->stream != fs && ev->stream->completed < ev->seq) {
        fake_op *op = new_op(OP_WAIT);
        op->on = ev->stream;
        op->seq = ev->seq;
        enqueue(fs, op);
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuStreamQuery(CUstream s) {
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = stream_of(s)->head == NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuEventCreate(CUevent *e, unsigned int flags) {
    NEED_CONTEXT();
    /* vram4j's own events are created without timing; a GpuTimer's with (flags 0) */
    if (!e || (flags != CU_EVENT_DISABLE_TIMING && flags != 0)) return CUDA_ERROR_INVALID_VALUE;
    *e = (CUevent) calloc(1, sizeof(fake_event));
    ((fake_event *) *e)->timing = flags == 0;
    pthread_mutex_lock(&lock); live_events++; pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s) {
    NEED_CONTEXT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    trace("cuEventRecord", s);
    fake_op *op = new_op(OP_RECORD);
    pthread_mutex_lock(&lock);
    fake_event *ev = (fake_event *) e;
    ev->stream = stream_of(s);
    ev->seq = op->seq = ++ev->stream->recorded;
    ev->clock = launches;
    enqueue(ev->stream, op);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuEventQuery(CUevent e) {
    NEED_CONTEXT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    fake_event *ev = (fake_event *) e;
    CUresult r = ev->stream == NULL || ev->stream->completed >= ev->seq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuEventSynchronize(CUevent e) {
    NEED_CONTEXT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    count_host_wait();
    fake_event *ev = (fake_event *) e;
    if (ev->stream) drain(ev->stream, ev->seq);
    CUresult r = sticky;
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
    NEED_CONTEXT();
    if (!ms) return CUDA_ERROR_INVALID_VALUE;
    if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
    fake_event *a = (fake_event *) start;
    fake_event *b = (fake_event *) end;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    if (!a->timing || !b->timing || !a->stream || !b->stream) r = CUDA_ERROR_INVALID_HANDLE;
    else if (a->stream->completed < a->seq || b->stream->completed < b->seq) r = CUDA_ERROR_NOT_READY;
    else *ms = (float) (b->clock - a->clock) * 0.001f;
    pthread_mutex_unlock(&lock);
    return r;
}
CUresult cuEventDestroy(CUevent e) {
    NEED_CONTEXT();
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    free(e);
    pthread_mutex_lock(&lock); live_events--; pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ---- virtual memory management ---- */
static int valid_prop(const CUmemAllocationProp *p) {
    return p && p->type == CU_MEM_ALLOCATION_TYPE_PINNED && p->location.type == CU_MEM_LOCATION_TYPE_DEVICE
        && p->location.id >= 0 && p->location.id < devices && p->requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE
        && p->win32HandleMetaData == NULL;
}
CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p, CUmemAllocationGranularity_flags o) {
    NEED_CONTEXT();
    if (!g || !valid_prop(p) || o > CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) return CUDA_ERROR_INVALID_VALUE;
    *g = GRANULARITY; return CUDA_SUCCESS;
}
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags) {
    NEED_CONTEXT();
    if (!p || size == 0 || size % GRANULARITY || flags || (alignment & (alignment - 1))) return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment < GRANULARITY ? GRANULARITY : alignment;
    char *m = mmap((void *) addr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t base = ((uintptr_t) m + align - 1) & ~(uintptr_t) (align - 1);
    if (base > (uintptr_t) m) munmap(m, base - (uintptr_t) m);
    munmap((void *) (base + size), (uintptr_t) m + size + align - (base + size));
    pthread_mutex_lock(&lock); live_reservations++; pthread_mutex_unlock(&lock);
    *p = (CUdeviceptr) base; return CUDA_SUCCESS;
}
CUresult cuMemAddressFree(CUdeviceptr p, size_t size) {
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    drain_all();
    for (int i = 0; i < mapping_count; i++) {
        if (mappings[i].base >= p && mappings[i].base < p + size) { pthread_mutex_unlock(&lock); return CUDA_ERROR_INVALID_VALUE; }
    }
    live_reservations--;
    pthread_mutex_unlock(&lock);
    munmap((void *) p, size);
    return CUDA_SUCCESS;
}
CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *p, unsigned long long flags) {
    NEED_CONTEXT();
    if (!h || size == 0 || size % GRANULARITY || !valid_prop(p) || flags) return CUDA_ERROR_INVALID_VALUE;
    if (charge(size) != CUDA_SUCCESS) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t *handle = malloc(sizeof(size_t));
    *handle = size;
    pthread_mutex_lock(&lock); live_handles++; pthread_mutex_unlock(&lock);
    *h = (CUmemGenericAllocationHandle) (uintptr_t) handle; return CUDA_SUCCESS;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
    NEED_CONTEXT();
    if (!h) return CUDA_ERROR_INVALID_VALUE;
    size_t *handle = (size_t *) (uintptr_t) h;
    uncharge(*handle);
    free(handle);
    pthread_mutex_lock(&lock); live_handles--; pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags) {
    NEED_CONTEXT();
    if (!h || offset || flags || size != *(size_t *) (uintptr_t) h || p % GRANULARITY) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (mapping_count == MAX_MAPPINGS) { pthread_mutex_unlock(&lock); return CUDA_ERROR_OUT_OF_MEMORY; }
    mappings[mapping_count++] = (fake_mapping) {p, size, h};
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const CUmemAccessDesc *d, size_t count) {
    NEED_CONTEXT();
    if (!d || count != 1 || d->location.type != CU_MEM_LOCATION_TYPE_DEVICE || d->location.id < 0
        || d->location.id >= devices || d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return CUDA_ERROR_INVALID_VALUE;
    return mprotect((void *) p, size, PROT_READ | PROT_WRITE) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemUnmap(CUdeviceptr p, size_t size) {
    NEED_CONTEXT();
    pthread_mutex_lock(&lock);
    drain_all(); /* queued work must not touch memory that is no longer mapped */
    /* the range must be made of whole mappings */
    size_t covered = 0;
    for (int i = 0; i < mapping_count; i++) {
        CUdeviceptr b = mappings[i].base, e = b + mappings[i].size;
        if (e <= p || b >= p + size) continue;
        if (b < p || e > p + size) { pthread_mutex_unlock(&lock); return CUDA_ERROR_INVALID_VALUE; }
        covered += mappings[i].size;
    }
    if (covered != size) { pthread_mutex_unlock(&lock); return CUDA_ERROR_INVALID_VALUE; }
    for (int i = 0; i < mapping_count;) {
        if (mappings[i].base >= p && mappings[i].base < p + size) mappings[i] = mappings[--mapping_count]; else i++;
    }
    pthread_mutex_unlock(&lock);
    madvise((void *) p, size, MADV_DONTNEED);
    mprotect((void *) p, size, PROT_NONE);
    return CUDA_SUCCESS;
}

/* ---- modules and launches ---- */
struct CUfunc_st { struct CUfunc_st *next; char name[128]; int nparams; int sizes[MAX_PARAMS]; };
struct CUmod_st { char *text; struct CUfunc_st *functions; };
static CUresult module_load_result = CUDA_SUCCESS;
static char last_name[128];
static unsigned last_dims[7]; /* grid x y z, block x y z, shared bytes */
static CUstream last_stream;
static unsigned long long last_params[MAX_PARAMS];
static int last_nparams;

void fake_cuda_fail_module_load(int result) { module_load_result = (CUresult) result; }

/* The last launch: copies its function name, dimensions and parameter values (zero-extended); returns the number
   of parameters, or -1 when nothing was launched yet. */
int fake_cuda_last_launch(char *name, int cap, unsigned *dims, unsigned long long *params, int max) {
    pthread_mutex_lock(&lock);
    int n = launches == 0 ? -1 : last_nparams;
    if (n >= 0) {
        strncpy(name, last_name, (size_t) cap - 1);
        name[cap - 1] = 0;
        memcpy(dims, last_dims, sizeof last_dims);
        for (int i = 0; i < n && i < max; i++) params[i] = last_params[i];
    }
    pthread_mutex_unlock(&lock);
    return n;
}

unsigned long long fake_cuda_last_stream(void) { return (unsigned long long) (uintptr_t) last_stream; }

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
    NEED_CONTEXT();
    if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
    if (module_load_result != CUDA_SUCCESS) return module_load_result;
    if (!strstr((const char *) image, ".version") || !strstr((const char *) image, ".target")) return CUDA_ERROR_INVALID_IMAGE;
    struct CUmod_st *mod = calloc(1, sizeof *mod);
    mod->text = strdup((const char *) image);
    pthread_mutex_lock(&lock); live_modules++; pthread_mutex_unlock(&lock);
    *m = mod;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    NEED_CONTEXT();
    if (!f || !m || !name || strlen(name) >= sizeof last_name) return CUDA_ERROR_INVALID_VALUE;
    char pattern[160];
    snprintf(pattern, sizeof pattern, ".entry %s(", name);
    const char *at = strstr(m->text, pattern);
    if (!at) return CUDA_ERROR_NOT_FOUND;
    struct CUfunc_st *fn = calloc(1, sizeof *fn);
    strcpy(fn->name, name);
    const char *end = strchr(at, ')');
    for (const char *p = strstr(at, ".param"); p && end && p < end && fn->nparams < MAX_PARAMS; p = strstr(p + 6, ".param")) {
        const char *type = p + 7;
        fn->sizes[fn->nparams++] = (!strncmp(type, ".u64", 4) || !strncmp(type, ".s64", 4) || !strncmp(type, ".b64", 4)
                                    || !strncmp(type, ".f64", 4)) ? 8 : 4;
    }
    pthread_mutex_lock(&lock);
    fn->next = m->functions;
    m->functions = fn;
    pthread_mutex_unlock(&lock);
    *f = fn;
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
    NEED_CONTEXT();
    if (!m) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock); drain_all(); pthread_mutex_unlock(&lock);
    for (struct CUfunc_st *fn = m->functions; fn;) { struct CUfunc_st *next = fn->next; free(fn); fn = next; }
    free(m->text);
    free(m);
    pthread_mutex_lock(&lock); live_modules--; pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shared, CUstream st, void **params, void **extra) {
    NEED_CONTEXT();
    NO_STICKY_ERROR();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    trace("cuLaunchKernel", st);
    if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long long) bx * by * bz > 1024 || gy > 65535 || gz > 65535
        || shared > 48u * 1024 || extra || (f->nparams > 0 && !params)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    strcpy(last_name, f->name);
    unsigned dims[7] = {gx, gy, gz, bx, by, bz, shared};
    memcpy(last_dims, dims, sizeof dims);
    last_stream = st;
    last_nparams = f->nparams;
    for (int i = 0; i < f->nparams; i++) {
        last_params[i] = 0;
        memcpy(&last_params[i], params[i], (size_t) f->sizes[i]);
    }
    launches++;
    if (emu_launch) { /* the launch runs when its stream's work is waited for */
        fake_op *op = new_op(OP_LAUNCH);
        strcpy(op->name, f->name);
        memcpy(op->dims, dims, sizeof dims);
        op->nparams = f->nparams;
        memcpy(op->sizes, f->sizes, sizeof op->sizes);
        memcpy(op->params, last_params, sizeof op->params);
        enqueue(stream_of(st), op);
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
