package io.orbite.transport.lane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What a join of a lane waits for: the thread the runtime started it on, from the start. */
class LaneRuntimeTest {

  /** A lane with nothing of its own: it counts its ends, and may hold its thread at its start. */
  private static final class BareLane extends LaneAgent<Object> {
    final CountDownLatch holdStart;
    volatile int ends;

    BareLane(String name, CountDownLatch holdStart) {
      super(name, SWEEP_NANOS);
      this.holdStart = holdStart;
    }

    @Override
    protected void started() {
      try {
        holdStart.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    protected void take(Object item) {}

    @Override
    protected int pass(long nowNanos) {
      return 0;
    }

    @Override
    protected void drain(Throwable cause, List<Object> unstarted) {}

    @Override
    protected void ended(Throwable cause) {
      ends++;
    }
  }

  @Test
  void aLaneClosedAsSoonAsItIsStartedIsJoinedOnlyOnceItsThreadHasEnded() {
    // Before the fix a join found no thread until the lane's first cycle had begun, and so
    // returned at once for a lane started a moment earlier, its thread still to run: a CQ lane's
    // owner then answered its close with the fresh lane still to end.
    CountDownLatch open = new CountDownLatch(0);
    List<BareLane> lanes = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      BareLane lane = new BareLane("bare-" + i, open);
      LaneRuntime.start(lane);
      lane.close();
      lanes.add(lane);
    }
    for (BareLane lane : lanes) {
      assertTrue(lane.join(5_000), lane.name() + " ended within 5 s");
      assertTrue(lane.ended(), lane.name() + " is CLOSED once joined");
      assertEquals(1, lane.ends, lane.name() + " ended once");
    }
  }

  @Test
  void aJoinWaitsForALaneHeldBeforeItsFirstCycleAndALaneNeverStartedHasNothingToWaitFor() {
    CountDownLatch hold = new CountDownLatch(1);
    BareLane held = new BareLane("held", hold);
    LaneRuntime.start(held);
    held.close();
    assertFalse(held.join(100), "its thread is held in its start");
    assertFalse(held.ended());

    hold.countDown();
    assertTrue(held.join(5_000));
    assertTrue(held.ended());
    assertEquals(1, held.ends);

    BareLane never = new BareLane("never", new CountDownLatch(0));
    assertTrue(never.join(0), "no thread to wait for");
    assertEquals(0, never.ends);
  }
}
