package io.vram4j.data;

import io.vram4j.device.Event;
import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Tensor;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * Moves an epoch's batches to a device one batch ahead, as PyTorch training loops do with
 * {@code DataLoader(pin_memory=True)} and {@code x.to(device, non_blocking=True)} under
 * {@code with torch.cuda.stream(side)}, so that the copy of batch i+1 overlaps the compute on batch i:
 * <ol>
 *   <li>a batch with {@linkplain Batch#pinned() pinned samples} gets its two tensors allocated on the copy stream
 *       ({@link Device#empty(Stream, DType, int...)}), filled by asynchronous copies queued there
 *       ({@code cuMemcpyHtoDAsync_v2}), then an event is recorded there ({@code cuEventRecord}) and the pinned
 *       blocks go back to their {@link io.vram4j.alloc.CachingHostAllocator} with the copy stream recorded, so
 *       they are handed out again only after the copies completed;</li>
 *   <li>{@link #next()} makes the device's compute stream wait for that event ({@code cuStreamWaitEvent}; the
 *       host does not wait), records the tensors' use by the compute stream ({@link Tensor#recordStream}, so
 *       their blocks are not reused by the copy stream before the compute stream is done with them), queues the
 *       copies of the following batch, and returns the batch.</li>
 * </ol>
 * A batch without pinned samples (a loader without {@code pinMemory}, or on {@code host}) is copied on the
 * device's stream by {@link Device#tensor}, synchronously, as PyTorch's {@code non_blocking} copy from pageable
 * memory is: the same tensors, with no overlap.
 *
 * <pre>{@code
 * DataLoader loader = DataLoader.builder(train).batchSize(128).pinMemory(true).pinMemoryDevice(dev).build();
 * Stream side = ((CudaDevice) dev.backend()).newStream();
 * try (DeviceLoader batches = DeviceLoader.of(loader.epoch(0), dev, side)) {
 *     while (batches.hasNext()) {
 *         try (DeviceBatch b = batches.next()) {
 *             ... model.forward(b.x()) ... b.y() ...
 *         }
 *     }
 * }
 * }</pre>
 *
 * <p>{@link #placeholders} does the same on a {@code sim} standing for a CUDA GPU, for dry runs: each batch's
 * tensors allocated on the copy stream, an event recorded there, the compute stream made to wait and the tensors'
 * use by it recorded, in the same order as for pinned batches, but with no host samples and no copies (the sim
 * computes nothing). So the caching allocator sees the same calls, on the same streams, as on the GPU.
 *
 * <p>For one consumer thread. Closing it frees the staged batch, waits for the events it made the compute stream
 * wait on (so their CUDA events go back to the device's pool) and closes the epoch.
 */
public final class DeviceLoader implements Iterator<DeviceBatch>, AutoCloseable {
    /** The epoch, or null for {@linkplain #placeholders placeholder batches}. */
    private final DataLoader.Epoch batches;
    /** Placeholder batches still to stage (when {@code batches} is null). */
    private int placeholdersLeft;
    private final int placeholderSize;
    private final int placeholderFeatures;
    private final Device device;
    private final Stream copyStream;
    /** Events the compute stream was told to wait for; polled so that completed ones go back to the pool. */
    private final Deque<Event> waited = new ArrayDeque<>();
    private Staged staged;
    private boolean closed;

    private record Staged(DeviceBatch batch, Event copied) {
    }

    private DeviceLoader(DataLoader.Epoch batches, Device device, Stream copyStream) {
        this(batches, 0, 0, 0, device, copyStream);
    }

    private DeviceLoader(DataLoader.Epoch batches, int placeholders, int size, int features, Device device,
                         Stream copyStream) {
        this.batches = batches;
        this.placeholdersLeft = placeholders;
        this.placeholderSize = size;
        this.placeholderFeatures = features;
        this.device = device;
        this.copyStream = copyStream;
    }

    /**
     * Starts moving an epoch's batches: the first batch's copies are queued before this returns.
     *
     * @param batches the epoch (closed with this loader)
     * @param device the device to move batches to; ops run on its {@link Device#stream()}
     * @param copyStream the side stream copies are queued on, of the same device and not its compute stream
     * @return the loader
     * @throws IllegalArgumentException if the copy stream is the compute stream or of another device; the epoch
     *     is closed then
     * @throws IllegalStateException if the epoch's batches are pinned and {@code device} is not a {@code cuda}
     *     device; the epoch is closed then
     * @throws io.vram4j.alloc.DeviceOutOfMemoryException when the first batch's tensors do not fit on the device;
     *     the epoch is closed then
     */
    public static DeviceLoader of(DataLoader.Epoch batches, Device device, Stream copyStream) {
        Objects.requireNonNull(batches, "batches");
        try {
            Objects.requireNonNull(device, "device");
            Objects.requireNonNull(copyStream, "copyStream");
            requireSideStream(device, copyStream);
            DeviceLoader loader = new DeviceLoader(batches, device, copyStream);
            loader.stageNext();
            return loader;
        } catch (RuntimeException | Error e) {
            batches.close();
            throw e;
        }
    }

    /**
     * Placeholder batches on a {@code sim} device, allocated as {@link #of} allocates pinned batches on a GPU
     * (float32 {@code [size, features]} then int64 {@code [size]} on the copy stream, one batch ahead, an event
     * recorded on the copy stream, {@link Tensor#recordStream} with the compute stream at hand-over) with nothing
     * copied: what a dry run of a {@code cuda} job with pinned memory allocates. The first batch is staged before
     * this returns.
     *
     * @param device a simulated device ({@link Device#isSimulated()})
     * @param copyStream a side stream of it, not its compute stream
     * @param count batches in the epoch
     * @param size samples per batch
     * @param features floats per sample
     * @return the loader
     * @throws IllegalArgumentException if the device computes, or the stream is not one of its side streams
     */
    public static DeviceLoader placeholders(Device device, Stream copyStream, int count, int size, int features) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(copyStream, "copyStream");
        if (!device.isSimulated()) {
            throw new IllegalArgumentException("placeholder batches are for sim devices, not " + device.description());
        }
        requireSideStream(device, copyStream);
        DeviceLoader loader = new DeviceLoader(null, count, size, features, device, copyStream);
        loader.stageNext();
        return loader;
    }

    private static void requireSideStream(Device device, Stream copyStream) {
        if (copyStream.deviceIndex() != device.backend().index() || copyStream.equals(device.stream())) {
            throw new IllegalArgumentException("copyStream must be a side stream of " + device.description()
                    + " (not its compute stream " + device.stream() + "), got " + copyStream);
        }
    }

    /** @return batches in the epoch */
    public int numBatches() {
        return batches != null ? batches.numBatches() : placeholdersLeft + (staged != null ? 1 : 0);
    }

    @Override
    public boolean hasNext() {
        return !closed && staged != null;
    }

    /**
     * @return the next batch on the device, its copies ordered before the compute stream's next work; the caller
     *     closes it
     * @throws NoSuchElementException at the end of the epoch or once closed
     * @throws IllegalStateException or {@link io.vram4j.alloc.DeviceOutOfMemoryException} from staging the
     *     following batch (as {@link #of}), or what the epoch throws; the batch it would have returned is freed then
     */
    @Override
    public DeviceBatch next() {
        if (!hasNext()) {
            throw new NoSuchElementException(closed ? "device loader closed" : "end of epoch");
        }
        Staged s = staged;
        staged = null;
        releaseCompleted();
        if (s.copied() != null) {
            Stream compute = device.stream();
            compute.waitEvent(s.copied());
            waited.addLast(s.copied());
            s.batch().x().recordStream(compute);
            s.batch().y().recordStream(compute);
        }
        try {
            stageNext();
        } catch (RuntimeException | Error e) {
            s.batch().close();
            throw e;
        }
        return s.batch();
    }

    private void stageNext() {
        if (batches == null) {
            stagePlaceholder();
            return;
        }
        if (!batches.hasNext()) {
            return;
        }
        Batch b = batches.next();
        PinnedSamples pinned = b.pinned();
        if (pinned == null) {
            staged = new Staged(onComputeStream(b), null);
            return;
        }
        boolean copiesQueued = false;
        Tensor x = null;
        Tensor y = null;
        try {
            if (!(device.backend() instanceof CudaDevice cuda)) {
                throw new IllegalStateException("pinned batches are copied to a cuda device, not "
                        + device.description());
            }
            x = device.empty(copyStream, DType.FLOAT32, b.size(), b.features());
            y = device.empty(copyStream, DType.INT64, b.size());
            cuda.copyFromHostAsync(pinned.features(), x.storage().address(), copyStream);
            copiesQueued = true;
            cuda.copyFromHostAsync(pinned.labels(), y.storage().address(), copyStream);
            Event copied = copyStream.recordEvent();
            pinned.release(copyStream);
            staged = new Staged(new DeviceBatch(b.index(), b.size(), x, y), copied);
        } catch (RuntimeException | Error e) {
            if (copiesQueued) {
                pinned.release(copyStream);
            } else {
                pinned.release();
            }
            if (x != null) {
                x.close();
            }
            if (y != null) {
                y.close();
            }
            throw e;
        }
    }

    /** A pinned batch's allocations, events and stream uses without its samples or copies (sim). */
    private void stagePlaceholder() {
        if (placeholdersLeft == 0) {
            return;
        }
        placeholdersLeft--;
        Tensor x = device.empty(copyStream, DType.FLOAT32, placeholderSize, placeholderFeatures);
        try {
            Tensor y = device.empty(copyStream, DType.INT64, placeholderSize);
            staged = new Staged(new DeviceBatch(0, placeholderSize, x, y), copyStream.recordEvent());
        } catch (RuntimeException | Error e) {
            x.close();
            throw e;
        }
    }

    /** Today's path for pageable samples: tensors written on the device's stream, synchronously. */
    private DeviceBatch onComputeStream(Batch b) {
        long[] labels = new long[b.size()];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = b.y()[i];
        }
        Tensor x = device.tensor(b.x(), b.size(), b.features());
        try {
            return new DeviceBatch(b.index(), b.size(), x, device.tensor(labels, b.size()));
        } catch (RuntimeException | Error e) {
            x.close();
            throw e;
        }
    }

    private void releaseCompleted() {
        while (!waited.isEmpty() && waited.peekFirst().query()) {
            waited.pollFirst();
        }
    }

    /** Frees the staged batch, waits for the events still pending and closes the epoch; idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (staged != null) {
                staged.batch().close(); // its blocks belong to the copy stream, which orders their reuse after the copies
                if (staged.copied() != null) {
                    waited.addLast(staged.copied());
                }
                staged = null;
            }
            for (Event e : waited) {
                e.synchronize();
            }
            waited.clear();
        } finally {
            if (batches != null) {
                batches.close();
            }
        }
    }
}
