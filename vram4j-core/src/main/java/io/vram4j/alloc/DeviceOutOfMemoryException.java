package io.vram4j.alloc;

/**
 * The device has no room for a request, after the caching allocator ran PyTorch's whole retry sequence
 * (free cached oversize blocks, synchronize and free every unsplit cached segment, retry). The message has
 * the layout and figures of {@code torch.OutOfMemoryError} (spec section 4.5), followed by one line of vram4j's:
 * {@code Fragmentation: the largest free cached block is X; Y is free in N cached blocks.} (both pools, every
 * stream, after the retry sequence). {@code io.vram4j.replay.OomEvidenceObserver} writes the snapshot and the
 * forensics report of each failure. The allocator is unchanged
 * apart from what the retry sequence released and keeps working.
 *
 * <p>Unchecked, and deliberately not a {@link OutOfMemoryError}: the JVM heap is fine.
 */
public class DeviceOutOfMemoryException extends RuntimeException {
    private final int device;
    private final long requestedBytes;
    private final long allocationBytes;

    /**
     * The first words of the message for a device: {@code "CUDA out of memory."} on {@code cuda}, PyTorch's words
     * for its CUDA allocator, and {@code "<type> device out of memory."} on the others ({@code host}, {@code sim}).
     *
     * @param deviceType the backend type, e.g. {@code "cuda"}
     * @return the sentence the message starts with
     */
    public static String headline(String deviceType) {
        return "cuda".equals(deviceType) ? "CUDA out of memory." : deviceType + " device out of memory.";
    }

    /**
     * @param message the PyTorch-layout message
     * @param device the device index
     * @param requestedBytes the caller's size
     * @param allocationBytes the segment size that could not be obtained ({@code alloc_size})
     */
    public DeviceOutOfMemoryException(String message, int device, long requestedBytes, long allocationBytes) {
        super(message);
        this.device = device;
        this.requestedBytes = requestedBytes;
        this.allocationBytes = allocationBytes;
    }

    /** @return the device index */
    public int device() {
        return device;
    }

    /** @return the caller's requested size in bytes */
    public long requestedBytes() {
        return requestedBytes;
    }

    /** @return the segment size in bytes that could not be obtained (PyTorch's {@code alloc_size}) */
    public long allocationBytes() {
        return allocationBytes;
    }
}
