package io.vram4j.memory.snapshot;

import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Our hand-written {@link PickleDecoder} (written for snapshots of a gigabyte and more) against the library it
 * replaced on the read path, {@code net.razorvine.pickle.Unpickler}, as the oracle: on every real PyTorch snapshot
 * both must read the same tree (frames compared as the dicts they are in the pickle, tuples as lists, integers by
 * value).
 */
class PickleDecoderOracleTest {

    @ParameterizedTest
    @ValueSource(strings = {"cs336-medium-ctx512_train-step_steady-state.pickle",
            "decomfl-opt-zo-finetune_from-empty.pickle", "verl-megatron-vllm_segments-only.pickle"})
    void readsWhatRazorvineReads(String name) throws IOException {
        Path file = SnapshotTestSupport.realSnapshot(name);
        byte[] bytes = Files.readAllBytes(file);
        Object expected;
        try (InputStream in = Files.newInputStream(file)) {
            Unpickler u = new Unpickler();
            expected = u.load(in);
            u.close();
        }
        PickleScanner.check(ByteBuffer.wrap(bytes));
        Object ours = PickleDecoder.decode(ByteBuffer.wrap(bytes)).root();
        assertEquals(canonical(expected), canonical(ours), name);
    }

    /** Both readers' objects as plain maps, lists, longs, doubles, strings, booleans and nulls. */
    private static Object canonical(Object o) {
        if (o instanceof Frame f) {
            return Map.of("name", f.name(), "filename", f.filename(), "line", (long) f.line());
        }
        if (o instanceof Map<?, ?> m) {
            Map<Object, Object> out = new HashMap<>();
            for (Map.Entry<?, ?> e : m.entrySet()) {
                out.put(canonical(e.getKey()), canonical(e.getValue()));
            }
            return out;
        }
        if (o instanceof Object[] a) {
            return canonical(List.of(a));
        }
        if (o instanceof Collection<?> c) {
            List<Object> out = new ArrayList<>();
            for (Object x : c) {
                out.add(canonical(x));
            }
            return out;
        }
        if (o instanceof Integer || o instanceof Long || o instanceof Short || o instanceof Byte) {
            return ((Number) o).longValue();
        }
        if (o instanceof BigInteger b) {
            return b.bitLength() < 64 ? b.longValue() : b;
        }
        return o;
    }
}
