package io.orbite.engine.spi;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import java.util.Arrays;
import java.util.List;

/**
 * The receipts one lane pass collected for one batch, as parallel arrays: a lane confirms a frame
 * without allocating an object for it. A block is lent to {@link ReceiptSink#deliver} for the
 * length of that call only; its lender ({@link ReceiptBatcher}) clears and reuses it afterwards, so
 * a sink copies what it keeps and never holds on to the block.
 *
 * <p>Entry {@code k} is a lane's word on one frame: confirmed ({@link #error} null, {@link #bytes}
 * moved) or failed. A lane sends a failure only once it no longer touches the frame's memory.
 */
public final class Receipts {
  private int size;
  private int[] taskIndex;
  private long[] bytes;
  private ErrorKind[] error;
  private RemoteEffect[] effect;
  private String[] detail;

  /** An empty block with room for {@code capacity} receipts (it grows when needed). */
  public Receipts(int capacity) {
    int c = Math.max(1, capacity);
    taskIndex = new int[c];
    bytes = new long[c];
    error = new ErrorKind[c];
    effect = new RemoteEffect[c];
    detail = new String[c];
  }

  /**
   * A block holding {@code receipts}, for a sender that has them as objects (a rare failure path).
   */
  public static Receipts of(List<Receipt> receipts) {
    Receipts out = new Receipts(receipts.size());
    for (Receipt r : receipts) {
      out.add(r);
    }
    return out;
  }

  /** A block of one receipt. */
  public static Receipts of(Receipt receipt) {
    Receipts out = new Receipts(1);
    out.add(receipt);
    return out;
  }

  /** Adds a confirmation: frame of task {@code task} moved {@code movedBytes}. */
  public void ok(int task, long movedBytes, RemoteEffect remoteEffect) {
    put(task, movedBytes, null, remoteEffect, "");
  }

  /** Adds a failure of a frame of task {@code task}. */
  public void failed(int task, ErrorKind kind, RemoteEffect remoteEffect, String why) {
    put(task, 0, kind, remoteEffect, why);
  }

  /** Adds {@code r}. */
  public void add(Receipt r) {
    put(r.taskIndex(), r.bytes(), r.error(), r.effect(), r.detail());
  }

  private void put(
      int task, long movedBytes, ErrorKind kind, RemoteEffect remoteEffect, String why) {
    if (size == taskIndex.length) {
      int c = size * 2;
      taskIndex = Arrays.copyOf(taskIndex, c);
      bytes = Arrays.copyOf(bytes, c);
      error = Arrays.copyOf(error, c);
      effect = Arrays.copyOf(effect, c);
      detail = Arrays.copyOf(detail, c);
    }
    taskIndex[size] = task;
    bytes[size] = movedBytes;
    error[size] = kind;
    effect[size] = remoteEffect;
    detail[size] = why;
    size++;
  }

  /** How many receipts the block holds. */
  public int size() {
    return size;
  }

  public int taskIndex(int k) {
    return taskIndex[check(k)];
  }

  public long bytes(int k) {
    return bytes[check(k)];
  }

  /** The failure of receipt {@code k}, or null when it confirms its frame. */
  public ErrorKind error(int k) {
    return error[check(k)];
  }

  public RemoteEffect effect(int k) {
    return effect[check(k)];
  }

  public String detail(int k) {
    return detail[check(k)];
  }

  /** Receipt {@code k} as an object (for a log line or a test). */
  public Receipt get(int k) {
    check(k);
    return new Receipt(taskIndex[k], bytes[k], error[k], effect[k], detail[k]);
  }

  /** Empties the block for reuse, dropping its references. */
  public void clear() {
    Arrays.fill(error, 0, size, null);
    Arrays.fill(effect, 0, size, null);
    Arrays.fill(detail, 0, size, null);
    size = 0;
  }

  private int check(int k) {
    if (k < 0 || k >= size) {
      throw new IndexOutOfBoundsException("receipt " + k + " of " + size);
    }
    return k;
  }
}
