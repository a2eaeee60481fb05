package io.orbite.transport.tcp;

import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.slicing.FrameSplitter;
import io.orbite.engine.slicing.LaneSelector;
import io.orbite.engine.slicing.SlicePlan;
import io.orbite.engine.slicing.SlicePlanner;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import io.orbite.transport.lane.Unsendable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Requester data plane to one peer incarnation over TCP: slices each task (C15), picks a lane per
 * slice by score, and queues the resulting frames on the lanes. Owned by a TcpEndpoint actor.
 *
 * <p>Lanes are slots: a lane that broke is replaced in its slot by the one its link reconnects
 * ({@link #install}). While no lane works and the link is still reconnecting, the frames of new
 * tasks are parked here ({@code tcp.waitWhileReconnecting}); the first lane installed takes them,
 * and a parked frame whose task was cancelled or whose deadline passed is failed by {@link
 * ParkedFrames#sweep}, never sent.
 *
 * <p>A task a policy rule keeps on some lanes ({@link TaskWork#laneMask}, {@code
 * policies[i].choose.laneMask}) is carried by those slots only: its lane is chosen by the same
 * score among them, its frames carry the mask ({@link LaneFrame#laneMask}), a READ retried after
 * its lane broke goes to another of them, and while none of them works it is parked as above, even
 * if other lanes work, until one of its slots is installed again; when none of its slots can come
 * back ({@link ParkedFrames#gone}) it fails, never sent. Unmasked tasks choose among every lane as
 * before.
 */
final class TcpPeerChannel implements PeerChannel {
  /**
   * The most bytes of single-frame tasks of a run that go to one lane before the next choice of
   * lane ({@link #dispatchRun}); a smaller run is split across the lanes. Neighbouring tasks
   * usually cover neighbouring memory, and a lane that copies a contiguous stretch runs faster than
   * two that take alternate 4 KiB pieces of it (on both sides: the source's copy out of its region
   * and the requester's copy into it). It also caps a request merged from neighbouring tasks, where
   * fewer, larger requests cost less per task (docs/qualification.md).
   */
  static final long DEAL_BYTES = 1024L << 10;

  private final SegmentDescriptor peer;

  /** The lane in each slot; replaced only under this channel's monitor ({@link #install}). */
  private final RequesterLane[] lanes;

  /** Frames of tasks taken while no lane they may use works; guarded by this channel's monitor. */
  private final ParkedFrames parked;

  /** Whether tasks may wait for a reconnecting lane ({@code tcp.waitWhileReconnecting}). */
  private final boolean waitWhileReconnecting;

  /** Whether the link will still reconnect a lane (it is not closing and has not given up). */
  private final BooleanSupplier healing;

  private final FramePool frames;
  private final SlicePlanner planner;

  /** The longest frame payload to this peer: the least of its advertised limit and this side's. */
  private final long maxFrameBytes;

  /** What {@link #mergeLimitBytes} answers. */
  private final long mergeLimitBytes;

  private final double[] bandwidth;
  private final boolean[] touched;

  /**
   * Each lane's charged bytes, read afresh for every task ({@link #dispatch}) or run ({@link
   * #dispatchRun}); guarded by this channel's monitor.
   */
  private final long[] charged;

  /**
   * Frames of the running {@link #dispatchRun} for each lane; guarded by this channel's monitor.
   */
  private final ArrayList<LaneFrame>[] pending;

  /** The bytes of {@link #pending}, for each lane. */
  private final long[] pendingBytes;

  private final ChannelGate gate;
  private final Runnable onFence;
  private int rotation;
  private final EngineTally counters;

  /** Every slot: what a task's mask is when no rule restricts it. */
  private final long allLanes;

  /** Told when frames are parked while other lanes work: the link then sweeps them. */
  private final Runnable parkedWhileWorking;

  TcpPeerChannel(
      SegmentDescriptor peer,
      ChannelGate gate,
      RequesterLane[] lanes,
      FramePool frames,
      SlicePlanner planner,
      long maxFrameBytes,
      long mergeLimitBytes,
      Runnable onFence,
      EngineTally counters,
      boolean waitWhileReconnecting,
      BooleanSupplier healing,
      Runnable parkedWhileWorking) {
    this.waitWhileReconnecting = waitWhileReconnecting;
    this.parkedWhileWorking = parkedWhileWorking;
    this.allLanes = LaneSelector.all(lanes.length);
    this.parked = new ParkedFrames(this, gate, peer.toString(), allLanes);
    this.healing = healing;
    this.frames = frames;
    this.peer = peer;
    this.counters = counters;
    this.onFence = onFence;
    this.gate = gate;
    this.lanes = lanes;
    this.planner = planner;
    this.maxFrameBytes = maxFrameBytes;
    this.mergeLimitBytes = mergeLimitBytes;
    this.bandwidth = new double[lanes.length];
    // Lanes of one peer share a link and start with equal estimates.
    Arrays.fill(bandwidth, 1.0);
    this.touched = new boolean[lanes.length];
    this.charged = new long[lanes.length];
    @SuppressWarnings("unchecked")
    ArrayList<LaneFrame>[] lists = new ArrayList[lanes.length];
    for (int i = 0; i < lanes.length; i++) {
      lists[i] = new ArrayList<>();
    }
    this.pending = lists;
    this.pendingBytes = new long[lanes.length];
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
  public ChannelGate gate() {
    return gate;
  }

  /**
   * The least of {@code merge.maxBytes}, one frame to this peer and the peer's advertised merge
   * limit; 0 with {@code merge.enabled} off ({@link TcpLink#mergeLimit}). A merged task longer than
   * one slice is sliced and framed as any task is.
   */
  @Override
  public long mergeLimitBytes() {
    return mergeLimitBytes;
  }

  /** The longest frame payload this channel sends (for tests). */
  long maxFrameBytes() {
    return maxFrameBytes;
  }

  /** The slots {@code work} may use: its rule's lane mask, or every slot. */
  private long lanesOf(TaskWork work) {
    return work.laneMask() == TaskWork.ANY ? allLanes : work.laneMask() & allLanes;
  }

  /** Whether a lane {@code mask} names still takes frames. */
  private boolean anyLaneRunning(long mask) {
    for (int i = 0; i < lanes.length; i++) {
      if ((mask >>> i & 1) != 0 && lanes[i].running()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Refuses only a mask without a bit below the lane count (a checked config keeps masks below
   * {@code tcp.lanes}); a named lane that is down now is waited for, as every lane is.
   */
  @Override
  public String maskRefusal(long mask) {
    return (mask & allLanes) != 0
        ? null
        : "names none of the " + lanes.length + " TCP lanes to " + peer;
  }

  /** Whether a frame restricted to {@code mask} may wait for one of its slots to reconnect. */
  private boolean mayWait(long mask) {
    return waitWhileReconnecting && parked.mayComeBack(mask) && healing.getAsBoolean();
  }

  @Override
  public void fence(long newerEpoch, String reason) {
    if (gate.fence(newerEpoch, reason)) {
      onFence.run();
    }
  }

  @Override
  public synchronized int dispatch(TaskWork work) {
    if (!gate.active()) {
      return gate.refuse(work);
    }
    long mask = lanesOf(work);
    if (!anyLaneRunning(mask)) {
      if (mayWait(mask)) {
        return park(work, mask);
      }
      // Every lane it may use ended and none will come back: when that is every lane, the link is
      // about to close the gate saying why.
      String of = mask == allLanes ? "" : " of its lane mask " + Long.toUnsignedString(mask);
      return refuseLaneless(work, "no open lane" + of + " to " + peer);
    }
    readCharges();
    long length = work.lengthBytes();
    if (length <= maxFrameBytes && planner.singleSlice(work.op(), length)) {
      // One slice in one frame (every small task): the lane the plan would pick, with no plan made.
      int lane =
          mask == allLanes
              ? LaneSelector.single(charged, bandwidth, length, rotation++)
              : LaneSelector.single(charged, bandwidth, length, rotation++, mask);
      queue(lane, work, 0, length);
      return 1;
    }
    SlicePlan plan = planner.plan(work.op(), length);
    int[] laneOfSlice = LaneSelector.assign(plan, charged, bandwidth, rotation++, mask);
    return FrameSplitter.split(
        plan, laneOfSlice, maxFrameBytes, (lane, offset, part) -> queue(lane, work, offset, part));
  }

  /**
   * Takes a run of tasks under one lock: each lane's charge is read once and then kept up to date
   * here as frames are assigned, so lane choice is as {@link #dispatch} would make it, and each
   * lane takes the run's frames for it in one hand-off (one charge, one lock of its queue) rather
   * than one per task. A single-frame task that follows the last frame taken for its lane (the next
   * task of the batch, of the same size, the next bytes on both sides, same op, deadline and tier)
   * joins that frame, up to the part's size ({@link LaneFrame#absorbs}): a run of neighbouring
   * small tasks, such as one request's KV pages laid out in order, costs one request on the wire,
   * one header and one copy of its payload (a READ of 32 KiB or more lands in local memory straight
   * from the socket), instead of one per task. Each task still gets its own receipt, for what
   * happened to its frame. A task of a rule's lane mask starts a part of its own on one of its
   * lanes unless the part under way is on one.
   */
  @Override
  public synchronized void dispatchRun(TaskWork[] work, int from, int to, int[] owed) {
    readCharges();
    long runBytes = 0;
    for (int k = from; k < to; k++) {
      runBytes += work[k].lengthBytes();
    }
    long part = Math.max(1, Math.min(DEAL_BYTES, runBytes / lanes.length));
    long mergeCap = Math.min(part, maxFrameBytes);
    int lane = -1;
    long partLeft = 0;
    try {
      for (int k = from; k < to; k++) {
        TaskWork w = work[k];
        long length = w.lengthBytes();
        long mask = lanesOf(w);
        if (!gate.active() || !anyLaneRunning(mask)) {
          // Fenced or closed meanwhile: what was taken goes on; this task and the rest are failed
          // as dispatch fails them, never sent.
          handOverPending();
          owed[k] = dispatch(w);
        } else if (length <= maxFrameBytes && planner.singleSlice(w.op(), length)) {
          if (partLeft <= 0 || (mask >>> lane & 1) == 0) {
            // A part of the run goes to one lane, chosen as a task of the part's size would be.
            lane =
                mask == allLanes
                    ? LaneSelector.single(charged, bandwidth, part, rotation++)
                    : LaneSelector.single(charged, bandwidth, part, rotation++, mask);
            partLeft = part;
          }
          partLeft -= length;
          ArrayList<LaneFrame> mine = pending[lane];
          LaneFrame last = mine.isEmpty() ? null : mine.getLast();
          // Coalescing neighbouring frames is request merging too: merge.enabled=false (a limit
          // of 0) sends every task in a frame of its own.
          if (last != null
              && mergeLimitBytes > 0
              && last.absorbs(
                  w.sink(),
                  w.taskIndex(),
                  w.op(),
                  w.local(),
                  w.localOffset(),
                  length,
                  w.regionId(),
                  w.remoteOffset(),
                  w.deadlineNanos(),
                  w.priority(),
                  w.laneMask(),
                  mergeCap)) {
            // The task follows the lane's last frame on both sides: one request carries both.
            last.absorb(length);
          } else {
            mine.add(frame(w, 0, length));
          }
          pendingBytes[lane] += length;
          charged[lane] += length;
          owed[k] = 1;
        } else {
          // Frames queued so far go first, so that each lane keeps the submission's order.
          handOverPending();
          owed[k] = dispatch(w);
          readCharges();
          partLeft = 0;
        }
      }
    } finally {
      handOverPending();
    }
  }

  /** Reads each lane's charged bytes into {@link #charged}. */
  private void readCharges() {
    for (int i = 0; i < lanes.length; i++) {
      // A closed lane is made unattractive rather than removed, so lane indexes stay stable.
      charged[i] = lanes[i].running() ? lanes[i].chargedBytes() : Long.MAX_VALUE / 4;
    }
  }

  /** Queues each lane's pending frames of a run on it, in one hand-off per lane. */
  private void handOverPending() {
    for (int i = 0; i < lanes.length; i++) {
      if (!pending[i].isEmpty()) {
        lanes[i].enqueueAll(pending[i], pendingBytes[i]);
        touched[i] = true;
        pending[i].clear();
        pendingBytes[i] = 0;
      }
    }
  }

  private LaneFrame frame(TaskWork work, long offset, long length) {
    return frames
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
            work.priority())
        .lanes(work.laneMask());
  }

  /**
   * Queues the frame of {@code work} at {@code offset} from its start on lane {@code lane}; a lane
   * that ended meanwhile fails it, never sent.
   */
  private void queue(int lane, TaskWork work, long offset, long length) {
    LaneFrame frame = frame(work, offset, length);
    if (lanes[lane].enqueue(frame)) {
      touched[lane] = true;
    } else {
      RequesterLane.failLate(List.of(frame), lanes[lane].name(), lanes[lane].neverSentKind());
    }
  }

  /**
   * Parks the frames of {@code work} until a lane of {@code mask} is installed; returns the
   * receipts owed.
   */
  private int park(TaskWork work, long mask) {
    long length = work.lengthBytes();
    int owed = 0;
    boolean first = parked.isEmpty();
    for (long at = 0; at < length; at += maxFrameBytes) {
      parked.add(frame(work, at, Math.min(maxFrameBytes, length - at)));
      owed++;
    }
    if (first && mask != allLanes && gate.working()) {
      parkedWhileWorking.run();
    }
    return owed;
  }

  /**
   * Puts {@code lane} in slot {@code slot} (the lane it replaces has ended) and hands it the parked
   * frames its slot may carry (a frame of another lane mask stays parked); the caller starts the
   * lane.
   */
  synchronized void install(int slot, RequesterLane lane) {
    lanes[slot] = lane;
    bandwidth[slot] = 1.0;
    List<LaneFrame> mine = parked.takeFor(slot);
    if (!mine.isEmpty()) {
      long bytes = 0;
      for (LaneFrame f : mine) {
        bytes += f.length();
      }
      lane.enqueueAll(mine, bytes);
      touched[slot] = true;
    }
  }

  /** The frames waiting for a lane (the link sweeps and fails them). */
  ParkedFrames parked() {
    return parked;
  }

  /** The lane in each slot now (for the link's close and its view). */
  synchronized RequesterLane[] lanes() {
    return lanes.clone();
  }

  /**
   * Fails a task none of whose lanes works or will come back, never sent: its peer (or the lanes
   * its rule allows) was lost.
   */
  private int refuseLaneless(TaskWork work, String why) {
    work.sink()
        .deliver(
            Receipt.failed(
                work.taskIndex(),
                lanes[0].neverSentKind(),
                RemoteEffect.NONE,
                Unsendable.neverSent(why)));
    return 1;
  }

  /**
   * Takes a frame from a lane that broke and queues it on the open lane of its mask with the fewest
   * bytes charged, once (the lane decides which frames may go: READs, and frames never sent).
   */
  synchronized boolean retry(LaneFrame frame, RequesterLane from) {
    if (!gate.active() || System.nanoTime() - frame.deadlineNanos > 0) {
      return false;
    }
    RequesterLane best = null;
    for (int i = 0; i < lanes.length; i++) {
      RequesterLane lane = lanes[i];
      if (lane != from
          && frame.allows(i)
          && lane.running()
          && (best == null || lane.chargedBytes() < best.chargedBytes())) {
        best = lane;
      }
    }
    if (best == null) {
      long mask = parked.slotsOf(frame);
      if (mayWait(mask)) {
        // The last lane of its mask broke: the frame waits, like a new task's, for one of its
        // lanes to reconnect.
        counters.increment(EngineTally.Count.READ_RETRIES);
        boolean first = parked.isEmpty();
        parked.add(frame);
        if (first && mask != allLanes && gate.working()) {
          parkedWhileWorking.run();
        }
        return true;
      }
      return false;
    }
    // Counted before the frame is queued: once queued, its task may end (and a caller read the
    // counter) before this thread runs again.
    counters.increment(EngineTally.Count.READ_RETRIES);
    if (!best.enqueue(frame)) {
      counters.add(EngineTally.Count.READ_RETRIES, -1);
      return false;
    }
    best.wake();
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
