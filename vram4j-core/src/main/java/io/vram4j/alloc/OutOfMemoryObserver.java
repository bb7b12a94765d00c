package io.vram4j.alloc;

/**
 * Called just before a {@link DeviceOutOfMemoryException} is thrown, outside the allocator's lock, as the
 * observers attached with PyTorch's {@code _cuda_attach_out_of_memory_observer}.
 */
@FunctionalInterface
public interface OutOfMemoryObserver {
    /**
     * @param device the device index
     * @param allocationBytes the segment size that could not be obtained
     * @param deviceAllowed the allowed maximum when a memory fraction is set, else the device capacity (bytes)
     * @param deviceFree the device's free bytes at the time
     */
    void onOutOfMemory(int device, long allocationBytes, long deviceAllowed, long deviceFree);
}
