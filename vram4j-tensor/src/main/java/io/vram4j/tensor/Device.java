package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.compute.Kernels;
import io.vram4j.compute.cuda.CudaKernels;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.sim.SimDevice;
import io.vram4j.memory.stats.MemoryStats;

import java.util.Objects;

/**
 * The tensor factory for one device: it holds the device's {@link CachingAllocator}, the stream tensors are
 * allocated on, and the compute {@link Kernels}. Every tensor byte comes from {@link CachingAllocator#malloc}
 * on {@link #stream()}.
 *
 * <pre>{@code
 * try (Device dev = Device.open("host:1GiB");
 *      Tensor x = dev.tensor(new float[] {1, 2, 3, 4}, 2, 2);
 *      Tensor y = x.matmul(x)) {
 *     System.out.println(Arrays.toString(y.toFloatArray()));   // [7, 10, 15, 22]
 *     System.out.println(dev.memoryAllocated());               // 1024: two 512-byte blocks
 * }
 * }</pre>
 *
 * <p>On a device without storage ({@code sim} standing for {@code host}: {@code sim:SIZE}, {@link #hasStorage()}
 * false) tensors have shapes and memory but no data: ops allocate their outputs exactly as on {@code host} and
 * compute nothing, which predicts memory use without running. Reading values there throws
 * {@link UnsupportedOperationException}.
 *
 * <p>On a {@code sim} standing for a CUDA GPU ({@code sim:PRESET}, {@code sim:SIZE:ccMAJOR.MINOR};
 * {@link #isSimulated()} and {@link #hasStorage()} true) tensors are device memory with nothing behind it: the ops
 * take their {@code cuda} paths with {@link io.vram4j.compute.cuda.CudaKernels} over a queue that runs nothing, so
 * they allocate exactly as on that GPU (the kernels' own temporaries and cuBLAS workspace included) and compute
 * nothing; values read there are zeros.
 *
 * <p>On a device with memory of its own ({@code cuda}: {@link #hasStorage()} true, {@link #hostAccessible()}
 * false) tensor bytes are never viewed by the host: {@link Tensor#toFloatArray()}, {@link Tensor#item()},
 * printing, the factories that take arrays, fills, {@link Tensor#copyFrom}, {@link Tensor#to(Device)} and
 * safetensors go through the device's copy calls, after synchronizing its stream. The tensor ops compute there
 * with the device's own kernels ({@link io.vram4j.compute.cuda.CudaKernels} on {@code cuda}, loaded once when the
 * device is opened and closed with it, behind the argument checks of {@link Kernels#checked}), given the device
 * addresses as segments Java never dereferences; the few steps that are host work by nature (reading a loss or
 * the indices of a gather, drawing a dropout mask) go through synchronized staging copies. Conversions to or
 * from integer types, between float16 and bfloat16, and in-place ops on 16-bit tensors have no device kernel
 * behind them: they throw {@link UnsupportedOperationException} there in one line, leaving memory as it was. A
 * device-memory backend without kernels of its own refuses every op the same way until {@link #withKernels}
 * gives it some.
 *
 * <p>The <em>current device</em> ({@link #current()}) is what calls without a device argument use, such as
 * {@link Memory#track(String)} and {@link Memory#logMemory(String)}: the innermost {@link #use()} scope of the
 * calling thread (as {@code with torch.device(...)}), else the process-wide default set with
 * {@link #setDefault(Device)} (as {@code torch.set_default_device}). There is none until one is chosen: unlike
 * CUDA's device 0, no device exists before it is opened.
 *
 * <p>Thread-safety: the allocator is thread-safe; tensors are not (use each tensor from one thread at a time).
 * {@link #use()} scopes are per thread; the default is shared by all threads.
 */
public final class Device implements AutoCloseable {
    private static volatile Device defaultDevice;
    private static final ThreadLocal<Device> CURRENT = new ThreadLocal<>();

    private final DeviceBackend backend;
    private final CachingAllocator allocator;
    private final Stream stream;
    private final Kernels kernels;
    private final boolean owned;
    /** Kernels this device loaded (CUDA modules) and closes with itself; null when it shares or has none. */
    private final AutoCloseable ownKernels;

    private Device(DeviceBackend backend, CachingAllocator allocator, Stream stream, Kernels kernels, boolean owned) {
        this(backend, allocator, stream, kernels, owned, null);
    }

    private Device(DeviceBackend backend, CachingAllocator allocator, Stream stream, Kernels kernels, boolean owned,
                   AutoCloseable ownKernels) {
        this.ownKernels = ownKernels;
        this.backend = backend;
        this.allocator = allocator;
        this.stream = stream;
        this.kernels = kernels;
        this.owned = owned;
    }

    /**
     * Opens a device and its caching allocator (configured from {@code VRAM4J_ALLOC_CONF} /
     * {@code PYTORCH_CUDA_ALLOC_CONF}); {@link #close()} closes both.
     *
     * @param spec e.g. {@code "host:1GiB"}, {@code "sim:A100-80GB"} (see {@link Devices#open})
     * @return the device
     * @throws IllegalArgumentException for a malformed spec
     */
    public static Device open(String spec) {
        DeviceBackend b = Devices.open(spec);
        try {
            return withOwnKernels(b, CachingAllocator.create(b), b.defaultStream(), true);
        } catch (RuntimeException e) {
            b.close();
            throw e;
        }
    }

    /**
     * Opens a device with explicit allocator settings; {@link #close()} closes both.
     *
     * @param spec the device spec
     * @param config the allocator settings
     * @return the device
     */
    public static Device open(String spec, AllocatorConfig config) {
        DeviceBackend b = Devices.open(spec);
        try {
            return withOwnKernels(b, CachingAllocator.create(b, config), b.defaultStream(), true);
        } catch (RuntimeException e) {
            b.close();
            throw e;
        }
    }

    /**
     * Wraps an existing allocator (not owned: {@link #close()} leaves it open), allocating on its device's
     * default stream.
     *
     * @param allocator the allocator
     * @return the device
     */
    public static Device of(CachingAllocator allocator) {
        return withOwnKernels(allocator.device(), allocator, allocator.device().defaultStream(), false);
    }

    /**
     * The kernels a backend computes with: {@link Kernels#best()} for host memory (and {@code sim} standing for
     * {@code host}); the CUDA kernels, loaded into the device and checked, for {@code cuda}, and the same kernels
     * over nothing for a {@code sim} standing for a CUDA GPU (they allocate as on the GPU and compute nothing);
     * none for any other device memory.
     */
    private static Device withOwnKernels(DeviceBackend b, CachingAllocator allocator, Stream stream, boolean owned) {
        if (!b.hasDeviceMemory()) {
            return new Device(b, allocator, stream, Kernels.best(), owned);
        }
        if (!(b instanceof CudaDevice) && !(b instanceof SimDevice s && s.cudaModel().isPresent())) {
            return new Device(b, allocator, stream, null, owned);
        }
        CudaKernels cuda;
        try {
            cuda = CudaKernels.create(allocator, stream);
        } catch (RuntimeException | Error e) {
            if (owned) {
                allocator.close();
            }
            throw e;
        }
        return new Device(b, allocator, stream, Kernels.checked(cuda), owned, cuda);
    }

    /**
     * @param newStream the stream later allocations go to (of the same device)
     * @return a device sharing this one's allocator (not owning it) that allocates on {@code newStream}
     */
    public Device withStream(Stream newStream) {
        if (newStream.deviceIndex() != backend.index()) {
            throw new IllegalArgumentException(newStream + " does not belong to " + description());
        }
        return new Device(backend, allocator, newStream, kernels, false);
    }

    /**
     * @param newKernels the kernels ops should use
     * @return a device sharing this one's allocator (not owning it) that computes with {@code newKernels}
     */
    public Device withKernels(Kernels newKernels) {
        return new Device(backend, allocator, stream, Objects.requireNonNull(newKernels), false);
    }

    // ------------------------------------------------------------------------------------------ current device

    /** A {@link #use()} scope; closing it restores the thread's previous current device. */
    public static final class Scope implements AutoCloseable {
        private final Device previous;
        private boolean closed;

        private Scope(Device previous) {
            this.previous = previous;
        }

        /** Restores the previous current device of this thread; closing again does nothing. */
        @Override
        public void close() {
            if (!closed) {
                closed = true;
                CURRENT.set(previous);
            }
        }
    }

    /**
     * Makes this device the calling thread's current device until the scope is closed (as
     * {@code with torch.device(...)}). Scopes nest and must be closed innermost first, on the same thread.
     *
     * @return the scope (use it in try-with-resources)
     */
    public Scope use() {
        Device previous = CURRENT.get();
        CURRENT.set(this);
        return new Scope(previous);
    }

    /**
     * Sets the process-wide default device, current on every thread outside {@link #use()} scopes (as
     * {@code torch.set_default_device}). Closing a device that {@link #open opened} its allocator clears it as
     * the default.
     *
     * @param device the default, or null for none
     */
    public static void setDefault(Device device) {
        defaultDevice = device;
    }

    /** @return the process-wide default device, or null when none was set */
    public static Device getDefault() {
        return defaultDevice;
    }

    /**
     * @return the calling thread's innermost {@link #use()} device, else the {@link #setDefault default}
     * @throws IllegalStateException when there is neither
     */
    public static Device current() {
        Device d = CURRENT.get();
        if (d == null) {
            d = defaultDevice;
        }
        if (d == null) {
            throw new IllegalStateException("no current device: call Device.setDefault(device) or open a "
                    + "try (var s = device.use()) scope, or pass the allocator explicitly");
        }
        return d;
    }

    /** @return the device backend */
    public DeviceBackend backend() {
        return backend;
    }

    /** @return the caching allocator every tensor byte comes from */
    public CachingAllocator allocator() {
        return allocator;
    }

    /** @return the stream tensors are allocated on */
    public Stream stream() {
        return stream;
    }

    /** @return whether {@link #kernels()} has kernels to give (false on a device-memory backend given none) */
    boolean hasKernels() {
        return kernels != null;
    }

    /**
     * @return the compute kernels; on device memory ({@code cuda}) they take device addresses, never host memory
     * @throws UnsupportedOperationException on a device-memory backend that has no kernels (one line)
     */
    public Kernels kernels() {
        if (kernels == null) {
            throw new UnsupportedOperationException(Storage.NO_KERNEL + description()
                    + ": this device has no kernels (give it some with withKernels)");
        }
        return kernels;
    }

    /**
     * @return false on {@code sim} standing for {@code host}: tensors have no data and ops compute nothing; true on
     *     {@code host} and on devices with their own memory ({@code cuda}, and {@code sim} standing for it, whose
     *     ops take the device paths and compute nothing)
     */
    public boolean hasStorage() {
        return backend.hasStorage() || backend.hasDeviceMemory();
    }

    /**
     * @return true on {@code sim} (whatever it stands for): nothing tensors hold is kept, so a job there is a dry
     *     run; false on {@code host} and {@code cuda}
     */
    public boolean isSimulated() {
        return backend.isSimulated();
    }

    /**
     * @return true when the host can view tensor memory directly ({@code host}); false on {@code sim} (no data)
     *     and {@code cuda} (device memory: {@link Tensor#data()} is refused there, values are read and written
     *     through the device's copy calls, which synchronize the stream first)
     */
    public boolean hostAccessible() {
        return backend.hasStorage();
    }

    /** @return {@code "host"}, {@code "sim"} or {@code "cuda"} */
    public String type() {
        return backend.type();
    }

    /** @return e.g. {@code host:1GiB} */
    public String description() {
        return backend.description();
    }

    /** @return bytes in allocated blocks (as {@code torch.cuda.memory_allocated}) */
    public long memoryAllocated() {
        return allocator.memoryAllocated();
    }

    /** @return bytes reserved from the device (as {@code torch.cuda.memory_reserved}) */
    public long memoryReserved() {
        return allocator.memoryReserved();
    }

    /** @return the allocator's {@code memory_stats} */
    public MemoryStats memoryStats() {
        return allocator.memoryStats();
    }

    // ------------------------------------------------------------------------------------------------ factories

    /**
     * @param dtype the element type
     * @param shape the extents
     * @return a tensor whose values are unspecified (whatever the reused block held)
     */
    public Tensor empty(DType dtype, int... shape) {
        return Tensor.allocate(this, dtype, Shapes.check(shape));
    }

    /**
     * A tensor of this device whose block is allocated on another stream of it, as {@code torch.empty} under
     * {@code with torch.cuda.stream(s)}: the block belongs to {@code allocationStream}'s pool, while ops on the
     * tensor run on (and allocate their outputs on) {@link #stream()}. The way to receive a copy queued on a side
     * stream; call {@link Tensor#recordStream} with the stream that uses it before it is freed.
     *
     * @param allocationStream a stream of this device
     * @param dtype the element type
     * @param shape the extents
     * @return a tensor whose values are unspecified
     * @throws IllegalArgumentException if the stream belongs to another device
     */
    public Tensor empty(Stream allocationStream, DType dtype, int... shape) {
        if (allocationStream.deviceIndex() != backend.index()) {
            throw new IllegalArgumentException(allocationStream + " does not belong to " + description());
        }
        return Tensor.allocate(this, allocationStream, dtype, Shapes.check(shape));
    }

    /** @return a float32 tensor of zeros */
    public Tensor zeros(int... shape) {
        return full(DType.FLOAT32, 0f, shape);
    }

    /** @return a tensor of zeros */
    public Tensor zeros(DType dtype, int... shape) {
        return full(dtype, 0f, shape);
    }

    /** @return a float32 tensor of ones */
    public Tensor ones(int... shape) {
        return full(DType.FLOAT32, 1f, shape);
    }

    /** @return a tensor of ones */
    public Tensor ones(DType dtype, int... shape) {
        return full(dtype, 1f, shape);
    }

    /**
     * @param dtype the element type (integer types get the value truncated)
     * @param value the fill value
     * @param shape the extents
     * @return a new tensor filled with {@code value}
     */
    public Tensor full(DType dtype, float value, int... shape) {
        Tensor t = empty(dtype, shape);
        t.fill(value);
        return t;
    }

    /** @return a float32 scalar (rank 0) */
    public Tensor scalar(float value) {
        return full(DType.FLOAT32, value);
    }

    /**
     * @param data row-major values, exactly numel(shape) of them
     * @param shape the extents; none for a vector of {@code data.length}
     * @return a float32 tensor holding a copy of {@code data} (ignored on {@code sim})
     */
    public Tensor tensor(float[] data, int... shape) {
        int[] s = shape.length == 0 ? new int[] {data.length} : shape;
        Tensor t = empty(DType.FLOAT32, s);
        checkCount(data.length, t);
        if (hasStorage()) {
            Elements.write(t, data);
        }
        return t;
    }

    /**
     * @param dtype the element type to store the values in (float types or, truncated, integer types)
     * @param data row-major values
     * @param shape the extents; none for a vector
     * @return a new tensor
     */
    public Tensor tensor(DType dtype, float[] data, int... shape) {
        int[] s = shape.length == 0 ? new int[] {data.length} : shape;
        Tensor t = empty(dtype, s);
        checkCount(data.length, t);
        if (hasStorage()) {
            Elements.write(t, data);
        }
        return t;
    }

    /** @return an int32 tensor holding a copy of {@code data} */
    public Tensor tensor(int[] data, int... shape) {
        int[] s = shape.length == 0 ? new int[] {data.length} : shape;
        Tensor t = empty(DType.INT32, s);
        checkCount(data.length, t);
        if (hasStorage()) {
            Elements.write(t, data);
        }
        return t;
    }

    /** @return an int64 tensor holding a copy of {@code data} */
    public Tensor tensor(long[] data, int... shape) {
        int[] s = shape.length == 0 ? new int[] {data.length} : shape;
        Tensor t = empty(DType.INT64, s);
        checkCount(data.length, t);
        if (hasStorage()) {
            Elements.write(t, data);
        }
        return t;
    }

    /**
     * {@code torch.arange(n, dtype=torch.long)}: on device memory the device's kernel writes it, nothing is copied.
     *
     * @param n at least 0
     * @return an int64 vector {@code [0, 1, ..., n-1]}
     */
    public Tensor arangeLong(int n) {
        Tensor t = empty(DType.INT64, n);
        if (hasStorage()) {
            Kernels k = t.storage().deviceMemory() ? kernels() : Kernels.scalar();
            k.iota(n, t.storage().kernelSegment(), t.offsetUnchecked());
        }
        return t;
    }

    /** @return a float32 vector {@code [0, 1, ..., n-1]} */
    public Tensor arange(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = i;
        }
        return tensor(v, n);
    }

    /**
     * @param gen the random source (not advanced on {@code sim}, where nothing is drawn)
     * @return a float32 tensor of N(0, 1) samples
     */
    public Tensor randn(Generator gen, int... shape) {
        Tensor t = empty(DType.FLOAT32, shape);
        t.fillNormal(0, 1, gen);
        return t;
    }

    /** @return a float32 tensor of U[0, 1) samples */
    public Tensor rand(Generator gen, int... shape) {
        Tensor t = empty(DType.FLOAT32, shape);
        t.fillUniform(0, 1, gen);
        return t;
    }

    private static void checkCount(int n, Tensor t) {
        if (n != t.numel()) {
            long numel = t.numel();
            t.close();
            throw new IllegalArgumentException(n + " values given for shape " + Shapes.str(t.shapeUnchecked())
                    + " of " + numel + " elements");
        }
    }

    /**
     * Closes the allocator and backend when this device opened them ({@link #open}); otherwise does nothing.
     *
     * @throws IllegalStateException when tensors were still open (their blocks are released anyway, and listed)
     */
    @Override
    public void close() {
        if (defaultDevice == this) {
            defaultDevice = null;
        }
        if (ownKernels != null) {
            try {
                ownKernels.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing the kernels of " + description() + ": " + e.getMessage(), e);
            }
        }
        if (owned) {
            try {
                allocator.close();
            } finally {
                backend.close();
            }
        }
    }

    @Override
    public String toString() {
        return "Device(" + description() + ", kernels=" + (kernels == null ? "none" : kernels.name()) + ")";
    }
}
