package io.vram4j.device.cuda;

import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

import java.lang.foreign.FunctionDescriptor;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The {@code cuda} device contract over the test driver ({@code src/test/c/fake_libcuda.c}), set up once for the
 * test classes that run it: the driver loaded, and before each test one device of 1 GiB. Fewer fuzz steps than on
 * a GPU: here every fill and check is host memory traffic on the build machine.
 */
@SuppressWarnings("restricted")
abstract class FakeDriverContract extends CudaDeviceContract {
    static final long TOTAL = 1L << 30;
    static CudaDriver driver;
    static MethodHandle configure;

    @BeforeAll
    static void loadFakeDriver() {
        driver = CudaDriver.load(NativeTestBuild.fakeDriver().toString());
        configure = NativeTestBuild.fakeDriverHook("fake_cuda_configure", FunctionDescriptor.ofVoid(JAVA_INT, JAVA_LONG));
    }

    @BeforeEach
    void oneDeviceOfOneGiB() throws Throwable {
        configure.invokeExact(1, TOTAL);
    }

    @Override
    int fuzzSteps() {
        return 300;
    }
}
