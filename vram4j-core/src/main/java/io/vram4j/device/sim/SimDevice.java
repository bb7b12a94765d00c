package io.vram4j.device.sim;

import io.vram4j.device.AbstractDevice;
import io.vram4j.device.Devices;

import java.lang.foreign.MemorySegment;

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
 * <p>Thread-safe.
 */
public final class SimDevice extends AbstractDevice {
    /** Where the address space starts handing out ranges: {@code 0x7f0000000000}. */
    public static final long BASE_ADDRESS = SimAddressSpace.BASE;

    private final SimAddressSpace space = new SimAddressSpace(MIN_ALIGNMENT, GRANULARITY);

    /**
     * @param index the device index
     * @param capacity the capacity in bytes, in {@code (0, MAX_CAPACITY]}
     * @param description a short description, e.g. {@code "sim:A100-80GB"}
     * @throws IllegalArgumentException if the index or capacity is out of range
     */
    public SimDevice(int index, long capacity, String description) {
        super("sim", index, capacity, description);
    }

    /** @return false: there is no memory behind the addresses */
    @Override
    public boolean hasStorage() {
        return false;
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
