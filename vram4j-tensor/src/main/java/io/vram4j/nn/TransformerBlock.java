package io.vram4j.nn;

import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

/**
 * A pre-LayerNorm transformer block (GPT-2): {@code x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))} with
 * {@code mlp = c_proj(gelu(c_fc(x)))}, widths {@code C -> 4C -> C}, and residual dropout.
 */
public final class TransformerBlock extends Module {
    private final LayerNorm ln1;
    private final CausalSelfAttention attn;
    private final LayerNorm ln2;
    private final Linear cFc;
    private final GELU gelu;
    private final Linear cProj;
    private final Dropout dropout;

    /**
     * @param device where the parameters live
     * @param nEmbd model width
     * @param nHead attention heads
     * @param dropout residual dropout probability
     * @param gen initialisation and dropout source
     */
    public TransformerBlock(Device device, int nEmbd, int nHead, float dropout, Generator gen) {
        this.ln1 = registerModule("ln_1", new LayerNorm(device, nEmbd));
        this.attn = registerModule("attn", new CausalSelfAttention(device, nEmbd, nHead, dropout, gen));
        this.ln2 = registerModule("ln_2", new LayerNorm(device, nEmbd));
        this.cFc = registerModule("c_fc", new Linear(device, nEmbd, 4 * nEmbd, true, gen));
        this.gelu = registerModule("gelu", new GELU());
        this.cProj = registerModule("c_proj", new Linear(device, 4 * nEmbd, nEmbd, true, gen));
        this.dropout = registerModule("dropout", new Dropout(dropout, gen));
    }

    /** @param x {@code [B, T, C]} @return {@code [B, T, C]} */
    @Override
    public Tensor forward(Tensor x) {
        Tensor x1;
        try (Tensor a = ln1.call(x); Tensor b = attn.call(a)) {
            x1 = x.add(b);
        }
        try (x1; Tensor c = ln2.call(x1); Tensor d = cFc.call(c); Tensor e = gelu.call(d);
             Tensor f = cProj.call(e); Tensor g = dropout.call(f)) {
            return x1.add(g);
        }
    }
}
