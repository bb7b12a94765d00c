package io.vram4j.train;

/**
 * Progress within an epoch, after a step, for progress bars.
 *
 * @param epoch          epoch, from 1
 * @param epochs         epochs in all
 * @param step           steps done in this epoch, from 1
 * @param steps          steps in this epoch
 * @param globalStep     steps done since the start, from 1
 * @param loss           mean training loss over this epoch's steps so far
 * @param accuracy       training accuracy over this epoch's samples so far, 0..1
 * @param samplesPerSec  training throughput over this epoch so far
 * @param allocated      bytes allocated now
 * @param reserved       bytes reserved now
 */
public record StepInfo(int epoch, int epochs, int step, int steps, long globalStep, double loss, double accuracy,
                       double samplesPerSec, long allocated, long reserved) {
}
