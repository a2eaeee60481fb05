package io.orbite.transport.file;

/**
 * The operations one ring lane has in the kernel, by slot. Each is in flight under an id made of
 * its slot and the slot's generation, so that a completion for a slot since reused is told apart
 * from the operation now in it. At most {@link #capacity()} at once (the ring's depth). Confined to
 * the lane's thread; allocates nothing.
 */
final class RingSlots {
  private static final int GENERATION_SHIFT = 32;

  private final FileOp[] slots;
  private final int[] generations;

  /** The free slots, a stack of {@link #freeCount}. */
  private final int[] free;

  private int freeCount;

  RingSlots(int capacity) {
    this.slots = new FileOp[capacity];
    this.generations = new int[capacity];
    this.free = new int[capacity];
    for (int i = capacity - 1; i >= 0; i--) {
      free[freeCount++] = i;
    }
  }

  /** Most operations in flight at once. */
  int capacity() {
    return slots.length;
  }

  /** Operations in flight. */
  int inflight() {
    return slots.length - freeCount;
  }

  /** Whether no slot is free. */
  boolean full() {
    return freeCount == 0;
  }

  /**
   * Puts {@code op} in a free slot (the caller checked one is) and gives it its id.
   *
   * @return the id it is in flight under
   */
  long take(FileOp op) {
    int slot = free[--freeCount];
    slots[slot] = op;
    op.id = ((long) generations[slot] << GENERATION_SHIFT) | slot;
    return op.id;
  }

  /** The operation in slot {@code slot}, or null: for a walk over every slot. */
  FileOp at(int slot) {
    return slots[slot];
  }

  /** The operation in flight under {@code id}, or null if none is (a stale or unknown id). */
  FileOp find(long id) {
    int slot = (int) id;
    if (slot < 0 || slot >= slots.length) {
      return null;
    }
    FileOp op = slots[slot];
    return op != null && generations[slot] == (int) (id >>> GENERATION_SHIFT) ? op : null;
  }

  /** {@code op} left the kernel: its slot is free again and its use of the file ends. */
  void retire(FileOp op) {
    int slot = (int) op.id;
    slots[slot] = null;
    generations[slot]++;
    free[freeCount++] = slot;
    op.file.release();
  }
}
