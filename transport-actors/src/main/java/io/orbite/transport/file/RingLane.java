package io.orbite.transport.file;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Receipt;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.nativebind.Errno;
import io.orbite.transport.lane.LaneLifecycle;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * One ring lane: owns one {@link FileIo} (an io_uring, or a FileChannel pool) and runs on a pinned
 * dispatcher thread of its own, polling completions in a duty cycle. Child of the FileTransport.
 *
 * <p>Each pass of the duty cycle starts queued operations up to the ring's depth, asks the kernel
 * to cancel in-flight ones whose batch was cancelled, whose deadline passed or whose lane is
 * closing (IORING_OP_ASYNC_CANCEL), submits, waits at most 1 ms for a completion (a quarter of the
 * ring's worth when it is full and more work is queued) when there is nothing else to do, turns
 * completions into receipts and delivers them, one list per batch. A short result continues with
 * the bytes not yet moved (never re-sending bytes the kernel already took); a failure reports what
 * is known. The pass repeats (a message to itself) while anything is queued or in flight; otherwise
 * the lane sleeps until a channel wakes it.
 *
 * <p>States: {@link #running}, {@link #draining} (closing: nothing new starts, in-flight work is
 * cancelled and waited for, then the ring is closed and the lane stops), and {@link #quarantined}:
 * an operation whose cancel was not answered by a completion within the destruction window. Its
 * task never gets its last receipt, so the batch keeps its loan on the memory and its budget
 * charges (free() answers BATCH_BUSY) and the ring is never unmapped or closed: the kernel may
 * still own that memory. Quarantine is sticky; the lane keeps reaping other operations'
 * completions.
 */
final class RingLane {
  sealed interface Command {}

  /** A channel queued work (sent at most once until the lane runs). */
  enum Wake implements Command {
    INSTANCE
  }

  /** Stop taking work, drain, close the ring; answered with {@link Closed}. */
  record Close(ActorRef<Closed> replyTo) implements Command {}

  /** The lane drained and closed its ring, or ({@code quarantined}) could not and keeps it. */
  record Closed(String lane, boolean quarantined) {}

  private enum Poll implements Command {
    INSTANCE
  }

  private static final long MAX_WAIT_NANOS = 1_000_000L;
  private static final Duration QUARANTINED_POLL = Duration.ofMillis(10);
  private static final long GENERATION_SHIFT = 32;

  private final ActorContext<Command> ctx;
  private final LaneHandle handle;
  private final FileIo io;
  private final EngineTally counters;

  /** Confirmed bytes of this lane, for per-lane throughput. */
  private final java.util.concurrent.atomic.LongAdder laneBytes;

  private final long destructionWindowNanos;
  private final FileOp[] slots;
  private final int[] generations;

  /**
   * Completions a pass waits for when the ring is full and work is queued: a quarter of the ring.
   */
  private final int batchWant;

  private final ArrayDeque<Integer> free = new ArrayDeque<>();
  private final ReceiptBatcher outgoing = new ReceiptBatcher();
  private final List<ActorRef<Closed>> closeWaiters = new ArrayList<>();
  private int inflight;
  private OwnerState state = OwnerState.RUNNING;
  private final QuarantineLedger quarantine;

  private RingLane(
      ActorContext<Command> ctx,
      LaneHandle handle,
      FileIo io,
      EngineTally counters,
      Duration destructionWindow,
      QuarantineLedger quarantine) {
    this.ctx = ctx;
    this.quarantine = quarantine;
    this.handle = handle;
    this.io = io;
    this.counters = counters;
    this.laneBytes = counters.lane("file/" + handle.name);
    this.destructionWindowNanos = destructionWindow.toNanos();
    this.slots = new FileOp[io.capacity()];
    this.generations = new int[io.capacity()];
    this.batchWant = Math.max(1, io.capacity() / 4);
    for (int i = 0; i < slots.length; i++) {
      free.add(i);
    }
  }

  static Behavior<Command> create(
      LaneHandle handle,
      FileIo io,
      EngineTally counters,
      OwnerBoard owners,
      Duration destructionWindow,
      QuarantineLedger quarantine) {
    return Behaviors.setup(
        ctx ->
            Behaviors.withTimers(
                timers -> {
                  RingLane lane =
                      new RingLane(ctx, handle, io, counters, destructionWindow, quarantine);
                  return OwnerBoard.reporting(
                      owners,
                      () ->
                          new OwnerBoard.Report(
                              "RingLane",
                              lane.state,
                              java.util.Map.of("inflightOps", (long) lane.inflight),
                              handle.name),
                      lane.running(timers));
                }));
  }

  private Behavior<Command> running(TimerScheduler<Command> timers) {
    return Behaviors.receive(Command.class)
        .onMessageEquals(Wake.INSTANCE, () -> cycle(timers))
        .onMessageEquals(Poll.INSTANCE, () -> cycle(timers))
        .onMessage(
            Close.class,
            m -> {
              handle.lifecycle.moveTo(LaneLifecycle.State.CLOSING);
              closeWaiters.add(m.replyTo());
              ctx.getSelf().tell(Poll.INSTANCE);
              return draining(timers);
            })
        .build();
  }

  /**
   * Closing: nothing new starts (queued work fails UNAVAILABLE), in-flight work is cancelled and
   * waited for, then the ring is closed and the lane stops; or it is quarantined.
   */
  private Behavior<Command> draining(TimerScheduler<Command> timers) {
    state = OwnerState.DRAINING;
    return Behaviors.receive(Command.class)
        .onMessageEquals(Wake.INSTANCE, () -> cycle(timers))
        .onMessageEquals(Poll.INSTANCE, () -> cycle(timers))
        .onMessage(
            Close.class,
            m -> {
              closeWaiters.add(m.replyTo());
              return Behaviors.same();
            })
        .build();
  }

  private Behavior<Command> quarantined(TimerScheduler<Command> timers) {
    state = OwnerState.QUARANTINED;
    return Behaviors.receive(Command.class)
        .onMessageEquals(
            Wake.INSTANCE,
            () -> {
              failQueued(
                  ErrorKind.UNAVAILABLE, "file ring lane " + handle.name + " is quarantined");
              deliver();
              return Behaviors.same();
            })
        .onMessageEquals(
            Poll.INSTANCE,
            () -> {
              failQueued(
                  ErrorKind.UNAVAILABLE, "file ring lane " + handle.name + " is quarantined");
              io.poll(0, this::onCompletion);
              deliver();
              return Behaviors.same();
            })
        .onMessage(
            Close.class,
            m -> {
              m.replyTo().tell(new Closed(handle.name, true));
              return Behaviors.same();
            })
        .build();
  }

  /** One pass of the duty cycle. */
  private Behavior<Command> cycle(TimerScheduler<Command> timers) {
    long now = System.nanoTime();
    int started = admit(now);
    FileOp stuck = checkCancels(now);
    if (stuck != null) {
      return quarantine(stuck, now, timers);
    }
    // Wait in the kernel (bounded) for a completion whenever nothing more can start: the ring is
    // full, or nothing is queued. Polling the CQ in user space while the ring is full and work is
    // queued spins a whole CPU that the kernel's own workers need (measured: see
    // docs/transports/file.md, "Bench method").
    //
    // When the ring is full and more work is queued, wait for a quarter of the ring to complete
    // rather than one operation: the rest keep the kernel busy meanwhile, and one pass then turns
    // several completions into receipts (one delivery per batch), refills several slots with one
    // io_uring_enter, and costs one wake-up of this thread and one message to itself instead of
    // one each per operation. On 2 vCPUs that per-operation work competed with the io-wq worker
    // that copies a buffered write (measured: docs/transports/file.md, "Bench method"). With
    // nothing queued the lane waits for one completion, so an isolated task's receipt is not held.
    boolean ringFull = inflight >= slots.length;
    boolean idleWait = inflight > 0 && (ringFull || (started == 0 && handle.queue.isEmpty()));
    int want = ringFull && !handle.queue.isEmpty() ? batchWant : 1;
    io.poll(idleWait ? MAX_WAIT_NANOS : 0, want, this::onCompletion);
    deliver();
    boolean closing = handle.lifecycle.state() == LaneLifecycle.State.CLOSING;
    if (closing && inflight == 0 && handle.queue.isEmpty()) {
      io.close();
      handle.lifecycle.moveTo(LaneLifecycle.State.CLOSED);
      closeWaiters.forEach(w -> w.tell(new Closed(handle.name, false)));
      return Behaviors.stopped();
    }
    if (inflight > 0 || !handle.queue.isEmpty() || closing) {
      ctx.getSelf().tell(Poll.INSTANCE);
    } else {
      handle.scheduled.set(false);
      if (!handle.queue.isEmpty() && handle.scheduled.compareAndSet(false, true)) {
        ctx.getSelf().tell(Poll.INSTANCE);
      }
    }
    return Behaviors.same();
  }

  /** Starts queued operations while the ring has room. */
  private int admit(long now) {
    int started = 0;
    while (inflight < slots.length) {
      FileOp op = handle.queue.poll();
      if (op == null) {
        break;
      }
      if (!handle.lifecycle.running()) {
        fail(
            op,
            ErrorKind.UNAVAILABLE,
            RemoteEffect.NONE,
            "the file transport is closing; not started");
      } else if (op.sink.cancelled()) {
        fail(
            op,
            ErrorKind.CANCELLED,
            RemoteEffect.NONE,
            "batch cancelled before the operation started");
      } else if (now - op.deadlineNanos > 0) {
        fail(
            op,
            ErrorKind.TIMEOUT,
            RemoteEffect.NONE,
            "deadline passed before the operation started");
      } else {
        int slot = free.poll();
        slots[slot] = op;
        op.id = ((long) generations[slot] << GENERATION_SHIFT) | slot;
        inflight++;
        io.submit(op.id, op.write, op.file, op.memory, op.fileOffset);
        started++;
      }
    }
    return started;
  }

  /** Asks to cancel what must stop; returns an operation whose cancel went unanswered too long. */
  private FileOp checkCancels(long now) {
    for (FileOp op : slots) {
      if (op == null) {
        continue;
      }
      if (!op.cancelRequested) {
        ErrorKind kind = null;
        String why = null;
        if (!handle.lifecycle.running()) {
          kind = ErrorKind.UNAVAILABLE;
          why = "the file transport is closing";
        } else if (op.sink.cancelled()) {
          kind = ErrorKind.CANCELLED;
          why = "batch cancelled";
        } else if (now - op.deadlineNanos > 0) {
          kind = ErrorKind.TIMEOUT;
          why = "deadline passed";
        }
        if (kind != null) {
          op.cancelRequested = true;
          op.cancelRequestedNanos = now;
          op.cancelKind = kind;
          op.cancelReason = why;
          io.cancel(op.id);
        }
      } else if (now - op.cancelRequestedNanos > destructionWindowNanos) {
        return op;
      }
    }
    return null;
  }

  private Behavior<Command> quarantine(FileOp stuck, long now, TimerScheduler<Command> timers) {
    handle.lifecycle.moveTo(LaneLifecycle.State.QUARANTINED);
    counters.increment(Count.OWNERS_QUARANTINED);
    // Sticky: the ring and what its kernel operations may still write are kept for the process's
    // life.
    quarantine.enter(
        new QuarantinedOwner(
            "file ring lane " + handle.name,
            QuarantinedOwner.Kind.LANE,
            stuck.describe()
                + " was asked to stop "
                + (now - stuck.cancelRequestedNanos) / 1_000_000
                + " ms ago and its completion never came; the ring stays mapped",
            1,
            stuck.length(),
            Instant.now()),
        () -> true);
    ctx.getLog()
        .error(
            "file ring lane {} ({}) is QUARANTINED: {} was asked to stop {} ms ago ({}) and its "
                + "completion never came; the ring stays mapped, the memory stays on loan and the task's "
                + "budget charges stay held for the life of the process",
            handle.name,
            io,
            stuck.describe(),
            (now - stuck.cancelRequestedNanos) / 1_000_000,
            stuck.cancelReason);
    failQueued(ErrorKind.UNAVAILABLE, "file ring lane " + handle.name + " is quarantined");
    deliver();
    closeWaiters.forEach(w -> w.tell(new Closed(handle.name, true)));
    closeWaiters.clear();
    timers.startTimerWithFixedDelay(Poll.INSTANCE, QUARANTINED_POLL);
    return quarantined(timers);
  }

  private void failQueued(ErrorKind kind, String why) {
    FileOp op;
    while ((op = handle.queue.poll()) != null) {
      fail(op, kind, RemoteEffect.NONE, why + "; not started");
    }
  }

  private void onCompletion(long id, int result) {
    int slot = (int) id;
    int generation = (int) (id >>> GENERATION_SHIFT);
    FileOp op = slot >= 0 && slot < slots.length ? slots[slot] : null;
    if (op == null || generations[slot] != generation) {
      ctx.getLog()
          .warn(
              "file ring lane {}: completion for unknown operation id {} (result {})",
              handle.name,
              Long.toHexString(id),
              result);
      return;
    }
    if (handle.lifecycle.state() == LaneLifecycle.State.QUARANTINED
        && op.cancelRequested
        && System.nanoTime() - op.cancelRequestedNanos > destructionWindowNanos) {
      // Quarantine is sticky (C7): a late completion does not release what was retained.
      ctx.getLog()
          .warn(
              "file ring lane {}: late completion ({}) for quarantined {}; kept quarantined",
              handle.name,
              result,
              op.describe());
      return;
    }
    if (result < 0) {
      retire(slot, op);
      int errno = -result;
      if (errno == Errno.ECANCELED.number() || errno == Errno.EINTR.number()) {
        fail(
            op,
            op.cancelKind != null ? op.cancelKind : ErrorKind.CANCELLED,
            effectSoFar(op),
            (op.cancelReason != null ? op.cancelReason : "cancelled")
                + ": "
                + op.describe()
                + " stopped in the kernel after "
                + op.progress
                + " B; drained");
      } else {
        fail(
            op,
            kindOf(errno),
            op.write ? RemoteEffect.UNKNOWN : RemoteEffect.NONE,
            op.describe() + " failed after " + op.progress + " B: " + Errno.describe(errno));
      }
      return;
    }
    if (result == 0) {
      retire(slot, op);
      if (op.write) {
        fail(
            op,
            ErrorKind.UNAVAILABLE,
            effectSoFar(op),
            op.describe() + ": the kernel accepted 0 bytes after " + op.progress + " B");
      } else {
        fail(
            op,
            ErrorKind.INVALID_ARGUMENT,
            RemoteEffect.NONE,
            op.describe()
                + ": end of file after "
                + op.progress
                + " B (the file is shorter than the range; did it shrink after open?)");
      }
      return;
    }
    op.progress += result;
    if (op.progress < op.length()) {
      op.shortResults++;
      if (op.cancelRequested) {
        retire(slot, op);
        fail(
            op,
            op.cancelKind,
            effectSoFar(op),
            op.cancelReason
                + ": "
                + op.describe()
                + " stopped after a short "
                + (op.write ? "write" : "read")
                + " of "
                + op.progress
                + " B; drained");
        return;
      }
      // Continue with the bytes not yet moved: a short WRITE is never re-sent from its start.
      io.submit(
          op.id, op.write, op.file, op.memory.asSlice(op.progress), op.fileOffset + op.progress);
      return;
    }
    retire(slot, op);
    laneBytes.add(op.length());
    outgoing.ok(
        op.sink, op.taskIndex, op.length(), op.write ? RemoteEffect.APPLIED : RemoteEffect.NONE);
  }

  private static RemoteEffect effectSoFar(FileOp op) {
    return op.write && op.progress > 0 ? RemoteEffect.APPLIED : RemoteEffect.NONE;
  }

  private void retire(int slot, FileOp op) {
    slots[slot] = null;
    generations[slot]++;
    free.add(slot);
    inflight--;
    op.file.release();
  }

  private void fail(FileOp op, ErrorKind kind, RemoteEffect effect, String detail) {
    if (op.id == -1) {
      op.file.release(); // queued, never started: its use of the file ends here
    }
    receipt(op, Receipt.failed(op.taskIndex, kind, effect, detail));
  }

  private void receipt(FileOp op, Receipt r) {
    outgoing.add(op.sink, r);
  }

  private void deliver() {
    outgoing.flush();
  }

  static ErrorKind kindOf(int errno) {
    if (errno == Errno.ENOSPC.number()
        || errno == Errno.EDQUOT.number()
        || errno == Errno.EFBIG.number()
        || errno == Errno.ENOMEM.number()) {
      return ErrorKind.RESOURCE_EXHAUSTED;
    }
    if (errno == Errno.EACCES.number()
        || errno == Errno.EPERM.number()
        || errno == Errno.EROFS.number()) {
      return ErrorKind.PERMISSION_DENIED;
    }
    if (errno == Errno.EINVAL.number()
        || errno == Errno.EFAULT.number()
        || errno == Errno.EBADF.number()
        || errno == Errno.ESPIPE.number()) {
      return ErrorKind.INVALID_ARGUMENT;
    }
    return ErrorKind.UNAVAILABLE;
  }
}
