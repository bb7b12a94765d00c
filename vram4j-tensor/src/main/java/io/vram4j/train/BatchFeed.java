package io.vram4j.train;

import io.vram4j.data.DataLoader;
import io.vram4j.data.DeviceBatch;
import io.vram4j.data.DeviceLoader;
import io.vram4j.device.Stream;
import io.vram4j.tensor.Device;

/**
 * One epoch's batches as the network takes them: host batches that each step copies in itself (today's path,
 * kept on {@code host} and {@code sim}), or, with a copy stream, device batches from a {@link DeviceLoader}
 * (pinned memory, copied one batch ahead on the side stream). The caller takes each batch and runs the step
 * itself: the host path adds no stack frame to the allocations a step records. For one thread.
 */
final class BatchFeed implements AutoCloseable {
    private final DataLoader.Epoch host;
    private final DeviceLoader device;

    private BatchFeed(DataLoader.Epoch host, DeviceLoader device) {
        this.host = host;
        this.device = device;
    }

    /**
     * @param copyStream the side stream for {@link DeviceLoader}, or null for host batches
     */
    static BatchFeed open(DataLoader loader, int epoch, Device dev, Stream copyStream) {
        DataLoader.Epoch batches = loader.epoch(epoch);
        return copyStream == null ? new BatchFeed(batches, null)
                : new BatchFeed(null, DeviceLoader.of(batches, dev, copyStream));
    }

    boolean hasNext() {
        return device != null ? device.hasNext() : host.hasNext();
    }

    /** @return true when batches come as {@link DeviceBatch}es ({@link #nextOnDevice()}), false for host batches */
    boolean onDevice() {
        return device != null;
    }

    /**
     * @return the next host batch (the caller's step copies it in); called by the step's caller itself, with no
     *     frame between, so that recorded Java stacks keep their first frames
     */
    io.vram4j.data.Batch nextOnHost() {
        return host.next();
    }

    /** @return the next batch on the device; the caller closes it after the step */
    DeviceBatch nextOnDevice() {
        return device.next();
    }

    @Override
    public void close() {
        if (device != null) {
            device.close();
        } else {
            host.close();
        }
    }
}
