/*
 * Runs vram4j's CUDA kernels on the CPU, for the tests of machines without a GPU: the stand-in driver
 * (vram4j-core/src/test/c/fake_libcuda.c) hands each cuLaunchKernel to emu_launch here when it is told to load this
 * library, and the kernel runs on the stand-in's device memory (which is host memory).
 *
 * The kernels are the project's own source (src/main/cuda/vram4j_kernels.cu), compiled as host C++ over
 * cuda_emulation.h. The one change the build makes to the text (KernelEmulator.java): a dynamic shared memory
 * declaration, "extern __shared__ float NAME[];", becomes a pointer to this launch's shared memory. The build also
 * writes kernel_list.h, one EMU_KERNEL(name) per extern "C" __global__ function of the source.
 *
 * A launch runs its blocks one after another, in order; the threads of a block are fibers of the calling host
 * thread, run in thread-index order up to their next __syncthreads(), which releases them only once every thread
 * of the block reached one. On x86-64 a fiber switch saves the callee-saved registers and swaps stacks (a few
 * nanoseconds); elsewhere it is ucontext's swapcontext, which also makes a system call. So every result a kernel
 * computes in a fixed order comes out as on a GPU, up to the last bits of the maths library's functions (expf,
 * logf, tanhf). What a GPU would do and this reports as an error, failing the launch with a message:
 *  - parameters whose number or sizes differ from the kernel's C++ signature (the sizes come from the PTX's .param
 *    types, read by the stand-in driver);
 *  - a thread that returns while others of its block wait at a barrier (a divergent __syncthreads());
 *  - a write past the dynamic shared memory the launch asked for;
 *  - __trap() (reported as the driver's launch failure).
 * Shared memory starts filled with NaN, as its contents are undefined on a GPU: a kernel reading what no thread of
 * its block wrote computes NaN, which the tests comparing with the CPU kernels see.
 * Orders: by default blocks and threads run in index order; with VRAM4J_FAKE_KERNELS_ORDER=reverse (or
 * emu_set_reverse(1)) both run in reverse index order. A GPU promises neither, so a kernel whose results differ
 * between the two orders reads what another thread or block writes without a barrier between them (a race); the
 * emulated GPU run runs the kernels' test in both.
 * Warps: lanes 32k to 32k + 31 of a block (by flat thread index) are warp k. Warp-wide operations:
 *  - __syncwarp() waits for the warp's 32 lanes only, as the block barrier waits for the block; a lane that returns
 *    while others of its warp wait there, or lanes of one warp waiting at both kinds of barrier, fail the launch;
 *  - __shfl_sync and __shfl_xor_sync (float values, the whole warp) are a __syncwarp() with an exchange: each lane
 *    leaves its value in its fiber, then reads its source lane's (two slots used in turn, so a fast lane's next
 *    shuffle never overwrites a value a slow lane has yet to read);
 *  - the warp matrix functions (nvcuda::wmma, for the tensor-core attention), which emu-include/mma.h emulates per
 *    thread (each thread stores only its lane's elements; see there). A warp matrix function misused (a misaligned
 *    tile, a bad leading dimension) fails the launch with a message.
 * Not emulated: votes, blocks running at the same time, streams (the stand-in driver runs a launch when it is
 * made).
 * Test-only: never shipped.
 */
#include "cuda_emulation.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include KERNEL_SOURCE

namespace emu {
dim3 thread_idx, block_idx, block_dim, grid_dim;

namespace {
constexpr unsigned MAX_THREADS = 1024;
constexpr size_t STACK_BYTES = 64 * 1024;
constexpr size_t SHARED_BYTES = 48 * 1024;      /* the stand-in driver's limit, as a GPU's default */
constexpr unsigned SHARED_FILL = 0x7FC0DEADu;   /* a quiet NaN with a payload a kernel never computes */

enum State { RUNNABLE, AT_BARRIER, AT_WARP_BARRIER, DONE };

#if defined(__x86_64__)
/* Saves the System V callee-saved registers on the running stack, stores its pointer in *from and continues on
   `to`, a stack saved the same way (or prepared by start_context). */
extern "C" void emu_switch(void **from, void *to);
asm(R"(
    .text
    .globl emu_switch
    .hidden emu_switch
    .type emu_switch, @function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch, .-emu_switch
)");

struct Context {
    void *sp;
};

void fiber_main();

/* A stack that emu_switch enters at fiber_main: six zero registers, then fiber_main as the return address, placed
   so that fiber_main starts with the stack aligned as after a call. */
void start_context(Context &c, char *stack, size_t bytes) {
    uintptr_t top = ((uintptr_t) (stack + bytes)) & ~(uintptr_t) 15;
    void **sp = (void **) (top - 16);
    sp[0] = (void *) &fiber_main;
    sp[1] = nullptr;
    sp -= 6;
    for (int r = 0; r < 6; r++) {
        sp[r] = nullptr;
    }
    c.sp = sp;
}

void switch_context(Context &from, Context &to) {
    emu_switch(&from.sp, to.sp);
}
#else
struct Context {
    ucontext_t uc;
};

void fiber_main();

void start_context(Context &c, char *stack, size_t bytes) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = bytes;
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, fiber_main, 0);
}

void switch_context(Context &from, Context &to) {
    swapcontext(&from.uc, &to.uc);
}
#endif

struct Fiber {
    Context context;
    char *stack;
    dim3 index;
    State state;
    float exchange[2];    /* this lane's values of its last two shuffles */
    unsigned shuffles;    /* shuffles this lane made in this block */
};

std::mutex launch_lock;            /* launches run one at a time: the index variables are shared */
Fiber fibers[MAX_THREADS];
Context scheduler;
Fiber *running;
void (*body)(void **);
void **body_params;
/* Dynamic shared memory: outside a launch every word holds SHARED_FILL. A block's first dynamic_shared() fills the
   launch's range again (undefined contents: NaN); after a launch that used it, the words past the range must still
   hold the fill (else a write went past it), and the range gets the fill back for the next launch. Launches that
   never ask for shared memory cost nothing here. */
alignas(128) unsigned shared[SHARED_BYTES / 4];   /* aligned as a block's shared window */
size_t shared_words;         /* the launch's range, in words */
bool shared_used;            /* some block of this launch asked for it */
bool block_shared_ready;     /* this block's range was filled */
bool failed;
char failure[512];
bool reverse_order = [] {
    const char *order = std::getenv("VRAM4J_FAKE_KERNELS_ORDER");
    return order != nullptr && std::strcmp(order, "reverse") == 0;
}();

void fail(const char *format, ...) {
    if (failed) {
        return;
    }
    failed = true;
    va_list args;
    va_start(args, format);
    vsnprintf(failure, sizeof failure, format, args);
    va_end(args);
}

/* A thread: the kernel's body, then back to the scheduler for good. */
void fiber_main() {
    body(body_params);
    running->state = DONE;
    switch_context(running->context, scheduler);
    std::abort();  /* a finished fiber is never resumed */
}

/* After every thread ran to its next barrier: releases each warp whose lanes all wait at __syncwarp(), and returns
   whether any was. A warp only some of whose lanes wait there can never go on (the others returned or wait at
   __syncthreads()): that fails the launch. */
bool release_warps(unsigned threads) {
    bool released = false;
    for (unsigned w0 = 0; w0 < threads && !failed; w0 += 32) {
        unsigned lanes = threads - w0 < 32 ? threads - w0 : 32;
        unsigned at_warp = 0;
        unsigned done = 0;
        for (unsigned l = 0; l < lanes; l++) {
            at_warp += fibers[w0 + l].state == AT_WARP_BARRIER;
            done += fibers[w0 + l].state == DONE;
        }
        if (at_warp == lanes) {
            for (unsigned l = 0; l < lanes; l++) {
                fibers[w0 + l].state = RUNNABLE;
            }
            released = true;
        } else if (at_warp > 0) {
            fail("block (%u, %u, %u) warp %u: %u lanes %s while %u wait at __syncwarp()", block_idx.x, block_idx.y,
                 block_idx.z, w0 / 32, lanes - at_warp, done > 0 ? "returned" : "wait at __syncthreads()", at_warp);
        }
    }
    return released;
}

/* Runs one block: every thread to its next barrier, again and again, until all returned or the launch failed. */
void run_block(unsigned threads) {
    for (unsigned t = 0; t < threads; t++) {
        Fiber &f = fibers[t];
        f.index = dim3{t % block_dim.x, (t / block_dim.x) % block_dim.y, t / (block_dim.x * block_dim.y)};
        f.state = RUNNABLE;
        f.shuffles = 0;
        /* the stacks' tops staggered by a cache line each, so that they do not all compete for the same cache sets */
        start_context(f.context, f.stack, STACK_BYTES - (t % 64) * 64);
    }
    for (;;) {
        unsigned done = 0;
        unsigned waiting = 0;
        for (unsigned i = 0; i < threads && !failed; i++) {
            Fiber &f = fibers[reverse_order ? threads - 1 - i : i];
            if (f.state == RUNNABLE) {
                running = &f;
                thread_idx = f.index;
                switch_context(scheduler, f.context);
            }
        }
        if (failed) {
            return;
        }
        for (unsigned t = 0; t < threads; t++) {
            if (fibers[t].state == DONE) {
                done++;
            } else {
                waiting++;
            }
        }
        if (waiting == 0) {
            return;
        }
        if (release_warps(threads)) {
            continue;
        }
        if (failed) {
            return;
        }
        if (done > 0) {
            fail("block (%u, %u, %u): %u threads returned while %u wait at __syncthreads()", block_idx.x, block_idx.y,
                 block_idx.z, done, waiting);
            return;
        }
        for (unsigned t = 0; t < threads; t++) {
            fibers[t].state = RUNNABLE;
        }
    }
}

/* Once: the fibers' stacks, and the fill of shared memory. */
bool prepare() {
    if (fibers[0].stack != nullptr) {
        return true;
    }
    for (unsigned &word : shared) {
        word = SHARED_FILL;
    }
    for (unsigned t = 0; t < MAX_THREADS; t++) {
        fibers[t].stack = static_cast<char *>(std::malloc(STACK_BYTES));
        if (fibers[t].stack == nullptr) {
            return false;
        }
    }
    return true;
}

/* ---- the kernel table: each entry reads its parameters with the types of the kernel's signature ---- */

template <typename... A, size_t... I>
void invoke(void (*kernel)(A...), void **params, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_reference_t<A> *>(params[I])...);
}

template <typename... A>
constexpr int arity(void (*)(A...)) {
    return sizeof...(A);
}

template <typename... A>
struct Signature {
    static constexpr size_t sizes[] = {sizeof(A)..., 0};
};

template <typename... A>
constexpr const size_t *sizes_of(void (*)(A...)) {
    return Signature<A...>::sizes;
}

struct Entry {
    const char *name;
    void (*run)(void **);
    int arity;
    const size_t *sizes;
};

#define EMU_KERNEL(k) \
    Entry{#k, [](void **p) { invoke(&k, p, std::make_index_sequence<arity(&k)>{}); }, arity(&k), sizes_of(&k)},

const Entry TABLE[] = {
#include "kernel_list.h"
};
}  // namespace

void syncthreads() {
    running->state = AT_BARRIER;
    switch_context(running->context, scheduler);
}

void syncwarp(unsigned mask) {
    unsigned threads = block_dim.x * block_dim.y * block_dim.z;
    if (mask != 0xffffffffu) {
        misuse("a warp-wide operation with mask %#x: only whole warps (0xffffffff) are emulated", mask);
    }
    if (threads % 32 != 0) {
        misuse("a warp-wide operation in a block of %u threads, not whole warps", threads);
    }
    running->state = AT_WARP_BARRIER;
    switch_context(running->context, scheduler);
}

float shuffle(unsigned mask, float v, unsigned src) {
    Fiber &self = *running;
    unsigned slot = self.shuffles++ % 2;
    self.exchange[slot] = v;
    syncwarp(mask);
    unsigned t = (unsigned) (&self - fibers);
    return fibers[t - t % 32 + src].exchange[slot];
}

void trap() {
    fail("block (%u, %u, %u) thread (%u, %u, %u): __trap()", block_idx.x, block_idx.y, block_idx.z, thread_idx.x,
         thread_idx.y, thread_idx.z);
    running->state = DONE;
    switch_context(running->context, scheduler);
    std::abort();  /* a trapped fiber is never resumed */
}

void misuse(const char *format, ...) {
    char message[384];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    fail("block (%u, %u, %u) thread (%u, %u, %u): %s", block_idx.x, block_idx.y, block_idx.z, thread_idx.x,
         thread_idx.y, thread_idx.z, message);
    running->state = DONE;
    switch_context(running->context, scheduler);
    std::abort();  /* a failed fiber is never resumed */
}

void *dynamic_shared() {
    if (!block_shared_ready) {
        for (size_t w = 0; w < shared_words; w++) {
            shared[w] = SHARED_FILL;
        }
        block_shared_ready = true;
        shared_used = true;
    }
    return shared;
}
}  // namespace emu

/*
 * Runs kernel `name` with the launch's dimensions (grid x y z, block x y z, dynamic shared bytes) and parameters,
 * whose sizes in bytes the caller read from the PTX. Returns 0, 1 when the kernel trapped, 2 for any other error;
 * `error` then holds one line. Thread-safe (launches are serialized).
 */
extern "C" int emu_launch(const char *name, const unsigned *dims, void **params, const int *sizes, int count,
                          char *error, size_t cap) {
    using namespace emu;
    std::lock_guard<std::mutex> guard(launch_lock);
    failed = false;
    failure[0] = 0;
    const Entry *entry = nullptr;
    for (const Entry &e : TABLE) {
        if (std::strcmp(e.name, name) == 0) {
            entry = &e;
        }
    }
    unsigned threads = dims[3] * dims[4] * dims[5];
    size_t shared_bytes = dims[6];
    if (entry == nullptr) {
        fail("%s: not a kernel of vram4j_kernels.cu", name);
    } else if (entry->arity != count) {
        fail("%s: %d parameters in the PTX, %d in the source", name, count, entry->arity);
    } else if (threads > MAX_THREADS || shared_bytes > SHARED_BYTES) {
        fail("%s: %u threads, %zu shared bytes: past the limits", name, threads, shared_bytes);
    } else if (!prepare()) {
        fail("%s: no memory for the fibers' stacks", name);
    }
    for (int i = 0; entry != nullptr && !failed && i < count; i++) {
        if ((size_t) sizes[i] != entry->sizes[i]) {
            fail("%s: parameter %d is %d bytes in the PTX, %zu in the source", name, i, sizes[i], entry->sizes[i]);
        }
    }
    if (!failed) {
        body = entry->run;
        body_params = params;
        grid_dim = dim3{dims[0], dims[1], dims[2]};
        size_t in_range = (shared_bytes + 3) / 4;
        shared_words = in_range;
        shared_used = false;
        block_dim = dim3{dims[3], dims[4], dims[5]};
        for (unsigned k = 0; k < dims[2] && !failed; k++) {
            for (unsigned j = 0; j < dims[1] && !failed; j++) {
                for (unsigned i = 0; i < dims[0] && !failed; i++) {
                    block_idx = reverse_order ? dim3{dims[0] - 1 - i, dims[1] - 1 - j, dims[2] - 1 - k} : dim3{i, j, k};
                    block_shared_ready = false;
                    run_block(threads);
                }
            }
        }
        /* past the launch's size, the fill stays from before the launch: any block's write there shows */
        for (size_t w = in_range; shared_used && w < SHARED_BYTES / 4; w++) {
            if (shared[w] != SHARED_FILL) {
                fail("%s: a block wrote shared memory at byte %zu, past the launch's %zu bytes", name, w * 4,
                     shared_bytes);
                shared[w] = SHARED_FILL;
            }
        }
        for (size_t w = 0; shared_used && w < in_range; w++) {
            shared[w] = SHARED_FILL;
        }
    }
    if (!failed) {
        return 0;
    }
    std::snprintf(error, cap, "%s", failure);
    return std::strstr(failure, "__trap()") != nullptr ? 1 : 2;
}

/* Runs blocks and threads in reverse index order (1) or in index order (0) from the next launch on. */
extern "C" void emu_set_reverse(int on) {
    std::lock_guard<std::mutex> guard(emu::launch_lock);
    emu::reverse_order = on != 0;
}

/* 1 when blocks and threads run in reverse index order, else 0. */
extern "C" int emu_reverse_order() {
    std::lock_guard<std::mutex> guard(emu::launch_lock);
    return emu::reverse_order ? 1 : 0;
}

/* The number of kernels compiled in, and the name of the i-th: tests check the table against the PTX. */
extern "C" int emu_kernel_count() {
    return (int) (sizeof emu::TABLE / sizeof emu::TABLE[0]);
}

extern "C" const char *emu_kernel_name(int i) {
    return emu::TABLE[i].name;
}
