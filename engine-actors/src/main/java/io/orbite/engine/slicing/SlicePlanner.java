package io.orbite.engine.slicing;

import io.orbite.engine.Op;

/**
 * Slice geometry of C15, after the reference: a base block (64 KiB by default); at most {@code
 * maxReadSlices} slices for a READ and {@code maxWriteSlices} for a WRITE, so large requests use
 * adaptive blocks of {@code ceil(length / maxSlices)}; a tail shorter than a block is folded into
 * its predecessor rather than sent alone.
 */
public final class SlicePlanner {
  private final long baseBlockBytes;
  private final int maxReadSlices;
  private final int maxWriteSlices;

  public SlicePlanner(long baseBlockBytes, int maxReadSlices, int maxWriteSlices) {
    if (baseBlockBytes <= 0 || maxReadSlices < 1 || maxWriteSlices < 1) {
      throw new IllegalArgumentException("slicing needs a positive block and slice caps");
    }
    this.baseBlockBytes = baseBlockBytes;
    this.maxReadSlices = maxReadSlices;
    this.maxWriteSlices = maxWriteSlices;
  }

  public SlicePlan plan(Op op, long lengthBytes) {
    long block = blockBytes(op, lengthBytes);
    return new SlicePlan(lengthBytes, block, (int) Math.max(1, lengthBytes / block));
  }

  /**
   * Whether {@code lengthBytes} makes one slice (shorter than two blocks): what {@link #plan} would
   * say with {@code count() == 1}, without making the plan.
   */
  public boolean singleSlice(Op op, long lengthBytes) {
    return lengthBytes / blockBytes(op, lengthBytes) <= 1;
  }

  private long blockBytes(Op op, long lengthBytes) {
    if (lengthBytes <= 0) {
      throw new IllegalArgumentException("length must be positive, got " + lengthBytes);
    }
    int cap = op == Op.READ ? maxReadSlices : maxWriteSlices;
    long adaptive = (lengthBytes + cap - 1) / cap;
    return Math.max(baseBlockBytes, adaptive);
  }
}
