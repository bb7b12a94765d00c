package io.vram4j.train;

import io.vram4j.autograd.NoGrad;
import io.vram4j.data.Batch;
import io.vram4j.data.CharVocabulary;
import io.vram4j.nn.GPT;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

/**
 * A character-level language model: {@link GPT} (token and position embedding, {@link TrainOptions#layers()}
 * pre-LN blocks of causal self-attention and MLP, final layer norm, head) over a {@link CharVocabulary}, trained
 * with cross-entropy on next-character prediction. A sample of the data set is a window of
 * {@code blockSize + 1} token ids (as floats): the model reads the first {@code blockSize} and predicts the
 * last {@code blockSize}. Statistics count characters: the loss is the mean per character (in nats; divide
 * by ln 2 for bits per character) and the accuracy is the fraction of characters predicted exactly.
 * Checkpointing splits the blocks into {@link TrainOptions#checkpoint()} segments.
 */
final class CharTransformer extends ModelNetwork {
    private final CharVocabulary vocabulary;
    private final GPT gpt;

    /** @param dev the device (owned: closed with the network, which does not close its allocator) */
    CharTransformer(Device dev, TrainOptions options, CharVocabulary vocabulary) {
        super(dev, options, new GPT(dev, new GPT.Config(vocabulary.size(), options.blockSize(), options.layers(),
                options.heads(), options.hidden(), 0f), new Generator(options.seed())));
        this.vocabulary = vocabulary;
        this.gpt = (GPT) model;
    }

    @Override
    public String description() {
        return options.describe(options.blockSize() + 1, vocabulary.size());
    }

    /** @throws UnsupportedOperationException always: inputs and targets are cut from the token windows on the host */
    @Override
    Tensor[] tensors(io.vram4j.data.DeviceBatch batch) {
        throw new UnsupportedOperationException("the transformer cuts its inputs and targets from token windows on "
                + "the host; batches already on the device are for the mlp");
    }

    @Override
    Tensor[] tensors(Batch batch, int from, int count) {
        int f = batch.features();
        int t = f - 1;
        long[] x = new long[count * t];
        long[] y = new long[count * t];
        float[] src = batch.x();
        for (int i = 0; i < count; i++) {
            int base = (from + i) * f;
            for (int j = 0; j < t; j++) {
                x[i * t + j] = (long) src[base + j];
                y[i * t + j] = (long) src[base + j + 1];
            }
        }
        return new Tensor[] {dev.tensor(x, count, t), dev.tensor(y, count, t)};
    }

    @Override
    Tensor[] placeholders(int count) {
        int t = options.blockSize();
        return new Tensor[] {dev.empty(DType.INT64, count, t), dev.empty(DType.INT64, count, t)};
    }

    @Override
    Tensor logits(Tensor input, boolean training) {
        if (training && options.checkpoint() > 0) {
            try (Tensor x = gpt.embed(input);
                 Tensor h = Checkpoint.checkpointSequential(gpt.blocks(), Math.min(options.checkpoint(), options.layers()), x)) {
                return gpt.head(h);
            }
        }
        return gpt.forward(input);
    }

    @Override
    int predictionsPerSample() {
        return options.blockSize();
    }

    /**
     * Generates text by sampling one character at a time from the model's softmax at {@code temperature},
     * feeding back the last {@code blockSize} characters (host only).
     *
     * @param prompt the start; characters outside the vocabulary are dropped; empty starts from a newline (or
     *     the first token)
     * @param length characters to generate
     * @param temperature divides the logits; {@code > 0}
     * @param seed the sampling seed
     * @return the prompt followed by the generated characters
     */
    String sample(String prompt, int length, double temperature, long seed) {
        ensureOpen();
        if (dev.isSimulated()) {
            throw new UnsupportedOperationException("sampling needs a device with data, not " + dev.description());
        }
        if (!(temperature > 0)) {
            throw new IllegalArgumentException("temperature must be positive, got " + temperature);
        }
        StringBuilder text = new StringBuilder();
        for (char c : prompt.toCharArray()) {
            if (vocabulary.encode(c) >= 0) {
                text.append(c);
            }
        }
        if (text.isEmpty()) {
            text.append(vocabulary.encode('\n') >= 0 ? '\n' : vocabulary.decode(0));
        }
        Generator gen = new Generator(seed);
        model.eval();
        int v = vocabulary.size();
        for (int n = 0; n < length; n++) {
            int start = Math.max(0, text.length() - options.blockSize());
            int t = text.length() - start;
            long[] ids = new long[t];
            for (int i = 0; i < t; i++) {
                ids[i] = vocabulary.encode(text.charAt(start + i));
            }
            float[] row;
            try (NoGrad ng = NoGrad.enter(); MemoryScope scope = MemoryScope.open()) {
                Tensor logits = gpt.forward(dev.tensor(ids, 1, t));
                Tensor last = logits.narrow(1, t - 1, 1).reshape(v);
                row = last.toFloatArray();
            }
            text.append(vocabulary.decode(draw(row, temperature, gen)));
        }
        return text.toString();
    }

    private static int draw(float[] logits, double temperature, Generator gen) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double[] p = new double[logits.length];
        double sum = 0;
        for (int i = 0; i < p.length; i++) {
            p[i] = Math.exp((logits[i] - max) / temperature);
            sum += p[i];
        }
        double u = gen.nextDouble() * sum;
        for (int i = 0; i < p.length; i++) {
            u -= p[i];
            if (u <= 0) {
                return i;
            }
        }
        return p.length - 1;
    }
}
