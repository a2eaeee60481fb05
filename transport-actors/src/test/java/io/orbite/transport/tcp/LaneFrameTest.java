package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.spi.ReceiptSink;
import io.orbite.engine.spi.Receipts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which tasks join a frame ({@link LaneFrame#absorbs}): only the next task of the same batch, of
 * the frame's unit size, starting where the frame ends on both sides, with the same op, region,
 * memory, deadline and tier, within the cap; and that a merged frame gives each of its tasks its
 * own receipt.
 */
class LaneFrameTest {
  private static final long UNIT = 4096;
  private static final long DEADLINE = 123_456_789L;

  private final Sink sink = new Sink();
  private final Arena arena = Arena.ofAuto();
  private final MemorySegment local = arena.allocate(1 << 20);

  /** A frame of task 7: local offset 8192, remote offset 40960 of region 3, one unit. */
  private LaneFrame frame() {
    return new LaneFrame()
        .set(sink, 7, Op.READ, local, 8192, UNIT, 3, 40960, DEADLINE, Priority.MEDIUM);
  }

  /** Whether the frame takes a task that differs from the next one only as the arguments say. */
  private static boolean takes(
      LaneFrame f,
      ReceiptSink sink,
      int task,
      Op op,
      MemorySegment local,
      long localOffset,
      long length,
      long region,
      long remoteOffset,
      long deadline,
      Priority priority,
      long cap) {
    return takes(
        f,
        sink,
        task,
        op,
        local,
        localOffset,
        length,
        region,
        remoteOffset,
        deadline,
        priority,
        0,
        cap);
  }

  /** {@link #takes} for a task of lane mask {@code laneMask}. */
  private static boolean takes(
      LaneFrame f,
      ReceiptSink sink,
      int task,
      Op op,
      MemorySegment local,
      long localOffset,
      long length,
      long region,
      long remoteOffset,
      long deadline,
      Priority priority,
      long laneMask,
      long cap) {
    return f.absorbs(
        sink,
        task,
        op,
        local,
        localOffset,
        length,
        region,
        remoteOffset,
        deadline,
        priority,
        laneMask,
        cap);
  }

  @Test
  void theNextTaskThatFollowsOnBothSidesJoinsUpToTheCap() {
    LaneFrame f = frame();
    long cap = 3 * UNIT;
    assertTrue(
        takes(
            f,
            sink,
            8,
            Op.READ,
            local,
            8192 + UNIT,
            UNIT,
            3,
            40960 + UNIT,
            DEADLINE,
            Priority.MEDIUM,
            cap));
    f.absorb(UNIT);
    assertTrue(
        takes(
            f,
            sink,
            9,
            Op.READ,
            local,
            8192 + 2 * UNIT,
            UNIT,
            3,
            40960 + 2 * UNIT,
            DEADLINE,
            Priority.MEDIUM,
            cap));
    f.absorb(UNIT);
    assertEquals(3, f.tasks);
    assertEquals(3 * UNIT, f.length());
    assertEquals(UNIT, f.unit);
    assertFalse(
        takes(
            f,
            sink,
            10,
            Op.READ,
            local,
            8192 + 3 * UNIT,
            UNIT,
            3,
            40960 + 3 * UNIT,
            DEADLINE,
            Priority.MEDIUM,
            cap),
        "the cap is reached");
    assertEquals("tasks 7-9", f.taskLabel());
  }

  @Test
  void anyDifferenceKeepsTheTaskOut() {
    LaneFrame f = frame();
    long lo = 8192 + UNIT;
    long ro = 40960 + UNIT;
    long cap = 1 << 20;
    Sink other = new Sink();
    MemorySegment otherMemory = arena.allocate(1 << 20);
    assertFalse(
        takes(f, other, 8, Op.READ, local, lo, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, cap),
        "another batch");
    assertFalse(
        takes(f, sink, 9, Op.READ, local, lo, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, cap),
        "not the next task");
    assertFalse(
        takes(f, sink, 8, Op.WRITE, local, lo, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, cap),
        "another op");
    assertFalse(
        takes(f, sink, 8, Op.READ, otherMemory, lo, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, cap),
        "other local memory");
    assertFalse(
        takes(f, sink, 8, Op.READ, local, lo + 1, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, cap),
        "a local gap");
    assertFalse(
        takes(f, sink, 8, Op.READ, local, lo, UNIT, 3, ro - 1, DEADLINE, Priority.MEDIUM, cap),
        "a remote overlap");
    assertFalse(
        takes(f, sink, 8, Op.READ, local, lo, UNIT, 4, ro, DEADLINE, Priority.MEDIUM, cap),
        "another region");
    assertFalse(
        takes(f, sink, 8, Op.READ, local, lo, UNIT - 1, 3, ro, DEADLINE, Priority.MEDIUM, cap),
        "another size");
    assertFalse(
        takes(f, sink, 8, Op.READ, local, lo, UNIT, 3, ro, DEADLINE + 1, Priority.MEDIUM, cap),
        "another deadline");
    assertFalse(
        takes(f, sink, 8, Op.READ, local, lo, UNIT, 3, ro, DEADLINE, Priority.HIGH, cap),
        "another tier");
    assertFalse(
        takes(f, sink, 8, Op.READ, local, lo, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, 1L, cap),
        "another lane mask (a rule's laneMask): a retry must move both tasks within one mask");
    LaneFrame lane1 = frame().lanes(2L);
    assertFalse(lane1.allows(0));
    assertTrue(lane1.allows(1));
    assertTrue(frame().allows(63), "no mask: any lane");
    assertTrue(
        takes(lane1, sink, 8, Op.READ, local, lo, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, 2L, cap),
        "the same mask");
    assertTrue(
        takes(f, sink, 8, Op.READ, local, lo, UNIT, 3, ro, DEADLINE, Priority.MEDIUM, cap),
        "the next task itself");
  }

  @Test
  void aMergedFrameGivesEachTaskItsOwnReceipt() {
    LaneFrame f = frame();
    f.absorb(UNIT);
    f.absorb(UNIT);
    ReceiptBatcher receipts = new ReceiptBatcher();
    f.ok(receipts, RemoteEffect.NONE);
    receipts.flush();
    assertEquals(List.of("7:4096:NONE:null", "8:4096:NONE:null", "9:4096:NONE:null"), sink.seen);

    sink.seen.clear();
    f.fail(receipts, ErrorKind.PERMISSION_DENIED, RemoteEffect.NONE, "refused");
    receipts.flush();
    assertEquals(
        List.of(
            "7:0:NONE:PERMISSION_DENIED",
            "8:0:NONE:PERMISSION_DENIED",
            "9:0:NONE:PERMISSION_DENIED"),
        sink.seen);

    LaneFrame lone = frame();
    assertEquals("task 7", lone.taskLabel());
    lone.clear();
    assertNull(lone.sink);
  }

  /** Records each receipt as "task:bytes:effect:error". */
  private static final class Sink implements ReceiptSink {
    final List<String> seen = new ArrayList<>();

    @Override
    public void deliver(Receipts receipts) {
      for (int k = 0; k < receipts.size(); k++) {
        seen.add(
            receipts.taskIndex(k)
                + ":"
                + receipts.bytes(k)
                + ":"
                + receipts.effect(k)
                + ":"
                + receipts.error(k));
      }
    }

    @Override
    public boolean cancelled() {
      return false;
    }
  }
}
