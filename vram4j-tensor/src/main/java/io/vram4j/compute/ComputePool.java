package io.vram4j.compute;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The worker threads that multi-threaded kernels split their work over: one {@link ForkJoinPool} of daemon
 * threads named {@code vram4j-compute-N}, created at first use with as many workers as
 * {@code vram4j.compute.threads} (default: available processors). Sharing one pool keeps the number of
 * busy compute threads bounded however many callers there are; a call made from inside the pool helps run
 * the tasks it waits for, so nested calls cannot deadlock.
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

    /** A unit of parallel work: runs part {@code index} of {@code parts}. */
    @FunctionalInterface
    interface Part {
        void run(int index);
    }

    /**
     * Runs {@code part.run(0) .. part.run(parts - 1)}, part 0 on the calling thread and the rest on the pool,
     * and returns when all are done. An exception in any part is rethrown after all parts finish.
     */
    static void invoke(int parts, Part part) {
        if (parts <= 1) {
            part.run(0);
            return;
        }
        ForkJoinPool pool = pool();
        @SuppressWarnings("unchecked")
        ForkJoinTask<Void>[] tasks = new ForkJoinTask[parts];
        boolean inPool = Thread.currentThread() instanceof ForkJoinWorkerThread w && w.getPool() == pool;
        for (int i = 1; i < parts; i++) {
            int index = i;
            ForkJoinTask<Void> t = ForkJoinTask.adapt(() -> part.run(index), null);
            tasks[i] = inPool ? t.fork() : pool.submit(t);
        }
        Throwable failure = null;
        try {
            part.run(0);
        } catch (RuntimeException | Error e) {
            failure = e;
        }
        for (int i = parts - 1; i >= 1; i--) {
            try {
                tasks[i].join();
            } catch (RuntimeException | Error e) {
                if (failure == null) {
                    failure = e;
                } else if (failure != e) {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure instanceof RuntimeException re) {
            throw re;
        }
        if (failure instanceof Error err) {
            throw err;
        }
    }
}
