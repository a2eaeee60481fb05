package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.spi.ReceiptSink;
import io.orbite.engine.spi.TaskWork;
import io.orbite.engine.wire.SharedHost;
import io.orbite.engine.wire.SharedRegion;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import io.orbite.transport.LaneIdle;
import io.orbite.transport.LaneLifecycle;
import java.lang.foreign.MemorySegment;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.agrona.concurrent.IdleStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One copy thread of an SHM endpoint (one peer incarnation; the endpoint has {@code shm.lanes} of
 * them, and deals a batch's tasks across them): the data path, off every actor. A duty cycle takes
 * the tasks queued on this lane (or, with none, steals half of a busy sibling's waiting ones),
 * groups them by peer allocation, and for each allocation maps it (once; kept mapped up to {@code
 * shm.maxMappings}, least recently used unmapped first), takes the activity lock, checks the
 * allocation is still live, copies with {@link MemorySegment#copy}, and unlocks. It delivers one
 * receipt per task, in one call per batch per pass. With nothing queued it waits through {@link
 * LaneIdle} (a short spin, yields, then parks that double up to 1 s; a dispatch unparks it at
 * once), and when it wakes it checks the peer's incarnation token (the endpoint's first lane at
 * most every 100 ms, so about 0.1, 0.3, 0.5 and 1 s after its last work, then once a second; the
 * others once a second); once the peer has ended it fences, and has its sibling lanes fenced at
 * once: every task fails EPOCH_MISMATCH with zero bytes, every mapping is unmapped, and the lane
 * ends. A small task submitted alone may instead be copied by its caller ({@link #copyHere}).
 * Whichever thread copies holds {@link #owner}.
 *
 * <p>A mapping whose munmap fails is quarantined: kept (with its descriptor) for the life of the
 * process, counted, never used or retried (C7).
 */
final class ShmLane implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(ShmLane.class);

  /** Most tasks taken per pass, so receipts flow while a long queue drains. */
  private static final int MAX_PASS = 1024;

  /**
   * Tasks of at most this many bytes are copied on the caller's thread when the lane is idle: a
   * copy of this size takes a few microseconds, less than handing it to the lane thread.
   */
  static final long COPY_HERE_MAX_BYTES = 64 * 1024;

  /**
   * The shortest time between two checks by the endpoint's first lane that the peer's incarnation
   * still lives. It checks when it wakes, and an idle lane's parks double up to {@link
   * #IDLE_PARK_MAX_NANOS}: soon after work it checks every few hundred milliseconds, and once idle
   * for a second, once a second, so an idle endpoint wakes once a second per lane.
   */
  private static final long LIVENESS_CHECK_NANOS = 100_000_000L;

  /**
   * How often the endpoint's other lanes check it: the first lane watches the token and fences them
   * all, so theirs is a backstop.
   */
  private static final long SIBLING_LIVENESS_CHECK_NANOS = 1_000_000_000L;

  /**
   * The longest park of an idle lane (a dispatch, a close or a fence wakes it at once). A timed
   * wake-up can cost tens to hundreds of microseconds of CPU on a virtual machine (50-175 us on the
   * one of docs/qualification.md, in its slow hour), so an idle lane wakes no more than once a
   * second.
   */
  private static final long IDLE_PARK_MAX_NANOS = 1_000_000_000L;

  private final String name;
  private final SegmentDescriptor peer;
  private final SharedHost host;
  private final Map<Long, SharedRegion> exports;
  private final int maxMappings;
  private final EngineTally counters;
  private final QuarantineLedger quarantine;
  private final FaultHooks hooks;

  /** Confirmed bytes of this lane, for per-lane throughput. */
  private final java.util.concurrent.atomic.LongAdder laneBytes;

  private final Consumer<String> onFenced;
  private final Consumer<Throwable> onEnd;
  private final Object intake = new Object();

  /**
   * Tasks queued for the lane, oldest first, guarded by {@link #intake}: an array deque, so
   * queueing a task allocates nothing. The lane empties it in one step, swapping it with its empty
   * {@link #backlog}, so a submitter queueing a task rarely waits for the lane.
   */
  private ArrayDeque<TaskWork> queue = new ArrayDeque<>(256);

  /**
   * How many tasks {@link #queue} holds, readable without the lock. Written under {@link #intake}.
   */
  private volatile int queuedTasks;

  /**
   * Tasks the lane took from {@link #queue} and has not started yet, oldest first, guarded by
   * {@link #backlogLock}: the lane takes its passes from here, and an idle sibling lane of the same
   * endpoint may steal the newest half ({@link #stealFrom}); submitters never touch it. Shut-down
   * fails what is left here too.
   */
  private ArrayDeque<TaskWork> backlog = new ArrayDeque<>(256);

  /** Guards {@link #backlog}; taken before {@link #intake} when both are held. */
  private final Object backlogLock = new Object();

  /** How many tasks {@link #backlog} holds, readable without the lock. */
  private volatile int backlogTasks;

  /** The endpoint's lanes, this one included, whose backlogs an idle lane steals from. */
  private volatile List<ShmLane> siblings = List.of();

  /**
   * Held by whichever thread touches the peer's mappings: the lane thread for each pass, its
   * liveness checks and its shut-down, or a caller copying one small task itself. So an unmap or a
   * fence never overlaps a copy, and every copy runs on a thread that holds this lock: the copies a
   * drain waits for are exactly those under it. Everything the lane thread alone used to own
   * (mappings, pending receipts, the pass's progress) is guarded by it.
   */
  private final ReentrantLock owner = new ReentrantLock();

  /** The native memory of the lock calls, reused by every copy (guarded by {@link #owner}). */
  private final Libc.LockScratch lockScratch = new Libc.LockScratch();

  /** Peer allocations mapped, least recently used first. Guarded by {@link #owner}. */
  private final LinkedHashMap<Long, ShmMapping> mappings = new LinkedHashMap<>(16, 0.75f, true);

  private final List<ShmMapping> quarantined = new ArrayList<>();
  private final ReceiptBatcher receipts = new ReceiptBatcher();
  private final Token token;

  /**
   * RUNNING; CLOSING once closed or fenced (the loop ends, no copy starts, tasks still queued are
   * failed unsent); CLOSED once the loop has ended and {@link #shutDown} took the intake lock:
   * nothing more is queued, and no copy runs.
   */
  private final LaneLifecycle lifecycle = new LaneLifecycle();

  private volatile String fencedBecause;
  private volatile Thread thread;

  ShmLane(
      String name,
      SegmentDescriptor peer,
      SharedHost host,
      Token token,
      Map<Long, SharedRegion> exports,
      int maxMappings,
      EngineTally counters,
      QuarantineLedger quarantine,
      FaultHooks hooks,
      Consumer<String> onFenced,
      Consumer<Throwable> onEnd) {
    this.quarantine = quarantine;
    this.hooks = hooks;
    this.name = name;
    this.peer = peer;
    this.host = host;
    this.token = token;
    this.exports = exports;
    this.maxMappings = maxMappings;
    this.counters = counters;
    this.laneBytes = counters.lane("shm/" + name);
    this.onFenced = onFenced;
    this.onEnd = onEnd;
  }

  String name() {
    return name;
  }

  /** Whether the lane still queues work (until it has shut down). */
  boolean running() {
    return !lifecycle.state().terminal();
  }

  /** Queues a task; false when the lane no longer accepts work (the caller fails it, unsent). */
  boolean enqueue(TaskWork work) {
    synchronized (intake) {
      if (lifecycle.state().terminal()) {
        return false;
      }
      queue.add(work);
      queuedTasks = queue.size();
      return true;
    }
  }

  void wake() {
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  /** Wakes the lane thread only if it has queued work (a task copied here needs no wake-up). */
  void wakeIfQueued() {
    if (queued()) {
      wake();
    }
  }

  /**
   * Copies {@code work} on the calling thread, now, if it is small and the lane is idle (nothing
   * queued, no pass running, not closing): its receipt is delivered on this thread before this
   * returns. Otherwise does nothing and returns false, and the caller queues the task.
   */
  boolean copyHere(TaskWork work) {
    if (work.lengthBytes() > COPY_HERE_MAX_BYTES
        || !lifecycle.running()
        || queued()
        || thread == null) {
      return false;
    }
    if (!owner.tryLock()) {
      return false;
    }
    try {
      if (!lifecycle.running() || queued()) {
        return false;
      }
      counters.increment(Count.SHM_COPIED_BY_CALLER);
      runPass(List.of(work));
      deliver();
      return true;
    } finally {
      owner.unlock();
    }
  }

  private boolean queued() {
    return queuedTasks != 0 || backlogTasks != 0;
  }

  /** Sets the endpoint's lanes (this one among them), before any lane thread starts. */
  void siblings(List<ShmLane> lanes) {
    siblings = List.copyOf(lanes);
  }

  /**
   * Moves the oldest queued tasks, at most {@code max}, to {@code into}. Runs on the lane thread
   * only: when the backlog is empty it takes the whole queue under the intake lock, by swapping it
   * with the empty backlog.
   */
  private void take(List<TaskWork> into, int max) {
    if (backlogTasks == 0 && queuedTasks == 0) {
      return;
    }
    synchronized (backlogLock) {
      if (backlog.isEmpty()) {
        synchronized (intake) {
          ArrayDeque<TaskWork> taken = queue;
          queue = backlog;
          backlog = taken;
          queuedTasks = 0;
        }
      }
      TaskWork w;
      while (into.size() < max && (w = backlog.poll()) != null) {
        into.add(w);
      }
      backlogTasks = backlog.size();
    }
  }

  /**
   * Called by an idle lane (its own queue and backlog empty): moves the newest half of the busiest
   * sibling's waiting tasks (its backlog, or its queue when its backlog has fewer than two), at
   * most {@code max}, to {@code into}, so that a lane held up (by the scheduler on a busy machine,
   * or inside a long copy) does not hold a batch back while its sibling waits. The stolen tasks are
   * copied by this lane, under its own owner lock and through its own mappings, with every check a
   * task of its own gets.
   */
  private void stealFrom(List<TaskWork> into, int max) {
    ShmLane victim = null;
    int most = 1;
    for (ShmLane l : siblings) {
      int n = Math.max(l.backlogTasks, l.queuedTasks);
      if (l != this && n > most) {
        victim = l;
        most = n;
      }
    }
    if (victim == null) {
      return;
    }
    synchronized (victim.backlogLock) {
      if (victim.backlog.size() >= 2) {
        moveNewestHalf(victim.backlog, into, max);
        victim.backlogTasks = victim.backlog.size();
      } else {
        synchronized (victim.intake) {
          moveNewestHalf(victim.queue, into, max);
          victim.queuedTasks = victim.queue.size();
        }
      }
    }
    if (!into.isEmpty()) {
      counters.add(Count.SHM_TASKS_STOLEN, into.size());
    }
  }

  private static void moveNewestHalf(ArrayDeque<TaskWork> from, List<TaskWork> into, int max) {
    int n = Math.min(max, from.size() / 2);
    TaskWork w;
    for (int k = 0; k < n && (w = from.pollLast()) != null; k++) {
      into.add(w);
    }
  }

  /** Stop: queued tasks fail unsent, mappings are unmapped, then the thread ends. */
  void close() {
    lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    wake();
  }

  /**
   * The peer's incarnation ended (or was replaced): stop as {@link #close}, failing work
   * EPOCH_MISMATCH.
   */
  void fence(String reason) {
    if (fencedBecause == null) {
      fencedBecause = reason;
    }
    close();
  }

  @Override
  public void run() {
    thread = Thread.currentThread();
    Throwable cause = null;
    try {
      List<TaskWork> pass = new ArrayList<>();
      List<ShmLane> lanes = siblings;
      long checkEvery =
          lanes.isEmpty() || lanes.get(0) == this
              ? LIVENESS_CHECK_NANOS
              : SIBLING_LIVENESS_CHECK_NANOS;
      IdleStrategy idle = LaneIdle.strategy(IDLE_PARK_MAX_NANOS);
      long nextCheck = System.nanoTime() + checkEvery;
      while (lifecycle.running()) {
        take(pass, MAX_PASS);
        if (pass.isEmpty()) {
          stealFrom(pass, MAX_PASS);
        }
        if (pass.isEmpty()) {
          if (System.nanoTime() - nextCheck > 0) {
            nextCheck = System.nanoTime() + checkEvery;
            owner.lock();
            try {
              if (!peerAlive()) {
                fenceFromLane(
                    "the incarnation " + peer + " has ended (its token is no longer locked live)");
                break;
              }
            } finally {
              owner.unlock();
            }
          }
          idle.idle();
          continue;
        }
        idle.reset();
        owner.lock();
        try {
          runPass(pass);
          deliver();
        } finally {
          owner.unlock();
        }
        pass.clear();
      }
    } catch (Throwable t) {
      cause = t;
      LOG.error("{}: failed: {}", name, t.toString(), t);
    } finally {
      owner.lock();
      try {
        shutDown();
      } finally {
        owner.unlock();
      }
      onEnd.accept(cause);
    }
  }

  private void runPass(List<TaskWork> pass) {
    receipts.expect(pass.size());
    long now = System.nanoTime();
    if (allLiveForOneRegion(pass, now)) {
      // The common pass: nothing to fail up front and one peer allocation, so no grouping.
      copyGroup(pass.get(0).regionId(), pass);
      return;
    }
    Map<Long, List<TaskWork>> byRegion = pass.size() == 1 ? null : new LinkedHashMap<>();
    for (TaskWork w : pass) {
      if (fencedBecause != null) {
        fail(
            w, ErrorKind.EPOCH_MISMATCH, peer + " is fenced: " + fencedBecause + " (never copied)");
      } else if (w.sink().cancelled()) {
        fail(w, ErrorKind.CANCELLED, "batch cancelled before the copy");
      } else if (now - w.deadlineNanos() > 0) {
        fail(w, ErrorKind.TIMEOUT, "deadline passed before the copy");
      } else if (byRegion == null) {
        byRegion = Map.of(w.regionId(), pass);
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
   * Whether every task of {@code pass} is for one peer allocation and none is to be failed before
   * its copy (the lane is not fenced, no batch was cancelled, no deadline passed).
   */
  private boolean allLiveForOneRegion(List<TaskWork> pass, long now) {
    if (fencedBecause != null) {
      return false;
    }
    long region = pass.get(0).regionId();
    for (TaskWork w : pass) {
      if (w.regionId() != region || w.sink().cancelled() || now - w.deadlineNanos() > 0) {
        return false;
      }
    }
    return true;
  }

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
      LOG.error("{}: copying region {} failed: {}", name, regionId, ex.toString(), ex);
      for (int i = copied; i < tasks.size(); i++) {
        TaskWork w = tasks.get(i);
        RemoteEffect effect =
            i == copied && w.op() == Op.WRITE && inCopy ? RemoteEffect.UNKNOWN : RemoteEffect.NONE;
        counters.increment(Count.SHM_TASKS_FAILED);
        add(
            w.sink(),
            Receipt.failed(
                w.taskIndex(),
                ErrorKind.UNAVAILABLE,
                effect,
                "SHM copy of region " + regionId + " failed: " + ex.getMessage()));
      }
      unmap(regionId);
    }
  }

  /** Tasks of the current allocation already answered (copyRegion's progress). */
  private int copied;

  /** Whether the task at {@link #copied} is inside its copy. */
  private boolean inCopy;

  /** Copies every task of one peer allocation under one activity lock. */
  private void copyRegion(long regionId, List<TaskWork> tasks) {
    if (fencedBecause != null) {
      failAll(
          tasks,
          ErrorKind.EPOCH_MISMATCH,
          peer + " is fenced: " + fencedBecause + " (never copied)");
      return;
    }
    ShmMapping m;
    try {
      m = mapping(regionId);
    } catch (RuntimeException e) {
      ErrorKind kind = classifyGone();
      String detail =
          kind == ErrorKind.EPOCH_MISMATCH
              ? fencedBecause
              : "region " + regionId + " of " + peer + " cannot be mapped: " + e.getMessage();
      failAll(tasks, kind, detail);
      return;
    }
    try {
      Libc.ofdLock(m.fd, Libc.F_RDLCK, ShmLocks.ACTIVITY, 1, false, lockScratch);
    } catch (NativeCallException e) {
      if (!e.is(Errno.EAGAIN)) {
        throw e;
      }
      // The source has fenced this allocation (unregister): it is never used again.
      counters.increment(Count.SHM_FENCED);
      unmap(regionId);
      ErrorKind kind = classifyGone();
      failAll(
          tasks,
          kind,
          kind == ErrorKind.EPOCH_MISMATCH
              ? fencedBecause
              : "region " + regionId + " of " + peer + " was unregistered (fenced)");
      return;
    }
    boolean live = true;
    try {
      // Liveness is checked after the activity lock is held: a source that withdraws it later must
      // wait for this copy to end before it releases the memory.
      if (Libc.ofdTestLock(m.fd, Libc.F_WRLCK, ShmLocks.LIVENESS, 1, lockScratch) == Libc.F_UNLCK) {
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
      Libc.ofdLock(m.fd, Libc.F_UNLCK, ShmLocks.ACTIVITY, 1, false, lockScratch);
    }
    if (!live) {
      counters.increment(Count.SHM_FENCED);
      unmap(regionId);
      ErrorKind kind = classifyGone();
      failAll(
          tasks,
          kind,
          kind == ErrorKind.EPOCH_MISMATCH
              ? fencedBecause
              : "region "
                  + regionId
                  + " of "
                  + peer
                  + " is no longer registered (its liveness lock is gone)");
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
    hooks.beforeSharedCopy(name);
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

  /**
   * Bytes copied since {@link #countCopied} last ran, counted once per group rather than per task.
   */
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
    }
    bytesRead = 0;
    bytesWritten = 0;
  }

  /**
   * The mapping of {@code regionId}, mapping it now if needed (unmapping the least recently used
   * past the cap).
   */
  private ShmMapping mapping(long regionId) {
    ShmMapping m = mappings.get(regionId);
    if (m != null) {
      return m;
    }
    SharedRegion region = exports.get(regionId);
    if (region == null) {
      throw new PeerProof.Refused("region " + regionId + " is not exported through SHM");
    }
    while (mappings.size() >= maxMappings) {
      Iterator<Long> eldest = mappings.keySet().iterator();
      unmap(eldest.next());
    }
    m = ShmMapping.open(host, region);
    mappings.put(regionId, m);
    counters.increment(Count.SHM_MAPPINGS_OPENED);
    return m;
  }

  /**
   * After an allocation turned out gone: EPOCH_MISMATCH (and the lane fences) if the whole peer
   * incarnation ended, PERMISSION_DENIED if only that allocation was unregistered.
   *
   * <p>A process that dies releases its locks one file at a time, so an allocation's lock can be
   * gone a moment before the token's: the token is looked at again for up to {@link
   * #DEATH_SETTLE_NANOS} before the allocation is called unregistered. Either way nothing was
   * copied.
   */
  private ErrorKind classifyGone() {
    if (fencedBecause != null) {
      return ErrorKind.EPOCH_MISMATCH;
    }
    long until = System.nanoTime() + DEATH_SETTLE_NANOS;
    do {
      if (!peerAlive()) {
        fenceFromLane(
            "the incarnation " + peer + " has ended (its token is no longer locked live)");
        return ErrorKind.EPOCH_MISMATCH;
      }
      LockSupport.parkNanos(100_000L);
    } while (System.nanoTime() - until < 0);
    return ErrorKind.PERMISSION_DENIED;
  }

  /** How long a gone allocation waits for its peer's token to show a death in progress. */
  private static final long DEATH_SETTLE_NANOS = 5_000_000L;

  private boolean peerAlive() {
    try {
      return Libc.ofdTestLock(token.fd, Libc.F_WRLCK, ShmLocks.LIVENESS, 1, lockScratch)
          != Libc.F_UNLCK;
    } catch (NativeCallException e) {
      return false;
    }
  }

  private void fenceFromLane(String reason) {
    if (fencedBecause == null) {
      fencedBecause = reason;
      LOG.info("{}: fenced: {}", name, reason);
      onFenced.accept(reason);
    }
    lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    if (Thread.currentThread() != thread) {
      // Found by a caller's copy: the parked lane thread must shut down now, not at its next check.
      wake();
    }
  }

  private void unmap(long regionId) {
    ShmMapping m = mappings.remove(regionId);
    if (m == null) {
      return;
    }
    try {
      Libc.munmap(m.mapped);
      counters.increment(Count.SHM_MAPPINGS_CLOSED);
    } catch (NativeCallException e) {
      quarantined.add(m);
      counters.increment(Count.SHM_MAPPINGS_QUARANTINED);
      // Sticky: a mapping whose munmap failed is never used, retried or reported released.
      quarantine.enter(
          new QuarantinedOwner(
              name + ": mapping of region " + regionId,
              QuarantinedOwner.Kind.MAPPING,
              "munmap failed: " + e.getMessage(),
              0,
              m.mapped.byteSize(),
              Instant.now()),
          () -> true);
      LOG.error(
          "{}: munmap of region {} failed; mapping quarantined for the life of the process: {}",
          name,
          regionId,
          e.getMessage());
      return;
    }
    Libc.close(m.fd);
  }

  private void fail(TaskWork w, ErrorKind kind, String detail) {
    counters.increment(Count.SHM_TASKS_FAILED);
    add(w.sink(), Receipt.failed(w.taskIndex(), kind, RemoteEffect.NONE, detail));
  }

  private void add(ReceiptSink sink, Receipt receipt) {
    receipts.add(sink, receipt);
  }

  private void deliver() {
    receipts.flush();
  }

  /** Refuse new work, fail what is queued (unsent), unmap everything, close the token. */
  private void shutDown() {
    synchronized (intake) {
      lifecycle.moveTo(LaneLifecycle.State.CLOSED);
    }
    ErrorKind kind = fencedBecause != null ? ErrorKind.EPOCH_MISMATCH : ErrorKind.PEER_LOST;
    String detail =
        fencedBecause != null
            ? peer + " is fenced: " + fencedBecause + " (never copied)"
            : "the SHM endpoint to " + peer + " closed (never copied)";
    List<TaskWork> left = new ArrayList<>();
    take(left, Integer.MAX_VALUE); // the backlog the lane had taken
    take(left, Integer.MAX_VALUE); // and what was still queued
    for (TaskWork w : left) {
      fail(w, kind, detail);
    }
    deliver();
    for (Long regionId : new ArrayList<>(mappings.keySet())) {
      unmap(regionId);
    }
    token.release();
  }

  /**
   * The peer's incarnation token, opened once by the proof and shared by every copy lane of the
   * endpoint: each lane tests its liveness lock on its own, and the last lane to shut down closes
   * it.
   */
  static final class Token {
    final int fd;
    private final java.util.concurrent.atomic.AtomicInteger holders;

    Token(int fd, int holders) {
      this.fd = fd;
      this.holders = new java.util.concurrent.atomic.AtomicInteger(holders);
    }

    private void release() {
      if (holders.decrementAndGet() == 0) {
        Libc.close(fd);
      }
    }
  }
}
