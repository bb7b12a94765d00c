package io.vram4j.tensor;

import io.vram4j.compute.Half;
import io.vram4j.compute.Kernels;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.function.Consumer;

import static io.vram4j.tensor.Elements.F32;

/**
 * Host-side data movement shared by the ops: float32 views of operands (converting float16/bfloat16 or
 * gathering strided data into {@link Scratch}), strided copies with dtype conversion, fills and in-place
 * updates. Everything here touches data, so callers skip it on devices without storage; the in-place entry
 * points check that themselves.
 */
final class Host {
    private Host() {
    }

    /** A float32 operand: segment, element offset and strides (in floats) for the tensor's shape. */
    /**
     * Float32 elements as kernels take them: {@code seg} is host memory, or device memory ({@code device}) that
     * only kernels may be given; {@link #get} and {@link #set} are for host memory only.
     */
    record F32View(MemorySegment seg, long off, long[] strides, boolean device) {
        float get(long i) {
            return seg.getAtIndex(F32, hostOnly(i));
        }

        void set(long i, float v) {
            seg.setAtIndex(F32, hostOnly(i), v);
        }

        private long hostOnly(long i) {
            if (device) {   // a load through a device address would crash the JVM: a bug, caught here
                throw new IllegalStateException("host access to device memory at element " + i);
            }
            return i;
        }
    }

    static F32View read(Tensor t, Scratch sc) {
        if (t.dtype == DType.FLOAT32) {
            return view(t, t.strides);
        }
        return gather(t, sc);
    }

    static F32View readContiguous(Tensor t, Scratch sc) {
        if (t.dtype == DType.FLOAT32 && t.isContiguous()) {
            return view(t, Shapes.contiguousStrides(t.shape));
        }
        return gather(t, sc);
    }

    private static F32View view(Tensor t, long[] strides) {
        return new F32View(t.storage.kernelSegment(), t.offset, strides, t.storage.deviceMemory());
    }

    private static F32View gather(Tensor t, Scratch sc) {
        long[] cs = Shapes.contiguousStrides(t.shape);
        if (t.storage.deviceMemory()) {
            Tensor c = sc.tensor(t.device, t.shape);
            convert(t.device, t.shape, t.storage.kernelSegment(), t.dtype, t.offset, t.strides,
                    c.storage.kernelSegment(), DType.FLOAT32, c.offset, cs);
            return new F32View(c.storage.kernelSegment(), c.offset, cs, true);
        }
        MemorySegment m = sc.floats(t.numel());
        copy(t.device.kernels(), t.shape, t.storage.segment(), t.dtype, t.offset, t.strides, m, DType.FLOAT32, 0, cs);
        return new F32View(m, 0, cs, false);
    }

    /**
     * @return the type code of the 16-bit element-wise kernels ({@link Kernels#FLOAT16}, {@link Kernels#BFLOAT16})
     *     when every tensor is contiguous in device memory and all have one float16 or bfloat16 dtype, which those
     *     kernels then read and write in place (no float32 temporaries, as PyTorch under autocast); else -1
     */
    static int halfKernelType(Tensor... ts) {
        DType d = ts[0].dtype;
        if (halfType(d) < 0) {
            return -1;
        }
        for (Tensor t : ts) {
            if (t.dtype != d || !t.storage.deviceMemory() || !t.isContiguous()) {
                return -1;
            }
        }
        return halfType(d);
    }

    /** @return {@link Kernels#FLOAT16} or {@link Kernels#BFLOAT16} for those dtypes, else -1 */
    static int halfType(DType d) {
        return d == DType.FLOAT16 ? Kernels.FLOAT16 : d == DType.BFLOAT16 ? Kernels.BFLOAT16 : -1;
    }

    private static boolean sixteenBitOnDevice(Tensor t) {
        return t.storage.deviceMemory() && (t.dtype == DType.FLOAT16 || t.dtype == DType.BFLOAT16);
    }

    /**
     * An in-place update of a float16/bfloat16 tensor in device memory, whose kernels are float32 only: the tensor
     * is widened into a contiguous float32 temporary from the device's caching allocator, updated there by
     * {@code update}, and narrowed back into its own elements (PyTorch's kernels widen in registers instead). The
     * widening is exact; the result is rounded to the 16-bit type once, as on the host.
     */
    private static void through32(Tensor t, Consumer<Tensor> update) {
        try (Tensor wide = Tensor.allocate(t.device, DType.FLOAT32, t.shape.clone())) {
            copyTo(t, wide, wide.offset);
            update.accept(wide);
            copyTo(wide, t, t.offset);
        }
    }

    /** Refuses, in one line, a tensor in device memory that is not float32 where only float32 kernels exist. */
    static void float32(Tensor t) {
        if (t.storage.deviceMemory() && t.dtype != DType.FLOAT32) {
            throw refusal(t.device, t.dtype + " in place");
        }
    }

    private static UnsupportedOperationException refusal(Device d, String what) {
        return new UnsupportedOperationException(Storage.NO_KERNEL + d.description() + " for " + what
                + ": device kernels compute float32 and convert between float32 and float16/bfloat16");
    }

    /** A kernel that copies or converts {@code n} elements, offsets in elements of each side. */
    private interface RowKernel {
        void apply(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff);
    }

    /**
     * Copies or converts elements with the kernels only (one launch per contiguous row, one per element where a
     * stride is not 1): the copy for device memory, where the host may not touch the bytes. Float32 to float32,
     * float32 to and from float16/bfloat16, and float16 or bfloat16 to itself ({@link #sameType16}); any other
     * pair is refused in one line before anything is written.
     */
    static void convert(Device dev, int[] shape, MemorySegment s, DType st, long sOff, long[] sStr,
                        MemorySegment d, DType dt, long dOff, long[] dStr) {
        Kernels k = dev.kernels();
        RowKernel f = st == DType.FLOAT32 && dt == DType.FLOAT32 ? k::copy
                : st == DType.FLOAT32 && dt == DType.FLOAT16 ? k::floatToFp16
                : st == DType.FLOAT32 && dt == DType.BFLOAT16 ? k::floatToBf16
                : st == DType.FLOAT16 && dt == DType.FLOAT32 ? k::fp16ToFloat
                : st == DType.BFLOAT16 && dt == DType.FLOAT32 ? k::bf16ToFloat
                : null;
        if (f == null) {
            if (st == dt && st != DType.FLOAT32 && st.isFloatingPoint()
                    && (Shapes.numel(shape) == 0 || sameType16(dev, shape, s, st, sOff, sStr, d, dOff, dStr))) {
                return;
            }
            throw refusal(dev, st + " to " + dt);
        }
        if (Shapes.numel(shape) == 0 || strided(dev, f, shape, s, st, sOff, sStr, d, dt, dOff, dStr)) {
            return;
        }
        StridedLoop.run(shape, new long[][] {dStr, sStr}, new long[] {dOff, sOff}, (o, len, str) -> {
            if (str[0] == 1 && str[1] == 1) {
                f.apply(len, s, o[1], d, o[0]);
                return;
            }
            long si = o[1];
            long di = o[0];
            for (long i = 0; i < len; i++, si += str[1], di += str[0]) {
                f.apply(1, s, si, d, di);
            }
        });
    }

    /**
     * {@link #convert} in one to three launches when the layout folds into 4 dimensions: one conversion over
     * contiguous elements, {@code Kernels.copy4} for float32, and for 16-bit data a conversion through a contiguous
     * temporary (the source's span widened, then gathered; the source gathered, then narrowed; or, for a strided
     * 16-bit destination, narrowed, then scattered by {@code Kernels.copy16}).
     *
     * @return false when the caller must loop (more than 4 dimensions, a negative stride)
     */
    private static boolean strided(Device dev, RowKernel f, int[] shape, MemorySegment s, DType st, long sOff,
                                   long[] sStr, MemorySegment d, DType dt, long dOff, long[] dStr) {
        Layout4 l = Layout4.of(shape, dStr, sStr);
        if (l == null) {
            return false;
        }
        long n = Shapes.numel(shape);
        if (l.contiguous()) {
            f.apply(n, s, sOff, d, dOff);
            return true;
        }
        for (int i = 0; i < 4; i++) {
            if (l.s(0, i) < 0 || l.s(1, i) < 0) {
                return false;
            }
        }
        Kernels k = dev.kernels();
        boolean dstContiguous = Layout4.of(shape, dStr, Shapes.contiguousStrides(shape)).contiguous();
        if (st == DType.FLOAT32 && dt == DType.FLOAT32) {
            copy4(k, l, s, sOff, d, dOff);
        } else if (st == DType.FLOAT32) {
            // narrowing: a strided source gathered into a contiguous float32 temporary first; a strided destination
            // (the fused attention's output in PyTorch's layout) gets a contiguous 16-bit temporary that one copy16
            // scatters
            long[] cs = Shapes.contiguousStrides(shape);
            Layout4 gather = Layout4.of(shape, cs, sStr);
            try (Tensor wide = gather.contiguous() ? null : Tensor.allocate(dev, DType.FLOAT32, shape.clone());
                 Tensor narrow = dstContiguous ? null : Tensor.allocate(dev, dt, shape.clone())) {
                MemorySegment from = wide == null ? s : wide.storage.kernelSegment();
                long fromOff = wide == null ? sOff : wide.offset;
                if (wide != null) {
                    copy4(k, gather, s, sOff, from, fromOff);
                }
                if (narrow == null) {
                    f.apply(n, from, fromOff, d, dOff);
                } else {
                    f.apply(n, from, fromOff, narrow.storage.kernelSegment(), narrow.offset);
                    if (!sameType16(dev, shape, narrow.storage.kernelSegment(), dt, narrow.offset, cs, d, dOff,
                            dStr)) {
                        // the destination folded beside the source, so it folds beside contiguous strides too
                        throw new IllegalStateException("a strided 16-bit destination did not fold: "
                                + Arrays.toString(dStr));
                    }
                }
            }
        } else {
            // widening: the source's span widened, then gathered
            long span = 1;
            for (int i = 0; i < 4; i++) {
                span += (l.d(i) - 1L) * l.s(1, i);
            }
            try (Tensor tmp = Tensor.allocate(dev, DType.FLOAT32, new int[] {Math.toIntExact(span)})) {
                f.apply(span, s, sOff, tmp.storage.kernelSegment(), tmp.offset);
                copy4(k, l, tmp.storage.kernelSegment(), tmp.offset, d, dOff);
            }
        }
        return true;
    }

    /**
     * A float16 or bfloat16 copy to the same type between strided layouts ({@code contiguous()} of a strided 16-bit
     * view, a gradient written into a narrowed slice): one {@code Kernels.copy16} launch, the bits copied, nothing
     * allocated.
     *
     * @return false when the layout does not fold into 4 dimensions or has a negative stride (nothing was written)
     */
    private static boolean sameType16(Device dev, int[] shape, MemorySegment s, DType type, long sOff, long[] sStr,
                                      MemorySegment d, long dOff, long[] dStr) {
        Layout4 l = Layout4.of(shape, dStr, sStr);
        if (l == null) {
            return false;
        }
        for (int i = 0; i < 4; i++) {
            if (l.s(0, i) < 0 || l.s(1, i) < 0) {
                return false;
            }
        }
        dev.kernels().copy16(l.d(0), l.d(1), l.d(2), l.d(3), s, sOff, l.s(1, 0), l.s(1, 1), l.s(1, 2), l.s(1, 3),
                d, dOff, l.s(0, 0), l.s(0, 1), l.s(0, 2), l.s(0, 3));
        return true;
    }

    /** {@code Kernels.copy4} over a folded layout whose operand 0 is the destination and 1 the source. */
    private static void copy4(Kernels k, Layout4 l, MemorySegment s, long sOff, MemorySegment d, long dOff) {
        k.copy4(l.d(0), l.d(1), l.d(2), l.d(3), s, sOff, l.s(1, 0), l.s(1, 1), l.s(1, 2), l.s(1, 3),
                d, dOff, l.s(0, 0), l.s(0, 1), l.s(0, 2), l.s(0, 3));
    }

    /** A kernel over a float32 input, int64 indices ({@code (segment, offset)}) and a float32 output. */
    interface IndexedKernel {
        void apply(F32View x, MemorySegment idx, long idxOff, F32View out);
    }

    /**
     * Runs an indexed kernel (embedding and its backward) on {@code x}'s contiguous float32 view, the indices as
     * contiguous int64 ({@link #int64}) and {@code out}'s view, then commits {@code out}.
     */
    static void indexed(Tensor x, Tensor indices, Tensor out, IndexedKernel kernel) {
        try (Scratch sc = new Scratch(); Tensor copy = int64(indices)) {
            Tensor idx = copy == null ? indices : copy;
            F32View r = readContiguous(x, sc);
            F32View w = write(out, sc);
            kernel.apply(r, idx.storage.kernelSegment(), idx.offset, w);
            commit(out, w);
        }
    }

    /**
     * Indices (or targets) as the indexed kernels read them: contiguous int64 on their device.
     *
     * @return null when {@code indices} already are (use them as stored), else a contiguous int64 copy of them on
     *     the same device, read through the host, that the caller closes
     */
    static Tensor int64(Tensor indices) {
        if (indices.dtype == DType.INT64 && indices.isContiguous()) {
            return null;
        }
        return indices.device.tensor(indices.toLongArray(), indices.shape.clone());
    }

    static F32View write(Tensor out, Scratch sc) {
        long[] cs = Shapes.contiguousStrides(out.shape);
        if (writtenInPlace(out)) {
            return view(out, cs);
        }
        if (out.storage.deviceMemory()) {
            Tensor w = sc.tensor(out.device, out.shape);
            return new F32View(w.storage.kernelSegment(), w.offset, cs, true);
        }
        return new F32View(sc.floats(out.numel()), 0, cs, false);
    }

    /** Stores results written to a {@link #write} view into {@code out} (converting from scratch when needed). */
    static void commit(Tensor out, F32View w) {
        if (writtenInPlace(out)) {
            return;
        }
        if (w.device()) {
            convert(out.device, out.shape, w.seg, DType.FLOAT32, w.off, w.strides,
                    out.storage.kernelSegment(), out.dtype, out.offset, out.strides);
        } else {
            copy(out.device.kernels(), out.shape, w.seg, DType.FLOAT32, w.off, w.strides,
                    out.storage.segment(), out.dtype, out.offset, out.strides);
        }
    }

    /**
     * @return whether kernels write {@code out} itself ({@link #write}): float32 and contiguous; anything else
     *     (another dtype, or a strided float32 tensor such as the fused attention's output in PyTorch's layout) is
     *     written to scratch and stored by {@link #commit}
     */
    private static boolean writtenInPlace(Tensor out) {
        return out.dtype == DType.FLOAT32 && out.isContiguous();
    }

    /**
     * Copies (converting the dtype) every element of {@code src} into {@code dst}'s elements from element
     * {@code dstOffset} with {@code dst}'s strides. On device memory: the device's own copy for contiguous bytes of
     * one dtype, else the copy and conversion kernels ({@link #convert}).
     */
    static void copyTo(Tensor src, Tensor dst, long dstOffset) {
        if (!src.storage.deviceMemory() && !dst.storage.deviceMemory()) {
            copy(dst.device.kernels(), src.shape, src.storage.segment(), src.dtype, src.offset, src.strides,
                    dst.storage.segment(), dst.dtype, dstOffset, dst.strides);
            return;
        }
        int es = dst.dtype.byteSize();
        if (src.dtype == dst.dtype && src.isContiguous() && dstOffset == dst.offset && dst.isContiguous()
                && Arrays.equals(src.shape, dst.shape)) {
            HostAccess.copyWithin(src.storage, src.offset * es, dst.storage, dstOffset * es, src.numel() * es);
            return;
        }
        convert(dst.device, src.shape, src.storage.kernelSegment(), src.dtype, src.offset, src.strides,
                dst.storage.kernelSegment(), dst.dtype, dstOffset, dst.strides);
    }

    /** Copies {@code shape} elements between strided layouts, converting dtypes. */
    static void copy(Kernels k, int[] shape, MemorySegment s, DType st, long sOff, long[] sStr,
                     MemorySegment d, DType dt, long dOff, long[] dStr) {
        boolean exactInts = !st.isFloatingPoint() || !dt.isFloatingPoint();
        StridedLoop.run(shape, new long[][] {dStr, sStr}, new long[] {dOff, sOff}, (o, len, str) -> {
            if (str[0] == 1 && str[1] == 1) {
                if (st == dt) {
                    int es = st.byteSize();
                    MemorySegment.copy(s, o[1] * es, d, o[0] * es, len * es);
                    return;
                }
                if (st == DType.FLOAT32 && dt == DType.FLOAT16) {
                    Half.floatToFp16(len, s, o[1], d, o[0]);
                    return;
                }
                if (st == DType.FLOAT32 && dt == DType.BFLOAT16) {
                    Half.floatToBf16(len, s, o[1], d, o[0]);
                    return;
                }
                if (st == DType.FLOAT16 && dt == DType.FLOAT32) {
                    Half.fp16ToFloat(len, s, o[1], d, o[0]);
                    return;
                }
                if (st == DType.BFLOAT16 && dt == DType.FLOAT32) {
                    Half.bf16ToFloat(len, s, o[1], d, o[0]);
                    return;
                }
            }
            long si = o[1];
            long di = o[0];
            for (long i = 0; i < len; i++, si += str[1], di += str[0]) {
                if (exactInts) {
                    Elements.setLong(d, dt, di, Elements.getLong(s, st, si));
                } else {
                    Elements.setFloat(d, dt, di, Elements.getFloat(s, st, si));
                }
            }
        });
    }

    // ------------------------------------------------------------------------------------------------ reads

    static float[] toFloatArray(Tensor t) {
        float[] r = new float[Math.toIntExact(t.numel())];
        try (HostAccess h = HostAccess.read(t)) {
            MemorySegment seg = h.seg();
            if (t.dtype == DType.FLOAT32 && t.isContiguous()) {
                MemorySegment.copy(seg, F32, h.off() * 4, r, 0, r.length);
                return r;
            }
            int[] i = {0};
            StridedLoop.run(t.shape, new long[][] {t.strides}, new long[] {h.off()}, (o, len, str) -> {
                long si = o[0];
                for (long j = 0; j < len; j++, si += str[0]) {
                    r[i[0]++] = Elements.getFloat(seg, t.dtype, si);
                }
            });
        }
        return r;
    }

    static long[] toLongArray(Tensor t) {
        long[] r = new long[Math.toIntExact(t.numel())];
        try (HostAccess h = HostAccess.read(t)) {
            MemorySegment seg = h.seg();
            int[] i = {0};
            StridedLoop.run(t.shape, new long[][] {t.strides}, new long[] {h.off()}, (o, len, str) -> {
                long si = o[0];
                for (long j = 0; j < len; j++, si += str[0]) {
                    r[i[0]++] = Elements.getLong(seg, t.dtype, si);
                }
            });
        }
        return r;
    }

    // ------------------------------------------------------------------------------------------------ in place

    static void fill(Tensor t, float v) {
        if (!t.device.hasStorage() || t.numel() == 0) {
            return;
        }
        if (v == 0 && t.storage.deviceMemory() && t.isContiguous()) {
            int es = t.dtype.byteSize();   // 0.0 is all zero bytes in every dtype
            HostAccess.zero(t.storage, t.offset * es, t.numel() * es);
            return;
        }
        if (t.storage.deviceMemory() && t.dtype == DType.FLOAT32 && t.isContiguous() && t.device.hasKernels()) {
            t.device.kernels().fill(t.numel(), v, t.storage.kernelSegment(), t.offset);   // no staging
            return;
        }
        Kernels k = Kernels.scalar();      // host memory or a staging copy, never a device's kernels
        try (HostAccess h = HostAccess.write(t)) {
            MemorySegment seg = h.seg();
            StridedLoop.run(t.shape, new long[][] {t.strides}, new long[] {h.off()}, (o, len, str) -> {
                if (t.dtype == DType.FLOAT32 && str[0] == 1) {
                    k.fill(len, v, seg, o[0]);
                } else {
                    long si = o[0];
                    for (long j = 0; j < len; j++, si += str[0]) {
                        Elements.setFloat(seg, t.dtype, si, v);
                    }
                }
            });
            h.commit();
        }
    }

    static void fillRandom(Tensor t, Generator gen, boolean normal, double a, double b) {
        if (!t.device.hasStorage()) {
            return;
        }
        try (HostAccess h = HostAccess.write(t)) {
            MemorySegment seg = h.seg();
            StridedLoop.run(t.shape, new long[][] {t.strides}, new long[] {h.off()}, (o, len, str) -> {
                long si = o[0];
                for (long j = 0; j < len; j++, si += str[0]) {
                    double r = normal ? a + b * gen.nextGaussian() : a + b * gen.nextDouble();
                    Elements.setFloat(seg, t.dtype, si, (float) r);
                }
            });
            h.commit();
        }
    }

    /**
     * Copies {@code src} (broadcast) into {@code dst}, converting dtypes, across devices too (as
     * {@code Tensor.copy_}): device memory is copied on the device when nothing needs converting or gathering,
     * else staged through host memory.
     */
    static void copyInto(Tensor src, Tensor dst) {
        long[] ss = Shapes.broadcastStrides(src.shape, src.strides, dst.shape);
        if (!dst.device.hasStorage() || !src.device.hasStorage()) {
            return;
        }
        if (src.storage.deviceMemory() || dst.storage.deviceMemory()) {
            int es = dst.dtype.byteSize();
            if (src.storage.deviceMemory() && src.device.allocator() == dst.device.allocator()
                    && src.dtype == dst.dtype && src.isContiguous() && dst.isContiguous()
                    && Arrays.equals(src.shape, dst.shape)) {
                HostAccess.copyWithin(src.storage, src.offset * es, dst.storage, dst.offset * es, dst.numel() * es);
                return;
            }
            try (HostAccess s = HostAccess.read(src); HostAccess d = HostAccess.write(dst)) {
                copy(Kernels.scalar(), dst.shape, s.seg(), src.dtype, s.off(), ss, d.seg(), dst.dtype, d.off(), dst.strides);
                d.commit();
            }
            return;
        }
        copy(dst.device.kernels(), dst.shape, src.storage.segment(), src.dtype, src.offset, ss,
                dst.storage.segment(), dst.dtype, dst.offset, dst.strides);
    }

    /** {@code dst += alpha * src}, {@code src} broadcast to {@code dst}'s shape. */
    static void axpyInto(float alpha, Tensor src, Tensor dst) {
        Shapes.broadcastStrides(src.shape, src.strides, dst.shape);
        if (!dst.device.hasStorage()) {
            return;
        }
        if (sixteenBitOnDevice(dst)) {
            // dst += src of dst's 16-bit dtype: one 16-bit add in place (the bits of the float32 path, as alpha is 1),
            // unless src shares dst's storage in another layout (a launch would read elements it already wrote)
            boolean separate = src.storage != dst.storage || (src.offset == dst.offset
                    && Arrays.equals(src.shape, dst.shape) && Arrays.equals(src.strides, dst.strides));
            if (alpha != 1f || !separate || !Ops.binary16(Ops.Bin.ADD, dst, src, dst)) {
                through32(dst, wide -> axpyInto(alpha, src, wide));
            }
            return;
        }
        float32(dst);
        Kernels k = dst.device.kernels();
        MemorySegment d = dst.storage.kernelSegment();
        boolean device = dst.storage.deviceMemory();
        try (Scratch sc = new Scratch()) {
            F32View s = read(src, sc);
            long[] ss = Shapes.broadcastStrides(src.shape, s.strides, dst.shape);
            StridedLoop.run(dst.shape, new long[][] {dst.strides, ss}, new long[] {dst.offset, s.off}, (o, len, str) -> {
                if (dst.dtype == DType.FLOAT32 && str[0] == 1 && str[1] == 1) {
                    k.axpy(len, alpha, s.seg, o[1], d, o[0]);
                } else if (device) {
                    for (long j = 0, di = o[0], si = o[1]; j < len; j++, di += str[0], si += str[1]) {
                        k.axpy(1, alpha, s.seg, si, d, di);
                    }
                } else {
                    long di = o[0];
                    long si = o[1];
                    for (long j = 0; j < len; j++, di += str[0], si += str[1]) {
                        Elements.setFloat(d, dst.dtype, di, Elements.getFloat(d, dst.dtype, di) + alpha * s.get(si));
                    }
                }
            });
        }
    }

    static void scaleInPlace(Tensor t, float s) {
        if (!t.device.hasStorage()) {
            return;
        }
        if (sixteenBitOnDevice(t)) {
            through32(t, wide -> scaleInPlace(wide, s));
            return;
        }
        float32(t);
        Kernels k = t.device.kernels();
        MemorySegment seg = t.storage.kernelSegment();
        boolean device = t.storage.deviceMemory();
        StridedLoop.run(t.shape, new long[][] {t.strides}, new long[] {t.offset}, (o, len, str) -> {
            if (t.dtype == DType.FLOAT32 && str[0] == 1) {
                k.scale(len, s, seg, o[0], seg, o[0]);
            } else if (device) {
                for (long j = 0, si = o[0]; j < len; j++, si += str[0]) {
                    k.scale(1, s, seg, si, seg, si);
                }
            } else {
                long si = o[0];
                for (long j = 0; j < len; j++, si += str[0]) {
                    Elements.setFloat(seg, t.dtype, si, Elements.getFloat(seg, t.dtype, si) * s);
                }
            }
        });
    }
}
