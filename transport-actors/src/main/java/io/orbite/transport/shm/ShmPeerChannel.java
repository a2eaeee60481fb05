package io.orbite.transport.shm;

import io.orbite.config.MergeConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.engine.wire.TransferLimits;
import io.orbite.transport.lane.Unsendable;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Requester data plane to one peer incarnation over SHM: a small task submitted alone is copied at
 * once on the caller's thread when one of the endpoint's copy lanes is idle ({@link
 * ShmLane#copyHere}); any other task is handed to a lane, and that lane copies it whole (memory
 * needs no slicing into frames: one task, one receipt). The tasks of a run are dealt across the
 * lanes in contiguous parts of up to {@link #DEAL_BYTES} ({@link RunDealer}), not one by one. Owned
 * by its endpoint's {@link ShmLink}. Thread-safe; never blocks on I/O.
 */
final class ShmPeerChannel implements PeerChannel {
  private final SegmentDescriptor peer;
  private final ShmLane[] lanes;

  /**
   * The most bytes of a run one lane takes before the next lane's turn. A smaller run is split
   * evenly, so every lane still starts on it.
   */
  static final long DEAL_BYTES = 256L << 10;

  /** Which lane each queued task goes to; under this channel's lock. */
  private final RunDealer dealer;

  /**
   * Every allocation the peer incarnation exported in any Describe answer (region ids are never
   * reused).
   */
  private final Map<Long, SharedRegion> exports;

  private final ChannelGate gate;
  private final Runnable onFence;

  /** What {@link #mergeLimitBytes} answers. */
  private final long mergeLimitBytes;

  ShmPeerChannel(
      SegmentDescriptor peer,
      ChannelGate gate,
      List<ShmLane> lanes,
      Map<Long, SharedRegion> exports,
      long mergeLimitBytes,
      Runnable onFence) {
    this.peer = peer;
    this.mergeLimitBytes = mergeLimitBytes;
    this.gate = gate;
    this.lanes = lanes.toArray(ShmLane[]::new);
    this.dealer = new RunDealer(this.lanes.length, DEAL_BYTES);
    this.exports = exports;
    this.onFence = onFence;
  }

  /**
   * The most bytes an SHM channel takes as one merged task: {@code merge.maxBytes} (0 with {@code
   * merge.enabled} off), no more than the peer advertised, and no more than {@link #DEAL_BYTES}. A
   * task is copied whole by one lane, while a run is dealt across the lanes in parts of up to
   * {@link #DEAL_BYTES}: a merged task longer than a part would leave the other lanes idle while
   * one copies the bytes they would have shared.
   */
  static long mergeLimit(MergeConfig merge, TransferLimits peerLimits) {
    return TransferLimits.mergeTowards(
        Math.min(merge.requesterLimitBytes(), DEAL_BYTES), peerLimits);
  }

  @Override
  public long mergeLimitBytes() {
    return mergeLimitBytes;
  }

  static Map<Long, SharedRegion> exportTable(SharedExports exports) {
    Map<Long, SharedRegion> table = new ConcurrentHashMap<>();
    table.putAll(exports.byRegion());
    return table;
  }

  /** Adds the allocations a fresher Describe answer exported. */
  void addExports(SharedExports fresh) {
    exports.putAll(fresh.byRegion());
  }

  @Override
  public SegmentDescriptor peer() {
    return peer;
  }

  @Override
  public Transport transport() {
    return Transport.SHM;
  }

  @Override
  public ChannelGate gate() {
    return gate;
  }

  @Override
  public void fence(long newerEpoch, String reason) {
    if (gate.fence(newerEpoch, reason)) {
      closeLanes();
      onFence.run();
    }
  }

  /**
   * A lane found the peer's process ended (on that lane's thread or a caller's, after it closed the
   * gate, PEER_LOST): the lane's siblings stop copying for it at once.
   */
  void peerLost() {
    closeLanes();
  }

  /** Closes every lane: each fails what it holds with the gate's kind and ends. */
  void closeLanes() {
    for (ShmLane lane : lanes) {
      lane.close();
    }
  }

  @Override
  public int dispatchAlone(TaskWork work) {
    return dispatch(work, true);
  }

  @Override
  public int dispatch(TaskWork work) {
    return dispatch(work, false);
  }

  private int dispatch(TaskWork work, boolean alone) {
    if (!gate.active()) {
      return gate.refuse(work);
    }
    if (alone) {
      for (ShmLane lane : lanes) {
        if (lane.copyHere(work)) {
          return 1;
        }
      }
    }
    int i;
    synchronized (this) {
      i = dealer.single();
    }
    return enqueue(work, i);
  }

  /** Deals a run across the lanes in contiguous parts ({@link RunDealer}). */
  @Override
  public synchronized void dispatchRun(TaskWork[] work, int from, int to, int[] owed) {
    long total = 0;
    for (int k = from; k < to; k++) {
      total += work[k].lengthBytes();
    }
    dealer.start(total);
    for (int k = from; k < to; k++) {
      TaskWork w = work[k];
      if (!gate.active()) {
        // Closed or fenced meanwhile: this task and the rest fail as dispatch fails them.
        owed[k] = dispatch(w, false);
      } else {
        owed[k] = enqueue(w, dealer.next(w.lengthBytes()));
      }
    }
  }

  /**
   * Queues {@code work} on lane {@code i}; a lane that ended meanwhile fails it, never copied: with
   * the gate's kind once it says why, else PEER_LOST (the lane ended under it).
   */
  private int enqueue(TaskWork work, int i) {
    if (!lanes[i].enqueue(work)) {
      ErrorKind kind = gate.refusalKind();
      work.sink()
          .deliver(
              Receipt.failed(
                  work.taskIndex(),
                  kind != null ? kind : ErrorKind.PEER_LOST,
                  RemoteEffect.NONE,
                  Unsendable.neverSent(
                      gate.active() ? "the SHM lane to " + peer + " has ended" : gate.refusal())));
    }
    return 1;
  }

  @Override
  public void flush() {
    for (ShmLane lane : lanes) {
      lane.wakeIfQueued();
    }
  }
}
