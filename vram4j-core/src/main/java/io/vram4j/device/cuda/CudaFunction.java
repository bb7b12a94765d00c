package io.vram4j.device.cuda;

import io.vram4j.device.Stream;

/**
 * One kernel of a {@link CudaModule} ({@code CUfunction}), launched with {@code cuLaunchKernel}.
 *
 * <p>Thread-safe. The launch is asynchronous: it is queued on the stream and returns; synchronize the stream (or
 * copy to the host, which does) before reading what the kernel wrote.
 */
public final class CudaFunction {
    private final CudaModule module;
    private final String name;
    private final long handle;

    CudaFunction(CudaModule module, String name, long handle) {
        this.module = module;
        this.name = name;
        this.handle = handle;
    }

    /** @return the entry name */
    public String name() {
        return name;
    }

    /**
     * Queues the kernel on a stream: a grid of {@code gridX} x {@code gridY} blocks of {@code blockX} threads.
     *
     * @param gridX blocks along x, at least 1
     * @param gridY blocks along y, 1 to 65535
     * @param blockX threads per block, 1 to 1024
     * @param sharedBytes dynamic shared memory per block, in bytes
     * @param stream a stream of the module's device
     * @param args the parameter values, exactly the kernel's parameters in number and size (the driver cannot
     *     check them: a mismatch reads garbage on the device)
     * @throws IllegalArgumentException for dimensions out of range or a stream of another device
     * @throws CudaException when the driver refuses the launch
     */
    public void launch(int gridX, int gridY, int blockX, int sharedBytes, Stream stream, KernelArgs args) {
        if (gridX < 1 || gridY < 1 || gridY > 65535 || blockX < 1 || blockX > 1024 || sharedBytes < 0) {
            throw new IllegalArgumentException(name + ": launch dimensions out of range: grid " + gridX + "x" + gridY
                    + ", block " + blockX + ", shared " + sharedBytes + " bytes");
        }
        module.checkOpen();
        module.device().launch(handle, gridX, gridY, blockX, sharedBytes, stream, args);
    }

    @Override
    public String toString() {
        return "CudaFunction(" + name + ")";
    }
}
