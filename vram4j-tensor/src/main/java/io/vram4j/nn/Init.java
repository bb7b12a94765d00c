package io.vram4j.nn;

import io.vram4j.autograd.NoGrad;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

/**
 * Weight initialisation, in place and unrecorded (as {@code torch.nn.init}). Fan-in and fan-out follow
 * PyTorch: for a weight {@code [out, in, ...]}, fan-in is {@code in × receptive field}. On {@code sim} nothing
 * is drawn.
 */
public final class Init {
    private Init() {
    }

    /** @return {@code t}, filled from U[low, high) */
    public static Tensor uniform(Tensor t, double low, double high, Generator gen) {
        try (NoGrad ng = NoGrad.enter()) {
            return t.fillUniform(low, high, gen);
        }
    }

    /** @return {@code t}, filled from N(mean, std²) */
    public static Tensor normal(Tensor t, double mean, double std, Generator gen) {
        try (NoGrad ng = NoGrad.enter()) {
            return t.fillNormal(mean, std, gen);
        }
    }

    /** @return {@code t}, filled with {@code value} */
    public static Tensor constant(Tensor t, float value) {
        try (NoGrad ng = NoGrad.enter()) {
            return t.fill(value);
        }
    }

    /** @return the fan-in of a weight of at least 2 dimensions */
    public static int fanIn(Tensor t) {
        if (t.dim() < 2) {
            throw new IllegalArgumentException("fan in can not be computed for a tensor with fewer than 2 dimensions");
        }
        long receptive = t.numel() / ((long) t.size(0) * t.size(1));
        return Math.toIntExact(t.size(1) * receptive);
    }

    /**
     * Kaiming (He) uniform for leaky-ReLU slope {@code a} on fan-in: bound {@code gain * sqrt(3 / fanIn)} with
     * {@code gain = sqrt(2 / (1 + a²))}. PyTorch's {@code Linear} uses {@code a = sqrt(5)}, giving
     * {@code 1 / sqrt(fanIn)}.
     *
     * @return {@code t}
     */
    public static Tensor kaimingUniform(Tensor t, double a, Generator gen) {
        double gain = Math.sqrt(2.0 / (1 + a * a));
        double bound = gain * Math.sqrt(3.0 / fanIn(t));
        return uniform(t, -bound, bound, gen);
    }
}
