package io.vram4j.device;

/**
 * Free and total device memory in bytes, as returned by {@code cudaMemGetInfo}.
 *
 * @param free bytes the device could still hand out
 * @param total the device's capacity in bytes
 */
public record MemInfo(long free, long total) {
}
