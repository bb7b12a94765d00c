package io.vram4j.nn;

import io.vram4j.tensor.Tensor;

import java.util.List;

/** Applies its children in order (named {@code 0}, {@code 1}, ...), closing each intermediate output once used. */
public final class Sequential extends Module {
    private final List<Module> layers;

    /** @param layers the modules, applied first to last; closed with this one */
    public Sequential(Module... layers) {
        this.layers = List.of(layers);
        for (int i = 0; i < layers.length; i++) {
            registerModule(Integer.toString(i), layers[i]);
        }
    }

    @Override
    public Tensor forward(Tensor input) {
        Tensor cur = input;
        for (Module m : layers) {
            Tensor next = m.call(cur);
            if (cur != input) {
                cur.close();
            }
            cur = next;
        }
        return cur == input ? input.view(input.shape()) : cur;
    }

    /** @return the layers */
    public List<Module> layers() {
        return layers;
    }
}
