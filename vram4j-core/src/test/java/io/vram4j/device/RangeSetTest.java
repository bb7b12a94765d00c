package io.vram4j.device;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RangeSetTest {

    @Test
    void adjacentRangesCoalesce() {
        RangeSet set = new RangeSet();
        set.add(10, 20);
        set.add(30, 40);
        set.add(20, 30);
        assertEquals(Map.of(10L, 40L), set.ranges());
        assertEquals(30, set.total());
        assertTrue(set.containsAll(10, 40));
        assertTrue(set.containsAll(15, 35));
    }

    @Test
    void containsAndIntersectRespectHalfOpenBounds() {
        RangeSet set = new RangeSet();
        set.add(10, 20);
        assertFalse(set.containsAll(10, 21));
        assertFalse(set.containsAll(9, 20));
        assertTrue(set.intersects(19, 30));
        assertFalse(set.intersects(20, 30));
        assertFalse(set.intersects(0, 10));
        assertTrue(set.intersects(0, 11));
        assertTrue(set.intersects(0, 100));
    }

    @Test
    void removeSplitsAndRejectsWhatIsNotThere() {
        RangeSet set = new RangeSet();
        set.add(0, 100);
        set.remove(40, 60);
        assertEquals(Map.of(0L, 40L, 60L, 100L), set.ranges());
        assertEquals(80, set.total());
        assertThrows(IllegalStateException.class, () -> set.remove(30, 70));
        assertThrows(IllegalStateException.class, () -> set.add(50, 70));
        set.remove(0, 40);
        set.remove(60, 100);
        assertTrue(set.isEmpty());
        assertEquals(0, set.total());
    }
}
