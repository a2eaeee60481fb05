package io.orbite.engine.slicing;

/**
 * How one task's bytes split into slices (C15): {@code count} slices of {@code blockBytes}, the
 * last one taking the remainder, so a short tail is folded into its predecessor.
 */
public record SlicePlan(long lengthBytes, long blockBytes, int count) {
  public SlicePlan {
    if (lengthBytes <= 0 || blockBytes <= 0 || count < 1) {
      throw new IllegalArgumentException(
          "plan of " + lengthBytes + " B in " + count + " x " + blockBytes + " B");
    }
  }

  /** Offset of slice {@code i} from the task's start. */
  public long offset(int i) {
    return i * blockBytes;
  }

  /** Length of slice {@code i}; the last slice carries the folded tail. */
  public long length(int i) {
    return i == count - 1 ? lengthBytes - (count - 1) * blockBytes : blockBytes;
  }
}
