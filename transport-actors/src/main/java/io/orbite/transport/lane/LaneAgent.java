package io.orbite.transport.lane;

import io.orbite.engine.spi.ReceiptBatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentTerminationException;
import org.agrona.concurrent.IdleStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lane's duty cycle, run on a thread of its own by {@link LaneRuntime}: the runtime owns the
 * thread, the inbox and the wake-up, and the cycle every lane shares; a lane keeps only its own I/O
 * (socket framing, the copy, SQEs, CQEs).
 *
 * <p>A cycle takes the inbox ({@link #take}, each item in order), runs the deadline sweep at most
 * once per sweep period ({@link #sweep}), runs the lane's pass ({@link #pass}), then ends the pass
 * ({@link #endPass}: the pass's receipts are delivered, one call per batch). With no work done the
 * runner idles ({@link #idle}); work handed over wakes the lane at once ({@link #wake}). The lane
 * runs while {@link #keepRunning} (by default: while its {@link LaneLifecycle} is RUNNING). When it
 * stops, because it was closed or its pass threw, the runtime closes the inbox and, on the lane's
 * thread, has it {@link #drain} what it holds, ends the last pass, moves the lifecycle to CLOSED
 * (no task's memory is touched after that) and reports the end ({@link #ended}).
 *
 * <p>Only the lane's thread runs the cycle, so a lane's per-pass state needs no lock; {@link
 * #offer}, {@link #wake} and {@link #close} are for any thread.
 *
 * @param <T> the lane's unit of work
 */
public abstract class LaneAgent<T> implements Agent {
  private static final Logger LOG = LoggerFactory.getLogger(LaneAgent.class);

  /** How often a lane looks for cancelled and expired work, by default. */
  public static final long SWEEP_NANOS = 1_000_000L;

  private final String name;
  private final long sweepNanos;

  /** The lane's state, readable by any thread. */
  protected final LaneLifecycle lifecycle = new LaneLifecycle();

  /** Work handed to the lane. */
  protected final LaneInbox<T> inbox = new LaneInbox<>();

  /** The pass's receipts, delivered by {@link #endPass}. Lane thread only. */
  protected final ReceiptBatcher receipts = new ReceiptBatcher();

  private final Consumer<T> taker = this::take;
  private long lastSweepNanos;
  private long cycleNanos;
  private volatile Thread thread;

  /** The thread the runtime started the lane on, set before it starts: what a join waits for. */
  private volatile Thread runner;

  private Throwable failure;

  /**
   * A lane named {@code name} that sweeps every {@code sweepNanos}.
   *
   * @param name the lane's name in messages and in its thread's name
   * @param sweepNanos the sweep period ({@link #SWEEP_NANOS} unless the lane says why not)
   */
  protected LaneAgent(String name, long sweepNanos) {
    this.name = name;
    this.sweepNanos = sweepNanos;
  }

  /**
   * The lane's name.
   *
   * @return for example {@code lane 0 to 127.0.0.1:4000@5e1f}
   */
  public final String name() {
    return name;
  }

  @Override
  public final String roleName() {
    return name;
  }

  /**
   * The lane's lifecycle, readable by any thread.
   *
   * @return its lifecycle
   */
  public final LaneLifecycle lifecycle() {
    return lifecycle;
  }

  /**
   * Whether the lane still takes work.
   *
   * @return true while RUNNING
   */
  public final boolean running() {
    return lifecycle.running();
  }

  /**
   * Whether the lane's thread has left the cycle for good: it touches no task's memory any more.
   *
   * @return true once CLOSED
   */
  public final boolean ended() {
    return lifecycle.state() == LaneLifecycle.State.CLOSED;
  }

  /**
   * The names of those of {@code lanes} whose thread has not ended, for a quarantine's reason; any
   * thread.
   *
   * @param lanes an endpoint's lanes
   * @return their names, empty once every one has ended
   */
  public static List<String> stillRunning(List<? extends LaneAgent<?>> lanes) {
    List<String> names = new ArrayList<>();
    for (LaneAgent<?> lane : lanes) {
      if (!lane.ended()) {
        names.add(lane.name());
      }
    }
    return names;
  }

  /**
   * Hands {@code item} to the lane; any thread. It does not wake the lane: call {@link #wake} after
   * a run of offers.
   *
   * @param item the work
   * @return false when the lane no longer takes work (the caller fails the item, never sent)
   */
  public boolean offer(T item) {
    return inbox.offer(item);
  }

  /** Wakes the lane if it idles; any thread. */
  public void wake() {
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  /** Closes the lane on purpose: it fails what it holds, never retrying it elsewhere, and ends. */
  public void close() {
    lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    wake();
  }

  /**
   * When the running cycle started ({@link System#nanoTime()}): what {@link #take} stamps work
   * with, without a clock read per item.
   *
   * @return the cycle's start
   */
  protected final long cycleNanos() {
    return cycleNanos;
  }

  /**
   * The lane's thread, once it runs.
   *
   * @return the thread, or null before it started
   */
  protected final Thread thread() {
    return thread;
  }

  /** Called by {@link LaneRuntime#start} with the lane's thread before it starts it. */
  final void runsOn(Thread unstarted) {
    runner = unstarted;
  }

  /**
   * Waits for the lane's thread to end, any thread but the lane's. A lane the runtime started is
   * waited for even if its thread has not reached its first cycle yet (it then sees the close and
   * ends); a lane never started has nothing to wait for.
   *
   * @param millis how long to wait at most
   * @return true when its thread ended within {@code millis}, or it was never started
   */
  public final boolean join(long millis) {
    Thread t = runner;
    if (t == null) {
      return true;
    }
    try {
      t.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !t.isAlive();
  }

  @Override
  public final void onStart() {
    thread = Thread.currentThread();
    started();
  }

  @Override
  public final int doWork() {
    if (!keepRunning()) {
      throw new AgentTerminationException();
    }
    int work = 0;
    try {
      long now = System.nanoTime();
      cycleNanos = now;
      if (inbox.count() != 0) {
        work += takeInbox();
      }
      if (now - lastSweepNanos >= sweepNanos) {
        lastSweepNanos = now;
        work += sweep(now);
      }
      work += pass(now);
      endPass();
    } catch (Exception | Error e) {
      failure = e;
      lifecycle.moveTo(LaneLifecycle.State.DRAINING);
      throw new AgentTerminationException(e);
    }
    return work;
  }

  @Override
  public final void onClose() {
    // Stays CLOSING after a close; otherwise the lane broke (or met a deadline or a bad frame).
    lifecycle.moveTo(LaneLifecycle.State.DRAINING);
    try {
      List<T> unstarted = inbox.close();
      drain(failure, unstarted);
    } catch (RuntimeException | Error e) {
      LOG.error("{}: draining failed: {}", name, e.toString(), e);
    } finally {
      try {
        endPass();
      } catch (RuntimeException e) {
        LOG.error("{}: its last receipts could not be delivered: {}", name, e.toString(), e);
      }
      lifecycle.moveTo(LaneLifecycle.State.CLOSED);
      ended(failure);
    }
  }

  /**
   * Idles after a cycle that did {@code work} (0: none). By default through {@link #idleStrategy}.
   *
   * @param work what the cycle did
   */
  protected void idle(int work) {
    idleStrategy().idle(work);
  }

  /**
   * The strategy {@link #idle} waits with; a lane that overrides {@link #idle} need not give one.
   *
   * @return the lane's idle strategy, confined to its thread
   */
  protected IdleStrategy idleStrategy() {
    throw new UnsupportedOperationException(name + " gives no idle strategy");
  }

  /** Runs on the lane's thread before its first cycle. */
  protected void started() {}

  /**
   * Whether the cycle goes on. By default while the lane is RUNNING; a lane that must finish work
   * after a close (QPs still flushing) says so here.
   *
   * @return true to run another cycle
   */
  protected boolean keepRunning() {
    return lifecycle.running();
  }

  /**
   * Takes what waits in the inbox, once per cycle: by default each item through {@link #take}. A
   * lane that keeps its own backlog may take the inbox's whole deque at once ({@link
   * LaneInbox#swap}).
   *
   * @return how many items it took
   */
  protected int takeInbox() {
    return inbox.drainTo(taker);
  }

  /**
   * Takes one item of the inbox, on the lane's thread, under the inbox's lock (queue it; no I/O).
   *
   * @param item the work
   */
  protected abstract void take(T item);

  /**
   * The deadline sweep, at most once per sweep period: fails work not yet started that is {@link
   * Unsendable}, and ends the lane (by throwing) when work on the wire is past its deadline.
   *
   * @param nowNanos now
   * @return how much it did (0: nothing)
   * @throws Exception to end the lane, which then drains
   */
  protected int sweep(long nowNanos) throws Exception {
    return 0;
  }

  /**
   * The lane's I/O for one cycle.
   *
   * @param nowNanos when the cycle started
   * @return how much it did (0: nothing, so the runner may idle)
   * @throws Exception to end the lane, which then drains
   */
  protected abstract int pass(long nowNanos) throws Exception;

  /** Ends a pass: delivers its receipts. A lane that recycles per-pass state extends this. */
  protected void endPass() {
    receipts.flush();
  }

  /**
   * Fails (or hands over) everything the lane holds, on its thread, once its cycle stopped: after
   * this, nothing of the lane touches a task's memory.
   *
   * @param cause why it stopped, or null when it was closed on purpose
   * @param unstarted what was still in the inbox, oldest first
   */
  protected abstract void drain(Throwable cause, List<T> unstarted);

  /**
   * Reports the lane's end to its owner (called last, on the lane's thread).
   *
   * @param cause why it stopped, or null when it was closed on purpose
   */
  protected abstract void ended(Throwable cause);
}
