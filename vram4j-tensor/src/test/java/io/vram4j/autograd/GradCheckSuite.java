package io.vram4j.autograd;

import io.vram4j.autograd.GradCheckCases.Case;
import io.vram4j.autograd.GradCheckCases.Inputs;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.SDPBackend;
import io.vram4j.tensor.SdpaKernel;
import io.vram4j.tensor.Tensor;
import io.vram4j.tensor.TestDevice;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Finite-difference checks of every differentiable primitive ({@link GradCheckCases}: one or more cases per entry
 * of the rule table) and of composite ops, on the device a subclass opens: the inputs are made there, the function
 * and its backward run there with its kernels, and {@link GradCheck} reads and perturbs the inputs through the
 * host-access copies. Each case's inputs and gradients must be on that device (in device memory where it has its
 * own), and on the opaque device each case other than a view must launch kernels there. Also checks that
 * gradcheck itself catches wrong gradients on that device.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class GradCheckSuite {
    TestDevice target;
    Device dev;

    /** @return the device the checks run on; opened once for the class, closed after it */
    abstract TestDevice openDevice();

    @BeforeAll
    void open() {
        target = openDevice();
        dev = target.device();
    }

    /** Skips each test with the reason where the device is unavailable (a GPU suite without a GPU). */
    @BeforeEach
    void requireDevice() {
        target.require();
    }

    @AfterAll
    void close() {
        target.close();
    }

    /** Checks that a case's tensor is on the suite's device, in device memory where the device has its own. */
    private void assertOnDevice(String what, Tensor t) {
        assertEquals(dev.description(), t.device().description(), what + ": on the suite's device");
        if (target.hasDeviceMemory()) {
            assertTrue(target.inDeviceMemory(t), what + ": in device memory, at 0x" + Long.toHexString(t.storage().address()));
        }
    }

    /** Uniform values in [lo, hi) on the suite's device, requiring grad. */
    private Tensor u(Generator g, double lo, double hi, int... shape) {
        return new Inputs(dev, g).u(lo, hi, shape);
    }

    @ParameterizedTest
    @EnumSource(Prim.class)
    void everyPrimitiveHasACheckedGradient(Prim prim) {
        List<Case> cases = GradCheckCases.CASES.get(prim);
        assertTrue(cases != null && !cases.isEmpty(), "no gradcheck case for " + prim);
        long before = dev.memoryAllocated();
        for (Case c : cases) {
            String what = prim + " / " + c.name();
            try (MemoryScope s = MemoryScope.open()) {
                Tensor[] in = c.inputs().apply(new Inputs(dev, new Generator(prim.ordinal() * 31L + c.name().length())));
                long launches = target.deviceLaunches();
                try {
                    GradCheck.check(c.fn(), c.eps(), GradCheck.ATOL, c.rtol(), in);
                } catch (AssertionError e) {
                    throw new AssertionError(what + " on " + dev.description() + ": " + e.getMessage(), e);
                }
                if (launches >= 0 && prim != Prim.VIEW) {   // a view's forward and backward are views: nothing to launch
                    assertTrue(target.deviceLaunches() > launches, what + ": computed by the device's kernels");
                }
                for (Tensor t : in) {
                    assertOnDevice(what + ", input", t);
                    if (t.grad() != null) {
                        assertOnDevice(what + ", gradient", t.grad());
                    }
                    t.close();
                }
            }
        }
        assertEquals(before, dev.memoryAllocated(), "gradcheck of " + prim + " leaked memory");
    }

    @Test
    void compositeOpsAreDifferentiatedThroughTheirPrimitives() {
        try (MemoryScope s = MemoryScope.open()) {
            Generator g = new Generator(7);
            try (SdpaKernel math = SdpaKernel.enable(SDPBackend.MATH)) {   // the unfused attention: its primitives
                GradCheck.check(x -> Functional.scaledDotProductAttention(x[0], x[1], x[2], true),
                        u(g, -1, 1, 2, 4, 3), u(g, -1, 1, 2, 4, 3), u(g, -1, 1, 2, 4, 3));
            }
            GradCheck.check(x -> Functional.linear(x[0], x[1], x[2]), u(g, -1, 1, 2, 3, 4), u(g, -1, 1, 5, 4), u(g, -1, 1, 5));
            GradCheck.check(x -> {
                try (Tensor h = x[0].matmul(x[1]); Tensor r = h.tanh()) {
                    return r.mul(r).sum();
                }
            }, u(g, -1, 1, 3, 4), u(g, -1, 1, 4, 2));
            // a diamond: one node's output feeds three consumers, whose gradients are summed
            GradCheck.check(x -> {
                try (Tensor y = x[0].tanh(); Tensor a = y.mul(y); Tensor b = y.exp(); Tensor c = a.add(b);
                     Tensor d = y.narrow(1, 0, 2); Tensor e = d.sum(1, true)) {
                    return c.add(e);
                }
            }, u(g, -1, 1, 3, 4));
        }
    }

    @Test
    void gradCheckDetectsAWrongGradient() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor x = u(new Generator(3), 0.5, 1, 4);
            // relu on positive inputs has gradient 1, but f = relu(x) * x has gradient 2x: feeding a detached copy breaks it
            GradCheck.Result r = GradCheck.run(in -> {
                try (Tensor d = in[0].detach()) {
                    return in[0].mul(d);
                }
            }, 1e-2, 1e-3, 1e-2, x);
            assertFalse(r.ok());
            // a subtle error: f = x^2 + 0.005 x detach(x) has gradient 2.01 x, but backward gives 2.005 x (0.25% off),
            // which the former defaults (eps 1e-2, atol 2e-3, rtol 2e-2) accepted and the tightened ones catch
            Function<Tensor[], Tensor> subtle = in -> {
                try (Tensor d = in[0].detach(); Tensor sq = in[0].mul(in[0]); Tensor xd = in[0].mul(d); Tensor small = xd.mul(0.005f)) {
                    return sq.add(small);
                }
            };
            float[] values = x.toFloatArray();
            assertTrue(GradCheck.run(subtle, 1e-2, 2e-3, 2e-2, x).ok(), "the former tolerances miss it");
            GradCheck.Result tight = GradCheck.run(subtle, GradCheck.EPS, GradCheck.ATOL, GradCheck.RTOL, x);
            assertFalse(tight.ok());
            assertEquals(4, tight.mismatches().size(), "every element is flagged");
            assertEquals(Arrays.toString(values), Arrays.toString(x.toFloatArray()),
                    "the perturbed input is restored");
            assertThrows(IllegalArgumentException.class, () -> GradCheck.check(in -> in[0].exp(), dev.zeros(2)));
        }
    }
}
