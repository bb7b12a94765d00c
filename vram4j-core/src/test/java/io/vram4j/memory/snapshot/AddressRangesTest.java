package io.vram4j.memory.snapshot;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class AddressRangesTest {
    static String show(List<long[]> rs) {
        StringBuilder b = new StringBuilder();
        for (long[] r : rs) {
            b.append('[').append(r[0]).append(',').append(r[1]).append(')');
        }
        return b.toString();
    }

    @Test
    void addMergesTouchingRangesRemoveSplitsThem() {
        AddressRanges r = new AddressRanges();
        r.add(10, 20);
        r.add(30, 40);
        r.add(20, 30);
        assertEquals("[10,40)", show(r.list()));
        r.remove(15, 25);
        assertEquals("[10,15)[25,40)", show(r.list()));
        r.add(0, 5);
        r.add(3, 12);
        assertEquals("[0,15)[25,40)", show(r.list()));
        r.remove(0, 100);
        assertEquals("", show(r.list()));
    }

    @Test
    void missingGivesTheUncoveredParts() {
        AddressRanges r = new AddressRanges();
        r.add(10, 20);
        r.add(30, 40);
        assertEquals("[0,10)[20,30)[40,50)", show(r.missing(0, 50)));
        assertEquals("", show(r.missing(12, 18)));
        assertEquals("[20,25)", show(r.missing(15, 25)));
    }
}
