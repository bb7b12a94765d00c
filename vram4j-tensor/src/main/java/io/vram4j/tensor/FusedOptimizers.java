package io.vram4j.tensor;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The fused optimizer updates on a device's kernels: one {@code Kernels.sgdMulti} or {@code Kernels.adamwMulti} call
 * for a whole list of parameters (PyTorch's {@code foreach}/fused optimizers), with each tensor presented to the
 * kernels as the segment of its elements.
 *
 * <p>An engine class, not API: it is public only because {@code io.vram4j.optim} calls it, and it stays in this
 * package because it works on the package's internals (storages). Not thread-safe, as the tensors are not.
 */
public final class FusedOptimizers {
    private FusedOptimizers() {
    }

    /** @return the float32 elements of each (contiguous) tensor, as the kernels take them */
    private static MemorySegment[] segments(List<Tensor> ts, String what) {
        if (ts == null) {
            return null;
        }
        MemorySegment[] s = new MemorySegment[ts.size()];
        for (int i = 0; i < s.length; i++) {
            Tensor t = ts.get(i);
            t.ensureOpen();
            if (t.dtype != DType.FLOAT32 || !t.isContiguous()) {
                throw new UnsupportedOperationException(Storage.NO_KERNEL + t.device.description() + " for " + what
                        + " " + i + " (" + t.dtype + (t.isContiguous() ? "" : ", not contiguous")
                        + "): the fused optimizer kernels update contiguous float32 tensors");
            }
            s[i] = t.storage.kernelSegment().asSlice(t.offset * Float.BYTES, t.numel() * Float.BYTES);
        }
        return s;
    }

    private static long[] sizes(List<Tensor> ts) {
        long[] n = new long[ts.size()];
        for (int i = 0; i < n.length; i++) {
            n[i] = ts.get(i).numel();
        }
        return n;
    }

    /**
     * One SGD step for every tensor of {@code params} in one kernel call ({@code Kernels.sgdMulti}).
     *
     * @param bufs the momentum buffers, or null without momentum
     * @throws UnsupportedOperationException (one line, nothing updated) for a tensor that is not contiguous float32
     */
    public static void sgd(List<Tensor> params, List<Tensor> grads, List<Tensor> bufs, float lr, float momentum,
                           float weightDecay, boolean nesterov, boolean first) {
        if (params.isEmpty()) {
            return;
        }
        MemorySegment[] p = segments(params, "parameter");
        MemorySegment[] g = segments(grads, "gradient");
        MemorySegment[] b = segments(bufs, "momentum buffer");
        params.get(0).device.kernels().sgdMulti(p.length, sizes(params), p, g, b, lr, momentum, weightDecay, nesterov,
                first);
    }

    /**
     * One AdamW step for every tensor of {@code params} in one kernel call ({@code Kernels.adamwMulti}).
     *
     * @throws UnsupportedOperationException (one line, nothing updated) for a tensor that is not contiguous float32
     */
    public static void adamw(List<Tensor> params, List<Tensor> grads, List<Tensor> ms, List<Tensor> vs, float beta1,
                             float beta2, float eps, float decay, float stepSize, float bc2Sqrt) {
        if (params.isEmpty()) {
            return;
        }
        MemorySegment[] p = segments(params, "parameter");
        MemorySegment[] g = segments(grads, "gradient");
        MemorySegment[] m = segments(ms, "first moment");
        MemorySegment[] v = segments(vs, "second moment");
        params.get(0).device.kernels().adamwMulti(p.length, sizes(params), p, g, m, v, beta1, beta2, eps, decay,
                stepSize, bc2Sqrt);
    }
}
