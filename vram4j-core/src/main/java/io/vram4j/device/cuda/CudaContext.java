package io.vram4j.device.cuda;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A device's primary context ({@code cuDevicePrimaryCtxRetain}) and the driver, with {@link #current()} making
 * the context current on the calling thread before a driver call, as PyTorch sets the device before each CUDA
 * call. The calling thread's current context is remembered per thread, so a thread that stays on one device
 * pays one {@code cuCtxSetCurrent} only; code that changes a thread's context behind vram4j's back must call
 * {@link #forgetCurrent()}. Thread-safe.
 */
final class CudaContext {
    /** Bumped whenever a context is retained or released, so no thread trusts a remembered context across it. */
    private static final AtomicLong GENERATION = new AtomicLong();
    private static final ThreadLocal<long[]> CURRENT = ThreadLocal.withInitial(() -> new long[] {0, -1});

    private final CudaDriver driver;
    private final int device;
    private final long context;

    private CudaContext(CudaDriver driver, int device, long context) {
        this.driver = driver;
        this.device = device;
        this.context = context;
    }

    /**
     * Retains the primary context of a device.
     *
     * @param driver the driver
     * @param device the {@code CUdevice}
     * @return the context, to be {@linkplain #release() released} once
     */
    static CudaContext retain(CudaDriver driver, int device) {
        long ctx = driver.primaryCtxRetain(device);
        GENERATION.incrementAndGet();
        return new CudaContext(driver, device, ctx);
    }

    /** @return the driver, after making this context current on the calling thread */
    CudaDriver current() {
        long[] remembered = CURRENT.get();
        long generation = GENERATION.get();
        if (remembered[0] != context || remembered[1] != generation) {
            driver.ctxSetCurrent(context);
            remembered[0] = context;
            remembered[1] = generation;
        }
        return driver;
    }

    /** Makes the next {@link #current()} on this thread set the context again. */
    static void forgetCurrent() {
        CURRENT.get()[1] = -1;
    }

    /** @return the {@code CUdevice} */
    int device() {
        return device;
    }

    /** Releases the primary context ({@code cuDevicePrimaryCtxRelease_v2}). */
    void release() {
        GENERATION.incrementAndGet();
        driver.primaryCtxRelease(device);
    }
}
