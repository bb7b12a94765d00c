package io.vram4j.device.cuda;

import io.vram4j.testsupport.NativeTestBuild;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.LinkedHashMap;
import java.util.Map;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The struct layouts, type sizes and constants that {@link CudaDriver} hard-codes, checked against the installed
 * CUDA headers: {@code src/test/c/cuda_layout.c} prints them as gcc lays them out, and every line must match.
 */
class CudaLayoutTest {

    @Test
    void layoutsAndConstantsMatchCudaH() throws IllegalAccessException {
        Map<String, Long> c = parse(NativeTestBuild.run(NativeTestBuild.layoutPrinter()));

        Map<String, Long> java = new LinkedHashMap<>();
        describe(java, "CUmemLocation", CudaDriver.MEM_LOCATION, "type", "id");
        describe(java, "CUmemAllocationProp", CudaDriver.MEM_ALLOCATION_PROP, "type", "requestedHandleTypes",
                "location", "win32HandleMetaData", "allocFlags");
        for (String f : new String[] {"compressionType", "gpuDirectRDMACapable", "usage", "reserved"}) {
            java.put("CUmemAllocationProp.allocFlags." + f,
                    CudaDriver.MEM_ALLOCATION_PROP.byteOffset(groupElement("allocFlags"), groupElement(f)));
        }
        describe(java, "CUmemAccessDesc", CudaDriver.MEM_ACCESS_DESC, "location", "flags");
        // the scalar and handle types as the bindings pass them
        java.put("CUdeviceptr.size", JAVA_LONG.byteSize());
        java.put("CUdevice.size", JAVA_INT.byteSize());
        java.put("CUresult.size", JAVA_INT.byteSize());
        java.put("CUmemGenericAllocationHandle.size", JAVA_LONG.byteSize());
        java.put("CUstream.size", ADDRESS.byteSize());
        java.put("CUevent.size", ADDRESS.byteSize());
        java.put("CUcontext.size", ADDRESS.byteSize());
        java.put("CUdevice_attribute.size", JAVA_INT.byteSize());
        for (Field f : CudaDriver.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class
                    && (f.getName().startsWith("CU_") || f.getName().startsWith("CUDA_"))
                    && !f.getName().equals("CU_MEMHOSTALLOC_DEFAULT")) {
                f.setAccessible(true);
                java.put(f.getName(), (long) f.getInt(null));
            }
        }

        assertEquals(c.keySet(), java.keySet(), "the C program and the Java side check the same names");
        for (Map.Entry<String, Long> e : c.entrySet()) {
            assertEquals(e.getValue(), java.get(e.getKey()), e.getKey() + " differs from cuda.h");
        }
        assertTrue(c.size() > 35, "checked " + c.size() + " values");
    }

    private static void describe(Map<String, Long> out, String name, StructLayout layout, String... fields) {
        out.put(name + ".size", layout.byteSize());
        for (String f : fields) {
            out.put(name + "." + f, layout.byteOffset(MemoryLayout.PathElement.groupElement(f)));
        }
    }

    private static Map<String, Long> parse(String output) {
        Map<String, Long> values = new LinkedHashMap<>();
        for (String line : output.strip().split("\n")) {
            String[] parts = line.strip().split(" ");
            values.put(parts[0], Long.parseLong(parts[1]));
        }
        return values;
    }
}
