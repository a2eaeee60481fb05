package io.orbite.transport.file;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.EngineTally;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneLifecycle;
import io.orbite.transport.lane.LaneRuntime;
import io.orbite.transport.lane.Unsendable;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One file ring lane's duty cycle, on the lane runtime: owns one {@link FileIo} (an io_uring, or a
 * FileChannel pool) and the operations in it. Its lifecycle's owner is {@link RingLaneOwner}.
 *
 * <p>A pass starts queued operations up to the ring's depth (one that is {@link Unsendable} fails
 * unsent instead), then submits and reaps completions into receipts, delivered one call per batch
 * when the pass ends. The sweep (at most once a millisecond) asks the kernel to cancel
 * (IORING_OP_ASYNC_CANCEL) every operation in flight whose batch was cancelled, whose deadline
 * passed or whose lane is closing, and fails queued operations that became unsendable while the
 * ring was full. A short result continues with the bytes not yet moved (never re-sending bytes the
 * kernel already took); a failure reports what is known. When nothing more can start (the ring is
 * full, or nothing is queued) the lane idles in the kernel: in the {@code io_uring_enter} that also
 * submits, or on the FileChannel pool's completion queue, at most 1 ms; with nothing in flight it
 * parks until a channel's flush or a close wakes it.
 *
 * <p>The lane tells its owner what it needs: that a cancelled operation's completion did not come
 * within the destruction window ({@link Owner#cancelOverdue}; the lane is then QUARANTINED for
 * good: it keeps its ring and the operation's memory, fails new work unsent and keeps reaping the
 * others' completions), and that it ended ({@link Owner#ended}: after a close, once nothing is in
 * flight and its {@code FileIo} is closed).
 */
final class RingLane extends LaneAgent<FileOp> {
  private static final Logger LOG = LoggerFactory.getLogger(RingLane.class);

  /** The longest wait in the kernel for a completion. */
  static final long MAX_WAIT_NANOS = 1_000_000L;

  /** How often a quarantined lane reaps its other operations' completions. */
  static final long QUARANTINED_WAIT_NANOS = 10_000_000L;

  /** The longest park of a lane with nothing in flight (a flush or a close ends it at once). */
  private static final long IDLE_PARK_NANOS = 1_000_000_000L;

  /** What the lane tells its owner, from the lane's thread. */
  interface Owner {
    /**
     * A cancelled operation's completion did not come within the destruction window: the lane is
     * QUARANTINED for good.
     *
     * @param entry what the quarantine lists: the operation and its bytes
     * @param cancelReason why it was cancelled
     */
    void cancelOverdue(QuarantinedOwner entry, String cancelReason);

    /**
     * The lane's thread ended.
     *
     * @param kept what it leaves in the kernel, its ring kept open; null when it closed its {@code
     *     FileIo} with nothing in flight
     * @param cause why it ended by itself, or null after a close
     */
    void ended(String kept, Throwable cause);
  }

  private final FileIo io;
  private final String threadName;
  private final long destructionWindowNanos;

  /** The operations in the kernel. */
  private final RingSlots slots;

  /** Completions a wait asks for when the ring is full and work is queued: a quarter of it. */
  private final int batchWant;

  private final RingCompletions completions;

  /** Operations taken from the inbox and not yet started, oldest first. Lane thread only. */
  private ArrayDeque<FileOp> backlog = new ArrayDeque<>(256);

  /** Operations in flight as of the last pass, for the owner view (any thread). */
  private volatile int shownInflight;

  /** Completions the next idle waits for in the kernel; 0: it does not wait there. */
  private int waitFor;

  /** A failure of the idle's wait, thrown by the next pass so that the lane ends and drains. */
  private RuntimeException idleFailure;

  /** Set by the lane thread when it has nothing left to do: the cycle stops. */
  private boolean finished;

  /** The owner stopped (its system is going away): end, and tell no one. */
  private volatile boolean abandoned;

  private Owner owner;

  /**
   * A lane over {@code io}, not started.
   *
   * @param name the lane's name in messages, {@code file-<i>}
   * @param threadName its thread's name
   * @param io its ring or FileChannel pool
   * @param counters where its confirmed bytes are counted
   * @param destructionWindow how long a cancelled operation's completion may take
   */
  RingLane(
      String name, String threadName, FileIo io, EngineTally counters, Duration destructionWindow) {
    super(name, SWEEP_NANOS);
    this.io = io;
    this.threadName = threadName;
    this.destructionWindowNanos = destructionWindow.toNanos();
    this.slots = new RingSlots(io.capacity());
    this.batchWant = Math.max(1, io.capacity() / 4);
    this.completions =
        new RingCompletions(
            name,
            slots,
            io,
            receipts,
            counters.lane("file/" + name),
            lifecycle,
            destructionWindowNanos);
  }

  /**
   * Starts the lane's thread. An io_uring lane's ring is bound to that thread at its first enter.
   *
   * @param owner told what the lane needs
   */
  void start(Owner owner) {
    this.owner = owner;
    LaneRuntime.start(threadName, this);
  }

  /**
   * The owner stopped: the lane ends (keeping its ring if anything is in flight), telling no one.
   */
  void abandon() {
    abandoned = true;
    close();
  }

  /** Operations in the kernel as of the lane's last pass. */
  int inflight() {
    return shownInflight;
  }

  /** The lane's engine and ring, for messages. */
  String io() {
    return io.toString();
  }

  /** Wakes the lane if work waits in its inbox (a channel's flush). */
  void wakeIfQueued() {
    if (inbox.count() != 0) {
      wake();
    }
  }

  @Override
  protected void take(FileOp op) {
    backlog.add(op);
  }

  /** Takes the whole inbox at once while the backlog is empty: producers wait for one swap. */
  @Override
  protected int takeInbox() {
    if (!backlog.isEmpty()) {
      return super.takeInbox();
    }
    backlog = inbox.swap(backlog);
    return backlog.size();
  }

  @Override
  protected boolean keepRunning() {
    return !finished;
  }

  @Override
  protected int sweep(long now) {
    LaneLifecycle.State state = lifecycle.state();
    boolean closing = state == LaneLifecycle.State.CLOSING || state == LaneLifecycle.State.DRAINING;
    boolean quarantined = state == LaneLifecycle.State.QUARANTINED;
    int asked = 0;
    for (int i = 0; i < slots.capacity(); i++) {
      FileOp op = slots.at(i);
      if (op == null) {
        continue;
      }
      if (!op.cancelRequested) {
        ErrorKind kind =
            closing ? ErrorKind.UNAVAILABLE : Unsendable.check(op.sink, op.deadlineNanos, now);
        if (kind != null) {
          op.cancelRequested = true;
          op.cancelRequestedNanos = now;
          op.cancelKind = kind;
          op.cancelReason =
              switch (kind) {
                case CANCELLED -> "batch cancelled";
                case TIMEOUT -> "deadline passed";
                default -> "the file transport is closing";
              };
          io.cancel(op.id);
          asked++;
        }
      } else if (!quarantined && now - op.cancelRequestedNanos > destructionWindowNanos) {
        quarantine(op, now);
        quarantined = true;
      }
    }
    if (slots.full() && !backlog.isEmpty() && state == LaneLifecycle.State.RUNNING) {
      asked += failUnsendable(now);
    }
    return asked;
  }

  /** Fails the queued operations that must not start any more, keeping the others' order. */
  private int failUnsendable(long now) {
    int failed = 0;
    for (int n = backlog.size(); n > 0; n--) {
      FileOp op = backlog.poll();
      ErrorKind kind = Unsendable.check(op.sink, op.deadlineNanos, now);
      if (kind == null) {
        backlog.add(op);
      } else {
        failUnstarted(op, kind, Unsendable.detail(kind));
        failed++;
      }
    }
    return failed;
  }

  @Override
  protected int pass(long now) {
    RuntimeException failed = idleFailure;
    if (failed != null) {
      idleFailure = null;
      throw failed;
    }
    int started = startQueued(now);
    int reaped = 0;
    boolean more = !backlog.isEmpty() || inbox.count() != 0;
    boolean ringFull = slots.full();
    if (slots.inflight() > 0 && (ringFull || (started == 0 && !more))) {
      // Nothing more can start: the idle submits and waits in one enter. When the ring is full
      // and work is queued it waits for a quarter of the ring, so that one pass refills several
      // slots and delivers several receipts; an isolated task's receipt is not held back.
      // Polling the CQ in user space instead took a whole CPU that the kernel's workers need
      // (docs/transports/file.md, "Bench method").
      waitFor = ringFull && more ? batchWant : 1;
    } else if (started > 0) {
      // Submit now and come back at once: a batch still dispatching adds the next chunks.
      reaped = io.poll(0, 1, completions);
    }
    if (!lifecycle.running()
        && lifecycle.state() != LaneLifecycle.State.QUARANTINED
        && slots.inflight() == 0) {
      finished = true; // closing, and drained
    } else if (abandoned && lifecycle.state() == LaneLifecycle.State.QUARANTINED) {
      finished = true; // its owner is gone; the ring and its operations stay as they are
    }
    return started + reaped;
  }

  /** Starts queued operations while the ring has room; fails them all unsent once not running. */
  private int startQueued(long now) {
    if (!lifecycle.running()) {
      failAllQueued();
      return 0;
    }
    int started = 0;
    FileOp op;
    while (!slots.full() && (op = backlog.poll()) != null) {
      ErrorKind kind = Unsendable.check(op.sink, op.deadlineNanos, now);
      if (kind != null) {
        failUnstarted(op, kind, Unsendable.detail(kind));
        continue;
      }
      io.submit(slots.take(op), op.write, op.file, op.memory, op.fileOffset);
      started++;
    }
    return started;
  }

  private void failAllQueued() {
    if (backlog.isEmpty()) {
      return;
    }
    String why = Unsendable.neverSent(refusal());
    FileOp op;
    while ((op = backlog.poll()) != null) {
      failUnstarted(op, ErrorKind.UNAVAILABLE, why);
    }
  }

  /** Why a lane that is not running refuses work. */
  private String refusal() {
    return lifecycle.state() == LaneLifecycle.State.QUARANTINED
        ? "file ring lane " + name() + " is quarantined"
        : "file ring lane " + name() + " is closing";
  }

  /**
   * Waits in the kernel when the pass found that nothing more can start, at most 1 ms (10 ms once
   * quarantined); with nothing in flight and nothing queued, parks until woken.
   */
  @Override
  protected void idle(int work) {
    int want = waitFor;
    if (want > 0) {
      waitFor = 0;
      long waitNanos =
          lifecycle.state() == LaneLifecycle.State.QUARANTINED
              ? QUARANTINED_WAIT_NANOS
              : MAX_WAIT_NANOS;
      try {
        io.poll(waitNanos, want, completions);
      } catch (RuntimeException e) {
        idleFailure = e;
      }
    } else if (work == 0 && slots.inflight() == 0 && !finished && inbox.count() == 0) {
      LockSupport.parkNanos(this, IDLE_PARK_NANOS);
    }
  }

  @Override
  protected void endPass() {
    super.endPass();
    int inflight = slots.inflight();
    if (shownInflight != inflight) {
      shownInflight = inflight;
    }
  }

  /**
   * Quarantines the lane: {@code stuck}'s cancel went unanswered for a destruction window. Sticky:
   * the ring and what its kernel operations may still write are kept for the process's life.
   */
  private void quarantine(FileOp stuck, long now) {
    lifecycle.moveTo(LaneLifecycle.State.QUARANTINED);
    failAllQueued();
    long askedMillis = (now - stuck.cancelRequestedNanos) / 1_000_000;
    owner.cancelOverdue(
        new QuarantinedOwner(
            "file ring lane " + name(),
            QuarantinedOwner.Kind.LANE,
            stuck.describe()
                + " was asked to stop "
                + askedMillis
                + " ms ago and its completion never came; the ring stays mapped",
            1,
            stuck.length(),
            Instant.now()),
        stuck.cancelReason);
  }

  /** Fails an operation that was never started: its use of the file ends here. */
  private void failUnstarted(FileOp op, ErrorKind kind, String detail) {
    op.file.release();
    fail(op, kind, RemoteEffect.NONE, detail);
  }

  private void fail(FileOp op, ErrorKind kind, RemoteEffect effect, String detail) {
    receipts.failed(op.sink, op.taskIndex, kind, effect, detail);
  }

  /**
   * Fails what was never started and, with nothing in flight, closes the {@code FileIo}. With
   * operations still in the kernel (the lane failed, or its owner is gone) the ring is kept: the
   * kernel may still write their memory.
   */
  @Override
  protected void drain(Throwable cause, List<FileOp> unstarted) {
    if (cause != null) {
      LOG.error("file ring lane {} failed: {}", name(), cause.toString(), cause);
    }
    String why =
        Unsendable.neverSent(
            "file ring lane " + name() + (cause == null ? " closed" : " failed: " + cause));
    backlog.addAll(unstarted);
    FileOp op;
    while ((op = backlog.poll()) != null) {
      failUnstarted(op, ErrorKind.UNAVAILABLE, why);
    }
    if (slots.inflight() == 0 && lifecycle.state() != LaneLifecycle.State.QUARANTINED) {
      io.close();
    } else {
      lifecycle.moveTo(LaneLifecycle.State.QUARANTINED);
    }
  }

  @Override
  protected void ended(Throwable cause) {
    if (abandoned) {
      return;
    }
    String kept =
        lifecycle.state() == LaneLifecycle.State.QUARANTINED
            ? slots.inflight() + " operation(s) in " + io + ", which stays open"
            : null;
    owner.ended(kept, cause);
  }
}
