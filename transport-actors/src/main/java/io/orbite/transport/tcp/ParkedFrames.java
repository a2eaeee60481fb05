package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.transport.lane.Unsendable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The frames a {@link TcpPeerChannel} took while no lane they may use works, waiting for one of
 * those slots to be installed again ({@code tcp.waitWhileReconnecting}), and which slots will never
 * be ({@link #gone}). A frame may use every slot, or the slots of its task's lane mask ({@link
 * LaneFrame#laneMask}), so a frame may wait while other lanes work.
 *
 * <p>Guarded by its channel's monitor ({@code lock}): the channel calls {@link #add}, {@link
 * #takeFor} and the queries under it; {@link #sweep}, {@link #gone} and {@link #failAll}, called
 * from any thread, take it to move frames out and fail them after letting it go, never sent.
 */
final class ParkedFrames {
  private final ArrayDeque<LaneFrame> frames = new ArrayDeque<>();
  private final Object lock;
  private final ChannelGate gate;
  private final String peer;

  /** Every slot of the channel. */
  private final long allLanes;

  /** Slots whose lane ended and will not be reconnected; a slot installed again leaves it. */
  private long goneSlots;

  ParkedFrames(Object lock, ChannelGate gate, String peer, long allLanes) {
    this.lock = lock;
    this.gate = gate;
    this.peer = peer;
    this.allLanes = allLanes;
  }

  boolean isEmpty() {
    return frames.isEmpty();
  }

  void add(LaneFrame frame) {
    frames.add(frame);
  }

  /** The slots {@code frame} may use. */
  long slotsOf(LaneFrame frame) {
    return frame.laneMask == 0 ? allLanes : frame.laneMask & allLanes;
  }

  /** Whether some slot {@code mask} names may still come back (not all of them gave up). */
  boolean mayComeBack(long mask) {
    return (mask & ~goneSlots) != 0;
  }

  /**
   * Slot {@code slot} has a lane again: takes out the frames it may carry (the others stay).
   *
   * @return those frames, in the order they were parked; empty when none
   */
  List<LaneFrame> takeFor(int slot) {
    goneSlots &= ~(1L << slot);
    if (frames.isEmpty()) {
      return List.of();
    }
    List<LaneFrame> mine = new ArrayList<>(frames.size());
    for (Iterator<LaneFrame> it = frames.iterator(); it.hasNext(); ) {
      LaneFrame f = it.next();
      if (f.allows(slot)) {
        it.remove();
        mine.add(f);
      }
    }
    return mine;
  }

  /**
   * Slot {@code slot}'s lane ended and will not be reconnected (its slot gave up, or its lane was
   * ended for good): frames that only such slots may carry fail with the gate's kind once it moved,
   * else PEER_LOST, never sent. Any thread.
   */
  void gone(int slot) {
    List<LaneFrame> dead = new ArrayList<>();
    synchronized (lock) {
      goneSlots |= 1L << slot;
      frames.removeIf(
          f -> {
            if (!mayComeBack(slotsOf(f))) {
              dead.add(f);
              return true;
            }
            return false;
          });
    }
    fail(
        dead,
        "TCP lane "
            + slot
            + " to "
            + peer
            + " does not reconnect, and its lane mask names no other lane that works or will");
  }

  /**
   * Fails the frames that may no longer be sent (cancelled or past their deadline), never sent; any
   * thread.
   *
   * @return whether frames are still parked
   */
  boolean sweep() {
    List<LaneFrame> dead = new ArrayList<>();
    boolean left;
    long now = System.nanoTime();
    synchronized (lock) {
      frames.removeIf(
          f -> {
            if (Unsendable.applies(f.sink, f.deadlineNanos, now)) {
              dead.add(f);
              return true;
            }
            return false;
          });
      left = !frames.isEmpty();
    }
    ReceiptBatcher late = new ReceiptBatcher();
    for (LaneFrame f : dead) {
      ErrorKind kind = f.sink.cancelled() ? ErrorKind.CANCELLED : ErrorKind.TIMEOUT;
      f.fail(late, kind, RemoteEffect.NONE, Unsendable.detail(kind) + " while " + gate.refusal());
    }
    late.flush();
    return left;
  }

  /** Fails every frame with the gate's kind, never sent: no lane will take them. Any thread. */
  void failAll(String why) {
    List<LaneFrame> all;
    synchronized (lock) {
      all = new ArrayList<>(frames);
      frames.clear();
    }
    fail(all, why);
  }

  private void fail(List<LaneFrame> dead, String why) {
    if (!dead.isEmpty()) {
      ErrorKind kind = gate.refusalKind();
      RequesterLane.failLate(dead, why, kind == null ? ErrorKind.PEER_LOST : kind);
    }
  }
}
