package io.vram4j.tensor;

import io.vram4j.autograd.NoGrad;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LifetimeTest {
    Device dev;

    @BeforeEach
    void open() {
        dev = Device.open("host:256MiB");
    }

    @AfterEach
    void close() {
        dev.close();
    }

    @Test
    void scopeClosesInnerTensors() {
        long base = dev.memoryAllocated();
        Tensor inner;
        try (MemoryScope s = MemoryScope.open()) {
            inner = dev.ones(100, 100);
            try (Tensor x = inner.mul(2f)) {
                assertEquals(2f, x.getFloat(3, 4));
            }
            inner.add(inner).exp();
            assertEquals(base + 3 * 40_448, dev.memoryAllocated());
            assertEquals(3, s.size());
        }
        assertTrue(inner.isClosed());
        assertEquals(base, dev.memoryAllocated());
    }

    @Test
    void keptTensorsSurviveAndMoveToTheEnclosingScope() {
        Tensor kept;
        Tensor detached;
        try (MemoryScope outer = MemoryScope.open()) {
            try (MemoryScope inner = MemoryScope.open()) {
                Tensor a = dev.full(DType.FLOAT32, 3f, 4);
                kept = inner.keep(a.mul(2f));
                detached = inner.detach(a.add(1f));
            }
            assertFalse(kept.isClosed());
            assertArrayEquals(new float[] {6, 6, 6, 6}, kept.toFloatArray());
            assertEquals(1, outer.size());
        }
        assertTrue(kept.isClosed());
        assertFalse(detached.isClosed());
        assertArrayEquals(new float[] {4, 4, 4, 4}, detached.toFloatArray());
        detached.close();
        assertEquals(0, dev.memoryAllocated());
    }

    @Test
    void viewsKeepStorageAlive() {
        Tensor x = dev.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
        Tensor t = x.t();
        Tensor n = x.narrow(1, 1, 2);
        Storage s = x.storage();
        assertEquals(3, s.refCount());
        x.close();
        assertFalse(s.isFreed());
        assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, t.toFloatArray());
        assertArrayEquals(new float[] {2, 3, 5, 6}, n.toFloatArray());
        t.close();
        assertEquals(512, dev.memoryAllocated());
        n.close();
        assertTrue(s.isFreed());
        assertEquals(0, dev.memoryAllocated());
    }

    @Test
    void useAfterCloseThrowsAndDoubleCloseIsHarmless() {
        Tensor x = dev.zeros(2, 2);
        x.close();
        x.close();
        for (Runnable r : new Runnable[] {() -> x.add(x), x::toFloatArray, x::item, () -> x.view(4), x::shape, x::data,
                () -> x.fill(1)}) {
            IllegalStateException e = assertThrows(IllegalStateException.class, r::run);
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
        }
        try (Tensor y = dev.zeros(2, 2)) {
            assertThrows(IllegalStateException.class, () -> y.matmul(x));
        }
    }

    @Test
    void zeroElementTensorsAllocateNothing() {
        try (Tensor e = dev.zeros(0, 5); Tensor f = e.add(1f); Tensor g = dev.zeros(3, 0).matmul(dev.zeros(0, 2))) {
            assertEquals(0, e.nbytes());
            assertEquals(0, f.storage().address());
            assertArrayEquals(new float[6], g.toFloatArray());
        }
        assertEquals(0, dev.allocator().liveAllocations());
    }

    @Test
    void byteSizesAreExact() {
        try (Tensor a = dev.zeros(DType.FLOAT16, 3, 5); Tensor b = dev.zeros(DType.INT64, 7); Tensor c = dev.zeros(DType.BOOL, 9)) {
            assertEquals(30, a.storage().byteSize());
            assertEquals(56, b.storage().byteSize());
            assertEquals(9, c.storage().byteSize());
            assertEquals(1536, dev.memoryAllocated());
        }
    }

    @Test
    void backwardFreesSavedTensors() {
        Generator gen = new Generator(1);
        Tensor w1 = dev.randn(gen, 64, 256).requiresGrad(true);
        Tensor w2 = dev.randn(gen, 256, 64).requiresGrad(true);
        Tensor x = dev.randn(gen, 128, 64);
        long params = dev.memoryAllocated();
        Tensor loss;
        try (MemoryScope fwd = MemoryScope.open()) {
            loss = fwd.keep(x.matmul(w1).tanh().matmul(w2).relu().mean());
        }
        long withActivations = dev.memoryAllocated();
        // saved: tanh output [128, 256] (tanh, and the second matmul), relu output [128, 64], plus the loss
        assertEquals(params + 131_072 + 32_768 + 512, withActivations);
        loss.backward();
        loss.close();
        long grads = 65_536 + 65_536;
        assertEquals(params + grads, dev.memoryAllocated());
        assertNotNull(w1.grad());
        // a second backward through a freed graph is refused
        Tensor again;
        try (MemoryScope fwd = MemoryScope.open()) {
            again = fwd.keep(x.matmul(w1).tanh().sum());
        }
        again.backward();
        IllegalStateException e = assertThrows(IllegalStateException.class, again::backward);
        assertTrue(e.getMessage().contains("second time"), e.getMessage());
        again.close();
        for (Tensor t : new Tensor[] {w1, w2, x}) {
            t.close();
        }
        assertEquals(0, dev.memoryAllocated());
    }

    @Test
    void closingTheOutputReleasesAnUnusedGraph() {
        Tensor w = dev.ones(100, 100).requiresGrad(true);
        long base = dev.memoryAllocated();
        Tensor y;
        try (MemoryScope s = MemoryScope.open()) {
            y = s.keep(w.exp().tanh().sum());
        }
        assertTrue(dev.memoryAllocated() > base + 40_000);
        y.close();
        assertEquals(base, dev.memoryAllocated());
        w.close();
    }

    @Test
    void gradientsAccumulateAcrossBackwardCallsAndRetainGraphWorks() {
        try (Tensor w = dev.tensor(new float[] {1, 2, 3}).requiresGrad(true)) {
            try (MemoryScope s = MemoryScope.open()) {
                Tensor y = w.mul(w).sum();
                y.backward(null, true);
                y.backward();
            }
            assertArrayEquals(new float[] {4, 8, 12}, w.grad().toFloatArray());
            try (MemoryScope s = MemoryScope.open()) {
                w.sum().backward();
            }
            assertArrayEquals(new float[] {5, 9, 13}, w.grad().toFloatArray());
            w.setGrad(null);
            assertNull(w.grad());
        }
        assertEquals(0, dev.memoryAllocated());
    }

    @Test
    void noGradRecordsNothingAndInPlaceNeedsIt() {
        try (Tensor w = dev.ones(3).requiresGrad(true)) {
            try (NoGrad ng = NoGrad.enter(); Tensor y = w.mul(2f)) {
                assertFalse(y.requiresGrad());
                assertNull(y.gradFn());
                w.addInPlace(y);
            }
            assertArrayEquals(new float[] {3, 3, 3}, w.toFloatArray());
            assertThrows(IllegalStateException.class, () -> w.mulInPlace(2));
            try (MemoryScope s = MemoryScope.open()) {
                assertThrows(IllegalStateException.class, () -> dev.ones(2).sum().backward());
            }
        }
    }

    /**
     * The detector prints each report with its allocation stack to System.err (from the Cleaner's thread); the
     * leak tests capture it here, check it, and keep it out of the build log.
     */
    private PrintStream savedErr;
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @BeforeEach
    void captureStderr() {
        savedErr = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restoreStderr() {
        System.setErr(savedErr);
    }

    /** Closing a device with leaked blocks releases them and lists them in an IllegalStateException. */
    private static void assertCloseReportsLeaks(Device d, int blocks) {
        IllegalStateException e = assertThrows(IllegalStateException.class, d::close);
        assertTrue(e.getMessage().contains("closed with " + blocks + " live allocation(s)"), e.getMessage());
    }

    @Test
    void leakDetectorReportsUnclosedTensorsWithTheirAllocationSite() throws Exception {
        LeakDetector.Level old = LeakDetector.level();
        LeakDetector.setLevel(LeakDetector.Level.PARANOID);
        LeakDetector.clearReports();
        Device sim = Device.open("sim:1GiB");
        try {
            leakOneTensor(sim);
            LeakReport found = null;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (found == null && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
                for (LeakReport r : LeakDetector.reports()) {
                    if (r.device().equals(sim.description())) {
                        found = r;
                    }
                }
            }
            assertNotNull(found, "no leak reported");
            assertEquals(4000, found.bytes());
            assertTrue(found.site().contains("leakOneTensor"), found.site());
            assertTrue(found.message().contains("LEAK"));
            assertTrue(err.toString(StandardCharsets.UTF_8).contains(found.message()), "the report is printed to stderr");
            // report-only: the memory is still allocated
            assertEquals(4096, sim.memoryAllocated());
        } finally {
            LeakDetector.setLevel(old);
        }
        assertCloseReportsLeaks(sim, 1);
    }

    private static void leakOneTensor(Device d) {
        d.zeros(1000);
    }

    @Test
    void closedTensorsAreNotReported() throws Exception {
        LeakDetector.Level old = LeakDetector.level();
        LeakDetector.setLevel(LeakDetector.Level.PARANOID);
        LeakDetector.clearReports();
        Device sim = Device.open("sim:1GiB");
        try {
            for (int i = 0; i < 100; i++) {
                sim.zeros(10).close();
            }
            // a control leaked after them: once it is reported, the Cleaner has run for what was collected
            leakOneTensor(sim);
            gcUntil(() -> !reportsFor(sim).isEmpty());
            assertEquals(1, reportsFor(sim).size(), "only the control is reported: " + reportsFor(sim));
            assertEquals(4000, reportsFor(sim).getFirst().bytes());
        } finally {
            LeakDetector.setLevel(old);
        }
        assertCloseReportsLeaks(sim, 1);
    }

    /** Collects garbage until {@code done} holds or 10 s passed (the Cleaner reports on its own thread). */
    private static void gcUntil(java.util.function.BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
    }

    private static java.util.List<LeakReport> reportsFor(Device d) {
        return LeakDetector.reports().stream().filter(r -> r.device().equals(d.description())).toList();
    }

    @Test
    void offTracksNothingAndReportsNoUnclosedTensor() throws Exception {
        LeakDetector.Level old = LeakDetector.level();
        LeakDetector.clearReports();
        Device sim = Device.open("sim:3GiB");
        try {
            LeakDetector.setLevel(LeakDetector.Level.OFF);
            java.lang.ref.WeakReference<Storage> off = leakUntracked(sim);
            // a control leaked at PARANOID at the same time: once it is reported, the collector has run the Cleaner
            LeakDetector.setLevel(LeakDetector.Level.PARANOID);
            leakOneTensor(sim);
            gcUntil(() -> off.get() == null && !reportsFor(sim).isEmpty());
            assertNull(off.get(), "the unclosed tensor was collected");
            assertEquals(1, reportsFor(sim).size(), reportsFor(sim).toString());
            assertEquals(4000, reportsFor(sim).getFirst().bytes(), "only the PARANOID control is reported");
            assertEquals(4096 + 2048, sim.memoryAllocated(), "both blocks stay allocated");
        } finally {
            LeakDetector.setLevel(old);
        }
        assertCloseReportsLeaks(sim, 2);
    }

    private static java.lang.ref.WeakReference<Storage> leakUntracked(Device d) {
        Tensor t = d.zeros(500); // 2000 bytes, never closed
        assertFalse(t.storage.tracked(), "OFF tracks nothing");
        return new java.lang.ref.WeakReference<>(t.storage);
    }

    @Test
    void sampledTracksOneStoragePerIntervalAndReportsItsSite() throws Exception {
        LeakDetector.Level old = LeakDetector.level();
        int oldInterval = LeakDetector.samplingInterval();
        LeakDetector.clearReports();
        Device sim = Device.open("sim:5GiB");
        try {
            LeakDetector.setLevel(LeakDetector.Level.SAMPLED);
            LeakDetector.setSamplingInterval(8);
            int tracked = leakSampled(sim, 40);
            assertEquals(40 / 8, tracked, "one storage in 8 is tracked");
            gcUntil(() -> reportsFor(sim).size() >= tracked);
            java.util.List<LeakReport> reports = reportsFor(sim);
            assertEquals(tracked, reports.size(), "one report per tracked storage, none for the others");
            for (LeakReport r : reports) {
                assertEquals(1200, r.bytes());
                assertTrue(r.site().contains("leakSampled"), r.site());
                assertTrue(r.message().startsWith("LEAK: a tensor storage of 1200 bytes on " + sim.description()), r.message());
            }
            assertEquals(40 * 1536, sim.memoryAllocated(), "all 40 blocks stay allocated, reported or not");
        } finally {
            LeakDetector.setLevel(old);
            LeakDetector.setSamplingInterval(oldInterval);
        }
        assertCloseReportsLeaks(sim, 40);
    }

    /** Allocates {@code n} tensors of 1200 bytes and never closes them; returns how many the detector tracks. */
    private static int leakSampled(Device d, int n) {
        int tracked = 0;
        for (int i = 0; i < n; i++) {
            Tensor t = d.zeros(300);
            tracked += t.storage.tracked() ? 1 : 0;
        }
        return tracked;
    }
}
