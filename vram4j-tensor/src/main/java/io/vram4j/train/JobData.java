package io.vram4j.train;

import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharDataset;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.Dataset;
import io.vram4j.data.FashionMnist;
import io.vram4j.data.ImageDataset;
import io.vram4j.tensor.Device;

import java.nio.file.Path;
import java.util.Locale;

/**
 * The training and test sets of a {@link TrainJob}'s model, and where they came from.
 *
 * @param train training samples
 * @param test test (validation) samples
 * @param describe the source in words
 * @param origin {@code directory}, {@code system}, {@code bundled}, {@code file} or {@code fortunes}
 * @param vocabulary the characters (transformer), or null (mlp)
 */
record JobData(Dataset train, Dataset test, String describe, String origin, CharVocabulary vocabulary) {
    /** @return a trainer of {@code options}' model on {@code device}, which stays open when the trainer closes */
    Trainer trainer(Device device, TrainOptions options) {
        return Trainer.on(device, options, train.features(), train.numClasses(), vocabulary);
    }

    /** @return what a sample is: {@code windows} (transformer) or {@code samples} (mlp) */
    String unit() {
        return vocabulary != null ? "windows" : "samples";
    }

    /**
     * Resolves and reads the data of {@code options}' model, cut to its {@code limit} and {@code testLimit}.
     *
     * @param data the {@code --data} path, or null for the default source
     * @throws IllegalArgumentException naming {@code --data} or {@code --block-size} when the data cannot be used
     */
    static JobData load(TrainOptions options, Path data) {
        int limit = options.limit();
        if (options.isTransformer()) {
            CharCorpus corpus;
            try {
                corpus = CharCorpus.resolve(data);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--data: " + e.getMessage(), e);
            }
            CharVocabulary vocab = corpus.vocabulary();
            CharDataset train;
            CharDataset test;
            try {
                train = new CharDataset(corpus.trainText(), vocab, options.blockSize(), options.blockSize(), "training text");
                test = new CharDataset(corpus.validationText(), vocab, options.blockSize(), options.blockSize(), "validation text");
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--block-size " + options.blockSize() + " is too long for the text: " + e.getMessage(), e);
            }
            Dataset trainSet = Trainer.limit(train, limit);
            Dataset testSet = Trainer.limit(test, options.testLimit());
            return new JobData(trainSet, testSet, corpus.describe() + ", " + vocab.size() + " distinct characters",
                    corpus.origin().name().toLowerCase(Locale.ROOT), vocab);
        }
        FashionMnist.Source source;
        try {
            source = FashionMnist.resolve(data);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--data: " + e.getMessage(), e);
        }
        ImageDataset train;
        ImageDataset test;
        try {
            train = source.train();
            test = source.test();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException((source.origin() == FashionMnist.Origin.DIRECTORY ? "--data: " : "") + e.getMessage(), e);
        }
        if (limit > 0) {
            train = train.limit(limit);
        }
        return new JobData(train, test, source.describe(), source.origin().name().toLowerCase(Locale.ROOT), null);
    }
}
