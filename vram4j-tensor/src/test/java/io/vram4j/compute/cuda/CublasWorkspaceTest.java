package io.vram4j.compute.cuda;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** PyTorch's workspace sizes (ATen CublasHandlePool.cpp), in bytes. */
class CublasWorkspaceTest {
    @Test
    void defaultsDependOnTheGpu() {
        assertEquals(33_554_432L, CublasWorkspace.size(null, 9, 0), "H100: :4096:8");
        assertEquals(8_519_680L, CublasWorkspace.size(null, 8, 0), "A100: :4096:2:16:8");
        assertEquals(8_519_680L, CublasWorkspace.size(null, 9, 1));
    }

    @Test
    void theVariableSumsItsPairs() {
        assertEquals(4096L * 1024 * 8, CublasWorkspace.size(":4096:8", 8, 0));
        assertEquals(16L * 1024 * 8, CublasWorkspace.size(":16:8", 9, 0), "the deterministic setting");
        assertEquals(4096L * 1024 * 2 + 16L * 1024 * 8, CublasWorkspace.size(":4096:2:16:8", 9, 0));
        assertEquals(0, CublasWorkspace.size(":0:8", 9, 0));
    }

    @Test
    void badValuesFallBackOrAreRefused() {
        assertEquals(33_554_432L, CublasWorkspace.size("4096,8", 9, 0), "no pair: the default, as PyTorch");
        assertEquals(8_519_680L, CublasWorkspace.size("", 7, 5));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CublasWorkspace.size(":99999999999999999999:1", 9, 0));
        assertEquals("CUBLAS_WORKSPACE_CONFIG=':99999999999999999999:1': the workspace size does not fit 64 bits",
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CublasWorkspace.size(":9007199254740992:4096", 9, 0));
    }
}
