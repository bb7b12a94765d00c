package io.vram4j.nn;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

/**
 * {@code y = x W^T + b} (as {@code torch.nn.Linear}): weight {@code [out, in]} initialised Kaiming-uniform with
 * {@code a = sqrt(5)}, i.e. U(-1/sqrt(in), 1/sqrt(in)), and bias {@code [out]} from the same bound, drawn in
 * that order from the generator. Float32 parameters.
 *
 * <pre>{@code
 * Linear fc = new Linear(dev, 784, 10, true, new Generator(0));
 * Tensor y = fc.forward(x);        // x [batch, 784] -> y [batch, 10]
 * }</pre>
 */
public final class Linear extends Module {
    private final Parameter weight;
    private final Parameter bias;
    private final int inFeatures;
    private final int outFeatures;

    /**
     * @param device where the parameters live
     * @param inFeatures input size
     * @param outFeatures output size
     * @param bias whether to add a learned bias
     * @param gen the initialisation source
     */
    public Linear(Device device, int inFeatures, int outFeatures, boolean bias, Generator gen) {
        this.inFeatures = inFeatures;
        this.outFeatures = outFeatures;
        Tensor w = device.empty(DType.FLOAT32, outFeatures, inFeatures);
        Init.kaimingUniform(w, Math.sqrt(5), gen);
        this.weight = registerParameter("weight", w);
        if (bias) {
            Tensor b = device.empty(DType.FLOAT32, outFeatures);
            double bound = inFeatures > 0 ? 1 / Math.sqrt(inFeatures) : 0;
            Init.uniform(b, -bound, bound, gen);
            this.bias = registerParameter("bias", b);
        } else {
            this.bias = null;
        }
    }

    /** A linear layer with bias. */
    public Linear(Device device, int inFeatures, int outFeatures, Generator gen) {
        this(device, inFeatures, outFeatures, true, gen);
    }

    /** @param input {@code [..., in]} @return {@code [..., out]} */
    @Override
    public Tensor forward(Tensor input) {
        return Functional.linear(input, weight, bias);
    }

    /** @return the weight {@code [out, in]} */
    public Parameter weight() {
        return weight;
    }

    /** @return the bias {@code [out]}, or null */
    public Parameter bias() {
        return bias;
    }

    /** @return the input size */
    public int inFeatures() {
        return inFeatures;
    }

    /** @return the output size */
    public int outFeatures() {
        return outFeatures;
    }
}
