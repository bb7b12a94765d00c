package io.vram4j.device.sim;

import io.vram4j.device.AbstractDevice;
import io.vram4j.device.Devices;

import io.vram4j.device.ComputeCapability;

import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * A simulated device: an address space and a capacity, with no memory behind them, for dry runs and for
 * replaying allocation traces of GPUs far larger than this machine. Usually opened with
 * {@link Devices#open(String) Devices.open("sim:80GiB")} or {@code "sim:A100-80GB"}.
 *
 * <p>Addresses are handed out as a GPU's virtual addresses:
 * <ul>
 *   <li>the first segment starts at {@link #BASE_ADDRESS} ({@code 0x7f0000000000}); each new segment or
 *       reservation takes the <em>lowest</em> free range from there up that fits (first fit), and freed ranges
 *       are reused, merged with free neighbours;</li>
 *   <li>segments of at least 2 MiB, and all reservations, are aligned to 2 MiB; smaller segments to 512
 *       bytes. A segment occupies its size rounded up to 512 bytes;</li>
 *   <li>an address hint is honoured whenever the whole range at the hint is free and the hint is 512-byte
 *       aligned (2 MiB for reservations), whatever its value: replays of recorded PyTorch snapshots pass the
 *       recorded addresses (e.g. 139937017020416) and get the same layout back. Otherwise the hint is ignored
 *       and the range placed as usual.</li>
 * </ul>
 * The address space spans {@code [2 MiB, 2^63 - 2 MiB)}, so it never runs out before the capacity does.
 *
 * <p>The {@code host} device places its segments and reservations by the same policy inside an arena of its
 * own ({@link io.vram4j.device.host.HostDevice#arenaBase()}); the two share {@link io.vram4j.device.FreeRanges}
 * and the footprint and alignment rules of {@link AbstractDevice}. <b>Guarantee:</b> the same sequence of
 * device calls without address hints yields, here and on {@code host}, addresses that differ by one constant
 * offset ({@code arenaBase() - BASE_ADDRESS}) as long as the host's arena has room, so a dry run here makes
 * the same best-fit tie-breaks, and reaches the same peak reserved bytes, as the real run on {@code host}.
 * {@link #malloc}, {@link #free}, {@link #reserveAddressRange} and {@link #releaseAddressRange} take expected
 * O(log n) time in the number of live ranges. {@link #map} and {@link #unmap} only account capacity.
 *
 * <p><b>Standing for a CUDA GPU.</b> A sim device opened with a {@link #cudaModel() CUDA model} (the GPU presets,
 * {@code sim:H100-80GB}, or {@code sim:SIZE:ccMAJOR.MINOR}; see {@link Devices#open}) stands for a {@code cuda}
 * device of that compute capability rather than for {@code host}: it reports {@link #hasDeviceMemory()}, so the
 * tensor runtime takes the paths it takes on {@code cuda} (device-memory temporaries, the CUDA kernels' own
 * allocations, modelled without computing), and its data calls ({@link #copyFromHost}, {@link #copyToHost},
 * {@link #fill}, {@link #copyDeviceToDevice}) check their ranges as the GPU's do, keep nothing and read back
 * zeros. Without a model ({@code sim}, {@code sim:SIZE}, {@code sim:PRESET:host}) it stands for {@code host}, as
 * the guarantee above says, and its data calls throw.
 *
 * <p>Thread-safe.
 */
public final class SimDevice extends AbstractDevice {
    /** Where the address space starts handing out ranges: {@code 0x7f0000000000}. */
    public static final long BASE_ADDRESS = SimAddressSpace.BASE;

    private final SimAddressSpace space = new SimAddressSpace(MIN_ALIGNMENT, GRANULARITY);
    private final ComputeCapability cudaModel;

    /**
     * A sim device standing for {@code host}.
     *
     * @param index the device index
     * @param capacity the capacity in bytes, in {@code (0, MAX_CAPACITY]}
     * @param description a short description, e.g. {@code "sim:8GiB"}
     * @throws IllegalArgumentException if the index or capacity is out of range
     */
    public SimDevice(int index, long capacity, String description) {
        this(index, capacity, description, null);
    }

    /**
     * @param index the device index
     * @param capacity the capacity in bytes, in {@code (0, MAX_CAPACITY]}
     * @param description a short description, e.g. {@code "sim:H100-80GB"}
     * @param cudaModel the compute capability of the CUDA GPU it stands for, or null to stand for {@code host}
     * @throws IllegalArgumentException if the index or capacity is out of range
     */
    public SimDevice(int index, long capacity, String description, ComputeCapability cudaModel) {
        super("sim", index, capacity, description);
        this.cudaModel = cudaModel;
    }

    /** @return the compute capability of the CUDA GPU this device stands for; empty when it stands for {@code host} */
    public Optional<ComputeCapability> cudaModel() {
        return Optional.ofNullable(cudaModel);
    }

    /** @return false: there is no memory behind the addresses */
    @Override
    public boolean hasStorage() {
        return false;
    }

    /** @return true when it stands for a CUDA GPU ({@link #cudaModel()}): its blocks are device memory, though empty */
    @Override
    public boolean hasDeviceMemory() {
        return cudaModel != null;
    }

    /** @return true: nothing is kept behind the addresses */
    @Override
    public boolean isSimulated() {
        return true;
    }

    /**
     * Standing for a CUDA GPU: checks the range as {@code cuMemcpyHtoD} would, keeps nothing.
     *
     * @throws UnsupportedOperationException standing for {@code host}
     */
    @Override
    public void copyFromHost(MemorySegment src, long dst) {
        checkModelledRange(dst, src.byteSize());
    }

    /**
     * Standing for a CUDA GPU: checks the range and writes zeros into {@code dst} (nothing was kept).
     *
     * @throws UnsupportedOperationException standing for {@code host}
     */
    @Override
    public void copyToHost(long src, MemorySegment dst) {
        checkModelledRange(src, dst.byteSize());
        dst.fill((byte) 0);
    }

    /**
     * Standing for a CUDA GPU: checks the range, keeps nothing.
     *
     * @throws UnsupportedOperationException standing for {@code host}
     */
    @Override
    public void fill(long dst, long size, byte value) {
        checkModelledRange(dst, size);
    }

    /**
     * Standing for a CUDA GPU: checks both ranges, keeps nothing.
     *
     * @throws UnsupportedOperationException standing for {@code host}
     */
    @Override
    public void copyDeviceToDevice(long src, long dst, long size) {
        if (size > 0) {
            checkModelledRange(src, size);
            checkModelledRange(dst, size);
        }
    }

    private void checkModelledRange(long address, long size) {
        if (cudaModel == null) {
            segment(address, size);   // throws: standing for host, there is nothing to copy
        }
        resolve(address, size, (base, inReservation) -> null);
    }

    /**
     * Always fails: a simulated device has nothing to view.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public MemorySegment segment(long address, long size) {
        throw new UnsupportedOperationException("the sim device has no storage; it only accounts addresses and "
                + "capacity (check hasStorage() first, or open a host device to read and write memory)");
    }

    @Override
    protected long allocateSegment(long size, long addressHint) {
        return space.allocate(segmentFootprint(size), segmentAlignment(size), addressHint, MIN_ALIGNMENT);
    }

    @Override
    protected void releaseSegment(long base, long size) {
        space.release(base, segmentFootprint(size));
    }

    @Override
    protected long allocateReservation(long size, long addressHint) {
        return space.allocate(size, GRANULARITY, addressHint, GRANULARITY);
    }

    @Override
    protected void releaseReservation(long base, long size) {
        space.release(base, size);
    }

    @Override
    protected boolean commit(long address, long size) {
        return true;
    }

    @Override
    protected void decommit(long address, long size) {
        // nothing is behind the addresses
    }
}
