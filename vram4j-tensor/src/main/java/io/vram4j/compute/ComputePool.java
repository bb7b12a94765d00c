package io.vram4j.compute;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * The worker threads that multi-threaded kernels split their work over: one {@link ForkJoinPool} of daemon
 * threads named {@code vram4j-compute-N}, created at first use with as many workers as
 * {@code vram4j.compute.threads} (default: available processors). Sharing one pool bounds the number of
 * busy compute threads however many callers there are.
 *
 * <p>{@link #forEach} hands out work units from a counter: the calling thread takes units too, and pool
 * helpers join in when they get a CPU. The call returns as soon as every unit is done, without waiting for
 * helpers that never started (they find nothing left and exit). So a late, descheduled or busy pool only
 * makes the caller do more of the work; it cannot deadlock a call, including one made from a pool thread.
 */
final class ComputePool {

    private ComputePool() {
    }

    private static final class Holder {
        static final ForkJoinPool POOL = create();

        private static ForkJoinPool create() {
            AtomicInteger ids = new AtomicInteger();
            ForkJoinPool.ForkJoinWorkerThreadFactory factory = pool -> {
                ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(pool);
                t.setName("vram4j-compute-" + ids.incrementAndGet());
                t.setDaemon(true);
                return t;
            };
            return new ForkJoinPool(Math.max(1, KernelSelector.defaultThreads()), factory, null, false);
        }
    }

    static ForkJoinPool pool() {
        return Holder.POOL;
    }

    /**
     * Runs {@code body.accept(u)} for every {@code u} in {@code [0, units)}, on the calling thread and on up to
     * {@code helpers} pool threads, and returns when all are done. If any unit throws, the remaining units
     * are skipped and the first exception is rethrown (others are added as suppressed).
     */
    static void forEach(int helpers, int units, IntConsumer body) {
        if (units <= 0) {
            return;
        }
        int h = Math.min(helpers, units - 1);
        if (h <= 0) {
            for (int u = 0; u < units; u++) {
                body.accept(u);
            }
            return;
        }
        Job job = new Job(units, body, Thread.currentThread());
        ForkJoinPool pool = pool();
        for (int i = 0; i < h; i++) {
            pool.execute(job::work);
        }
        job.work();
        job.await();
        job.rethrow();
    }

    /** One {@link #forEach} call: a unit counter, a completion counter and the first failure. */
    private static final class Job {
        private final int units;
        private final IntConsumer body;
        private final Thread owner;
        private final AtomicInteger next = new AtomicInteger();
        private final AtomicInteger done = new AtomicInteger();
        private volatile Throwable failure;

        Job(int units, IntConsumer body, Thread owner) {
            this.units = units;
            this.body = body;
            this.owner = owner;
        }

        void work() {
            for (int u; (u = next.getAndIncrement()) < units; ) {
                try {
                    if (failure == null) {
                        body.accept(u);
                    }
                } catch (Throwable t) {
                    fail(t);
                } finally {
                    if (done.incrementAndGet() == units) {
                        LockSupport.unpark(owner);
                    }
                }
            }
        }

        private synchronized void fail(Throwable t) {
            if (failure == null) {
                failure = t;
            } else if (failure != t) {
                failure.addSuppressed(t);
            }
        }

        /** Waits (on the owner thread) until every unit is done: a short spin, then parking. */
        void await() {
            for (int spins = 0; done.get() < units; spins++) {
                if (spins < 1 << 12) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.park(this);
                }
            }
        }

        void rethrow() {
            Throwable t = failure;
            if (t instanceof RuntimeException re) {
                throw re;
            }
            if (t instanceof Error e) {
                throw e;
            }
            if (t != null) {
                throw new IllegalStateException(t);
            }
        }
    }
}
