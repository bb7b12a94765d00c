package io.vram4j.device;

/**
 * A marker recorded on a {@link Stream}, as a CUDA event. It completes when its stream is synchronized
 * (see {@link Stream} for the completion model of the host and simulated devices). Thread-safe.
 */
public final class Event {
    private final Stream stream;
    private final long sequence;

    Event(Stream stream, long sequence) {
        this.stream = stream;
        this.sequence = sequence;
    }

    /** @return the stream the event was recorded on */
    public Stream stream() {
        return stream;
    }

    /** @return true once the work before the event has completed (as {@code cudaEventQuery}) */
    public boolean query() {
        return stream.isComplete(sequence);
    }

    /** Waits for the event: synchronizes its stream (as {@code cudaEventSynchronize}). */
    public void synchronize() {
        if (!query()) {
            stream.synchronize();
        }
    }
}
