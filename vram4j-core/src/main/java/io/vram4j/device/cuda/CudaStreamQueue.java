package io.vram4j.device.cuda;

import io.vram4j.device.StreamQueue;

import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * The work queue of one CUDA stream: markers are CUDA events created with timing disabled (as PyTorch's
 * allocator creates its {@code record_stream} events) and recorded on the stream; completed events go back to a
 * pool of the device for reuse, as PyTorch's {@code EventPool}. Handle 0 is the legacy default stream.
 * Thread-safe.
 */
final class CudaStreamQueue implements StreamQueue {
    private final CudaContext context;
    private final long stream;
    private final ConcurrentLinkedDeque<Long> eventPool;

    /**
     * @param context the device's context
     * @param stream the {@code CUstream}, 0 for the legacy default stream
     * @param eventPool the device's pool of idle events
     */
    CudaStreamQueue(CudaContext context, long stream, ConcurrentLinkedDeque<Long> eventPool) {
        this.context = context;
        this.stream = stream;
        this.eventPool = eventPool;
    }

    /** @return a pooled or new event, recorded on the stream; the token is the {@code CUevent} */
    @Override
    public long record() {
        CudaDriver driver = context.current();
        Long pooled = eventPool.pollFirst();
        long event = pooled != null ? pooled : driver.eventCreate(CudaDriver.CU_EVENT_DISABLE_TIMING);
        try {
            driver.eventRecord(event, stream);
        } catch (RuntimeException e) {
            eventPool.addFirst(event);
            throw e;
        }
        return event;
    }

    @Override
    public boolean isComplete(long token) {
        return context.current().eventQuery(token);
    }

    @Override
    public void await(long token) {
        context.current().eventSynchronize(token);
    }

    /** Puts the completed event back into the device's pool. */
    @Override
    public void release(long token) {
        eventPool.addFirst(token);
    }

    /**
     * {@code cuStreamWaitEvent} when the marker is a CUDA event (a queue of a cuda device); otherwise blocks until
     * it completes, as the default.
     */
    @Override
    public void waitFor(StreamQueue source, long token) {
        if (source instanceof CudaStreamQueue) {
            context.current().streamWaitEvent(stream, token);
        } else {
            source.await(token);
        }
    }

    @Override
    public void synchronize() {
        context.current().streamSynchronize(stream);
    }

    @Override
    public boolean query() {
        return context.current().streamQuery(stream);
    }
}
