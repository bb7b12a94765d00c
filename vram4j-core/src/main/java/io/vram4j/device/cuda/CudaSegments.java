package io.vram4j.device.cuda;

/**
 * Where a {@link CudaDevice} places the segments of the caching allocator. The allocator's best fit breaks ties
 * between free blocks of one size by address, so where segments lie decides which block a request gets, and with
 * it the layout, the fragmentation and, at the margin, whether a batch fits: a dry run on {@code sim} predicts a
 * GPU's run byte for byte only when both place segments by one policy.
 */
public enum CudaSegments {
    /**
     * Where {@code cuMemAlloc_v2} puts them, as PyTorch's {@code cudaMalloc} does (the driver's choice, not always
     * ascending): the default, so that vram4j and PyTorch lay out the same calls alike on one GPU.
     */
    DRIVER,
    /**
     * As {@code sim} and {@code host} place them: the lowest free range of one address range reserved when the
     * device is opened ({@code cuMemAddressReserve}), segments of 2 MiB and more 2 MiB aligned, each backed by
     * physical memory of its own ({@code cuMemCreate}, {@code cuMemMap}, {@code cuMemSetAccess}; released with
     * {@code cuMemUnmap}, {@code cuMemRelease}). The same calls then give the same layout as on {@code sim},
     * shifted by one constant. Needs the driver's virtual memory management with a granularity dividing 2 MiB;
     * without it the device falls back to {@link #DRIVER} ({@link CudaDevice#segments()} says which).
     */
    LOWEST_ADDRESS_FIRST
}
