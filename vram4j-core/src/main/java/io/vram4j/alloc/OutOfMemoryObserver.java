package io.vram4j.alloc;

/**
 * Called just before a {@link DeviceOutOfMemoryException} is thrown, as the observers attached with PyTorch's
 * {@code _cuda_attach_out_of_memory_observer}.
 *
 * <p>Threading: called on the thread whose {@code malloc} failed, after the allocator's lock has been released
 * (so an observer may call the allocator, e.g. to read {@code memoryStats()} or {@code snapshot()}, or to free
 * memory). Observers of one allocator run one after another in the order they were attached; failures on
 * several threads may call an observer concurrently, so implementations must be thread-safe.
 *
 * <p>Exceptions: an exception thrown by an observer propagates out of the failed {@code malloc} in place of the
 * {@link DeviceOutOfMemoryException}, and observers attached after it are not called for that failure. The
 * allocator is unaffected: the failure was already counted ({@code num_ooms}) and traced, and nothing was
 * allocated.
 */
@FunctionalInterface
public interface OutOfMemoryObserver {
    /**
     * @param device the device index
     * @param allocationBytes the segment size that could not be obtained (bytes)
     * @param deviceAllowed the allowed maximum when a memory fraction is set, else the device capacity (bytes)
     * @param deviceFree the device's free bytes at the time
     */
    void onOutOfMemory(int device, long allocationBytes, long deviceAllowed, long deviceFree);
}
