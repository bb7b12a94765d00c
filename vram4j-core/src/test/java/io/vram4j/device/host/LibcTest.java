package io.vram4j.device.host;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LibcTest {

    @Test
    void pageSizeIsAPowerOfTwo() {
        long page = Libc.pageSize();
        assertTrue(page >= 4096 && Long.bitCount(page) == 1, "page size " + page);
    }

    @Test
    void failuresNameTheCallAndTheErrno() {
        long page = Libc.pageSize();
        long base = Libc.mmap(0, 2 * page, Libc.PROT_READ | Libc.PROT_WRITE,
                Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS);
        try {
            LibcException misaligned = assertThrows(LibcException.class, () -> Libc.munmap(base + 1, page));
            assertEquals(22, misaligned.errno());
            assertEquals("munmap(0x" + Long.toHexString(base + 1) + ", " + page + ") failed: errno 22 (EINVAL)",
                    misaligned.getMessage());
            LibcException badAdvice = assertThrows(LibcException.class, () -> Libc.madvise(base, page, 12345));
            assertTrue(badAdvice.getMessage().startsWith("madvise(0x" + Long.toHexString(base)), badAdvice.getMessage());
            assertTrue(badAdvice instanceof IllegalStateException);
            LibcException badProt = assertThrows(LibcException.class, () -> Libc.mprotect(base + 1, page,
                    Libc.PROT_READ));
            assertEquals(22, badProt.errno());
        } finally {
            Libc.munmap(base, 2 * page);
        }
    }
}
