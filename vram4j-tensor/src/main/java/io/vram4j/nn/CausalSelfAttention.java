package io.vram4j.nn;

import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

/**
 * Multi-head causal self-attention as in GPT-2/nanoGPT: a fused {@code c_attn} projection to q, k, v
 * ({@code [C, 3C]}), {@code nHead} heads of size {@code C / nHead}, scaled dot-product attention with a causal
 * mask, then {@code c_proj}. Dropout on the attention probabilities is not applied (nanoGPT's flash path);
 * residual dropout is applied to the output in training mode.
 */
public final class CausalSelfAttention extends Module {
    private final Linear cAttn;
    private final Linear cProj;
    private final Dropout residDropout;
    private final int nEmbd;
    private final int nHead;

    /**
     * @param device where the parameters live
     * @param nEmbd the model width {@code C}
     * @param nHead the number of heads; must divide {@code nEmbd}
     * @param dropout residual dropout probability
     * @param gen initialisation and dropout source
     */
    public CausalSelfAttention(Device device, int nEmbd, int nHead, float dropout, Generator gen) {
        if (nHead <= 0 || nEmbd % nHead != 0) {
            throw new IllegalArgumentException("nHead " + nHead + " must divide nEmbd " + nEmbd);
        }
        this.nEmbd = nEmbd;
        this.nHead = nHead;
        this.cAttn = registerModule("c_attn", new Linear(device, nEmbd, 3 * nEmbd, true, gen));
        this.cProj = registerModule("c_proj", new Linear(device, nEmbd, nEmbd, true, gen));
        this.residDropout = registerModule("resid_dropout", new Dropout(dropout, gen));
    }

    /** @param x {@code [B, T, C]} @return {@code [B, T, C]} */
    @Override
    public Tensor forward(Tensor x) {
        int b = x.size(0);
        int t = x.size(1);
        int hd = nEmbd / nHead;
        Tensor y;
        try (Tensor qkv = cAttn.call(x);
             Tensor q = heads(qkv, 0, b, t, hd);
             Tensor k = heads(qkv, 1, b, t, hd);
             Tensor v = heads(qkv, 2, b, t, hd);
             Tensor att = Functional.scaledDotProductAttention(q, k, v, true);
             Tensor merged = att.transpose(1, 2);
             Tensor flat = merged.reshape(b, t, nEmbd);
             Tensor proj = cProj.call(flat)) {
            y = residDropout.call(proj);
        }
        return y;
    }

    private Tensor heads(Tensor qkv, int which, int b, int t, int hd) {
        try (Tensor part = qkv.narrow(2, which * nEmbd, nEmbd); Tensor split = part.view(b, t, nHead, hd)) {
            return split.transpose(1, 2);
        }
    }
}
