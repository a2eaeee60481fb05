package io.orbite.transport.shm;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.TaskWork;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneIdle;
import io.orbite.transport.lane.LaneLifecycle;
import io.orbite.transport.lane.Unsendable;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.agrona.concurrent.IdleStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One copy lane of an SHM endpoint (one peer incarnation; the endpoint has {@code shm.lanes} of
 * them, and deals a batch's tasks across them), on the lane runtime. A pass takes the tasks waiting
 * on this lane (or, with none, steals half of a busy sibling's), groups them by peer allocation,
 * and for each allocation maps it (once; kept mapped up to {@code shm.maxMappings}, {@link
 * ShmMappings}), takes the activity lock, checks the allocation is still live, copies with {@link
 * MemorySegment#copy}, and unlocks; the pass's receipts go one call per batch. With nothing to do
 * it idles through {@link LaneIdle} (a short spin, yields, then parks that double up to 1 s; a
 * dispatch unparks it at once), and when it wakes it checks the peer's incarnation token (the
 * endpoint's first lane at most every 100 ms, so about 0.1, 0.3, 0.5 and 1 s after its last work,
 * then once a second; the others once a second). Once the peer's process has ended the lane closes
 * the channel's gate (PEER_LOST, C18) and has its siblings closed at once: every task not copied
 * fails PEER_LOST with zero bytes, every mapping is unmapped, and the lanes end. A fenced channel
 * (a newer incarnation answers) fails them EPOCH_MISMATCH instead. A small task submitted alone may
 * be copied by its caller ({@link #copyHere}). Whichever thread copies holds {@link #owner}.
 */
final class ShmLane extends LaneAgent<TaskWork> {
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
   * #IDLE_PARK_MAX_NANOS}, so an idle endpoint wakes once a second per lane.
   */
  private static final long LIVENESS_CHECK_NANOS = 100_000_000L;

  /** How often the other lanes check: the first lane closes them all; theirs is a backstop. */
  private static final long SIBLING_LIVENESS_CHECK_NANOS = 1_000_000_000L;

  /**
   * The longest park of an idle lane (a dispatch, a close or a fence wakes it at once): a timed
   * wake-up costs tens to hundreds of microseconds of CPU on a virtual machine.
   */
  private static final long IDLE_PARK_MAX_NANOS = 1_000_000_000L;

  private final SegmentDescriptor peer;
  private final ChannelGate gate;
  private final ShmMappings mappings;
  private final EngineTally counters;
  private final ShmCopier copier;
  private final Consumer<String> onPeerLost;
  private final Consumer<Throwable> onEnd;
  private final IdleStrategy idle = LaneIdle.strategy(IDLE_PARK_MAX_NANOS);

  /**
   * Tasks the lane took from its inbox and has not started yet, oldest first, guarded by {@link
   * #backlogLock}: the lane takes its passes from here, and an idle sibling lane of the same
   * endpoint may steal the newest half ({@link #stealFrom}); submitters never touch it.
   */
  private ArrayDeque<TaskWork> backlog = new ArrayDeque<>(256);

  private final Object backlogLock = new Object();

  /** How many tasks {@link #backlog} holds, readable without the lock. */
  private volatile int backlogTasks;

  /** The endpoint's lanes, this one included, whose backlogs an idle lane steals from. */
  private volatile List<ShmLane> siblings = List.of();

  /**
   * Held by whichever thread touches the peer's mappings: the lane thread for each pass, its
   * liveness checks and its shut-down, or a caller copying one small task itself. So an unmap or a
   * fence never overlaps a copy, and every copy runs on a thread that holds this lock: the copies a
   * drain waits for are exactly those under it.
   */
  private final ReentrantLock owner = new ReentrantLock();

  private final List<TaskWork> pass = new ArrayList<>();
  private long checkEveryNanos = SIBLING_LIVENESS_CHECK_NANOS;
  private long nextCheckNanos;

  ShmLane(
      String name,
      SegmentDescriptor peer,
      ChannelGate gate,
      ShmMappings mappings,
      EngineTally counters,
      FaultHooks hooks,
      Consumer<String> onPeerLost,
      Consumer<Throwable> onEnd) {
    super(name, Long.MAX_VALUE);
    this.peer = peer;
    this.gate = gate;
    this.mappings = mappings;
    this.counters = counters;
    this.copier =
        new ShmCopier(name, peer, gate, mappings, receipts, counters, hooks, this::peerLost);
    this.onPeerLost = onPeerLost;
    this.onEnd = onEnd;
  }

  /** Whether the lane still queues work (until it has shut down). */
  boolean taking() {
    return !lifecycle.state().terminal();
  }

  /** Queues a task; false when the lane no longer accepts work (the caller fails it, unsent). */
  boolean enqueue(TaskWork work) {
    return offer(work);
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
        || thread() == null) {
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
      copier.runPass(List.of(work));
      receipts.flush();
      return true;
    } finally {
      owner.unlock();
    }
  }

  private boolean queued() {
    return inbox.count() != 0 || backlogTasks != 0;
  }

  /** Sets the endpoint's lanes (this one among them), before any lane thread starts. */
  void siblings(List<ShmLane> lanes) {
    siblings = List.copyOf(lanes);
    checkEveryNanos =
        lanes.isEmpty() || lanes.get(0) == this
            ? LIVENESS_CHECK_NANOS
            : SIBLING_LIVENESS_CHECK_NANOS;
  }

  @Override
  protected void started() {
    nextCheckNanos = System.nanoTime() + checkEveryNanos;
  }

  @Override
  protected void take(TaskWork item) {
    synchronized (backlogLock) {
      backlog.add(item);
      backlogTasks = backlog.size();
    }
  }

  /**
   * Takes the whole inbox into the backlog: when the backlog is empty, by swapping the two deques
   * (producers wait for one reference swap, never a copy).
   */
  @Override
  protected int takeInbox() {
    synchronized (backlogLock) {
      if (!backlog.isEmpty()) {
        return inbox.drainTo(backlog::add);
      }
      backlog = inbox.swap(backlog);
      backlogTasks = backlog.size();
      return backlogTasks;
    }
  }

  @Override
  protected int pass(long nowNanos) {
    pollBacklog(pass, MAX_PASS);
    if (pass.isEmpty()) {
      stealFrom(pass, MAX_PASS);
    }
    if (pass.isEmpty()) {
      if (nowNanos - nextCheckNanos > 0) {
        nextCheckNanos = nowNanos + checkEveryNanos;
        owner.lock();
        try {
          if (!mappings.peerAlive()) {
            peerLost();
          }
        } finally {
          owner.unlock();
        }
      }
      return 0;
    }
    owner.lock();
    try {
      copier.runPass(pass);
      receipts.flush();
    } finally {
      owner.unlock();
      pass.clear();
    }
    return 1;
  }

  @Override
  protected IdleStrategy idleStrategy() {
    return idle;
  }

  /**
   * The pass delivered its receipts already, under the owner lock: the lane's batcher is shared
   * with a caller copying one task itself ({@link #copyHere}), so it is only touched under it.
   */
  @Override
  protected void endPass() {}

  /** Moves the oldest waiting tasks, at most {@code max}, from the backlog to {@code into}. */
  private void pollBacklog(List<TaskWork> into, int max) {
    if (backlogTasks == 0) {
      return;
    }
    synchronized (backlogLock) {
      TaskWork w;
      while (into.size() < max && (w = backlog.poll()) != null) {
        into.add(w);
      }
      backlogTasks = backlog.size();
    }
  }

  /**
   * Called by an idle lane: moves the newest half of the busiest sibling's waiting tasks (its
   * backlog, or its inbox when its backlog has fewer than two), at most {@code max}, to {@code
   * into}, so that a lane held up (by the scheduler on a busy machine, or inside a long copy) does
   * not hold a batch back while its sibling waits. The stolen tasks are copied by this lane, under
   * its own owner lock and through its own mappings, with every check a task of its own gets.
   */
  private void stealFrom(List<TaskWork> into, int max) {
    ShmLane victim = null;
    int most = 1;
    for (ShmLane l : siblings) {
      int n = Math.max(l.backlogTasks, l.inbox.count());
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
        int n = Math.min(max, victim.backlog.size() / 2);
        for (int k = 0; k < n; k++) {
          into.add(victim.backlog.pollLast());
        }
        victim.backlogTasks = victim.backlog.size();
      } else {
        victim.inbox.stealNewestHalf(into, max);
      }
    }
    if (!into.isEmpty()) {
      counters.add(Count.SHM_TASKS_STOLEN, into.size());
    }
  }

  /**
   * The peer's process ended (its token is no longer locked live): the channel's gate closes
   * (PEER_LOST), the siblings are closed, and this lane stops. On whichever thread found it, under
   * the owner lock.
   */
  private void peerLost() {
    String reason = "the incarnation " + peer + " has ended (its token is no longer locked live)";
    if (gate.close(ChannelGate.Why.PEER_LOST, reason)) {
      LOG.info("{}: {}", name(), reason);
    }
    onPeerLost.accept(reason);
    lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    if (Thread.currentThread() != thread()) {
      // Found by a caller's copy: the parked lane thread must shut down now, not at its check.
      wake();
    }
  }

  private void fail(TaskWork w, ErrorKind kind, String detail) {
    counters.increment(Count.SHM_TASKS_FAILED);
    receipts.add(w.sink(), Receipt.failed(w.taskIndex(), kind, RemoteEffect.NONE, detail));
  }

  /**
   * Fails what is still queued (unsent: the channel's kind, or PEER_LOST when the lane ended by
   * itself), unmaps everything and lets go of the token; under the owner lock, so no caller copy
   * runs meanwhile.
   */
  @Override
  protected void drain(Throwable cause, List<TaskWork> unstarted) {
    if (cause != null) {
      LOG.error("{}: failed: {}", name(), cause.toString(), cause);
    }
    owner.lock();
    try {
      String why =
          gate.active()
              ? "the SHM lane to " + peer + " ended" + (cause == null ? "" : ": " + cause)
              : gate.refusal();
      List<TaskWork> left = new ArrayList<>();
      synchronized (backlogLock) {
        left.addAll(backlog);
        backlog.clear();
        backlogTasks = 0;
      }
      left.addAll(unstarted);
      for (TaskWork w : left) {
        fail(w, copier.refusalKind(), Unsendable.neverSent(why));
      }
      receipts.flush();
      mappings.releaseAll();
    } finally {
      owner.unlock();
    }
  }

  @Override
  protected void ended(Throwable cause) {
    onEnd.accept(cause);
  }
}
