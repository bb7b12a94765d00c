package io.vram4j.autograd;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Function;

/**
 * Checks analytic gradients against finite differences (as {@code torch.autograd.gradcheck}). The output
 * {@code y = fn(inputs)} is reduced to {@code L = sum(y * v)} with a fixed random {@code v}; the analytic
 * gradient of {@code L} comes from {@code y.backward(v)}, the numeric one from central differences
 * {@code (L(x + eps) - L(x - eps)) / 2 eps} per input element. {@code L}, the differences and the comparison
 * are computed in float64; the function itself runs in the tensors' dtype, so tolerances must allow for
 * float32 rounding.
 *
 * <p>Checked inputs are contiguous float32 {@code host} tensors that require grad; their gradients are reset.
 * {@code fn} must be deterministic and must not close its inputs; its result and intermediates are closed
 * here.
 */
public final class GradCheck {
    /** Default step, suited to float32 evaluation of smooth functions of values near 1. */
    public static final double EPS = 1e-2;
    /** Default absolute tolerance. */
    public static final double ATOL = 2e-3;
    /** Default relative tolerance. */
    public static final double RTOL = 2e-2;

    private GradCheck() {
    }

    /** One mismatching element. */
    public record Mismatch(int input, long index, double analytic, double numeric) {
    }

    /**
     * @param mismatches elements outside the tolerance (at most 10 kept)
     * @param checked how many elements were compared
     * @param maxAbsError the largest |analytic - numeric|
     */
    public record Result(List<Mismatch> mismatches, long checked, double maxAbsError) {
        /** @return true when every element agreed */
        public boolean ok() {
            return mismatches.isEmpty();
        }
    }

    /**
     * Checks with the default step and tolerances.
     *
     * @throws AssertionError listing mismatching elements
     */
    public static void check(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        check(fn, EPS, ATOL, RTOL, inputs);
    }

    /**
     * @throws AssertionError listing mismatching elements
     */
    public static void check(Function<Tensor[], Tensor> fn, double eps, double atol, double rtol, Tensor... inputs) {
        Result r = run(fn, eps, atol, rtol, inputs);
        if (!r.ok()) {
            StringBuilder sb = new StringBuilder("gradcheck failed (" + r.checked() + " elements, max abs error "
                    + r.maxAbsError() + "):");
            for (Mismatch m : r.mismatches()) {
                sb.append("\n  input ").append(m.input()).append(" element ").append(m.index()).append(": analytic ")
                        .append(m.analytic()).append(", numeric ").append(m.numeric());
            }
            throw new AssertionError(sb.toString());
        }
    }

    /**
     * @param eps the finite-difference step
     * @param atol absolute tolerance
     * @param rtol tolerance relative to |numeric|
     * @return the comparison
     */
    public static Result run(Function<Tensor[], Tensor> fn, double eps, double atol, double rtol, Tensor... inputs) {
        List<Integer> checked = new ArrayList<>();
        for (int i = 0; i < inputs.length; i++) {
            Tensor t = inputs[i];
            if (t != null && t.requiresGrad()) {
                if (t.dtype() != DType.FLOAT32 || !t.isContiguous() || !t.device().hasStorage()) {
                    throw new IllegalArgumentException("gradcheck inputs must be contiguous float32 host tensors");
                }
                t.setGrad(null);
                checked.add(i);
            }
        }
        if (checked.isEmpty()) {
            throw new IllegalArgumentException("no input requires grad");
        }
        double[] v;
        try (MemoryScope s = MemoryScope.open()) {
            Tensor y = fn.apply(inputs);
            int[] shape = y.shape();
            Random rnd = new Random(1234);
            v = new double[Math.toIntExact(y.numel())];
            float[] vf = new float[v.length];
            for (int i = 0; i < v.length; i++) {
                vf[i] = (float) (rnd.nextDouble() * 2 - 1);
                v[i] = vf[i];
            }
            Tensor vt = y.device().tensor(vf, shape.length == 0 ? new int[0] : shape);
            if (shape.length == 0) {
                vt = vt.reshape();
            }
            y.backward(vt.to(y.dtype()));
        }
        List<Mismatch> bad = new ArrayList<>();
        long count = 0;
        double maxErr = 0;
        for (int i : checked) {
            Tensor x = inputs[i];
            float[] analytic = x.grad() == null ? new float[Math.toIntExact(x.numel())] : x.grad().toFloatArray();
            MemorySegment seg = x.data();
            for (long j = 0; j < x.numel(); j++) {
                float orig = seg.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, j);
                seg.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, j, (float) (orig + eps));
                double plus = evaluate(fn, inputs, v);
                seg.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, j, (float) (orig - eps));
                double minus = evaluate(fn, inputs, v);
                seg.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, j, orig);
                double h = ((double) (float) (orig + eps) - (double) (float) (orig - eps));
                double numeric = (plus - minus) / h;
                double a = analytic[(int) j];
                double err = Math.abs(a - numeric);
                maxErr = Math.max(maxErr, err);
                count++;
                if (!(err <= atol + rtol * Math.abs(numeric)) && bad.size() < 10) {
                    bad.add(new Mismatch(i, j, a, numeric));
                }
            }
        }
        return new Result(List.copyOf(bad), count, maxErr);
    }

    private static double evaluate(Function<Tensor[], Tensor> fn, Tensor[] inputs, double[] v) {
        try (NoGrad ng = NoGrad.enter(); MemoryScope s = MemoryScope.open()) {
            float[] y = fn.apply(inputs).toFloatArray();
            double sum = 0;
            for (int i = 0; i < y.length; i++) {
                sum += y[i] * v[i];
            }
            return sum;
        }
    }
}
