package io.vram4j.nn;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Tensor;

/** Layer normalisation over the last dimension with learned weight (ones) and bias (zeros); eps 1e-5 by default. */
public final class LayerNorm extends Module {
    private final Parameter weight;
    private final Parameter bias;
    private final float eps;

    /** A layer norm over {@code dim} features with eps 1e-5 */
    public LayerNorm(Device device, int dim) {
        this(device, dim, 1e-5f, true);
    }

    /**
     * @param device where the parameters live
     * @param dim the normalised (last) dimension's extent
     * @param eps added to the variance
     * @param bias whether to learn a bias
     */
    public LayerNorm(Device device, int dim, float eps, boolean bias) {
        this.eps = eps;
        this.weight = registerParameter("weight", device.ones(DType.FLOAT32, dim));
        this.bias = bias ? registerParameter("bias", device.zeros(DType.FLOAT32, dim)) : null;
    }

    @Override
    public Tensor forward(Tensor input) {
        return Functional.layerNorm(input, weight, bias, eps);
    }

    /** @return the weight {@code [dim]} */
    public Parameter weight() {
        return weight;
    }

    /** @return the bias {@code [dim]}, or null */
    public Parameter bias() {
        return bias;
    }
}
