package io.vram4j.train;

import io.vram4j.tensor.SDPBackend;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The enums' parsing (the {@code train} command's messages) and the builder of {@link TrainOptions}. */
class TrainOptionsBuilderTest {
    @Test
    void enumsParseTheCommandLineSpellingInAnyCase() {
        assertEquals(ModelKind.TRANSFORMER, ModelKind.parse("Transformer"));
        assertEquals(ModelKind.MLP, ModelKind.parse("mlp"));
        assertEquals(OptimizerKind.ADAMW, OptimizerKind.parse("AdamW"));
        assertEquals(OptimizerKind.SGD, OptimizerKind.parse("sgd"));
        assertEquals(Precision.BF16, Precision.parse("BF16"));
        assertEquals(Precision.FP16, Precision.parse("fp16"));
        for (String off : new String[] {"off", "none", "fp32", "FLOAT32"}) {
            assertEquals(Precision.OFF, Precision.parse(off), off);
        }
        assertEquals("transformer", ModelKind.TRANSFORMER.toString());
        assertEquals("adamw", OptimizerKind.ADAMW.toString());
        assertEquals("fp16", Precision.FP16.toString());
    }

    @Test
    void enumsRefuseOtherNamesWithTheOptionAndTheAcceptedNames() {
        assertEquals("--model: unknown model 'cnn'; expected mlp or transformer",
                assertThrows(IllegalArgumentException.class, () -> ModelKind.parse("CNN")).getMessage());
        assertEquals("--optimizer: unknown optimizer 'adam'; expected sgd or adamw",
                assertThrows(IllegalArgumentException.class, () -> OptimizerKind.parse("adam")).getMessage());
        assertEquals("--amp: unknown precision 'fp8'; expected bf16 or fp16",
                assertThrows(IllegalArgumentException.class, () -> Precision.parse("fp8")).getMessage());
        assertEquals("--amp: unknown precision ''; expected bf16 or fp16",
                assertThrows(IllegalArgumentException.class, () -> Precision.parse("")).getMessage());
        assertThrows(NullPointerException.class, () -> ModelKind.parse(null));
    }

    @Test
    void builderStartsFromTheDefaultsAndChecksOnBuild() {
        assertEquals(TrainOptions.defaults(), TrainOptions.builder().build());
        TrainOptions o = TrainOptions.builder().model(ModelKind.TRANSFORMER).hidden(64).heads(4).layers(2)
                .optimizer(OptimizerKind.ADAMW).amp(Precision.BF16).schedule("CONSTANT").build();
        assertEquals(ModelKind.TRANSFORMER, o.model());
        assertEquals(64, o.hidden());
        assertEquals("constant", o.schedule());
        assertEquals(Precision.BF16, o.amp());
        assertEquals(o, o.toBuilder().build());
        assertEquals(o.hashCode(), o.toBuilder().build().hashCode());
        assertNotEquals(o, o.withSeed(7));
        TrainOptions.Builder bad = TrainOptions.builder().model(ModelKind.TRANSFORMER).hidden(30).heads(4);
        assertEquals("--heads 4 must divide the model width --hidden 30",
                assertThrows(IllegalArgumentException.class, bad::build).getMessage());
        assertEquals("--micro-batch 200 is larger than --batch-size 128",
                assertThrows(IllegalArgumentException.class, () -> TrainOptions.builder().microBatch(200).build()).getMessage());
        assertThrows(NullPointerException.class, () -> TrainOptions.builder().amp(null).build());
    }

    @Test
    void attentionIsFusedByDefaultAndTheUnfusedPathIsATechniqueOfTheTransformer() {
        TrainOptions lm = TrainOptions.defaults(ModelKind.TRANSFORMER);
        assertEquals(SDPBackend.FLASH_ATTENTION, lm.attention());
        assertEquals("", lm.techniques());
        TrainOptions math = lm.withAttention(SDPBackend.MATH);
        assertEquals(SDPBackend.MATH, math.attention());
        assertNotEquals(lm, math);
        assertEquals(math, math.toBuilder().build());
        assertEquals("unfused (math) attention", math.techniques());
        assertEquals("", TrainOptions.defaults().withAttention(SDPBackend.MATH).techniques(), "the MLP has no attention");
        assertThrows(NullPointerException.class, () -> TrainOptions.builder().attention(null).build());
    }

    @Test
    void modelDefaultsFollowTheOptimizer() {
        TrainOptions lm = TrainOptions.defaults(ModelKind.TRANSFORMER);
        assertEquals(OptimizerKind.ADAMW, lm.optimizer());
        assertEquals(OptimizerKind.ADAMW.defaultLr(), lm.lr());
        assertEquals(OptimizerKind.ADAMW.defaultWeightDecay(), lm.weightDecay());
        assertEquals(TrainOptions.defaults(), TrainOptions.defaults(ModelKind.MLP));
    }
}
