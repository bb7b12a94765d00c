package io.vram4j.device;

import java.lang.foreign.MemorySegment;

/**
 * The device SPI: what the caching allocator needs from a device, in the shape of the CUDA driver calls
 * PyTorch's allocator makes. Implementations: {@code host} (real off-heap memory through FFM),
 * {@code sim} (accounting only) and {@code cuda} (a GPU through the CUDA driver API). Obtain one with {@link Devices#open(String)}.
 *
 * <p>Sizes and addresses are in bytes. {@link #malloc} and {@link #map} never throw for lack of memory:
 * they report it by their return value, as {@code cudaMalloc} returns {@code cudaErrorMemoryAllocation},
 * so the allocator can run its retry sequence. Capacity is shared: the bytes of live {@link #malloc} segments
 * plus the bytes currently {@link #map mapped} never exceed {@link #totalMemory()}.
 *
 * <p>Misuse is reported by exceptions: {@link IllegalArgumentException} for invalid sizes or addresses
 * (sizes that are not positive, unknown or already freed segments, ranges outside a reservation, misaligned
 * values), {@link IllegalStateException} for calls on a closed device and for system failures of the
 * {@code host} backend. A failed call changes nothing.
 *
 * <p>Implementations are thread-safe: every method may be called from any thread, except that
 * {@link #close()} must not race with other calls.
 */
public interface DeviceBackend extends AutoCloseable {

    /** @return the backend type: {@code "host"}, {@code "sim"} or {@code "cuda"} */
    String type();

    /** @return the device index (the {@code device} field of snapshots); 0 unless several are opened */
    int index();

    /** @return a short description, e.g. {@code "host:8GiB"} or {@code "sim:A100-80GB"} */
    String description();

    /** @return the capacity in bytes (as {@code totalGlobalMem}) */
    long totalMemory();

    /** @return free and total bytes (as {@code cudaMemGetInfo}); free = capacity minus what is mapped or allocated */
    MemInfo memGetInfo();

    /** @return true when blocks are real memory that {@link #segment} can view ({@code host}); false on {@code sim} */
    boolean hasStorage();

    /**
     * @return true when blocks hold data that the host cannot view ({@code cuda}): it is read and written only
     *     through {@link #copyFromHost}, {@link #copyToHost}, {@link #fill} and {@link #copyDeviceToDevice}, and
     *     {@link #segment} throws. False on {@code host} (data the host views) and on {@code sim} standing for
     *     {@code host}; true on {@code sim} standing for a CUDA GPU, whose data calls keep nothing (see
     *     {@link io.vram4j.device.sim.SimDevice}).
     */
    default boolean hasDeviceMemory() {
        return false;
    }

    /**
     * @return true on {@code sim}: addresses and a capacity with nothing behind them, so nothing a tensor holds is
     *     kept (a dry run); false on {@code host} and {@code cuda}
     */
    default boolean isSimulated() {
        return false;
    }

    /**
     * Obtains a new segment (as {@code cudaMalloc}).
     *
     * @param size bytes, positive
     * @return the segment's base address (aligned to at least 512 bytes), or 0 when the device has no room
     * @throws IllegalArgumentException if {@code size} is not positive
     */
    long malloc(long size);

    /**
     * Obtains a new segment, preferring a given address (used by replays that place segments where a
     * recording had them). Devices that cannot honour the hint ignore it.
     *
     * @param size bytes, positive
     * @param addressHint the wanted base address, or 0 for none
     * @return the base address, or 0 when the device has no room
     * @throws IllegalArgumentException if {@code size} is not positive
     */
    default long malloc(long size, long addressHint) {
        return malloc(size);
    }

    /**
     * Returns a segment obtained by {@link #malloc} (as {@code cudaFree}).
     *
     * @param address the base address {@link #malloc} returned
     * @throws IllegalArgumentException if the address is not a live segment base
     */
    void free(long address);

    /**
     * A view of device memory. The view stays valid while its segment is live (or its reservation reserved);
     * see the backend for what happens when it is used afterwards.
     *
     * @param address start address inside a live segment or mapped range
     * @param size length in bytes; {@code [address, address + size)} must lie inside one live segment or
     *             one mapped range of a reservation
     * @return a segment over the bytes
     * @throws IllegalArgumentException if the range is not inside a live segment or a mapped range
     * @throws UnsupportedOperationException on devices without storage ({@code sim})
     */
    MemorySegment segment(long address, long size);

    /**
     * Copies host memory into device memory, synchronously (as {@code cudaMemcpy} host to device). The default
     * writes through {@link #segment}; backends whose memory the host cannot view override it.
     *
     * @param src the bytes to copy
     * @param dst start of the destination, inside a live segment or mapped range with {@code src.byteSize()}
     *            bytes
     * @throws IllegalArgumentException if the destination range is not inside device memory
     * @throws UnsupportedOperationException on devices without storage ({@code sim})
     */
    default void copyFromHost(MemorySegment src, long dst) {
        segment(dst, src.byteSize()).copyFrom(src);
    }

    /**
     * Copies device memory into host memory, synchronously (as {@code cudaMemcpy} device to host).
     *
     * @param src start of the source, inside a live segment or mapped range with {@code dst.byteSize()} bytes
     * @param dst where the bytes go
     * @throws IllegalArgumentException if the source range is not inside device memory
     * @throws UnsupportedOperationException on devices without storage ({@code sim})
     */
    default void copyToHost(long src, MemorySegment dst) {
        dst.copyFrom(segment(src, dst.byteSize()));
    }

    /**
     * Sets every byte of a range of device memory, synchronously (as {@code cudaMemset}).
     *
     * @param dst start of the range, inside a live segment or mapped range
     * @param size bytes
     * @param value the byte written
     * @throws IllegalArgumentException if the range is not inside device memory
     * @throws UnsupportedOperationException on devices without storage ({@code sim})
     */
    default void fill(long dst, long size, byte value) {
        segment(dst, size).fill(value);
    }

    /**
     * Copies device memory to device memory of the same device, synchronously (as {@code cudaMemcpy} device to
     * device); the ranges may overlap only if they are the same. The default copies through {@link #segment}.
     *
     * @param src start of the source range, inside a live segment or mapped range
     * @param dst start of the destination range, likewise
     * @param size bytes, not negative
     * @throws IllegalArgumentException if a range is not inside device memory
     * @throws UnsupportedOperationException on devices without storage ({@code sim})
     */
    default void copyDeviceToDevice(long src, long dst, long size) {
        if (size > 0) {
            segment(dst, size).copyFrom(segment(src, size));
        }
    }

    /** @return the default stream (handle 0) */
    Stream defaultStream();

    /** @return a new stream with a fresh handle */
    Stream newStream();

    /**
     * @param handle a raw stream handle, e.g. from a recorded trace
     * @return the stream with that handle, created on first use
     */
    Stream stream(long handle);

    /** Synchronizes every stream of the device (as {@code cudaDeviceSynchronize}). */
    void synchronize();

    // ---- virtual memory, for expandable segments (as cuMemAddressReserve / cuMemMap / cuMemUnmap) ----

    /** @return the mapping granularity in bytes (2 MiB): reservations and mappings are multiples of it */
    long granularity();

    /**
     * Reserves a range of addresses without committing memory (as {@code cuMemAddressReserve}).
     *
     * @param size bytes, a multiple of {@link #granularity()}
     * @param addressHint the wanted base address, or 0 for none
     * @return the base address, or 0 if no address range is available
     */
    long reserveAddressRange(long size, long addressHint);

    /**
     * Releases a reservation; every page in it must have been unmapped.
     *
     * @param base the base returned by {@link #reserveAddressRange}
     * @param size the reserved size
     * @throws IllegalArgumentException if {@code base} is not a reservation of {@code size} bytes
     * @throws IllegalStateException if part of it is still mapped
     */
    void releaseAddressRange(long base, long size);

    /**
     * Commits memory behind part of a reservation (as {@code cuMemCreate} + {@code cuMemMap}); the bytes
     * count against the capacity.
     *
     * @param address start, aligned to the granularity, inside a reservation
     * @param size bytes, a multiple of the granularity
     * @return false when the device has no room (nothing is mapped then)
     * @throws IllegalArgumentException if the range is misaligned, not inside one reservation, or partly mapped
     */
    boolean map(long address, long size);

    /**
     * Decommits memory (as {@code cuMemUnmap} + {@code cuMemRelease}); the bytes no longer count.
     *
     * @param address start of a mapped range
     * @param size bytes, a multiple of the granularity; the range may span several {@link #map} calls
     * @throws IllegalArgumentException if the range is misaligned or not entirely mapped
     */
    void unmap(long address, long size);

    /**
     * Frees everything the device still holds. The device must not be used afterwards: memory operations
     * then throw {@link IllegalStateException}. Closing twice does nothing.
     */
    @Override
    void close();
}
