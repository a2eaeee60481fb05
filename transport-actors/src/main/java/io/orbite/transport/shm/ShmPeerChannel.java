package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.wire.SharedExports;
import io.orbite.engine.wire.SharedRegion;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Requester data plane to one peer incarnation over SHM: a small task submitted alone is copied at
 * once on the caller's thread when the endpoint's copy lane is idle ({@link ShmLane#copyHere}); any
 * other task is handed to the lane, which copies it whole (memory needs no slicing into frames: one
 * task, one receipt). Owned by an ShmEndpoint actor. Thread-safe; never blocks on I/O.
 */
final class ShmPeerChannel implements PeerChannel {
  private final SegmentDescriptor peer;
  private final ShmLane lane;

  /**
   * Every allocation the peer incarnation exported in any Describe answer (region ids are never
   * reused).
   */
  private final Map<Long, SharedRegion> exports;

  private final Runnable onFence;
  private volatile boolean active = true;
  private volatile String fencedBecause;

  ShmPeerChannel(
      SegmentDescriptor peer, ShmLane lane, Map<Long, SharedRegion> exports, Runnable onFence) {
    this.peer = peer;
    this.lane = lane;
    this.exports = exports;
    this.onFence = onFence;
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
  public boolean active() {
    return active && lane.running() && fencedBecause() == null;
  }

  void deactivate() {
    active = false;
  }

  @Override
  public String fencedBecause() {
    String mine = fencedBecause;
    return mine != null ? mine : lane.fencedBecause();
  }

  @Override
  public void fence(String reason) {
    if (fencedBecause == null) {
      fencedBecause = reason;
      active = false;
      lane.fence(reason);
      onFence.run();
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
    String fenced = fencedBecause();
    if (fenced != null) {
      work.sink()
          .deliver(
              Receipt.failed(
                  work.taskIndex(),
                  ErrorKind.EPOCH_MISMATCH,
                  RemoteEffect.NONE,
                  peer + " is fenced: " + fenced + " (never copied)"));
      return 1;
    }
    if (alone && active && lane.copyHere(work)) {
      return 1;
    }
    if (!active || !lane.enqueue(work)) {
      work.sink()
          .deliver(
              Receipt.failed(
                  work.taskIndex(),
                  ErrorKind.PEER_LOST,
                  RemoteEffect.NONE,
                  "the SHM endpoint to " + peer + " is closed (never copied)"));
    }
    return 1;
  }

  @Override
  public void flush() {
    lane.wakeIfQueued();
  }
}
