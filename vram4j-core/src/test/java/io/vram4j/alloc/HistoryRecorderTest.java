package io.vram4j.alloc;

import io.vram4j.device.Stream;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The trace ring buffer keeps the newest entries, oldest first, across any number of wrap-arounds. */
class HistoryRecorderTest {

    @Test
    void ringKeepsTheNewestInOrder() {
        Stream s = new Stream(0, 0);
        for (int capacity : new int[] {1, 2, 7}) {
            for (int n = 0; n <= 4 * capacity + 1; n++) {
                HistoryRecorder h = new HistoryRecorder(HistoryContext.NONE, false, capacity);
                for (int i = 0; i < n; i++) {
                    h.alloc(512L * (i + 1), i + 1, s, null);
                }
                List<HistoryRecorder.Entry> entries = h.entries();
                int kept = Math.min(n, capacity);
                assertEquals(kept, entries.size(), "capacity " + capacity + ", " + n + " entries");
                for (int k = 0; k < kept; k++) {
                    assertEquals(n - kept + k + 1, entries.get(k).size(), "capacity " + capacity + ", entry " + k);
                }
            }
        }
    }
}
