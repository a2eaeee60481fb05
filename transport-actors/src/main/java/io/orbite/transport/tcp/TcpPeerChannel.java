package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.slicing.FrameSplitter;
import io.orbite.engine.slicing.LaneSelector;
import io.orbite.engine.slicing.SlicePlan;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import java.util.Arrays;

/**
 * Requester data plane to one peer incarnation over TCP: slices each task (C15), picks a lane per
 * slice by score, and queues the resulting frames on the lanes. Owned by a TcpEndpoint actor.
 */
final class TcpPeerChannel implements PeerChannel {
  private final SegmentDescriptor peer;
  private final RequesterLane[] lanes;
  private final FramePool frames;
  private final SlicePlanner planner;
  private final long maxFrameBytes;
  private final double[] bandwidth;
  private final boolean[] touched;

  /** Each lane's charged bytes, read afresh for every task; guarded by this channel's monitor. */
  private final long[] charged;

  private volatile boolean active = true;
  private volatile String fencedBecause;
  private final Runnable onFence;
  private int rotation;
  private final java.util.concurrent.atomic.LongAdder retries;

  TcpPeerChannel(
      SegmentDescriptor peer,
      RequesterLane[] lanes,
      FramePool frames,
      SlicePlanner planner,
      long maxFrameBytes,
      Runnable onFence,
      java.util.concurrent.atomic.LongAdder retries) {
    this.frames = frames;
    this.peer = peer;
    this.retries = retries;
    this.onFence = onFence;
    this.lanes = lanes;
    this.planner = planner;
    this.maxFrameBytes = maxFrameBytes;
    this.bandwidth = new double[lanes.length];
    // Lanes of one peer share a link and start with equal estimates.
    Arrays.fill(bandwidth, 1.0);
    this.touched = new boolean[lanes.length];
    this.charged = new long[lanes.length];
  }

  @Override
  public SegmentDescriptor peer() {
    return peer;
  }

  @Override
  public Transport transport() {
    return Transport.TCP;
  }

  @Override
  public boolean active() {
    if (!active) {
      return false;
    }
    for (RequesterLane lane : lanes) {
      if (lane.running()) {
        return true;
      }
    }
    return false;
  }

  void deactivate() {
    active = false;
  }

  @Override
  public String fencedBecause() {
    return fencedBecause;
  }

  @Override
  public void fence(String reason) {
    if (fencedBecause == null) {
      fencedBecause = reason;
      active = false;
      onFence.run();
    }
  }

  @Override
  public synchronized int dispatch(TaskWork work) {
    String fenced = fencedBecause;
    if (fenced != null) {
      work.sink()
          .deliver(
              Receipt.failed(
                  work.taskIndex(),
                  ErrorKind.EPOCH_MISMATCH,
                  RemoteEffect.NONE,
                  peer + " is fenced: " + fenced + " (never sent)"));
      return 1;
    }
    if (!active()) {
      work.sink()
          .deliver(
              Receipt.failed(
                  work.taskIndex(),
                  ErrorKind.PEER_LOST,
                  RemoteEffect.NONE,
                  "no open lane to " + peer + " (never sent)"));
      return 1;
    }
    for (int i = 0; i < lanes.length; i++) {
      // A closed lane is made unattractive rather than removed, so lane indexes stay stable.
      charged[i] = lanes[i].running() ? lanes[i].chargedBytes() : Long.MAX_VALUE / 4;
    }
    long length = work.lengthBytes();
    if (length <= maxFrameBytes && planner.singleSlice(work.op(), length)) {
      // One slice in one frame (every small task): the lane the plan would pick, with no plan made.
      queue(LaneSelector.single(charged, bandwidth, length, rotation++), work, 0, length);
      return 1;
    }
    SlicePlan plan = planner.plan(work.op(), length);
    int[] laneOfSlice = LaneSelector.assign(plan, charged, bandwidth, rotation++);
    return FrameSplitter.split(
        plan, laneOfSlice, maxFrameBytes, (lane, offset, part) -> queue(lane, work, offset, part));
  }

  /** Queues the frame of {@code work} at {@code offset} from its start on lane {@code lane}. */
  private void queue(int lane, TaskWork work, long offset, long length) {
    LaneFrame frame =
        frames
            .take()
            .set(
                work.sink(),
                work.taskIndex(),
                work.op(),
                work.local(),
                work.localOffset() + offset,
                length,
                work.regionId(),
                work.remoteOffset() + offset,
                work.deadlineNanos(),
                work.priority());
    lanes[lane].enqueue(frame);
    touched[lane] = true;
  }

  /**
   * Takes a frame from a lane that broke and queues it on the open lane with the fewest bytes
   * charged, once (the lane decides which frames may go: READs, and frames never sent).
   */
  synchronized boolean retry(LaneFrame frame, RequesterLane from) {
    if (fencedBecause != null || !active || System.nanoTime() - frame.deadlineNanos > 0) {
      return false;
    }
    RequesterLane best = null;
    for (RequesterLane lane : lanes) {
      if (lane != from
          && lane.running()
          && (best == null || lane.chargedBytes() < best.chargedBytes())) {
        best = lane;
      }
    }
    if (best == null) {
      return false;
    }
    best.enqueue(frame);
    best.wake();
    retries.increment();
    return true;
  }

  @Override
  public synchronized void flush() {
    for (int i = 0; i < lanes.length; i++) {
      if (touched[i]) {
        touched[i] = false;
        lanes[i].wake();
      }
    }
  }
}
