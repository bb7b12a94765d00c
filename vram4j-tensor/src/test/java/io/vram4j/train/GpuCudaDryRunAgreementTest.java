package io.vram4j.train;

import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.CudaSegments;
import io.vram4j.testsupport.GpuTests;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link CudaDryRunAgreementTest} on a real GPU with the real cuBLAS: the batch-size search on {@code cuda} (opened
 * as {@code find-batch-size} opens it, segments placed as {@code sim} places them) and its dry run on
 * {@code sim:TOTAL:ccMAJOR.MINOR} (the GPU's total and compute capability), both capped at 256 MiB by the same
 * per-process memory fraction, agree on every try, the largest batches, the peaks and the allocator's whole trace,
 * for the MLP and the small transformer, baseline, checkpointing, bf16 autocast and both. Tagged {@code gpu}:
 * skipped with the reason where no GPU opens, failed instead with {@code VRAM4J_REQUIRE_GPU=1}.
 */
@Tag("gpu")
class GpuCudaDryRunAgreementTest {
    private static final long LIMIT = 256L << 20;

    @BeforeEach
    void requireGpu() {
        GpuTests.require(GpuTests.unavailableReason());
    }

    private static void agree(TrainOptions base) {
        CudaDryRunAgreementTest.Run onGpu;
        String spec;
        double fraction;
        try (CudaDevice cuda = (CudaDevice) Devices.open("cuda", CudaSegments.LOWEST_ADDRESS_FIRST)) {
            assertEquals(CudaSegments.LOWEST_ADDRESS_FIRST, cuda.segments(), "the GPU places segments as sim does");
            long total = cuda.memGetInfo().total();
            fraction = (double) LIMIT / total;
            int[] cc = cuda.computeCapability();
            spec = "sim:" + total + ":cc" + cc[0] + "." + cc[1];
            onGpu = CudaDryRunAgreementTest.search(cuda, base, System.getenv(), fraction);
        }
        try (DeviceBackend sim = Devices.open(spec)) {
            CudaDryRunAgreementTest.assertAgree(onGpu, CudaDryRunAgreementTest.search(sim, base, System.getenv(), fraction));
        }
    }

    @Test
    void mlpSearchOnTheGpuAndItsDryRunAgreeExactly() {
        agree(CudaDryRunAgreementTest.MLP);
    }

    @Test
    void transformerSearchOnTheGpuAndItsDryRunAgreeExactly() {
        agree(CudaDryRunAgreementTest.GPT);
    }
}
