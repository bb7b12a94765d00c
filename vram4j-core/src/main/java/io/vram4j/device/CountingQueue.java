package io.vram4j.device;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The completion model of streams on devices that run nothing asynchronously: markers are numbered 1, 2, 3, ...
 * and every marker recorded so far completes when the stream is synchronized. Thread-safe.
 */
final class CountingQueue implements StreamQueue {
    private final AtomicLong recorded = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();

    @Override
    public long record() {
        return recorded.incrementAndGet();
    }

    @Override
    public boolean isComplete(long token) {
        return completed.get() >= token;
    }

    /** Completes the marker by synchronizing the stream, the only way work completes in this model. */
    @Override
    public void await(long token) {
        if (!isComplete(token)) {
            synchronize();
        }
    }

    @Override
    public void synchronize() {
        completed.accumulateAndGet(recorded.get(), Math::max);
    }

    @Override
    public boolean query() {
        return completed.get() >= recorded.get();
    }
}
