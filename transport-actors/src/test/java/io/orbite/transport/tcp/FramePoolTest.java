package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Op;
import io.orbite.engine.Priority;
import io.orbite.engine.spi.ReceiptSink;
import io.orbite.engine.spi.Receipts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FramePoolTest {
  private static final ReceiptSink SINK =
      new ReceiptSink() {
        @Override
        public void deliver(Receipts receipts) {}

        @Override
        public boolean cancelled() {
          return false;
        }
      };

  @Test
  void givenBackFramesAreReusedAndHoldNothingOfTheirLastTask() {
    FramePool pool = new FramePool();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment memory = arena.allocate(1 << 16);
      List<LaneFrame> first = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        LaneFrame f =
            pool.take()
                .set(SINK, i, Op.WRITE, memory, 4096L * i, 4096, 7, 100 + i, 1, Priority.LOW);
        f.view();
        f.retried = true;
        f.received = 12;
        f.requestId = 99;
        first.add(f);
      }
      pool.giveBack(first);
      for (LaneFrame f : first) {
        assertNull(f.sink, "a pooled frame must not keep its batch reachable");
        assertNull(f.local, "a pooled frame must not keep its memory reachable");
        assertNull(f.view);
        assertNull(f.priority, "a pooled frame has no tier until it is set");
      }
      Set<LaneFrame> reused = Collections.newSetFromMap(new IdentityHashMap<>());
      for (int i = 0; i < 3; i++) {
        LaneFrame f = pool.take().set(SINK, 10 + i, Op.READ, memory, 8, 16, 3, 5, 2, Priority.HIGH);
        reused.add(f);
        // Every field is set afresh: nothing of the frame's earlier request survives.
        assertEquals(10 + i, f.taskIndex);
        assertSame(Op.READ, f.op);
        assertSame(Priority.HIGH, f.priority);
        assertEquals(8, f.localOffset);
        assertEquals(16, f.length());
        assertEquals(0, f.requestId);
        assertEquals(0, f.received);
        assertEquals(0, f.streamStart);
        assertNull(f.view);
        assertTrue(!f.retried);
        assertEquals(16, f.view().remaining(), "the view covers exactly the frame's range");
      }
      assertEquals(
          Set.copyOf(first), Set.copyOf(reused), "the three given back are the three taken");
      assertNotSame(first.get(0), pool.take(), "an empty pool makes a new frame");
    }
  }

  @Test
  void keepsAtMostItsCapOfIdleFrames() {
    FramePool pool = new FramePool();
    List<LaneFrame> many = new ArrayList<>();
    for (int i = 0; i < FramePool.MAX_POOLED + 100; i++) {
      many.add(new LaneFrame());
    }
    pool.giveBack(many);
    Set<LaneFrame> given = Collections.newSetFromMap(new IdentityHashMap<>());
    given.addAll(many);
    int reused = 0;
    for (int i = 0; i < FramePool.MAX_POOLED + 100; i++) {
      if (given.contains(pool.take())) {
        reused++;
      }
    }
    assertEquals(FramePool.MAX_POOLED, reused);
  }
}
