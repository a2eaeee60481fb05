package io.orbite.transport.file;

import io.orbite.transport.lane.LaneLifecycle;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * What channels share with one ring lane: its queue of operations not yet started, the flag that
 * says a wake-up is already on its way, and its lifecycle (only a running lane takes new work).
 */
final class LaneHandle {
  final String name;
  final ConcurrentLinkedQueue<FileOp> queue = new ConcurrentLinkedQueue<>();
  final AtomicBoolean scheduled = new AtomicBoolean();

  /** The lane's lifecycle: only a RUNNING lane is given new work. */
  final LaneLifecycle lifecycle = new LaneLifecycle();

  volatile ActorRef<RingLane.Command> lane;

  LaneHandle(String name) {
    this.name = name;
  }

  /** Wakes the lane unless it is already scheduled to run its duty cycle. */
  void wake() {
    ActorRef<RingLane.Command> ref = lane;
    if (ref != null && scheduled.compareAndSet(false, true)) {
      ref.tell(RingLane.Wake.INSTANCE);
    }
  }
}
