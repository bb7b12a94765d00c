package io.vram4j.tensor;

import io.vram4j.autograd.Prim;
import io.vram4j.compute.Kernels;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The forward primitives. Each one checks its arguments, allocates its output(s) from the device's caching
 * allocator, computes only when the device has storage, and records a graph node through {@link Recorder}.
 * Allocations are therefore identical on {@code host} and {@code sim}.
 */
final class Ops {
    private Ops() {
    }

    enum Bin { ADD, SUB, MUL, DIV }

    enum Un { NEG, EXP, LOG, SQRT, TANH, RELU, GELU }

    // ------------------------------------------------------------------------------------------------ helpers

    static void open(Tensor... ts) {
        Device d = null;
        for (Tensor t : ts) {
            if (t == null) {
                continue;
            }
            t.ensureOpen();
            if (d == null) {
                d = t.device;
            } else if (d.allocator() != t.device.allocator()) {
                throw new IllegalArgumentException("tensors are on different devices: " + d.description() + " and "
                        + t.device.description());
            }
        }
    }

    static void floating(Tensor t, String op) {
        if (!t.dtype.isFloatingPoint()) {
            throw new IllegalArgumentException(op + " needs a floating-point tensor, got " + t.dtype
                    + " (convert with to(DType.FLOAT32))");
        }
    }

    static DType promote(Tensor a, Tensor b, String op) {
        floating(a, op);
        floating(b, op);
        return a.dtype == b.dtype ? a.dtype : DType.FLOAT32;
    }

    /** Runs {@code body} when the device has data; closes {@code out} if it fails. */
    private static Tensor compute(Tensor out, Runnable body) {
        if (out.device.hasStorage()) {
            try {
                body.run();
            } catch (RuntimeException | Error e) {
                out.close();
                throw e;
            }
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------------ element-wise

    static Tensor binary(Bin op, Tensor a, Tensor b) {
        open(a, b);
        DType dt = promote(a, b, op.name().toLowerCase());
        int[] shape = Shapes.broadcast(a.shape, b.shape);
        Tensor out = Tensor.allocate(a.device, dt, shape);
        compute(out, () -> binaryKernel(op, a, b, out));
        switch (op) {
            case ADD -> Recorder.record(Prim.ADD, out, new Tensor[] {a, b});
            case SUB -> Recorder.record(Prim.SUB, out, new Tensor[] {a, b});
            case MUL -> Recorder.record(Prim.MUL, out, new Tensor[] {a, b},
                    new Tensor[] {b.requiresGrad ? a : null, a.requiresGrad ? b : null});
            case DIV -> Recorder.record(Prim.DIV, out, new Tensor[] {a, b}, new Tensor[] {b.requiresGrad ? a : null, b});
        }
        return out;
    }

    /** One binary element-wise kernel of {@link Kernels}, {@code out[i] = a[i] op b[i]} over {@code n} elements. */
    private interface BinaryKernel {
        void apply(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff);
    }

    /**
     * The op in one 16-bit launch ({@link Kernels#binary16}) when {@code a}, {@code b} and {@code out} share one
     * float16/bfloat16 dtype in device memory, {@code out} is contiguous and the layout folds into 4 dimensions with
     * strides of at least 0: no float32 copy of any operand, as PyTorch under autocast. {@code out} may be {@code a}
     * (an in-place update: each element is read before it is written, by the same thread).
     *
     * @return false when the caller must take the float32 path (nothing was launched)
     */
    static boolean binary16(Bin op, Tensor a, Tensor b, Tensor out) {
        int half = Host.halfKernelType(out);
        if (half < 0 || a.dtype != out.dtype || b.dtype != out.dtype || !a.storage.deviceMemory()
                || !b.storage.deviceMemory()) {
            return false;
        }
        Layout4 l = broadcastLayout(a, b, out);
        if (l == null) {
            return false;
        }
        out.device.kernels().binary16(op.ordinal(), half, l.d(0), l.d(1), l.d(2), l.d(3), a.storage.kernelSegment(),
                a.offset, l.s(1, 0), l.s(1, 1), l.s(1, 2), l.s(1, 3), b.storage.kernelSegment(), b.offset, l.s(2, 0),
                l.s(2, 1), l.s(2, 2), l.s(2, 3), out.storage.kernelSegment(), out.offset);
        return true;
    }

    /**
     * @return the layout of {@code a} and {@code b} broadcast over the contiguous {@code out}, folded into 4
     *     dimensions, for the one-launch binary kernels; null when it does not fold or has a negative stride
     */
    private static Layout4 broadcastLayout(Tensor a, Tensor b, Tensor out) {
        long[] sa = Shapes.broadcastStrides(a.shape, a.strides, out.shape);
        long[] sb = Shapes.broadcastStrides(b.shape, b.strides, out.shape);
        Layout4 l = Layout4.of(out.shape, Shapes.contiguousStrides(out.shape), sa, sb);
        if (l == null) {
            return null;
        }
        for (int i = 0; i < 4; i++) {
            if (l.s(1, i) < 0 || l.s(2, i) < 0) {
                return null;
            }
        }
        return l;
    }

    /**
     * The op in one launch ({@link Kernels#binaryMixed}) when one of {@code a}, {@code b} is float16/bfloat16 and
     * the other float32, all in device memory, {@code out} float32 and contiguous, and the layout folds into 4
     * dimensions with strides of at least 0: the 16-bit operand is widened as it is read, with no float32 copy of it
     * (PyTorch's promotion of a float32 residual plus a bf16 projection under autocast).
     *
     * @return false when the caller must take the float32 path (nothing was launched)
     */
    static boolean binaryMixed(Bin op, Tensor a, Tensor b, Tensor out) {
        if (out.dtype != DType.FLOAT32 || !out.storage.deviceMemory() || !out.isContiguous()
                || !a.storage.deviceMemory() || !b.storage.deviceMemory()) {
            return false;
        }
        int half16 = Host.halfType(a.dtype) >= 0 && b.dtype == DType.FLOAT32 ? 0
                : Host.halfType(b.dtype) >= 0 && a.dtype == DType.FLOAT32 ? 1 : -1;
        if (half16 < 0) {
            return false;
        }
        Layout4 l = broadcastLayout(a, b, out);
        if (l == null) {
            return false;
        }
        int type = Host.halfType(half16 == 0 ? a.dtype : b.dtype);
        out.device.kernels().binaryMixed(op.ordinal(), type, half16, l.d(0), l.d(1), l.d(2), l.d(3),
                a.storage.kernelSegment(), a.offset, l.s(1, 0), l.s(1, 1), l.s(1, 2), l.s(1, 3),
                b.storage.kernelSegment(), b.offset, l.s(2, 0), l.s(2, 1), l.s(2, 2), l.s(2, 3),
                out.storage.kernelSegment(), out.offset);
        return true;
    }

    private static void binaryKernel(Bin op, Tensor a, Tensor b, Tensor out) {
        Kernels k = out.device.kernels();
        BinaryKernel f = switch (op) {
            case ADD -> k::add;
            case SUB -> k::sub;
            case MUL -> k::mul;
            case DIV -> k::div;
        };
        if (binary16(op, a, b, out) || binaryMixed(op, a, b, out)) {
            return;
        }
        try (Scratch sc = new Scratch()) {
            Host.F32View ra = Host.read(a, sc);
            Host.F32View rb = Host.read(b, sc);
            Host.F32View w = Host.write(out, sc);
            long[] sa = Shapes.broadcastStrides(a.shape, ra.strides(), out.shape);
            long[] sb = Shapes.broadcastStrides(b.shape, rb.strides(), out.shape);
            Layout4 l = w.device() ? Layout4.of(out.shape, w.strides(), sa, sb) : null;
            if (l != null && !l.contiguous()) {   // broadcasting on the device: one launch, nothing materialised
                k.binary4(op.ordinal(), l.d(0), l.d(1), l.d(2), l.d(3), ra.seg(), ra.off(), l.s(1, 0), l.s(1, 1),
                        l.s(1, 2), l.s(1, 3), rb.seg(), rb.off(), l.s(2, 0), l.s(2, 1), l.s(2, 2), l.s(2, 3),
                        w.seg(), w.off());
                Host.commit(out, w);
                return;
            }
            StridedLoop.run(out.shape, new long[][] {w.strides(), sa, sb}, new long[] {w.off(), ra.off(), rb.off()},
                    (o, len, st) -> {
                        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
                            f.apply(len, ra.seg(), o[1], rb.seg(), o[2], w.seg(), o[0]);
                            return;
                        }
                        if (st[0] == 1 && st[1] == 1 && st[2] == 0 && op != Bin.DIV && !rb.device()) {
                            float v = rb.get(o[2]);
                            switch (op) {
                                case ADD -> k.addScalar(len, v, ra.seg(), o[1], w.seg(), o[0]);
                                case SUB -> k.addScalar(len, -v, ra.seg(), o[1], w.seg(), o[0]);
                                default -> k.scale(len, v, ra.seg(), o[1], w.seg(), o[0]);
                            }
                            return;
                        }
                        long io = o[0];
                        long ia = o[1];
                        long ib = o[2];
                        if (w.device()) {   // one element per launch: correct, slow; a strided kernel is left to do
                            for (long i = 0; i < len; i++, io += st[0], ia += st[1], ib += st[2]) {
                                f.apply(1, ra.seg(), ia, rb.seg(), ib, w.seg(), io);
                            }
                            return;
                        }
                        for (long i = 0; i < len; i++, io += st[0], ia += st[1], ib += st[2]) {
                            float x = ra.get(ia);
                            float y = rb.get(ib);
                            w.set(io, switch (op) {
                                case ADD -> x + y;
                                case SUB -> x - y;
                                case MUL -> x * y;
                                case DIV -> x / y;
                            });
                        }
                    });
            Host.commit(out, w);
        }
    }

    static Tensor unary(Un op, Tensor x) {
        open(x);
        floating(x, op.name().toLowerCase());
        Tensor out = Tensor.allocate(x.device, x.dtype, x.shape.clone());
        compute(out, () -> {
            Kernels k = out.device.kernels();
            int half = Host.halfKernelType(x, out);
            if (half >= 0) {
                int code = switch (op) {
                    case NEG -> Kernels.UNARY_NEG;
                    case EXP -> Kernels.UNARY_EXP;
                    case LOG -> Kernels.UNARY_LOG;
                    case SQRT -> Kernels.UNARY_SQRT;
                    case TANH -> Kernels.UNARY_TANH;
                    case RELU -> Kernels.UNARY_RELU;
                    case GELU -> Kernels.UNARY_GELU;
                };
                k.unary16(code, half, out.numel(), x.storage.kernelSegment(), x.offset, out.storage.kernelSegment(),
                        out.offset);
                return;
            }
            try (Scratch sc = new Scratch()) {
                Host.F32View r = Host.readContiguous(x, sc);
                Host.F32View w = Host.write(out, sc);
                long n = out.numel();
                switch (op) {
                    case NEG -> k.neg(n, r.seg(), r.off(), w.seg(), w.off());
                    case EXP -> k.exp(n, r.seg(), r.off(), w.seg(), w.off());
                    case LOG -> k.log(n, r.seg(), r.off(), w.seg(), w.off());
                    case SQRT -> k.sqrt(n, r.seg(), r.off(), w.seg(), w.off());
                    case TANH -> k.tanh(n, r.seg(), r.off(), w.seg(), w.off());
                    case RELU -> k.relu(n, r.seg(), r.off(), w.seg(), w.off());
                    case GELU -> k.gelu(n, r.seg(), r.off(), w.seg(), w.off());
                }
                Host.commit(out, w);
            }
        });
        Tensor[] in = {x};
        switch (op) {
            case NEG -> Recorder.record(Prim.NEG, out, in);
            case EXP -> Recorder.record(Prim.EXP, out, in, new Tensor[] {out});
            case LOG -> Recorder.record(Prim.LOG, out, in, new Tensor[] {x});
            case SQRT -> Recorder.record(Prim.SQRT, out, in, new Tensor[] {out});
            case TANH -> Recorder.record(Prim.TANH, out, in, new Tensor[] {out});
            case RELU -> Recorder.record(Prim.RELU, out, in, new Tensor[] {out});
            case GELU -> Recorder.record(Prim.GELU, out, in, new Tensor[] {x});
        }
        return out;
    }

    static Tensor mulScalar(Tensor x, float s) {
        return scalarOp(x, s, true);
    }

    static Tensor addScalar(Tensor x, float s) {
        return scalarOp(x, s, false);
    }

    private static Tensor scalarOp(Tensor x, float s, boolean mul) {
        open(x);
        floating(x, mul ? "mul" : "add");
        Tensor out = Tensor.allocate(x.device, x.dtype, x.shape.clone());
        compute(out, () -> {
            Kernels k = out.device.kernels();
            try (Scratch sc = new Scratch()) {
                Host.F32View r = Host.readContiguous(x, sc);
                Host.F32View w = Host.write(out, sc);
                if (mul) {
                    k.scale(out.numel(), s, r.seg(), r.off(), w.seg(), w.off());
                } else {
                    k.addScalar(out.numel(), s, r.seg(), r.off(), w.seg(), w.off());
                }
                Host.commit(out, w);
            }
        });
        Recorder.record(mul ? Prim.MUL_SCALAR : Prim.ADD_SCALAR, out, new Tensor[] {x}, new Tensor[0], new int[0], s);
        return out;
    }

    // ------------------------------------------------------------------------------------------------ reductions

    /** Sums over {@code dims} (distinct, normalised) and multiplies by {@code scale}. */
    static Tensor sum(Tensor x, int[] dims, boolean keepDim, float scale) {
        open(x);
        floating(x, "sum");
        int[] keep = x.shape.clone();
        boolean[] reduced = new boolean[keep.length];
        for (int d : dims) {
            keep[d] = 1;
            reduced[d] = true;
        }
        int[] outShape;
        if (keepDim) {
            outShape = keep.clone();
        } else {
            int n = 0;
            for (boolean r : reduced) {
                n += r ? 0 : 1;
            }
            outShape = new int[n];
            for (int i = 0, j = 0; i < keep.length; i++) {
                if (!reduced[i]) {
                    outShape[j++] = keep[i];
                }
            }
        }
        return reduce(x, keep, outShape, scale);
    }

    static Tensor sumToSize(Tensor x, int[] target) {
        open(x);
        Shapes.broadcastStrides(target, Shapes.contiguousStrides(target), x.shape);
        if (Arrays.equals(target, x.shape)) {
            return view(x, target, false);
        }
        floating(x, "sumToSize");
        int[] keep = new int[x.shape.length];
        Arrays.fill(keep, 1);
        System.arraycopy(target, 0, keep, keep.length - target.length, target.length);
        return reduce(x, keep, target.clone(), 1f);
    }

    private static Tensor reduce(Tensor x, int[] keep, int[] outShape, float scale) {
        Tensor out = Tensor.allocate(x.device, x.dtype, outShape);
        compute(out, () -> {
            Kernels k = out.device.kernels();
            try (Scratch sc = new Scratch()) {
                if (x.storage.deviceMemory() && x.isContiguous() && sumOnDevice(x, keep, scale, out, sc)) {
                    return;
                }
                Host.F32View r = Host.read(x, sc);
                Host.F32View w = Host.write(out, sc);
                MemorySegment ws = w.seg();
                k.fill(out.numel(), 0f, ws, w.off());
                long[] wst = Shapes.broadcastStrides(keep, Shapes.contiguousStrides(keep), x.shape);
                StridedLoop.run(x.shape, new long[][] {wst, r.strides()}, new long[] {w.off(), r.off()}, (o, len, st) -> {
                    if (st[0] == 0 && st[1] == 1) {
                        k.addScalar(1, k.sum(len, r.seg(), o[1]), ws, o[0], ws, o[0]);
                    } else if (st[0] == 1 && st[1] == 1) {
                        k.axpy(len, 1f, r.seg(), o[1], ws, o[0]);
                    } else if (w.device()) {   // one element per launch, as in binaryKernel
                        for (long i = 0, io = o[0], ix = o[1]; i < len; i++, io += st[0], ix += st[1]) {
                            k.axpy(1, 1f, r.seg(), ix, ws, io);
                        }
                    } else {
                        long io = o[0];
                        long ix = o[1];
                        for (long i = 0; i < len; i++, io += st[0], ix += st[1]) {
                            w.set(io, w.get(io) + r.get(ix));
                        }
                    }
                });
                if (scale != 1f) {
                    k.scale(out.numel(), scale, ws, w.off(), ws, w.off());
                }
                Host.commit(out, w);
            }
        });
        Recorder.record(Prim.SUM, out, new Tensor[] {x}, new Tensor[0], keep, scale);
        return out;
    }

    /**
     * The sum of {@link #reduce} on device memory with {@code Kernels.sumDim} for a contiguous input, adding in the
     * order of the host loop:
     * the reduced dimensions of the contiguous input, after dropping extent-1 ones, form at most two runs; the
     * inner run is summed first when it ends the shape (the host loop's per-row sums, then their total).
     *
     * @return false when the reduced dimensions do not fit that pattern (the caller loops)
     */
    private static boolean sumOnDevice(Tensor x, int[] keep, float scale, Tensor out, Scratch sc) {
        List<int[]> runs = new ArrayList<>();   // {first, last} dims of each run of reduced dims (extent > 1)
        for (int d = 0; d < x.shape.length; d++) {
            if (keep[d] != 1 || x.shape[d] == 1) {
                continue;
            }
            if (!runs.isEmpty() && runs.get(runs.size() - 1)[1] == lastKept(x.shape, d)) {
                runs.get(runs.size() - 1)[1] = d;
            } else {
                runs.add(new int[] {d, d});
            }
        }
        if (runs.size() > 2 || runs.size() == 2 && Shapes.numel(Arrays.copyOfRange(x.shape,
                runs.get(1)[1] + 1, x.shape.length)) != 1) {
            return false;
        }
        Kernels k = out.device.kernels();
        // a contiguous 16-bit input in device memory is read in place, widened as read (no float32 copy of it)
        int half = Host.halfKernelType(x);
        if (half >= 0 && out.dtype == x.dtype && scale == 1f && runs.size() == 1 && out.isContiguous()) {
            // one reduction into a 16-bit result (a bias gradient under autocast): the sums rounded as written
            int lo = runs.get(0)[0];
            int hi = runs.get(0)[1];
            k.sumDimTo16(half, Math.toIntExact(Shapes.numel(Arrays.copyOf(x.shape, lo))),
                    Math.toIntExact(Shapes.numel(Arrays.copyOfRange(x.shape, lo, hi + 1))),
                    Math.toIntExact(Shapes.numel(Arrays.copyOfRange(x.shape, hi + 1, x.shape.length))),
                    x.storage.kernelSegment(), x.offset, out.storage.kernelSegment(), out.offset);
            return true;
        }
        Host.F32View r = half >= 0 ? null : Host.readContiguous(x, sc);
        Host.F32View w = Host.write(out, sc);
        MemorySegment seg = half >= 0 ? x.storage.kernelSegment() : r.seg();
        long off = half >= 0 ? x.offset : r.off();
        int[] shape = x.shape.clone();
        for (int i = runs.size() - 1; i >= 0; i--) {
            int lo = runs.get(i)[0];
            int hi = runs.get(i)[1];
            int outer = Math.toIntExact(Shapes.numel(Arrays.copyOf(shape, lo)));
            int n = Math.toIntExact(Shapes.numel(Arrays.copyOfRange(shape, lo, hi + 1)));
            int inner = Math.toIntExact(Shapes.numel(Arrays.copyOfRange(shape, hi + 1, shape.length)));
            if (i == 0) {
                sumDim(k, half, outer, n, inner, seg, off, w.seg(), w.off());
            } else {
                Tensor partial = sc.tensor(out.device, new int[] {outer * inner});
                sumDim(k, half, outer, n, inner, seg, off, partial.storage.kernelSegment(), partial.offset);
                seg = partial.storage.kernelSegment();
                off = partial.offset;
                half = -1;   // the partial sums are float32
                Arrays.fill(shape, lo, hi + 1, 1);
            }
        }
        if (runs.isEmpty()) {
            sumDim(k, half, 1, 1, Math.toIntExact(out.numel()), seg, off, w.seg(), w.off());
        }
        if (scale != 1f) {
            k.scale(out.numel(), scale, w.seg(), w.off(), w.seg(), w.off());
        }
        Host.commit(out, w);
        return true;
    }

    /** {@code Kernels.sumDim}, or {@code sumDim16} when {@code half} is a 16-bit type code (-1: float32 input). */
    private static void sumDim(Kernels k, int half, int outer, int n, int inner, MemorySegment x, long xOff,
                               MemorySegment out, long outOff) {
        if (half >= 0) {
            k.sumDim16(half, outer, n, inner, x, xOff, out, outOff);
        } else {
            k.sumDim(outer, n, inner, x, xOff, out, outOff);
        }
    }

    /** @return the last dimension before {@code d} of extent above 1, or -1 */
    private static int lastKept(int[] shape, int d) {
        for (int i = d - 1; i >= 0; i--) {
            if (shape[i] != 1) {
                return i;
            }
        }
        return -1;
    }

    static Tensor max(Tensor x, int dim, boolean keepDim, boolean indicesOnly) {
        open(x);
        floating(x, "max");
        int n = x.shape[dim];
        if (n == 0) {
            throw new IllegalArgumentException("max over dimension " + dim + " of extent 0");
        }
        int[] keep = x.shape.clone();
        keep[dim] = 1;
        int[] outShape = keepDim ? keep : removeDim(x.shape, dim);
        Tensor values = indicesOnly ? null : Tensor.allocate(x.device, x.dtype, outShape);
        Tensor indices;
        try {
            indices = Tensor.allocate(x.device, DType.INT64, outShape.clone());
        } catch (RuntimeException e) {
            if (values != null) {
                values.close();
            }
            throw e;
        }
        if (x.device.hasStorage()) {
            try (Scratch sc = new Scratch()) {   // the max kernel, on host memory and on a device's
                Host.F32View r = Host.readContiguous(x, sc);
                Host.F32View w = values == null ? null : Host.write(values, sc);
                x.device.kernels().maxDim(Math.toIntExact(Shapes.numel(Arrays.copyOf(x.shape, dim))), n,
                        Math.toIntExact(Shapes.numel(Arrays.copyOfRange(x.shape, dim + 1, x.shape.length))),
                        r.seg(), r.off(), w == null ? null : w.seg(), w == null ? 0 : w.off(),
                        indices.storage.kernelSegment(), indices.offset);
                if (values != null) {
                    Host.commit(values, w);
                }
            } catch (RuntimeException | Error e) {
                indices.close();
                if (values != null) {
                    values.close();
                }
                throw e;
            }
        }
        if (indicesOnly) {
            return indices;
        }
        Recorder.record(Prim.MAX, values, new Tensor[] {x}, new Tensor[] {indices}, new int[] {dim, keepDim ? 1 : 0}, 0f);
        indices.close();
        return values;
    }

    static int[] removeDim(int[] shape, int dim) {
        int[] s = new int[shape.length - 1];
        for (int i = 0, j = 0; i < shape.length; i++) {
            if (i != dim) {
                s[j++] = shape[i];
            }
        }
        return s;
    }

    // ------------------------------------------------------------------------------------------------ matmul

    static Tensor matmul(Tensor a, Tensor b) {
        return product(a, b, null);
    }

    /**
     * {@code bias + a @ b} as one product, PyTorch's {@code addmm} (what its {@code linear} runs): the bias, broadcast
     * over the rows, is the product's starting value ({@code beta = 1}), so a float16/bfloat16 result is rounded
     * once, and no separate product is allocated.
     *
     * @param bias {@code [n]}, the dtype of the product
     */
    static Tensor addmm(Tensor bias, Tensor a, Tensor b) {
        return product(a, b, bias);
    }

    private static Tensor product(Tensor a, Tensor b, Tensor bias) {
        String op = bias == null ? "matmul" : "addmm";
        open(a, b, bias);
        DType dt = promote(a, b, op);
        if (a.shape.length < 2 || b.shape.length < 2) {
            throw new IllegalArgumentException(op + " needs operands with at least 2 dimensions, got "
                    + Shapes.str(a.shape) + " and " + Shapes.str(b.shape));
        }
        int m = a.shape[a.shape.length - 2];
        int k = a.shape[a.shape.length - 1];
        int kb = b.shape[b.shape.length - 2];
        int n = b.shape[b.shape.length - 1];
        if (k != kb) {
            throw new IllegalArgumentException(op + " shapes " + Shapes.str(a.shape) + " and " + Shapes.str(b.shape)
                    + " do not match (" + k + " != " + kb + ")");
        }
        if (bias != null && (bias.shape.length != 1 || bias.shape[0] != n || bias.dtype != dt)) {
            throw new IllegalArgumentException("addmm bias must be [" + n + "] " + dt + ", got "
                    + Shapes.str(bias.shape) + " " + bias.dtype);
        }
        int[] batchA = Arrays.copyOf(a.shape, a.shape.length - 2);
        int[] batchB = Arrays.copyOf(b.shape, b.shape.length - 2);
        int[] batch = Shapes.broadcast(batchA, batchB);
        int[] outShape = Arrays.copyOf(batch, batch.length + 2);
        outShape[batch.length] = m;
        outShape[batch.length + 1] = n;
        Tensor out = Tensor.allocate(a.device, dt, outShape);
        compute(out, () -> Gemm.run(a, b, bias, out, batch, m, n, k));
        Tensor[] save = {b.requiresGrad ? a : null, a.requiresGrad ? b : null};
        int[] layouts = {columnMajor(a) ? 1 : 0, columnMajor(b) ? 1 : 0};
        if (bias == null) {
            Recorder.record(Prim.MATMUL, out, new Tensor[] {a, b}, save, layouts, 0f);
        } else {
            Recorder.record(Prim.ADDMM, out, new Tensor[] {a, b, bias}, save, layouts, 0f);
        }
        return out;
    }

    /** True when the last two dimensions are stored column-major (a transposed view). */
    static boolean columnMajor(Tensor t) {
        int r = t.shape.length;
        return t.shape[r - 2] > 1 && t.shape[r - 1] > 1 && t.strides[r - 2] == 1 && t.strides[r - 1] != 1;
    }

    // ------------------------------------------------------------------------------------------------ views

    static Tensor view(Tensor x, int[] requested, boolean allowCopy) {
        open(x);
        int[] shape = Shapes.infer(requested, x.numel());
        long[] st = Shapes.viewStrides(x.shape, x.strides, shape);
        if (st == null) {
            if (!allowCopy) {
                throw new IllegalStateException("view size " + Shapes.str(shape) + " is not compatible with the input's size "
                        + Shapes.str(x.shape) + " and strides " + Arrays.toString(x.strides)
                        + " (at least one dimension spans two contiguous subspaces); use reshape() instead");
            }
            try (Tensor c = copy(x)) {
                return view(c, shape, false);
            }
        }
        Tensor out = x.alias(shape, st, x.offset);
        Recorder.record(Prim.VIEW, out, new Tensor[] {x});
        return out;
    }

    static Tensor transpose(Tensor x, int dim0, int dim1) {
        open(x);
        int d0 = Shapes.dim(dim0, x.shape.length);
        int d1 = Shapes.dim(dim1, x.shape.length);
        int[] s = x.shape.clone();
        long[] st = x.strides.clone();
        s[d0] = x.shape[d1];
        s[d1] = x.shape[d0];
        st[d0] = x.strides[d1];
        st[d1] = x.strides[d0];
        Tensor out = x.alias(s, st, x.offset);
        Recorder.record(Prim.TRANSPOSE, out, new Tensor[] {x}, new Tensor[0], new int[] {d0, d1}, 0f);
        return out;
    }

    static Tensor narrow(Tensor x, int dim, int start, int length) {
        open(x);
        int d = Shapes.dim(dim, x.shape.length);
        if (start < 0 || length < 0 || start > x.shape[d] - length) {
            throw new IndexOutOfBoundsException("narrow(" + dim + ", " + start + ", " + length
                    + ") is out of range for extent " + x.shape[d]);
        }
        int[] s = x.shape.clone();
        s[d] = length;
        Tensor out = x.alias(s, x.strides.clone(), x.offset + start * x.strides[d]);
        Recorder.record(Prim.NARROW, out, new Tensor[] {x}, new Tensor[0], new int[] {d, start}, 0f);
        return out;
    }

    static Tensor expand(Tensor x, int[] requested) {
        open(x);
        int[] shape = requested.clone();
        int off = shape.length - x.shape.length;
        if (off < 0) {
            throw new IllegalArgumentException("cannot expand shape " + Shapes.str(x.shape) + " to " + Shapes.str(requested));
        }
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] == -1) {
                if (i < off) {
                    throw new IllegalArgumentException("-1 is not allowed for a new leading dimension in expand "
                            + Shapes.str(requested));
                }
                shape[i] = x.shape[i - off];
            }
        }
        long[] st = Shapes.broadcastStrides(x.shape, x.strides, Shapes.check(shape));
        Tensor out = x.alias(shape, st, x.offset);
        Recorder.record(Prim.EXPAND, out, new Tensor[] {x});
        return out;
    }

    static Tensor copy(Tensor x) {
        open(x);
        Tensor out = Tensor.allocate(x.device, x.dtype, x.shape.clone());
        compute(out, () -> Host.copyTo(x, out, out.offset));
        Recorder.record(Prim.COPY, out, new Tensor[] {x});
        return out;
    }

    static Tensor cast(Tensor x, DType dt) {
        open(x);
        Tensor out = Tensor.allocate(x.device, dt, x.shape.clone());
        compute(out, () -> Host.copyTo(x, out, out.offset));
        if (x.dtype.isFloatingPoint()) {
            Recorder.record(Prim.CAST, out, new Tensor[] {x});
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------------ rows

    static int lastDim(Tensor x, String op) {
        if (x.shape.length == 0) {
            throw new IllegalArgumentException(op + " needs at least one dimension");
        }
        return x.shape[x.shape.length - 1];
    }

    static int rows(Tensor x, int cols) {
        return cols == 0 ? 0 : Math.toIntExact(x.numel() / cols);
    }

    static Tensor softmax(Tensor x, boolean log) {
        open(x);
        floating(x, "softmax");
        int cols = lastDim(x, "softmax");
        Tensor out = Tensor.allocate(x.device, x.dtype, x.shape.clone());
        compute(out, () -> {
            Kernels k = out.device.kernels();
            try (Scratch sc = new Scratch()) {
                Host.F32View r = Host.readContiguous(x, sc);
                Host.F32View w = Host.write(out, sc);
                int rows = rows(x, cols);
                if (log) {
                    k.logSoftmaxRows(rows, cols, r.seg(), r.off(), w.seg(), w.off());
                } else {
                    k.softmaxRows(rows, cols, r.seg(), r.off(), w.seg(), w.off());
                }
                Host.commit(out, w);
            }
        });
        Recorder.record(log ? Prim.LOG_SOFTMAX : Prim.SOFTMAX, out, new Tensor[] {x}, new Tensor[] {out});
        return out;
    }

    static Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
        open(x, weight, bias);
        floating(x, "layerNorm");
        int cols = lastDim(x, "layerNorm");
        for (Tensor p : new Tensor[] {weight, bias}) {
            if (p != null && (p.shape.length != 1 || p.shape[0] != cols)) {
                throw new IllegalArgumentException("layerNorm weight/bias must have shape [" + cols + "], got "
                        + Shapes.str(p.shape));
            }
        }
        int rows = rows(x, cols);
        Tensor out = Tensor.allocate(x.device, x.dtype, x.shape.clone());
        Tensor mean = null;
        Tensor rstd = null;
        try {
            mean = Tensor.allocate(x.device, DType.FLOAT32, new int[] {rows});
            rstd = Tensor.allocate(x.device, DType.FLOAT32, new int[] {rows});
            if (x.device.hasStorage()) {
                Kernels k = x.device.kernels();
                try (Scratch sc = new Scratch()) {
                    Host.F32View r = Host.readContiguous(x, sc);
                    Host.F32View g = weight == null ? null : Host.readContiguous(weight, sc);
                    Host.F32View b = bias == null ? null : Host.readContiguous(bias, sc);
                    Host.F32View w = Host.write(out, sc);
                    k.layerNormRows(rows, cols, r.seg(), r.off(), g == null ? null : g.seg(), g == null ? 0 : g.off(),
                            b == null ? null : b.seg(), b == null ? 0 : b.off(), eps, w.seg(), w.off(),
                            mean.storage.kernelSegment(), mean.offset, rstd.storage.kernelSegment(), rstd.offset);
                    Host.commit(out, w);
                }
            }
            Recorder.record(Prim.LAYER_NORM, out, new Tensor[] {x, weight, bias},
                    new Tensor[] {x, weight, mean, rstd}, new int[0], eps);
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        } finally {
            if (mean != null) {
                mean.close();
            }
            if (rstd != null) {
                rstd.close();
            }
        }
        return out;
    }

    static void integer(Tensor t, String op) {
        if (t.dtype != DType.INT32 && t.dtype != DType.INT64) {
            throw new IllegalArgumentException(op + " needs int32 or int64 indices, got " + t.dtype);
        }
    }

    static Tensor embedding(Tensor weight, Tensor indices) {
        open(weight, indices);
        floating(weight, "embedding");
        integer(indices, "embedding");
        if (weight.shape.length != 2) {
            throw new IllegalArgumentException("embedding weight must be 2-D, got " + Shapes.str(weight.shape));
        }
        int rows = weight.shape[0];
        int cols = weight.shape[1];
        int[] outShape = Arrays.copyOf(indices.shape, indices.shape.length + 1);
        outShape[indices.shape.length] = cols;
        Tensor out = Tensor.allocate(weight.device, weight.dtype, outShape);
        compute(out, () -> {
            Kernels k = out.device.kernels();
            Host.indexed(weight, indices, out, (r, idx, idxOff, w) -> k.embedding(indices.numel(), rows, cols,
                    r.seg(), r.off(), idx, idxOff, w.seg(), w.off()));
        });
        Recorder.record(Prim.EMBEDDING, out, new Tensor[] {weight, indices}, new Tensor[] {indices});
        return out;
    }

    static Tensor dropout(Tensor x, float p, long seed) {
        open(x);
        floating(x, "dropout");
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("dropout probability has to be between 0 and 1, but got " + p);
        }
        float scale = p == 1f ? 0f : 1f / (1f - p);
        Tensor out = Tensor.allocate(x.device, x.dtype, x.shape.clone());
        Tensor mask;
        try {
            mask = Tensor.allocate(x.device, DType.BOOL, x.shape.clone());
        } catch (RuntimeException e) {
            out.close();
            throw e;
        }
        try {
            compute(out, () -> {   // the counter-based mask, drawn by the device's kernel
                try (Scratch sc = new Scratch()) {
                    Host.F32View r = Host.readContiguous(x, sc);
                    Host.F32View w = Host.write(out, sc);
                    out.device.kernels().dropout(out.numel(), p, scale, seed, r.seg(), r.off(), w.seg(), w.off(),
                            mask.storage.kernelSegment(), mask.offset);
                    Host.commit(out, w);
                }
            });
            Recorder.record(Prim.DROPOUT, out, new Tensor[] {x}, new Tensor[] {mask}, new int[0], scale);
        } finally {
            mask.close();
        }
        return out;
    }

    static Tensor causalMask(Tensor x) {
        open(x);
        floating(x, "causalMask");
        if (x.shape.length < 2) {
            throw new IllegalArgumentException("causalMask needs at least 2 dimensions, got " + Shapes.str(x.shape));
        }
        Tensor out = Tensor.allocate(x.device, x.dtype, x.shape.clone());
        compute(out, () -> {
            try (Scratch sc = new Scratch()) {
                Host.F32View r = Host.readContiguous(x, sc);
                Host.F32View w = Host.write(out, sc);
                maskUpper(x.shape, r, w, Float.NEGATIVE_INFINITY, out.device.kernels());
                Host.commit(out, w);
            }
        });
        Recorder.record(Prim.CAUSAL_MASK, out, new Tensor[] {x});
        return out;
    }

    /** Copies {@code r} to {@code w} (contiguous, same shape), writing {@code fill} where column > row in the last two dims. */
    static void maskUpper(int[] shape, Host.F32View r, Host.F32View w, float fill, Kernels k) {
        int t = shape[shape.length - 2];
        int s = shape[shape.length - 1];
        long mats = t == 0 || s == 0 ? 0 : Shapes.numel(shape) / ((long) t * s);
        k.maskUpper(mats, t, s, fill, r.seg(), r.off(), w.seg(), w.off());
    }

    static Tensor nllLoss(Tensor logp, Tensor targets, int ignoreIndex) {
        open(logp, targets);
        floating(logp, "nllLoss");
        integer(targets, "nllLoss");
        if (logp.shape.length != 2 || targets.shape.length != 1 || targets.shape[0] != logp.shape[0]) {
            throw new IllegalArgumentException("nllLoss expects log-probabilities [N, C] and targets [N], got "
                    + Shapes.str(logp.shape) + " and " + Shapes.str(targets.shape));
        }
        int n = logp.shape[0];
        int c = logp.shape[1];
        Tensor out = Tensor.allocate(logp.device, logp.dtype, new int[0]);
        compute(out, () -> {   // the loss kernel: the host reads the loss only when asked (item())
            try (Scratch sc = new Scratch(); Tensor t = Host.int64(targets)) {
                Tensor t64 = t == null ? targets : t;
                Host.F32View r = Host.readContiguous(logp, sc);
                Host.F32View w = Host.write(out, sc);
                out.device.kernels().nllLoss(n, c, ignoreIndex, r.seg(), r.off(), t64.storage.kernelSegment(),
                        t64.offset, w.seg(), w.off());
                Host.commit(out, w);
            }
        });
        Recorder.record(Prim.NLL_LOSS, out, new Tensor[] {logp, targets}, new Tensor[] {targets},
                new int[] {ignoreIndex}, 0f);
        return out;
    }
}
