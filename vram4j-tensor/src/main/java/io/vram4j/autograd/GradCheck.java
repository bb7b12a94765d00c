package io.vram4j.autograd;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Function;

/**
 * Checks analytic gradients against finite differences (as {@code torch.autograd.gradcheck}, with its
 * {@code |analytic - numeric| <= atol + rtol * |numeric|} criterion and, by default, its {@code atol = 1e-5} and
 * {@code rtol = 1e-3}).
 *
 * <p>The runtime has no float64 dtype, so unlike PyTorch's gradcheck the function cannot run in double. What is
 * evaluated in which precision:
 * <ul>
 *   <li>{@code fn} runs in the tensors' dtype, float32 for the checked inputs (intermediates may be 16-bit when
 *       {@code fn} casts or autocasts); the analytic gradient is its float32 backward of {@code y.backward(v)}.</li>
 *   <li>The output {@code y} is reduced to {@code L = sum(y * v)} in double, with a fixed random {@code v}
 *       rounded to {@code y}'s dtype (exactly the {@code v} backward receives).</li>
 *   <li>The perturbed inputs {@code x +- h} are float32 (they are stored in the input tensor); the differences
 *       divide by the widths actually taken after that rounding, in double.</li>
 *   <li>The numeric derivative is Richardson-extrapolated central differences, in double:
 *       {@code D(h) = (L(x+h) - L(x-h)) / 2h} at {@code h = eps} and {@code 2 eps}, combined as
 *       {@code (4 D(eps) - D(2 eps)) / 3}, whose truncation error is O(eps^4) instead of O(eps^2).</li>
 * </ul>
 * The remaining error is float32 rounding of {@code y}: about {@code 2^-24 |y| / eps} per affected output
 * (outputs that do not depend on the perturbed element round identically and cancel). The fourth-order
 * formula allows a step as wide as {@link #EPS} = 1/32, which keeps that term near 1e-6 for values near 1; on
 * every primitive's case of the tests' table ({@code GradCheckCases}) on {@code host} the largest error is below
 * 1e-5 at that step, so PyTorch's tolerances hold with margin. Functions with steps (16-bit casts) or kinks need their own {@code eps}, wider
 * than the quantum and narrower than the distance to the kink, and looser tolerances.
 *
 * <p>Checked inputs are contiguous float32 tensors that require grad, on any device with data: {@code host}, or
 * device memory ({@code cuda}) that Java never dereferences. Their values are read once with
 * {@link Tensor#toFloatArray()}, and each perturbation writes the whole tensor back with
 * {@link Tensor#copyBytesFrom} (on device memory a synchronized host-to-device copy), so {@code fn} and its
 * backward run on the inputs' device with its kernels; outputs and gradients come back by
 * {@link Tensor#toFloatArray()}, and the vector {@code v} goes to the device through its tensor factory. Their
 * gradients are reset. {@code fn} must be deterministic and must not close its inputs; its result and
 * intermediates are closed here. Each checked element costs four evaluations of {@code fn} (and four copies of
 * its tensor to the device, plus two to restore it). Not thread-safe: the inputs are modified (and restored) in
 * place.
 */
public final class GradCheck {
    /** Default step: 1/32 (exact in float32), suited to smooth functions of values of magnitude about 1. */
    public static final double EPS = 1.0 / 32;
    /** Default absolute tolerance, as {@code torch.autograd.gradcheck}'s {@code atol}. */
    public static final double ATOL = 1e-5;
    /** Default relative tolerance (to |numeric|), as {@code torch.autograd.gradcheck}'s {@code rtol}. */
    public static final double RTOL = 1e-3;

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
     * @param fn the function of the inputs
     * @param eps the finite-difference step (differences are taken at {@code eps} and {@code 2 eps})
     * @param atol absolute tolerance
     * @param rtol tolerance relative to |numeric|
     * @param inputs the inputs, of any shapes and dtypes, on one device with data ({@code host} or {@code cuda});
     *     those that require grad are checked and must be contiguous float32
     * @return the comparison
     * @throws IllegalArgumentException when no input requires grad, or a checked input is not a contiguous
     *     float32 tensor with data (one on {@code sim} has none)
     */
    public static Result run(Function<Tensor[], Tensor> fn, double eps, double atol, double rtol, Tensor... inputs) {
        List<Integer> checked = new ArrayList<>();
        for (int i = 0; i < inputs.length; i++) {
            Tensor t = inputs[i];
            if (t != null && t.requiresGrad()) {
                if (t.dtype() != DType.FLOAT32 || !t.isContiguous() || !t.device().hasStorage()) {
                    throw new IllegalArgumentException("gradcheck inputs must be contiguous float32 tensors with data"
                            + " (host or device memory), not " + t.dtype() + " " + (t.isContiguous() ? "contiguous" : "strided")
                            + " on " + t.device().description());
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
            }
            Tensor vt = y.device().tensor(vf, shape.length == 0 ? new int[0] : shape);
            if (shape.length == 0) {
                vt = vt.reshape();
            }
            // v exactly as backward sees it (rounded to a 16-bit output's dtype), so L and the gradient agree
            Tensor vy = vt.to(y.dtype());
            float[] vb = vy.toFloatArray();
            for (int i = 0; i < v.length; i++) {
                v[i] = vb[i];
            }
            y.backward(vy);
        }
        List<Mismatch> bad = new ArrayList<>();
        long count = 0;
        double maxErr = 0;
        for (int i : checked) {
            Tensor x = inputs[i];
            float[] analytic = x.grad() == null ? new float[Math.toIntExact(x.numel())] : x.grad().toFloatArray();
            float[] values = x.toFloatArray();
            for (int j = 0; j < values.length; j++) {
                float orig = values[j];
                double numeric;
                try {
                    double[] near = difference(fn, inputs, v, x, values, j, eps);
                    double[] far = difference(fn, inputs, v, x, values, j, 2 * eps);
                    // Richardson: D(h) = f' + c h^2 + O(h^4), so (H2^2 D1 - H1^2 D2) / (H2^2 - H1^2) = f' + O(h^4),
                    // with H1, H2 the half-widths actually taken after rounding x +- h to float32
                    double h1 = near[1] * near[1];
                    double h2 = far[1] * far[1];
                    numeric = (h2 * near[0] - h1 * far[0]) / (h2 - h1);
                } finally {
                    store(x, values, j, orig);
                }
                double a = analytic[j];
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

    /**
     * @return the central difference {@code (L(x+) - L(x-)) / (x+ - x-)} of element {@code j} of {@code x} with
     *     {@code x+-} = {@code values[j] +- h} rounded to float32, and the half-width {@code (x+ - x-) / 2} taken;
     *     {@code x} is left holding {@code x-}
     */
    private static double[] difference(Function<Tensor[], Tensor> fn, Tensor[] inputs, double[] v, Tensor x, float[] values,
                                       int j, double h) {
        float orig = values[j];
        float xp = (float) (orig + h);
        float xm = (float) (orig - h);
        store(x, values, j, xp);
        double plus = evaluate(fn, inputs, v);
        store(x, values, j, xm);
        double minus = evaluate(fn, inputs, v);
        values[j] = orig;
        double width = (double) xp - (double) xm;
        return new double[] {(plus - minus) / width, width / 2};
    }

    /**
     * Sets element {@code j} of {@code values} (the row-major values of the contiguous float32 {@code x}) to
     * {@code value} and writes them all to {@code x} with {@link Tensor#copyBytesFrom}, which reaches device
     * memory through the device's copy calls; bypasses autograd.
     */
    private static void store(Tensor x, float[] values, int j, float value) {
        values[j] = value;
        x.copyBytesFrom(MemorySegment.ofArray(values));
    }

    private static double evaluate(Function<Tensor[], Tensor> fn, Tensor[] inputs, double[] v) {
        try (NoGrad ng = NoGrad.enter(); MemoryScope s = MemoryScope.open()) {
            float[] y = fn.apply(inputs).toFloatArray();
            double sum = 0;
            for (int i = 0; i < y.length; i++) {
                sum += (double) y[i] * v[i];
            }
            return sum;
        }
    }
}
