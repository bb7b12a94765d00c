package io.vram4j.bench;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Kernels;
import io.vram4j.data.Batch;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.train.TrainOptions;
import io.vram4j.train.Trainer;

/**
 * Our side: {@link Trainer#trainStep} (the step {@code ./vram4j train} runs) on the {@code host} device through
 * its caching allocator. The compute thread count is the {@code vram4j.compute.threads} system property,
 * which the kernels read once: this class sets it and fails if the kernels were already created with another.
 */
final class Vram4jStep implements StepEngine {
    private final Config config;
    private final DeviceBackend dev;
    private final CachingAllocator alloc;
    private final Trainer trainer;

    Vram4jStep(Config config) {
        this.config = config;
        System.setProperty("vram4j.compute.threads", Integer.toString(config.threads()));
        if (Kernels.best().threads() != config.threads()) {
            throw new IllegalStateException("the compute kernels already run on " + Kernels.best().threads()
                    + " threads; run each thread count in its own JVM (a JMH fork)");
        }
        // No Kernels.warmUp(), as ./vram4j train (it slows the training loops it precedes: BENCHMARKS.md, "The main job")
        TrainOptions options = TrainOptions.defaults().withHidden(config.hidden()).withLayers(2)
                .withBatchSize(config.batch()).withLr(Double.parseDouble(Float.toString(config.lr()))).withMomentum(Double.parseDouble(Float.toString(config.momentum())))
                .withSchedule("constant").withHistorySteps(0);
        this.dev = Devices.open("host");
        this.alloc = CachingAllocator.create(dev);
        this.trainer = new Trainer(alloc, options, Config.FEATURES, Config.CLASSES);
    }

    @Override
    public String description() {
        return "vram4j " + Kernels.best().name() + " kernels, " + Kernels.best().threads() + " threads: "
                + trainer.description();
    }

    @Override
    public double step(Batch batch) {
        return trainer.trainStep(batch);
    }

    @Override
    public java.util.Map<String, Long> reportedMemory() {
        java.util.Map<String, Long> m = new java.util.LinkedHashMap<>();
        m.put("allocated", alloc.memoryAllocated());
        m.put("peak allocated", alloc.maxMemoryAllocated());
        m.put("reserved", alloc.memoryReserved());
        m.put("peak reserved", alloc.maxMemoryReserved());
        return m;
    }

    @Override
    public void resetPeaks() {
        alloc.resetPeakMemoryStats();
    }

    @Override
    public void close() {
        try {
            trainer.close();
        } finally {
            try {
                alloc.close();
            } finally {
                dev.close();
            }
        }
    }
}
