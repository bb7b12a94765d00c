package io.vram4j.train;

import io.vram4j.data.DataLoader;
import io.vram4j.data.DeviceBatch;
import io.vram4j.data.DeviceLoader;
import io.vram4j.device.Stream;
import io.vram4j.tensor.Device;

/**
 * One epoch's batches as the network takes them: host batches that each step copies in itself (today's path,
 * kept on {@code host} and {@code sim}), or, with a copy stream, device batches from a {@link DeviceLoader}
 * (pinned memory, copied one batch ahead on the side stream). For one thread.
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

    /** Runs a training step on the next batch (freeing a device batch after it). */
    Network.StepStats train(Network net) {
        if (device == null) {
            return net.trainStep(host.next());
        }
        try (DeviceBatch b = device.next()) {
            return net.trainStep(b);
        }
    }

    /** Evaluates the next batch (freeing a device batch after it). */
    Network.StepStats evaluate(Network net) {
        if (device == null) {
            return net.evaluate(host.next());
        }
        try (DeviceBatch b = device.next()) {
            return net.evaluate(b);
        }
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
