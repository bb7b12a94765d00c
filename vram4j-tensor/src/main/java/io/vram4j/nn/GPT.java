package io.vram4j.nn;

import io.vram4j.autograd.NoGrad;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

import java.util.Map;

/**
 * A GPT-2-style language model (nanoGPT's layout, without weight tying): token and position embeddings
 * ({@code wte}, {@code wpe}), {@code nLayer} pre-LN {@link TransformerBlock}s ({@code h.0} ... ), a final
 * {@link LayerNorm} ({@code ln_f}) and a bias-free head ({@code lm_head}). Initialisation follows GPT-2:
 * N(0, 0.02) for linear and embedding weights, zero biases, and N(0, 0.02/sqrt(2 nLayer)) for the residual
 * projections ({@code c_proj}).
 *
 * <pre>{@code
 * GPT gpt = new GPT(dev, new GPT.Config(50257, 256, 4, 4, 128, 0.0f), new Generator(1337));
 * Tensor logits = gpt.forward(tokens);                       // int64 [B, T] -> float32 [B, T, vocab]
 * Tensor loss = Functional.crossEntropy(logits, targets);    // targets int64 [B, T]
 * }</pre>
 */
public final class GPT extends Module {
    /**
     * @param vocabSize number of tokens
     * @param blockSize maximum sequence length
     * @param nLayer number of transformer blocks
     * @param nHead attention heads per block
     * @param nEmbd model width (divisible by {@code nHead})
     * @param dropout residual and embedding dropout probability
     */
    public record Config(int vocabSize, int blockSize, int nLayer, int nHead, int nEmbd, float dropout) {
        /** Validates the sizes. */
        public Config {
            if (vocabSize <= 0 || blockSize <= 0 || nLayer < 0 || nHead <= 0 || nEmbd <= 0 || nEmbd % nHead != 0) {
                throw new IllegalArgumentException("invalid GPT config " + vocabSize + "/" + blockSize + "/" + nLayer
                        + "/" + nHead + "/" + nEmbd + " (nEmbd must be a multiple of nHead)");
            }
        }
    }

    private final Config config;
    private final Device device;
    private final Embedding wte;
    private final Embedding wpe;
    private final Dropout drop;
    private final Sequential blocks;
    private final LayerNorm lnF;
    private final Linear lmHead;

    /**
     * @param device where the parameters live
     * @param config the sizes
     * @param gen initialisation and dropout source
     */
    public GPT(Device device, Config config, Generator gen) {
        this.config = config;
        this.device = device;
        this.wte = registerModule("wte", new Embedding(device, config.vocabSize(), config.nEmbd(), gen));
        this.wpe = registerModule("wpe", new Embedding(device, config.blockSize(), config.nEmbd(), gen));
        this.drop = registerModule("drop", new Dropout(config.dropout(), gen));
        Module[] layers = new Module[config.nLayer()];
        for (int i = 0; i < layers.length; i++) {
            layers[i] = new TransformerBlock(device, config.nEmbd(), config.nHead(), config.dropout(), gen);
        }
        this.blocks = registerModule("h", new Sequential(layers));
        this.lnF = registerModule("ln_f", new LayerNorm(device, config.nEmbd()));
        this.lmHead = registerModule("lm_head", new Linear(device, config.nEmbd(), config.vocabSize(), false, gen));
        double projStd = 0.02 / Math.sqrt(2.0 * Math.max(1, config.nLayer()));
        try (NoGrad ng = NoGrad.enter()) {
            for (Map.Entry<String, Parameter> e : namedParameters().entrySet()) {
                String n = e.getKey();
                Parameter p = e.getValue();
                if (n.endsWith(".bias")) {
                    p.zero();
                } else if (n.endsWith("c_proj.weight")) {
                    p.fillNormal(0, projStd, gen);
                } else if (n.endsWith(".weight") && !n.contains("ln_")) {
                    p.fillNormal(0, 0.02, gen);
                }
            }
        }
    }

    /** @return the sizes */
    public Config config() {
        return config;
    }

    /**
     * @param tokens int32/int64 token ids {@code [B, T]} with {@code T <= blockSize}
     * @return float32 logits {@code [B, T, vocabSize]}
     */
    @Override
    public Tensor forward(Tensor tokens) {
        try (Tensor x = embed(tokens); Tensor h = blocks.call(x)) {
            return head(h);
        }
    }

    /**
     * The part before the blocks: token plus position embedding, then dropout. With {@link #blocks()} and
     * {@link #head} it splits {@link #forward} so that callers can run the blocks differently (e.g. checkpointed).
     *
     * @param tokens int32/int64 token ids {@code [B, T]} with {@code T <= blockSize}
     * @return float32 {@code [B, T, nEmbd]}
     */
    public Tensor embed(Tensor tokens) {
        if (tokens.dim() != 2) {
            throw new IllegalArgumentException("GPT expects tokens [B, T], got " + java.util.Arrays.toString(tokens.shape()));
        }
        int t = tokens.size(1);
        if (t > config.blockSize()) {
            throw new IllegalArgumentException("cannot forward a sequence of length " + t + ", block size is only "
                    + config.blockSize());
        }
        try (Tensor p = device.arangeLong(t); Tensor te = wte.call(tokens); Tensor pe = wpe.call(p);
             Tensor x = te.add(pe)) {
            return drop.call(x);
        }
    }

    /** @return the transformer blocks {@code h.0 ... h.(nLayer-1)}, applied in order */
    public Sequential blocks() {
        return blocks;
    }

    /**
     * The part after the blocks: final layer norm and the language-model head.
     *
     * @param h float32 {@code [B, T, nEmbd]}, the output of the blocks
     * @return float32 logits {@code [B, T, vocabSize]}
     */
    public Tensor head(Tensor h) {
        try (Tensor n = lnF.call(h)) {
            return lmHead.call(n);
        }
    }
}
