/**
 * The device layer: the {@link io.vram4j.device.DeviceBackend} SPI the caching allocator allocates through
 * (modelled on the CUDA calls PyTorch's allocator makes: {@code cudaMalloc}/{@code cudaFree},
 * {@code cudaMemGetInfo}, streams and events, and the virtual-memory calls behind expandable segments), the
 * shared bookkeeping of backends ({@link io.vram4j.device.AbstractDevice}), and
 * {@link io.vram4j.device.Devices}, which opens a backend from a spec such as {@code host:8GiB} or
 * {@code sim:A100-80GB}.
 *
 * <p>All sizes and addresses are in bytes. All device methods are thread-safe.
 */
package io.vram4j.device;
