package io.vram4j.data;

import io.vram4j.alloc.CachingHostAllocator;
import io.vram4j.device.cuda.CudaDevice;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Splits a {@link Dataset} into {@link Batch}es, like PyTorch's {@code DataLoader}: a batch size, optional
 * shuffling, and dropping of a last incomplete batch; batches are assembled on a background thread and handed
 * over through a bounded queue ({@code prefetch} batches ahead) while the consumer trains on the previous one.
 *
 * <pre>{@code
 * DataLoader loader = DataLoader.builder(train).batchSize(128).shuffle(true).seed(42).build();
 * for (int epoch = 0; epoch < 3; epoch++) {
 *     try (DataLoader.Epoch batches = loader.epoch(epoch)) {
 *         while (batches.hasNext()) {
 *             Batch b = batches.next();
 *             ...
 *         }
 *     }
 * }
 * }</pre>
 *
 * <h2>Order</h2>
 * Without shuffling, samples come in data-set order. With shuffling, epoch {@code e} visits the samples in a
 * permutation drawn from {@code java.util.Random} seeded by {@code seed} and {@code e} (Fisher–Yates), so the
 * same seed, epoch and data-set size give the same batches on every run and JVM, with or without prefetch.
 *
 * <h2>Threads</h2>
 * With {@code prefetch > 0} (the default, 2), each {@link Epoch} starts one daemon thread that fills the queue
 * and stops at the end of the epoch. {@link Epoch#close()} stops and joins it, so after try-with-resources no
 * thread of the epoch is left, even when the consumer leaves early. An exception thrown while assembling a
 * batch (by the data set) ends the worker and is rethrown to the consumer by the {@code hasNext()}/{@code next()}
 * call that reaches it: unchecked exceptions as themselves (with a suppressed {@link DataLoaderException}
 * marking the hand-over), checked ones wrapped in a {@link DataLoaderException}. With {@code prefetch == 0}
 * batches are assembled on the consumer's thread.
 *
 * <h2>Pinned memory</h2>
 * With {@link Builder#pinMemory pinMemory(true)} (PyTorch's {@code pin_memory=True}, off by default) each batch
 * is also copied into blocks of the device's {@link io.vram4j.alloc.CachingHostAllocator} (page-locked memory
 * from {@code cuMemHostAlloc} on {@code cuda}) by the thread that assembles it: {@link Batch#pinned()}, ready
 * for an asynchronous copy ({@link DeviceLoader} does it on a side stream). The device is
 * {@link Builder#pinMemoryDevice} (PyTorch's {@code pin_memory_device}), else the current device
 * ({@link io.vram4j.tensor.Device#current()}) when {@link #build} runs. When that is no accelerator ({@code host},
 * {@code sim}, or none), the loader logs PyTorch's warning {@value #NO_ACCELERATOR_WARNING} once, at build, and
 * pins nothing. A consumer of pinned batches releases them ({@link PinnedSamples#release}); batches the loader
 * still held when an epoch is closed are released by it.
 *
 * <p>A DataLoader is immutable and thread-safe; each Epoch is for one consumer thread.
 */
public final class DataLoader {
    /** PyTorch's warning (torch/utils/data/dataloader.py) for {@code pin_memory=True} without an accelerator. */
    public static final String NO_ACCELERATOR_WARNING =
            "'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't be used.";
    private static final AtomicInteger THREAD_IDS = new AtomicInteger();

    private final Dataset dataset;
    private final int batchSize;
    private final boolean shuffle;
    private final long seed;
    private final boolean dropLast;
    private final int prefetch;
    /** Where pinned batches come from; null when batches are not pinned. */
    private final CachingHostAllocator pinnedFrom;

    private DataLoader(Builder b, CachingHostAllocator pinnedFrom) {
        this.pinnedFrom = pinnedFrom;
        this.dataset = b.dataset;
        this.batchSize = b.batchSize;
        this.shuffle = b.shuffle;
        this.seed = b.seed;
        this.dropLast = b.dropLast;
        this.prefetch = b.prefetch;
    }

    /**
     * @param dataset what to batch
     * @return a builder with batch size 64, no shuffling, seed 0, no drop-last, prefetch 2
     */
    public static Builder builder(Dataset dataset) {
        return new Builder(dataset);
    }

    /** @return the data set */
    public Dataset dataset() {
        return dataset;
    }

    /** @return samples per batch */
    public int batchSize() {
        return batchSize;
    }

    /** @return whether each epoch visits the samples in a seeded random order */
    public boolean shuffle() {
        return shuffle;
    }

    /** @return the shuffling seed */
    public long seed() {
        return seed;
    }

    /** @return whether a last batch smaller than {@link #batchSize()} is dropped */
    public boolean dropLast() {
        return dropLast;
    }

    /** @return how many batches the background thread may assemble ahead; 0 for none */
    public int prefetch() {
        return prefetch;
    }

    /**
     * @return whether batches come with their samples in pinned memory ({@link Batch#pinned()}): asked for with
     *     {@code pinMemory(true)} and an accelerator found
     */
    public boolean pinMemory() {
        return pinnedFrom != null;
    }

    /** @return batches per epoch */
    public int numBatches() {
        int n = dataset.size();
        return dropLast ? n / batchSize : (n + batchSize - 1) / batchSize;
    }

    /** @return samples per epoch (the data-set size, less the dropped last batch if any) */
    public int samplesPerEpoch() {
        return dropLast ? numBatches() * batchSize : dataset.size();
    }

    /**
     * The order in which epoch {@code epoch} visits the samples.
     *
     * @param epoch epoch number, e.g. from 0
     * @return sample indices, a permutation of {@code 0 .. size-1} (the identity without shuffling)
     */
    public int[] order(int epoch) {
        int n = dataset.size();
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        if (shuffle) {
            Random rnd = new Random(seed * 0x9E3779B97F4A7C15L + epoch);
            for (int i = n - 1; i > 0; i--) {
                int j = rnd.nextInt(i + 1);
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
        }
        return order;
    }

    /**
     * Starts an epoch. With prefetch, a background thread starts assembling batches at once; close the epoch
     * (try-with-resources) to stop it.
     *
     * @param epoch epoch number, which selects the shuffling order
     * @return the epoch's batches
     */
    public Epoch epoch(int epoch) {
        int[] order = order(epoch);
        return prefetch == 0 ? new SyncEpoch(this, order) : new PrefetchEpoch(this, order, epoch);
    }

    Batch assemble(int[] order, int batchIndex) {
        int start = batchIndex * batchSize;
        int size = Math.min(batchSize, order.length - start);
        int f = dataset.features();
        float[] x = new float[Math.multiplyExact(size, f)];
        int[] y = new int[size];
        for (int i = 0; i < size; i++) {
            int s = order[start + i];
            dataset.copyFeatures(s, x, i * f);
            y[i] = dataset.label(s);
        }
        return new Batch(batchIndex, size, f, x, y, pinnedFrom == null ? null : PinnedSamples.copyOf(pinnedFrom, x, y));
    }

    /** Gives back the pinned blocks of a batch nobody will consume. */
    private static void drop(Object batch) {
        if (batch instanceof Batch b && b.pinned() != null) {
            b.pinned().release();
        }
    }

    /**
     * The batches of one epoch, in order. Close it (try-with-resources) to stop its background thread;
     * closing is idempotent, and after it {@link #hasNext()} is false.
     */
    public interface Epoch extends Iterator<Batch>, AutoCloseable {
        /** @return batches in this epoch */
        int numBatches();

        /**
         * @return whether another batch follows
         * @throws RuntimeException what the background thread threw while assembling the next batch
         */
        @Override
        boolean hasNext();

        /**
         * @return the next batch
         * @throws NoSuchElementException at the end of the epoch
         * @throws RuntimeException what the background thread threw while assembling it
         */
        @Override
        Batch next();

        /** Stops and joins the background thread, if any, and drops the batches it had ready. */
        @Override
        void close();
    }

    private static final class SyncEpoch implements Epoch {
        private final DataLoader loader;
        private final int[] order;
        private final int batches;
        private int next;
        private boolean closed;

        SyncEpoch(DataLoader loader, int[] order) {
            this.loader = loader;
            this.order = order;
            this.batches = loader.numBatches();
        }

        @Override
        public int numBatches() {
            return batches;
        }

        @Override
        public boolean hasNext() {
            return !closed && next < batches;
        }

        @Override
        public Batch next() {
            if (!hasNext()) {
                throw new NoSuchElementException(closed ? "epoch closed" : "end of epoch");
            }
            return loader.assemble(order, next++);
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    private static final class PrefetchEpoch implements Epoch {
        private static final Object END = new Object();

        private record Failure(Throwable error) {
        }

        private final BlockingQueue<Object> queue;
        private final Thread worker;
        private final int batches;
        private volatile boolean closed;
        private Object ready; // taken from the queue, not yet returned by next()
        private boolean done;

        PrefetchEpoch(DataLoader loader, int[] order, int epoch) {
            this.batches = loader.numBatches();
            this.queue = new ArrayBlockingQueue<>(loader.prefetch + 1);
            this.worker = Thread.ofPlatform().daemon(true)
                    .name("vram4j-data-loader-" + THREAD_IDS.incrementAndGet() + "-epoch-" + epoch)
                    .unstarted(() -> produce(loader, order));
            worker.start();
        }

        private void produce(DataLoader loader, int[] order) {
            try {
                for (int b = 0; b < batches && !closed; b++) {
                    Batch batch = loader.assemble(order, b);
                    try {
                        queue.put(batch);
                    } catch (InterruptedException e) {
                        drop(batch); // closed by the consumer before it was handed over
                        return;
                    }
                }
                queue.put(END);
            } catch (InterruptedException e) {
                // closed by the consumer
            } catch (Throwable t) {
                try {
                    queue.put(new Failure(t));
                } catch (InterruptedException e) {
                    // closed by the consumer; nobody is left to tell
                }
            }
        }

        @Override
        public int numBatches() {
            return batches;
        }

        @Override
        public boolean hasNext() {
            if (closed || done) {
                return false;
            }
            if (ready == null) {
                try {
                    ready = queue.take();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CancellationException("interrupted while waiting for the next batch");
                }
            }
            if (ready == END) {
                done = true;
                return false;
            }
            if (ready instanceof Failure(Throwable error)) {
                done = true;
                ready = null;
                DataLoaderException handOver = new DataLoaderException(
                        "data loader worker " + worker.getName() + " failed: " + error, error);
                if (error instanceof RuntimeException re) {
                    re.addSuppressed(handOver);
                    throw re;
                }
                if (error instanceof Error err) {
                    err.addSuppressed(handOver);
                    throw err;
                }
                throw handOver;
            }
            return true;
        }

        @Override
        public Batch next() {
            if (!hasNext()) {
                throw new NoSuchElementException(closed ? "epoch closed" : "end of epoch");
            }
            Batch b = (Batch) ready;
            ready = null;
            return b;
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            worker.interrupt();
            boolean interrupted = false;
            while (true) {
                try {
                    worker.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            for (Object o = queue.poll(); o != null; o = queue.poll()) {
                drop(o);
            }
            drop(ready);
            ready = null;
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Builds a {@link DataLoader}. */
    public static final class Builder {
        private final Dataset dataset;
        private int batchSize = 64;
        private boolean shuffle;
        private long seed;
        private boolean dropLast;
        private int prefetch = 2;
        private boolean pinMemory;
        private io.vram4j.tensor.Device pinMemoryDevice;
        private Consumer<String> warnings = message -> System.getLogger(DataLoader.class.getName())
                .log(System.Logger.Level.WARNING, message);

        private Builder(Dataset dataset) {
            this.dataset = Objects.requireNonNull(dataset, "dataset");
        }

        /**
         * @param batchSize samples per batch, at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code batchSize < 1}
         */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1) {
                throw new IllegalArgumentException("batch size must be at least 1, got " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        /**
         * @param shuffle whether each epoch visits the samples in a seeded random order
         * @return this builder
         */
        public Builder shuffle(boolean shuffle) {
            this.shuffle = shuffle;
            return this;
        }

        /**
         * @param seed the shuffling seed
         * @return this builder
         */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /**
         * @param dropLast whether to drop a last batch smaller than the batch size
         * @return this builder
         */
        public Builder dropLast(boolean dropLast) {
            this.dropLast = dropLast;
            return this;
        }

        /**
         * @param prefetch how many batches a background thread may assemble ahead (0: no thread)
         * @return this builder
         * @throws IllegalArgumentException if negative
         */
        public Builder prefetch(int prefetch) {
            if (prefetch < 0) {
                throw new IllegalArgumentException("prefetch must be non-negative, got " + prefetch);
            }
            this.prefetch = prefetch;
            return this;
        }

        /**
         * @param pinMemory whether to copy each batch into pinned host memory of the accelerator (PyTorch's
         *     {@code pin_memory}; see the class comment), off by default
         * @return this builder
         */
        public Builder pinMemory(boolean pinMemory) {
            this.pinMemory = pinMemory;
            return this;
        }

        /**
         * @param device the accelerator whose pinned memory batches go to (PyTorch's {@code pin_memory_device}),
         *     or null for the current device at {@link #build}; only with {@code pinMemory(true)}
         * @return this builder
         */
        public Builder pinMemoryDevice(io.vram4j.tensor.Device device) {
            this.pinMemoryDevice = device;
            return this;
        }

        /** Where the no-accelerator warning goes (the System.Logger of DataLoader by default); for tests. */
        Builder warnings(Consumer<String> sink) {
            this.warnings = Objects.requireNonNull(sink, "sink");
            return this;
        }

        /**
         * @return the loader
         * @throws IllegalArgumentException for {@code pinMemoryDevice} without {@code pinMemory(true)}
         * @throws IllegalStateException when the pinned-memory device is closed
         */
        public DataLoader build() {
            if (pinMemoryDevice != null && !pinMemory) {
                throw new IllegalArgumentException("pinMemoryDevice(" + pinMemoryDevice.description()
                        + ") is set but pinMemory is false: set pinMemory(true) or leave the device out");
            }
            CachingHostAllocator pinned = null;
            if (pinMemory) {
                io.vram4j.tensor.Device d = pinMemoryDevice != null ? pinMemoryDevice : currentOrNull();
                if (d != null && d.backend() instanceof CudaDevice cuda) {
                    pinned = cuda.hostAllocator();
                } else {
                    warnings.accept(NO_ACCELERATOR_WARNING);
                }
            }
            return new DataLoader(this, pinned);
        }

        private static io.vram4j.tensor.Device currentOrNull() {
            try {
                return io.vram4j.tensor.Device.current();
            } catch (IllegalStateException none) {
                return null;
            }
        }

        /** For tests: batches pinned in {@code allocator} whatever the device (e.g. pageable host memory). */
        DataLoader build(CachingHostAllocator allocator) {
            return new DataLoader(this, Objects.requireNonNull(allocator, "allocator"));
        }
    }
}
