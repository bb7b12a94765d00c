/**
 * The simulated device ({@code sim}): addresses and capacity without memory, for dry runs and replays of
 * recorded traces larger than this machine. See {@link io.vram4j.device.sim.SimDevice}.
 */
package io.vram4j.device.sim;
