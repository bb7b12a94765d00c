package io.vram4j.train;

import io.vram4j.data.Batch;
import io.vram4j.data.DataLoader;
import io.vram4j.data.Dataset;
import io.vram4j.data.DeviceBatch;
import io.vram4j.data.DeviceLoader;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.tensor.Device;

import java.util.function.IntConsumer;

/**
 * The batches of a {@link Rehearsal} of an MLP job with pinned memory on {@code cuda}, allocated as that job's
 * {@link Trainer#fit} allocates them (PyTorch's {@code DataLoader(pin_memory=True)} with
 * {@code x.to(device, non_blocking=True)} under {@code torch.cuda.stream(side)}): through a {@link DeviceLoader}, so
 * the device tensors of batch i+1 are allocated on the side stream, from its own pool, while step i runs on the
 * compute stream, handed to the compute stream with an event and {@code recordStream}, and their blocks reused only
 * after the compute stream has passed them. A training phase of n steps is an epoch of n+1 batches cut after n
 * steps, so each step runs with the next batch staged, as every step inside an epoch; the evaluation batch comes
 * the same way, from an epoch of its own. On {@code cuda} the samples are the try's synthetic batch, pinned and
 * copied; on a {@code sim} standing for a GPU the batches are {@linkplain DeviceLoader#placeholders placeholders}
 * with the same allocations on the same streams and nothing copied, so the dry run shows the side stream's blocks.
 */
final class PinnedRehearsal {
    private final Network net;
    private final Device dev;
    private final Stream copyStream;
    private final Batch trainData;
    private final Batch evalData;
    private final int features;

    /**
     * @return whether a job of {@code o} on {@code device} moves its batches through pinned memory and a side stream,
     *     as {@link Trainer#fit} does, and so is rehearsed with this class (by {@link BatchSizeFinder} and
     *     {@link Trainer#dryRun}): {@link TrainOptions#pinMemory()}, the mlp, on {@code cuda} or a {@code sim}
     *     standing for a CUDA GPU
     */
    static boolean applies(TrainOptions o, DeviceBackend device) {
        return o.pinMemory() && !o.isTransformer()
                && (device instanceof CudaDevice || device.isSimulated() && device.hasDeviceMemory());
    }

    /**
     * @param copyStream the side stream batches are allocated on
     * @param trainData a training batch to pin and copy, or null on {@code sim}
     * @param evalData the evaluation batch, or null on {@code sim}
     * @param features floats per sample
     */
    PinnedRehearsal(Network net, Device dev, Stream copyStream, Batch trainData, Batch evalData, int features) {
        this.net = net;
        this.dev = dev;
        this.copyStream = copyStream;
        this.trainData = trainData;
        this.evalData = evalData;
        this.features = features;
    }

    /** @return a training phase of {@code steps} steps of {@code size} samples */
    IntConsumer training(int size) {
        return steps -> {
            try (DeviceLoader batches = open(trainData, steps + 1, size)) {
                for (int i = 0; i < steps; i++) {
                    try (DeviceBatch b = batches.next()) {
                        net.trainStep(b);
                    }
                }
            }
        };
    }

    /** @return one evaluation batch of {@code size} samples */
    Runnable evaluation(int size) {
        return () -> {
            try (DeviceLoader batches = open(evalData, 1, size); DeviceBatch b = batches.next()) {
                net.evaluate(b);
            }
        };
    }

    private DeviceLoader open(Batch data, int count, int size) {
        if (dev.isSimulated()) {
            return DeviceLoader.placeholders(dev, copyStream, count, size, features);
        }
        DataLoader loader = DataLoader.builder(repeated(data, count)).batchSize(size).prefetch(0).pinMemory(true)
                .pinMemoryDevice(dev).build();
        return DeviceLoader.of(loader.epoch(0), dev, copyStream);
    }

    /** {@code b}'s samples {@code count} times over. */
    private Dataset repeated(Batch b, int count) {
        return new Dataset() {
            @Override
            public int size() {
                return b.size() * count;
            }

            @Override
            public int features() {
                return b.features();
            }

            @Override
            public int numClasses() {
                return Integer.MAX_VALUE;
            }

            @Override
            public void copyFeatures(int index, float[] dst, int offset) {
                int i = index % b.size();
                System.arraycopy(b.x(), i * b.features(), dst, offset, b.features());
            }

            @Override
            public int label(int index) {
                return b.y()[index % b.size()];
            }

            @Override
            public String description() {
                return "a synthetic batch " + count + " times";
            }
        };
    }
}
