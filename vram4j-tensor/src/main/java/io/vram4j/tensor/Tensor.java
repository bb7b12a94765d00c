package io.vram4j.tensor;

import io.vram4j.device.Stream;

import io.vram4j.tensor.internal.AutocastHook;

import io.vram4j.autograd.Autograd;
import io.vram4j.autograd.Node;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * An n-dimensional array on a {@link Device}, over a reference-counted {@link Storage} from the device's
 * caching allocator, with reverse-mode automatic differentiation.
 *
 * <h2>Lifetime</h2>
 * A tensor is a handle: {@link #close()} releases its reference to the storage, and the storage's block goes
 * back to the caching allocator when its last reference (tensor, view or saved autograd value) is released.
 * The garbage collector never frees device memory; an unclosed tensor that becomes unreachable is reported by
 * the {@link LeakDetector}. A tensor created while a {@link MemoryScope} is open on this thread is closed by
 * it. Every op returns a new handle that the caller owns (also views, and {@link #contiguous()} or
 * {@link #to} when nothing needs copying). Using a closed tensor throws {@link IllegalStateException}; closing
 * twice is harmless.
 *
 * <h2>Shapes, views, dtypes</h2>
 * Shapes are {@code int[]}; strides and offsets count elements. {@link #view}, {@link #reshape} (when
 * possible), {@link #transpose}, {@link #narrow}, {@link #expand}, {@link #unsqueeze} and {@link #squeeze}
 * share storage. Element-wise ops broadcast with NumPy rules. float16 and bfloat16 tensors are stored in 16
 * bits and computed in float32; binary ops on two different float types produce float32. Integer tensors are
 * indices and targets: arithmetic on them is rejected.
 *
 * <h2>Autograd</h2>
 * Ops on tensors that {@link #requiresGrad()} record a graph node (unless {@link io.vram4j.autograd.NoGrad}
 * is active); {@link #backward()} computes gradients of a scalar into the {@link #grad()} of every leaf that
 * requires grad, accumulating across calls, and frees the graph's saved tensors as it goes.
 *
 * <h2>Devices without storage</h2>
 * On {@code sim} every op allocates exactly as on {@code host} and computes nothing; reading values throws
 * {@link UnsupportedOperationException}.
 *
 * <p>Not thread-safe: use a tensor from one thread at a time.
 */
public class Tensor implements AutoCloseable {
    final Device device;
    Storage storage;
    final DType dtype;
    final int[] shape;
    final long[] strides;
    final long offset;
    boolean requiresGrad;
    Tensor grad;
    Node gradFn;
    boolean closed;
    MemoryScope scope;
    /** True for a handle an autograd node holds as a saved tensor (counted in its storage's {@code savedRefs}). */
    boolean savedForBackward;

    /** A new handle; takes over one (already retained) reference to {@code storage}, joins the current scope. */
    Tensor(Storage storage, DType dtype, int[] shape, long[] strides, long offset) {
        this.device = storage.device();
        this.storage = storage;
        this.dtype = dtype;
        this.shape = shape;
        this.strides = strides;
        this.offset = offset;
        MemoryScope.register(this);
    }

    /**
     * Moves a leaf tensor's data into a new handle (for {@code Parameter}): {@code source} is closed without
     * releasing its storage, which this handle now owns. The new handle belongs to no scope.
     *
     * @param source an open leaf tensor (no {@link #gradFn()})
     * @throws IllegalArgumentException when {@code source} is not a leaf
     */
    protected Tensor(Tensor source) {
        source.ensureOpen();
        if (source.gradFn != null) {
            throw new IllegalArgumentException("only a leaf tensor can become a parameter; call detach() first");
        }
        this.device = source.device;
        this.storage = source.storage;
        this.dtype = source.dtype;
        this.shape = source.shape;
        this.strides = source.strides;
        this.offset = source.offset;
        this.requiresGrad = source.requiresGrad;
        this.grad = source.grad;
        this.storage.info.role = StorageInfo.ROLE_PARAMETER;
        MemoryScope.unregister(source);
        source.grad = null;
        source.storage = null;
        source.closed = true;
    }

    static Tensor allocate(Device device, DType dtype, int[] shape) {
        // not delegating to the overload below: one frame less in every allocation's recorded stack
        long bytes = Math.multiplyExact(Shapes.numel(shape), dtype.byteSize());
        Storage s = Storage.allocate(device, device.stream(), bytes, shape, dtype);
        return new Tensor(s, dtype, shape, Shapes.contiguousStrides(shape), 0);
    }

    /** As {@link #allocate(Device, DType, int[])}, on another stream of the device (see {@link Device#empty(Stream, DType, int...)}). */
    static Tensor allocate(Device device, Stream stream, DType dtype, int[] shape) {
        long bytes = Math.multiplyExact(Shapes.numel(shape), dtype.byteSize());
        Storage s = Storage.allocate(device, stream, bytes, shape, dtype);
        return new Tensor(s, dtype, shape, Shapes.contiguousStrides(shape), 0);
    }

    /**
     * Marks the tensor's memory as in use by {@code stream} (PyTorch's {@code Tensor.record_stream}): when the
     * storage is freed, the caching allocator hands its block out again only after {@code stream} has passed
     * that point (an event recorded on it at the free has completed). Needed when a tensor allocated on one
     * stream (e.g. the side stream a batch was copied on) is used by kernels on another. Does nothing for an
     * empty storage or the block's own stream.
     *
     * @param stream a stream of this tensor's device
     * @throws IllegalArgumentException if the stream belongs to another device
     * @throws IllegalStateException if the tensor is closed
     */
    public void recordStream(Stream stream) {
        ensureOpen();
        if (stream.deviceIndex() != device.backend().index()) {
            throw new IllegalArgumentException("recordStream: " + stream + " does not belong to " + device.description());
        }
        if (storage.address() != 0) {
            device.allocator().recordStream(storage.address(), stream);
        }
    }

    /** A new handle over the same storage with other geometry (a view); no autograd. */
    Tensor alias(int[] newShape, long[] newStrides, long newOffset) {
        ensureOpen();
        storage.retain();
        return new Tensor(storage, dtype, newShape, newStrides, newOffset);
    }

    /** A handle over the same data that belongs to no scope and has no graph (saved tensors, optimizer internals). */
    Tensor share() {
        Tensor t = alias(shape, strides, offset);
        MemoryScope.unregister(t);
        return t;
    }

    final void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("tensor " + Shapes.str(shape) + " " + dtype + " on "
                    + device.description() + " is closed (used after close())");
        }
    }

    // ------------------------------------------------------------------------------------------------ metadata

    /** @return a copy of the extents */
    public int[] shape() {
        ensureOpen();
        return shape.clone();
    }

    int[] shapeUnchecked() {
        return shape;
    }

    long offsetUnchecked() {
        return offset;
    }

    long[] stridesUnchecked() {
        return strides;
    }

    /** @return the extent of dimension {@code dim} (negative counts from the end) */
    public int size(int dim) {
        ensureOpen();
        return shape[Shapes.dim(dim, shape.length)];
    }

    /** @return the number of dimensions (0 for a scalar) */
    public int dim() {
        return shape.length;
    }

    /** @return the number of elements */
    public long numel() {
        return Shapes.numel(shape);
    }

    /** @return the bytes the elements take: numel × element size */
    public long nbytes() {
        return numel() * dtype.byteSize();
    }

    /** @return a copy of the strides, in elements */
    public long[] strides() {
        ensureOpen();
        return strides.clone();
    }

    /** @return the offset of the first element in the storage, in elements */
    public long storageOffset() {
        return offset;
    }

    /** @return the element type */
    public DType dtype() {
        return dtype;
    }

    /** @return the device */
    public Device device() {
        return device;
    }

    /** @return the shared storage */
    public Storage storage() {
        ensureOpen();
        return storage;
    }

    /** @return true when the elements are laid out row-major without gaps */
    public boolean isContiguous() {
        return Shapes.isContiguous(shape, strides);
    }

    /** @return true once {@link #close()} was called */
    public boolean isClosed() {
        return closed;
    }

    // ------------------------------------------------------------------------------------------------ autograd

    /** @return true when gradients flow to or through this tensor */
    public boolean requiresGrad() {
        return requiresGrad;
    }

    /**
     * Marks a leaf tensor as needing a gradient.
     *
     * @param value the flag
     * @return this tensor
     * @throws IllegalStateException for a non-leaf tensor, or a non-floating dtype when {@code value} is true
     */
    public Tensor requiresGrad(boolean value) {
        ensureOpen();
        if (gradFn != null) {
            throw new IllegalStateException("requiresGrad can only be changed on leaf tensors; use detach()");
        }
        if (value && !dtype.isFloatingPoint()) {
            throw new IllegalStateException("only floating-point tensors can require gradients, not " + dtype);
        }
        requiresGrad = value;
        return this;
    }

    /** @return the accumulated gradient of a leaf, owned by this tensor (closed with it), or null */
    public Tensor grad() {
        ensureOpen();
        return grad;
    }

    /**
     * Replaces the gradient (as assigning {@code .grad} in PyTorch); the previous one is closed. The new one
     * is owned by this tensor from now on and leaves its scope.
     *
     * @param newGrad a tensor of this shape, or null
     */
    public void setGrad(Tensor newGrad) {
        ensureOpen();
        if (newGrad != null && !Arrays.equals(newGrad.shape, shape)) {
            throw new IllegalArgumentException("gradient shape " + Shapes.str(newGrad.shape) + " does not match "
                    + Shapes.str(shape));
        }
        if (grad != null && grad != newGrad) {
            grad.close();
        }
        grad = newGrad == null ? null : MemoryScope.detachFromAny(newGrad);
        if (grad != null && grad.storage != null && grad.storage.info.role == StorageInfo.ROLE_NONE) {
            grad.storage.info.role = StorageInfo.ROLE_GRADIENT;
        }
    }

    /** @return the node that created this tensor, or null for a leaf */
    public Node gradFn() {
        return gradFn;
    }

    /** @return true when no op created this tensor (a leaf of the graph) */
    public boolean isLeaf() {
        return gradFn == null;
    }

    /**
     * Computes the gradient of this scalar with respect to every leaf that requires grad and adds it into
     * their {@link #grad()}. Saved tensors of the graph are freed as each node is used.
     *
     * @throws IllegalStateException when this is not a scalar, does not require grad, or the graph was
     *     already used by a previous backward
     */
    public void backward() {
        backward(null, false);
    }

    /**
     * @param gradient the gradient of some scalar with respect to this tensor (same shape), or null for a scalar
     */
    public void backward(Tensor gradient) {
        backward(gradient, false);
    }

    /**
     * @param gradient the gradient with respect to this tensor, or null for a scalar (1)
     * @param retainGraph keep saved tensors so the graph can be used again
     */
    public void backward(Tensor gradient, boolean retainGraph) {
        ensureOpen();
        Autograd.backward(this, gradient, retainGraph);
    }

    /** @return a new handle over the same data that is not part of the graph and does not require grad */
    public Tensor detach() {
        return alias(shape, strides, offset);
    }

    // ------------------------------------------------------------------------------------------------ lifetime

    /**
     * Releases this handle's reference to the storage, its gradient and its graph node. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        MemoryScope.unregister(this);
        Storage s = storage;
        storage = null;
        if (savedForBackward && s != null) {
            savedForBackward = false;
            s.info.savedRefs--;
        }
        Tensor g = grad;
        grad = null;
        Node n = gradFn;
        gradFn = null;
        try {
            if (s != null) {
                s.release();
            }
        } finally {
            if (g != null) {
                g.close();
            }
            if (n != null) {
                n.release();
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ data

    /**
     * A view of the bytes of a contiguous tensor ({@code host} only), {@link #nbytes()} long, native byte order.
     * Valid until the tensor is closed; writing it bypasses autograd. On {@code cuda} use
     * {@link #copyBytesTo} and {@link #copyBytesFrom}, which work on every device with data.
     *
     * @throws UnsupportedOperationException on a device without storage, and on device memory ({@code cuda})
     * @throws IllegalStateException when the tensor is not contiguous or closed
     */
    public MemorySegment data() {
        ensureOpen();
        if (!isContiguous()) {
            throw new IllegalStateException("data() needs a contiguous tensor; call contiguous() first");
        }
        if (storage.deviceMemory()) {
            throw new UnsupportedOperationException("data() views host memory, and this tensor is in the memory of "
                    + device.description() + ": use copyBytesTo, copyBytesFrom, toFloatArray or to(device)");
        }
        return storage.segment().asSlice(offset * dtype.byteSize(), nbytes());
    }

    /**
     * Copies the bytes of a contiguous tensor into host memory ({@link #nbytes()} of them, native byte order);
     * on {@code cuda} the device's stream is synchronized first and the bytes come by {@code cuMemcpyDtoH}.
     *
     * @param dst host memory of at least {@link #nbytes()} bytes; its first {@link #nbytes()} bytes are written
     * @throws UnsupportedOperationException on a device without data ({@code sim})
     * @throws IllegalStateException when the tensor is not contiguous or closed
     * @throws IndexOutOfBoundsException when {@code dst} is too small (nothing is copied)
     */
    public void copyBytesTo(MemorySegment dst) {
        checkBytes(dst);
        try (HostAccess h = HostAccess.read(this)) {
            MemorySegment.copy(h.seg(), h.off() * dtype.byteSize(), dst, 0, nbytes());
        }
    }

    /**
     * Replaces the bytes of a contiguous tensor by {@link #nbytes()} bytes of host memory (native byte order);
     * bypasses autograd. On {@code cuda} the bytes go by {@code cuMemcpyHtoD}.
     *
     * @param src host memory of at least {@link #nbytes()} bytes
     * @throws UnsupportedOperationException on a device without data ({@code sim})
     * @throws IllegalStateException when the tensor is not contiguous or closed
     * @throws IndexOutOfBoundsException when {@code src} is too small (nothing is copied)
     */
    public void copyBytesFrom(MemorySegment src) {
        checkBytes(src);
        try (HostAccess h = HostAccess.write(this)) {
            MemorySegment.copy(src, 0, h.seg(), h.off() * dtype.byteSize(), nbytes());
            h.commit();
        }
    }

    private void checkBytes(MemorySegment host) {
        ensureOpen();
        if (!isContiguous()) {
            throw new IllegalStateException("byte copies need a contiguous tensor; call contiguous() first");
        }
        if (!device.hasStorage()) {
            throw new UnsupportedOperationException("device " + device.description()
                    + " has no storage (sim): tensors there have shapes and memory but no data");
        }
        if (host.byteSize() < nbytes()) {
            throw new IndexOutOfBoundsException("host memory of " + host.byteSize() + " bytes for a tensor of "
                    + nbytes() + " bytes");
        }
    }

    /** @return the single value of a one-element tensor, as float */
    public float item() {
        ensureOpen();
        if (numel() != 1) {
            throw new IllegalStateException("item() needs a tensor with one element, not shape " + Shapes.str(shape));
        }
        return Elements.readFloat(this, offset);
    }

    /** @return the value at an index (one per dimension), as float */
    public float getFloat(int... index) {
        return Elements.readFloat(this, elementOffset(index));
    }

    /** @return the value at an index, as long (integer types read exactly) */
    public long getLong(int... index) {
        return Elements.readLong(this, elementOffset(index));
    }

    private long elementOffset(int[] index) {
        if (index.length != shape.length) {
            throw new IllegalArgumentException("index " + Arrays.toString(index) + " has " + index.length
                    + " components for a tensor of rank " + shape.length);
        }
        long o = offset;
        for (int i = 0; i < index.length; i++) {
            if (index[i] < 0 || index[i] >= shape[i]) {
                throw new IndexOutOfBoundsException("index " + Arrays.toString(index) + " is out of bounds for shape "
                        + Shapes.str(shape));
            }
            o += index[i] * strides[i];
        }
        return o;
    }

    /** @return the elements in row-major order as floats (a copy) */
    public float[] toFloatArray() {
        ensureOpen();
        return Host.toFloatArray(this);
    }

    /** @return the elements in row-major order as ints (a copy) */
    public int[] toIntArray() {
        long[] l = toLongArray();
        int[] r = new int[l.length];
        for (int i = 0; i < l.length; i++) {
            r[i] = (int) l[i];
        }
        return r;
    }

    /** @return the elements in row-major order as longs (a copy; floats are truncated) */
    public long[] toLongArray() {
        ensureOpen();
        return Host.toLongArray(this);
    }

    // ------------------------------------------------------------------------------------------------ in place

    /** Sets every element to {@code value}; not recorded by autograd. @return this */
    public Tensor fill(float value) {
        checkInPlace();
        Host.fill(this, value);
        return this;
    }

    /** Sets every element to zero; not recorded by autograd. @return this */
    public Tensor zero() {
        return fill(0f);
    }

    /** Fills with N(mean, std²) samples from {@code gen}; not recorded. @return this */
    public Tensor fillNormal(double mean, double std, Generator gen) {
        checkInPlace();
        Host.fillRandom(this, gen, true, mean, std);
        return this;
    }

    /** Fills with U[low, high) samples from {@code gen}; not recorded. @return this */
    public Tensor fillUniform(double low, double high, Generator gen) {
        checkInPlace();
        Host.fillRandom(this, gen, false, low, high - low);
        return this;
    }

    /** Copies (broadcasting and converting) {@code src} into this tensor; not recorded. @return this */
    public Tensor copyFrom(Tensor src) {
        checkInPlace();
        src.ensureOpen();
        Host.copyInto(src, this);
        return this;
    }

    /** {@code this += other} (broadcast); not recorded. @return this */
    public Tensor addInPlace(Tensor other) {
        return addInPlace(other, 1f);
    }

    /** {@code this += alpha * other} (broadcast); not recorded. @return this */
    public Tensor addInPlace(Tensor other, float alpha) {
        checkInPlace();
        other.ensureOpen();
        Host.axpyInto(alpha, other, this);
        return this;
    }

    /** {@code this *= s}; not recorded. @return this */
    public Tensor mulInPlace(float s) {
        checkInPlace();
        Host.scaleInPlace(this, s);
        return this;
    }

    private void checkInPlace() {
        ensureOpen();
        if (requiresGrad && Autograd.isGradEnabled()) {
            throw new IllegalStateException("in-place ops on a tensor that requires grad are not recorded by autograd;"
                    + " run them inside a NoGrad block");
        }
    }

    // ------------------------------------------------------------------------------------------------ element-wise

    /** @return {@code this + other}, broadcast */
    public Tensor add(Tensor other) {
        return Ops.binary(Ops.Bin.ADD, this, other);
    }

    /** @return {@code this - other}, broadcast */
    public Tensor sub(Tensor other) {
        return Ops.binary(Ops.Bin.SUB, this, other);
    }

    /** @return {@code this * other}, broadcast */
    public Tensor mul(Tensor other) {
        return Ops.binary(Ops.Bin.MUL, this, other);
    }

    /** @return {@code this / other}, broadcast */
    public Tensor div(Tensor other) {
        return Ops.binary(Ops.Bin.DIV, this, other);
    }

    /** @return {@code this + s} */
    public Tensor add(float s) {
        return Ops.addScalar(this, s);
    }

    /** @return {@code this - s} */
    public Tensor sub(float s) {
        return Ops.addScalar(this, -s);
    }

    /** @return {@code this * s} */
    public Tensor mul(float s) {
        return Ops.mulScalar(this, s);
    }

    /** @return {@code this / s} */
    public Tensor div(float s) {
        return Ops.mulScalar(this, 1f / s);
    }

    /** @return {@code -this} */
    public Tensor neg() {
        return Ops.unary(Ops.Un.NEG, this);
    }

    /** @return {@code e^this} */
    public Tensor exp() {
        return AutocastHook.run("exp", new Tensor[] {this}, a -> Ops.unary(Ops.Un.EXP, a[0]));
    }

    /** @return the natural logarithm */
    public Tensor log() {
        return AutocastHook.run("log", new Tensor[] {this}, a -> Ops.unary(Ops.Un.LOG, a[0]));
    }

    /** @return the square root ({@code torch.sqrt}); NaN for negative elements */
    public Tensor sqrt() {
        return Ops.unary(Ops.Un.SQRT, this);
    }

    /** @return the hyperbolic tangent */
    public Tensor tanh() {
        return Ops.unary(Ops.Un.TANH, this);
    }

    /** @return {@code max(this, 0)} */
    public Tensor relu() {
        return Ops.unary(Ops.Un.RELU, this);
    }

    /** @return GELU with the tanh approximation ({@code approximate='tanh'}) */
    public Tensor gelu() {
        return Ops.unary(Ops.Un.GELU, this);
    }

    // ------------------------------------------------------------------------------------------------ reductions

    /** @return the sum of all elements, a scalar (rank 0) */
    public Tensor sum() {
        return AutocastHook.run("sum", new Tensor[] {this}, a -> Ops.sum(a[0], allDims(), false, 1f));
    }

    /** @return the sum over {@code dim}, which is removed unless {@code keepDim} */
    public Tensor sum(int dim, boolean keepDim) {
        int[] dims = {Shapes.dim(dim, shape.length)};
        return AutocastHook.run("sum", new Tensor[] {this}, a -> Ops.sum(a[0], dims, keepDim, 1f));
    }

    /** @return the mean of all elements, a scalar */
    public Tensor mean() {
        long n = numel();
        return AutocastHook.run("mean", new Tensor[] {this},
                a -> Ops.sum(a[0], allDims(), false, n == 0 ? Float.NaN : 1f / n));
    }

    /** @return the mean over {@code dim} */
    public Tensor mean(int dim, boolean keepDim) {
        int d = Shapes.dim(dim, shape.length);
        return AutocastHook.run("mean", new Tensor[] {this},
                a -> Ops.sum(a[0], new int[] {d}, keepDim, shape[d] == 0 ? Float.NaN : 1f / shape[d]));
    }

    /**
     * Sums broadcast dimensions away so the result has {@code target} shape (as {@code sum_to_size}).
     *
     * @param target a shape this tensor's shape broadcasts from
     * @return a new tensor of shape {@code target} (a view when the shapes are equal)
     */
    public Tensor sumToSize(int... target) {
        return Ops.sumToSize(this, target);
    }

    /** @return the maximum over {@code dim} (gradient flows to the first maximal element) */
    public Tensor max(int dim, boolean keepDim) {
        return Ops.max(this, Shapes.dim(dim, shape.length), keepDim, false);
    }

    /** @return the int64 index of the maximum over {@code dim}; not differentiable */
    public Tensor argmax(int dim, boolean keepDim) {
        return Ops.max(this, Shapes.dim(dim, shape.length), keepDim, true);
    }

    private int[] allDims() {
        int[] d = new int[shape.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = i;
        }
        return d;
    }

    // ------------------------------------------------------------------------------------------------ linear algebra

    /**
     * Matrix product of the last two dimensions, batched over the leading ones (broadcast): {@code [..., m, k]
     * @ [..., k, n] -> [..., m, n]}. Both operands need at least 2 dimensions. Transposed views are multiplied
     * without copying.
     */
    public Tensor matmul(Tensor other) {
        return AutocastHook.run("matmul", new Tensor[] {this, other}, a -> Ops.matmul(a[0], a[1]));
    }

    /** @return softmax over the last dimension */
    public Tensor softmax() {
        return AutocastHook.run("softmax", new Tensor[] {this}, a -> Ops.softmax(a[0], false));
    }

    /** @return log-softmax over the last dimension */
    public Tensor logSoftmax() {
        return AutocastHook.run("log_softmax", new Tensor[] {this}, a -> Ops.softmax(a[0], true));
    }

    // ------------------------------------------------------------------------------------------------ shape

    /** @return a view with another shape (one extent may be -1); throws when the strides do not allow a view */
    public Tensor view(int... newShape) {
        return Ops.view(this, newShape, false);
    }

    /** @return a view with another shape when possible, else a contiguous copy */
    public Tensor reshape(int... newShape) {
        return Ops.view(this, newShape, true);
    }

    /** @return a view with {@code dim0} and {@code dim1} swapped */
    public Tensor transpose(int dim0, int dim1) {
        return Ops.transpose(this, dim0, dim1);
    }

    /** @return the transpose of a 2-D tensor (a view) */
    public Tensor t() {
        if (shape.length != 2) {
            throw new IllegalStateException("t() expects a 2-D tensor, got shape " + Shapes.str(shape));
        }
        return transpose(0, 1);
    }

    /** @return a view of {@code length} entries of {@code dim} starting at {@code start} */
    public Tensor narrow(int dim, int start, int length) {
        return Ops.narrow(this, dim, start, length);
    }

    /** @return a view broadcast to {@code newShape} (stride 0 on expanded dimensions; -1 keeps an extent) */
    public Tensor expand(int... newShape) {
        return Ops.expand(this, newShape);
    }

    /** @return a view with a dimension of extent 1 inserted at {@code dim} */
    public Tensor unsqueeze(int dim) {
        int d = Shapes.dim(dim, shape.length + 1);
        int[] s = new int[shape.length + 1];
        for (int i = 0, j = 0; i < s.length; i++) {
            s[i] = i == d ? 1 : shape[j++];
        }
        return view(s);
    }

    /** @return a view without dimension {@code dim}, which must have extent 1 */
    public Tensor squeeze(int dim) {
        int d = Shapes.dim(dim, shape.length);
        if (shape[d] != 1) {
            throw new IllegalArgumentException("cannot squeeze dimension " + dim + " of extent " + shape[d]);
        }
        int[] s = new int[shape.length - 1];
        for (int i = 0, j = 0; i < shape.length; i++) {
            if (i != d) {
                s[j++] = shape[i];
            }
        }
        return view(s);
    }

    /** @return a contiguous tensor with the same values: a new handle over the same storage when already contiguous */
    public Tensor contiguous() {
        return isContiguous() ? view(shape) : Ops.copy(this);
    }

    /** @return a contiguous copy (new storage) */
    public Tensor copy() {
        return Ops.copy(this);
    }

    /**
     * Moves a tensor across devices, explicitly (as {@code tensor.to(device)}): a new contiguous tensor of the same
     * dtype and values in {@code target}'s memory, copied through the devices' copy calls ({@code cuMemcpyHtoD}
     * / {@code cuMemcpyDtoH}, synchronizing first). The copy is not recorded by autograd.
     *
     * @param target the device to copy to
     * @return a new handle over the same storage when the tensor already is on {@code target} (the same allocator),
     *     else the copy; values are unspecified when either device has no data ({@code sim})
     */
    public Tensor to(Device target) {
        ensureOpen();
        if (target.allocator() == device.allocator()) {
            return view(shape);
        }
        Tensor out = target.empty(dtype, shape);
        try {
            Host.copyInto(this, out);
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        }
        return out;
    }

    /** @return this tensor converted to {@code target} (a new handle over the same storage when already of that type) */
    public Tensor to(DType target) {
        return target == dtype ? view(shape) : Ops.cast(this, target);
    }

    @Override
    public String toString() {
        if (closed) {
            return "Tensor(closed)";
        }
        StringBuilder sb = new StringBuilder("Tensor(shape=").append(Shapes.str(shape)).append(", dtype=").append(dtype)
                .append(", device=").append(device.description());
        if (gradFn != null) {
            sb.append(", gradFn=").append(gradFn);
        } else if (requiresGrad) {
            sb.append(", requiresGrad=true");
        }
        if (device.hasStorage() && numel() <= 16) {
            sb.append(", values=").append(dtype.isFloatingPoint() ? Arrays.toString(toFloatArray())
                    : Arrays.toString(toLongArray()));
        }
        return sb.append(')').toString();
    }
}
