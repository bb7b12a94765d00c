package io.vram4j.memory.viz;

import io.vram4j.memory.snapshot.Frame;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class StackTableTest {
    @Test
    void theSiteIsTheInnermostFrameOutsideTheFrameworks() {
        assertEquals("forward (model.py:40)", StackTable.siteLabel(List.of(
                new Frame("malloc", "??", 0),
                new Frame("linear", "C:\\Python\\Lib\\site-packages\\torch\\nn\\functional.py", 12),
                new Frame("<module>", "<string>", 1),
                new Frame("forward", "/home/me/model.py", 40),
                new Frame("main", "/home/me/train.py", 9))));
        assertEquals("<init> (Linear.java:35)", StackTable.siteLabel(List.of(
                new Frame("allocate", "io/vram4j/tensor/Tensor.java", 92),
                new Frame("empty", "io/vram4j/tensor/Device.java", 171),
                new Frame("<init>", "io/vram4j/nn/Linear.java", 35))));
        assertEquals("empty_cache (memory.py:7)", StackTable.siteLabel(List.of(
                new Frame("empty_cache", "/usr/lib/python3/torch/cuda/memory.py", 7))), "all internal: the innermost frame");
    }

    @Test
    void stacksAreInternedAndSitesShared() {
        StackTable t = new StackTable();
        List<Frame> a = List.of(new Frame("f", "a.py", 1), new Frame("g", "b.py", 2));
        List<Frame> b = List.of(new Frame("f", "a.py", 1), new Frame("h", "c.py", 3));
        assertEquals(-1, t.intern(List.of()));
        assertEquals(0, t.intern(a));
        assertEquals(1, t.intern(b));
        assertEquals(0, t.intern(List.of(new Frame("f", "a.py", 1), new Frame("g", "b.py", 2))));
        assertEquals(List.of("f (a.py:1)"), t.sites);
        assertEquals(List.of(0, 0), t.stackSite);
    }
}
