package io.vram4j.compute.cuda;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a PTX module declares (PTX ISA reference, "Module Directives" and "Kernel Function Parameters"): its ISA
 * version ({@code .version 9.0}), its target ({@code .target sm_80}) and each kernel entry
 * ({@code .visible .entry name(.param .u64 name_param_0, ...)}) with its parameter types in order. Used to name the
 * PTX ISA in the driver's "unsupported PTX version" error, and by the tests that hold the Java launch
 * descriptors to the compiled kernels.
 *
 * @param isaVersion the {@code .version} value, e.g. {@code "9.0"}
 * @param target the {@code .target} value, e.g. {@code "sm_80"}
 * @param entries entry name to parameter types (e.g. {@code ".u64"}, {@code ".f32"}, {@code ".b8[16]"} for an
 *     aligned byte array), in file order
 */
record PtxEntries(String isaVersion, String target, Map<String, List<String>> entries) {
    private static final Pattern VERSION = Pattern.compile("^\\s*\\.version\\s+(\\d+\\.\\d+)\\s*$");
    private static final Pattern TARGET = Pattern.compile("^\\s*\\.target\\s+([\\w, ]+?)\\s*$");
    private static final Pattern ENTRY = Pattern.compile("^\\s*(?:\\.visible\\s+|\\.weak\\s+)?\\.entry\\s+([A-Za-z_$][\\w$]*)\\s*\\((\\s*\\))?\\s*$");
    private static final Pattern PARAM = Pattern.compile(
            "^\\s*\\.param\\s+(?:\\.align\\s+\\d+\\s+)?(\\.[a-z]\\d+)(?:\\s+\\.ptr(?:\\s+\\.\\w+)*(?:\\s+\\.align\\s+\\d+)?)?\\s+[A-Za-z_$][\\w$]*(\\[\\d+\\])?\\s*(,)?\\s*$");

    PtxEntries {
        entries = Collections.unmodifiableMap(new LinkedHashMap<>(entries));
    }

    /**
     * @param ptx the text of a PTX module
     * @param source what to call it in messages, e.g. the resource name
     * @return its declarations
     * @throws IllegalArgumentException naming the source and line when there is no {@code .version} or
     *     {@code .target}, an entry is declared twice, or a parameter list is malformed or not closed
     */
    static PtxEntries parse(String ptx, String source) {
        String version = null;
        String target = null;
        Map<String, List<String>> entries = new LinkedHashMap<>();
        String open = null;
        List<String> params = null;
        boolean expectMore = false;
        String[] lines = ptx.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            int no = i + 1;
            if (line.isEmpty()) {
                continue;
            }
            if (open != null) {
                if (line.equals(")")) {
                    if (expectMore) {
                        throw bad(source, no, "entry " + open + ": the parameter list ends after a comma");
                    }
                    entries.put(open, List.copyOf(params));
                    open = null;
                    continue;
                }
                Matcher p = PARAM.matcher(line);
                if (!p.matches()) {
                    throw bad(source, no, "entry " + open + ": expected '.param .TYPE NAME' or ')', found '" + line + "'");
                }
                if (!params.isEmpty() && !expectMore) {
                    throw bad(source, no, "entry " + open + ": parameters must be separated by commas");
                }
                params.add(p.group(2) == null ? p.group(1) : p.group(1) + p.group(2));
                expectMore = p.group(3) != null;
                continue;
            }
            if (line.startsWith("//")) {
                continue;
            }
            Matcher v = VERSION.matcher(line);
            if (v.matches()) {
                version = v.group(1);
                continue;
            }
            Matcher t = TARGET.matcher(line);
            if (t.matches()) {
                target = t.group(1);
                continue;
            }
            if (line.contains(".entry")) {
                Matcher e = ENTRY.matcher(line);
                if (!e.matches()) {
                    throw bad(source, no, "malformed .entry declaration '" + line + "'");
                }
                String name = e.group(1);
                if (entries.containsKey(name)) {
                    throw bad(source, no, "entry " + name + " is declared twice");
                }
                if (e.group(2) != null) {
                    entries.put(name, List.of());
                } else {
                    open = name;
                    params = new ArrayList<>();
                    expectMore = false;
                }
            }
        }
        if (open != null) {
            throw new IllegalArgumentException(source + ": entry " + open + ": the parameter list is not closed");
        }
        if (version == null) {
            throw new IllegalArgumentException(source + ": no '.version' directive: not a PTX module");
        }
        if (target == null) {
            throw new IllegalArgumentException(source + ": no '.target' directive: not a PTX module");
        }
        return new PtxEntries(version, target, entries);
    }

    private static IllegalArgumentException bad(String source, int line, String what) {
        return new IllegalArgumentException(source + ":" + line + ": " + what);
    }
}
