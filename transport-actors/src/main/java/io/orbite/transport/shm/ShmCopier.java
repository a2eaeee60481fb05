package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import io.orbite.transport.endpoint.PeerBytes;
import io.orbite.transport.lane.Unsendable;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The copy of one pass of an SHM lane: tasks grouped by peer allocation, each group copied under
 * the allocation's activity lock after its liveness lock was checked, one receipt per task into the
 * lane's batcher. Whatever is unsendable ({@link Unsendable}) or finds the peer gone fails unsent.
 * Runs only under its lane's owner lock (the lane's thread, or a caller copying one small task).
 */
final class ShmCopier {
  private static final Logger LOG = LoggerFactory.getLogger(ShmCopier.class);

  /** How long a gone allocation waits for its peer's token to show a death in progress. */
  private static final long DEATH_SETTLE_NANOS = 5_000_000L;

  private final String lane;
  private final SegmentDescriptor peer;
  private final ChannelGate gate;
  private final ShmMappings mappings;
  private final ReceiptBatcher receipts;
  private final EngineTally counters;
  private final FaultHooks hooks;
  private final LongAdder laneBytes;

  /** This peer's SHM bytes not yet reported to it, looked up once (its TCP lanes report them). */
  private final PeerBytes peerBytes;

  private final Runnable peerLost;

  ShmCopier(
      String lane,
      SegmentDescriptor peer,
      ChannelGate gate,
      ShmMappings mappings,
      ReceiptBatcher receipts,
      EngineTally counters,
      FaultHooks hooks,
      Runnable peerLost) {
    this.lane = lane;
    this.peer = peer;
    this.gate = gate;
    this.mappings = mappings;
    this.receipts = receipts;
    this.counters = counters;
    this.hooks = hooks;
    this.laneBytes = counters.lane("shm/" + lane);
    this.peerBytes = PeerBytes.of(counters, peer);
    this.peerLost = peerLost;
  }

  /**
   * Why copying must stop: the peer is gone or replaced (the gate is fenced, or closed because the
   * peer was lost), else null. A close by this engine lets the pass under way finish.
   */
  private String stopCopying() {
    return switch (gate.state()) {
      case ChannelGate.Fenced f -> gate.refusal();
      case ChannelGate.Closed c when c.why() == ChannelGate.Why.PEER_LOST -> gate.refusal();
      default -> null;
    };
  }

  ErrorKind refusalKind() {
    ErrorKind k = gate.refusalKind();
    return k != null ? k : ErrorKind.PEER_LOST;
  }

  /** Copies {@code tasks} (or fails them), adding their receipts to the lane's batcher. */
  void runPass(List<TaskWork> tasks) {
    receipts.expect(tasks.size());
    long now = System.nanoTime();
    if (allLiveForOneRegion(tasks, now)) {
      // The common pass: nothing to fail up front and one peer allocation, so no grouping.
      copyGroup(tasks.get(0).regionId(), tasks);
      return;
    }
    Map<Long, List<TaskWork>> byRegion = tasks.size() == 1 ? null : new LinkedHashMap<>();
    String stop = stopCopying();
    for (TaskWork w : tasks) {
      ErrorKind unsendable;
      if (stop != null) {
        fail(w, refusalKind(), Unsendable.neverSent(stop));
      } else if ((unsendable = Unsendable.check(w.sink(), w.deadlineNanos(), now)) != null) {
        fail(w, unsendable, Unsendable.detail(unsendable));
      } else if (byRegion == null) {
        byRegion = Map.of(w.regionId(), tasks);
      } else {
        byRegion.computeIfAbsent(w.regionId(), k -> new ArrayList<>()).add(w);
      }
    }
    if (byRegion == null) {
      return;
    }
    for (Map.Entry<Long, List<TaskWork>> e : byRegion.entrySet()) {
      copyGroup(e.getKey(), e.getValue());
    }
  }

  /**
   * Whether every task of {@code tasks} is for one peer allocation and none is to be failed before
   * its copy (the peer is not gone, no batch was cancelled, no deadline passed).
   */
  private boolean allLiveForOneRegion(List<TaskWork> tasks, long now) {
    if (stopCopying() != null) {
      return false;
    }
    long region = tasks.get(0).regionId();
    for (TaskWork w : tasks) {
      if (w.regionId() != region || Unsendable.applies(w.sink(), w.deadlineNanos(), now)) {
        return false;
      }
    }
    return true;
  }

  /** Tasks of the current allocation already answered (copyRegion's progress). */
  private int copied;

  /** Whether the task at {@link #copied} is inside its copy. */
  private boolean inCopy;

  /** Copies the tasks of one peer allocation; a broken invariant fails those not yet answered. */
  private void copyGroup(long regionId, List<TaskWork> tasks) {
    copied = 0;
    inCopy = false;
    try {
      copyRegion(regionId, tasks);
    } catch (RuntimeException ex) {
      // A broken invariant (a native call failing in a way the protocol does not expect): every
      // task of this allocation not yet answered fails; a WRITE cut off inside its copy may have
      // changed the peer's bytes (UNKNOWN).
      LOG.error("{}: copying region {} failed: {}", lane, regionId, ex.toString(), ex);
      for (int i = copied; i < tasks.size(); i++) {
        TaskWork w = tasks.get(i);
        RemoteEffect effect =
            i == copied && w.op() == Op.WRITE && inCopy ? RemoteEffect.UNKNOWN : RemoteEffect.NONE;
        counters.increment(Count.SHM_TASKS_FAILED);
        receipts.add(
            w.sink(),
            Receipt.failed(
                w.taskIndex(),
                ErrorKind.UNAVAILABLE,
                effect,
                "SHM copy of region " + regionId + " failed: " + ex.getMessage()));
      }
      mappings.unmap(regionId);
    }
  }

  /** Copies every task of one peer allocation under one activity lock. */
  private void copyRegion(long regionId, List<TaskWork> tasks) {
    String stop = stopCopying();
    if (stop != null) {
      failAll(tasks, refusalKind(), Unsendable.neverSent(stop));
      return;
    }
    ShmMapping m;
    try {
      m = mappings.mapping(regionId);
    } catch (RuntimeException e) {
      gone(tasks, "region " + regionId + " of " + peer + " cannot be mapped: " + e.getMessage());
      return;
    }
    try {
      Libc.ofdLock(m.fd, Libc.F_RDLCK, ShmLocks.ACTIVITY, 1, false, mappings.lockScratch);
    } catch (NativeCallException e) {
      if (!e.is(Errno.EAGAIN)) {
        throw e;
      }
      // The source has fenced this allocation (unregister): it is never used again.
      counters.increment(Count.SHM_FENCED);
      mappings.unmap(regionId);
      gone(tasks, "region " + regionId + " of " + peer + " was unregistered (fenced)");
      return;
    }
    boolean live = true;
    try {
      // Liveness is checked after the activity lock is held: a source that withdraws it later must
      // wait for this copy to end before it releases the memory.
      if (Libc.ofdTestLock(m.fd, Libc.F_WRLCK, ShmLocks.LIVENESS, 1, mappings.lockScratch)
          == Libc.F_UNLCK) {
        live = false;
      } else {
        try {
          for (TaskWork w : tasks) {
            inCopy = true;
            copy(m, w);
            inCopy = false;
            copied++;
          }
        } finally {
          countCopied();
        }
      }
    } finally {
      Libc.ofdLock(m.fd, Libc.F_UNLCK, ShmLocks.ACTIVITY, 1, false, mappings.lockScratch);
    }
    if (!live) {
      counters.increment(Count.SHM_FENCED);
      mappings.unmap(regionId);
      gone(
          tasks,
          "region "
              + regionId
              + " of "
              + peer
              + " is no longer registered (its liveness lock is gone)");
    }
  }

  /**
   * Fails {@code tasks} of an allocation that turned out gone, none copied: PEER_LOST (and the lane
   * closes the channel) when the whole peer process ended, else PERMISSION_DENIED (only that
   * allocation was unregistered, or it cannot be mapped) naming why. A process that dies releases
   * its locks one file at a time, so an allocation's lock can be gone a moment before the token's:
   * the token is looked at again for up to {@link #DEATH_SETTLE_NANOS} before the allocation is
   * called unregistered.
   */
  private void gone(List<TaskWork> tasks, String why) {
    String stop = stopCopying();
    if (stop == null) {
      long until = System.nanoTime() + DEATH_SETTLE_NANOS;
      do {
        if (!mappings.peerAlive()) {
          peerLost.run();
          stop = stopCopying();
          break;
        }
        LockSupport.parkNanos(100_000L);
      } while (System.nanoTime() - until < 0);
    }
    if (stop != null) {
      failAll(tasks, refusalKind(), Unsendable.neverSent(stop));
    } else {
      failAll(tasks, ErrorKind.PERMISSION_DENIED, why);
    }
  }

  private void failAll(List<TaskWork> tasks, ErrorKind kind, String detail) {
    for (TaskWork w : tasks) {
      fail(w, kind, detail);
      copied++;
    }
  }

  private void copy(ShmMapping m, TaskWork w) {
    SharedRegion r = m.region;
    if (!r.access().allows(w.op())) {
      fail(w, ErrorKind.PERMISSION_DENIED, "region " + r.regionId() + " grants " + r.access());
      return;
    }
    if (w.remoteOffset() < 0 || w.remoteOffset() > r.lengthBytes() - w.lengthBytes()) {
      fail(
          w,
          ErrorKind.INVALID_ARGUMENT,
          "range ["
              + w.remoteOffset()
              + ", +"
              + w.lengthBytes()
              + ") is outside region "
              + r.regionId()
              + " of "
              + r.lengthBytes()
              + " B");
      return;
    }
    hooks.beforeSharedCopy(lane);
    if (w.op() == Op.READ) {
      MemorySegment.copy(m.view, w.remoteOffset(), w.local(), w.localOffset(), w.lengthBytes());
      bytesRead += w.lengthBytes();
      receipts.ok(w.sink(), w.taskIndex(), w.lengthBytes(), RemoteEffect.NONE);
    } else {
      MemorySegment.copy(w.local(), w.localOffset(), m.view, w.remoteOffset(), w.lengthBytes());
      bytesWritten += w.lengthBytes();
      receipts.ok(w.sink(), w.taskIndex(), w.lengthBytes(), RemoteEffect.APPLIED);
    }
  }

  /** Bytes copied since {@link #countCopied} last ran, counted once per group. */
  private long bytesRead;

  private long bytesWritten;

  private void countCopied() {
    if (bytesRead != 0) {
      counters.add(Count.SHM_BYTES_READ, bytesRead);
    }
    if (bytesWritten != 0) {
      counters.add(Count.SHM_BYTES_WRITTEN, bytesWritten);
    }
    if (bytesRead + bytesWritten != 0) {
      laneBytes.add(bytesRead + bytesWritten);
      // The source is told of these on a TCP lane's next keepalive (it cannot see SHM copies).
      peerBytes.copied(bytesRead, bytesWritten);
    }
    bytesRead = 0;
    bytesWritten = 0;
  }

  private void fail(TaskWork w, ErrorKind kind, String detail) {
    counters.increment(Count.SHM_TASKS_FAILED);
    receipts.add(w.sink(), Receipt.failed(w.taskIndex(), kind, RemoteEffect.NONE, detail));
  }
}
