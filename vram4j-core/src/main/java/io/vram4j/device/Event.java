package io.vram4j.device;

/**
 * A marker recorded on a {@link Stream}, as a CUDA event: it completes once the work queued on its stream before
 * it has completed (see {@link Stream} for the completion model of the host and simulated devices). Once
 * complete, it stays complete and its marker (a CUDA event on {@code cuda}) is given back. Thread-safe.
 */
public final class Event {
    private final Stream stream;
    private final long token;
    private volatile boolean complete;

    Event(Stream stream, long token) {
        this.stream = stream;
        this.token = token;
    }

    /** @return the stream the event was recorded on */
    public Stream stream() {
        return stream;
    }

    /** @return true once the work before the event has completed (as {@code cudaEventQuery}); never blocks */
    public boolean query() {
        if (complete) {
            return true;
        }
        if (stream.queue().isComplete(token)) {
            markComplete();
            return true;
        }
        return false;
    }

    /** Waits for the event (as {@code cudaEventSynchronize}). */
    public void synchronize() {
        if (!complete) {
            stream.queue().await(token);
            markComplete();
        }
    }

    /** Queues a wait for this event on {@code waiter} (see {@link Stream#waitEvent}); nothing once complete. */
    synchronized void waitedOnBy(StreamQueue waiter) {
        if (!complete) {
            waiter.waitFor(stream.queue(), token);
        }
    }

    private synchronized void markComplete() {
        if (!complete) {
            complete = true;
            stream.queue().release(token);
        }
    }
}
