package io.vram4j.bench;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.util.Pair;
import io.vram4j.data.Batch;

/**
 * The peer: DJL 0.35.1 on PyTorch 2.7.1 CPU, the MLP written as DJL users write it ({@code SequentialBlock} of
 * {@code Linear} and ReLU, {@code Loss.softmaxCrossEntropyLoss()}, {@code Optimizer.sgd()}), trained by the
 * loop of DJL's {@code EasyTrain.trainBatch} without listeners: a {@link GradientCollector} around forward,
 * loss and backward, then {@link Trainer#step()}. Each step's arrays live in a sub-manager closed at the end
 * of the step, the DJL counterpart of our {@code MemoryScope}.
 *
 * <p>Threads: {@code ai.djl.pytorch.num_threads} (PyTorch's intra-op threads, {@code torch.set_num_threads})
 * is set to the configured count and {@code ai.djl.pytorch.num_interop_threads} to 1 before the engine
 * starts; both are read once per process. With {@code -Dai.djl.offline=true} the native libtorch is taken
 * from the {@code pytorch-native-cpu} jar and {@code libdjl_torch} from {@code pytorch-jni}: nothing is
 * downloaded.
 */
final class DjlStep implements StepEngine {
    private final Config config;
    private final Model model;
    private final Trainer trainer;

    DjlStep(Config config) {
        this.config = config;
        System.setProperty("ai.djl.pytorch.num_threads", Integer.toString(config.threads()));
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        if (System.getProperty("ai.djl.offline") == null) {
            System.setProperty("ai.djl.offline", "true");
        }
        Engine engine = Engine.getEngine("PyTorch");
        SequentialBlock mlp = new SequentialBlock()
                .add(Linear.builder().setUnits(config.hidden()).build())
                .add(Activation.reluBlock())
                .add(Linear.builder().setUnits(config.hidden()).build())
                .add(Activation.reluBlock())
                .add(Linear.builder().setUnits(Config.CLASSES).build());
        this.model = Model.newInstance("mlp", Device.cpu(), engine.getEngineName());
        model.setBlock(mlp);
        Optimizer sgd = Optimizer.sgd().setLearningRateTracker(Tracker.fixed(config.lr()))
                .optMomentum(config.momentum()).build();
        DefaultTrainingConfig training = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .optOptimizer(sgd).optDevices(new Device[] {Device.cpu()});
        this.trainer = model.newTrainer(training);
        trainer.initialize(new Shape(config.batch(), Config.FEATURES));
    }

    @Override
    public String description() {
        Engine e = Engine.getEngine("PyTorch");
        return "DJL " + Engine.getDjlVersion() + " on PyTorch " + e.getVersion() + " CPU, "
                + System.getProperty("ai.djl.pytorch.num_threads") + " intra-op threads: MLP 784-" + config.hidden()
                + "-" + config.hidden() + "-10, SGD lr " + config.lr() + " momentum " + config.momentum();
    }

    @Override
    public double step(Batch batch) {
        try (NDManager step = trainer.getManager().newSubManager()) {
            NDArray x = step.create(batch.x(), new Shape(batch.size(), batch.features()));
            long[] labels = new long[batch.size()];
            for (int i = 0; i < labels.length; i++) {
                labels[i] = batch.y()[i];
            }
            NDArray y = step.create(labels);
            double loss;
            try (GradientCollector collector = trainer.newGradientCollector()) {
                NDList predictions = trainer.forward(new NDList(x));
                NDArray l = trainer.getLoss().evaluate(new NDList(y), predictions);
                collector.backward(l);
                loss = l.getFloat();
            }
            trainer.step();
            return loss;
        }
    }

    /**
     * What DJL can account for: the bytes of the arrays it holds as the model's parameters, and of their
     * gradients (which DJL keeps between steps, zeroed, as {@code zero_grad(set_to_none=False)}). Activations
     * saved for backward and PyTorch's temporaries live inside libtorch and are not visible through DJL.
     */
    @Override
    public java.util.Map<String, Long> reportedMemory() {
        long params = 0;
        long grads = 0;
        for (Pair<String, Parameter> p : model.getBlock().getParameters()) {
            NDArray a = p.getValue().getArray();
            long bytes = a.size() * a.getDataType().getNumOfBytes();
            params += bytes;
            if (a.hasGradient()) {
                try (NDArray g = a.getGradient()) {
                    grads += g.size() * g.getDataType().getNumOfBytes();
                } catch (IllegalStateException e) {
                    // requires grad, but no backward has produced one yet
                }
            }
        }
        java.util.Map<String, Long> m = new java.util.LinkedHashMap<>();
        m.put("parameter arrays", params);
        m.put("gradient arrays", grads);
        return m;
    }

    @Override
    public void resetPeaks() {
        // DJL keeps no peaks on CPU
    }

    @Override
    public void close() {
        try {
            trainer.close();
        } finally {
            model.close();
        }
    }
}
