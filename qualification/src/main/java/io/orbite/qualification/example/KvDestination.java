package io.orbite.qualification.example;

import java.util.List;
import java.util.Random;

/**
 * Where each KV block goes on the decode side: the blocks one after another in publication order,
 * each after a guard gap of 1..4096 bytes, so most offsets are unaligned. The streamed pull lands
 * the blocks here, and the push phase's WRITEs land them at the same offsets of the same region:
 * both sides derive this layout from the plan's blocks and seed (the example's stand-in for the
 * block table a serving system's connector exchanges).
 *
 * @param offsets each block's offset in the destination region, by block index
 * @param bytes the region's size: every block and gap, and a tail guard
 */
record KvDestination(long[] offsets, long bytes) {
  /** The layout of {@code blocks} (publication order) for {@code seed}. */
  static KvDestination layout(List<KvBlock> blocks, long seed) {
    Random random = new Random(seed ^ 0x6465636f6465L);
    long[] offsets = new long[blocks.size()];
    long at = 0;
    for (int i = 0; i < blocks.size(); i++) {
      at += 1 + random.nextInt(4096);
      offsets[i] = at;
      at += blocks.get(i).length();
    }
    return new KvDestination(offsets, at + 4096 + 7);
  }

  /** The pattern seed of the guard bytes between the blocks. */
  static long guardSeed(long seed) {
    return KvPlan.mix(seed, 0x67756172L, 0x64L);
  }

  /** Where the gap before block {@code i} starts ({@code i == blocks}: the tail guard's start). */
  long gapFrom(List<KvBlock> blocks, int i) {
    return i == 0 ? 0 : offsets[i - 1] + blocks.get(i - 1).length();
  }

  /** Where the gap before block {@code i} ends ({@code i == blocks}: the region's end). */
  long gapTo(int i) {
    return i == offsets.length ? bytes : offsets[i];
  }
}
