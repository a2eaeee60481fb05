package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.priority.PostQueue;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneLifecycle;
import io.orbite.transport.lane.Unsendable;
import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The requester end of one persistent data lane: one socket, owned by one thread, running a duty
 * cycle on the lane runtime ({@link LaneAgent}: take queued frames, write requests, read responses,
 * hand receipts to batches, sleep in the selector when there is nothing to do). Requests are
 * pipelined up to a window; responses come back in order. Payload moves between the socket and the
 * task's off-heap memory with no heap copy: WRITE payloads are written straight from it, READ
 * payloads of a frame whose response is large are read straight into it, small ones are batched
 * through one off-heap receive buffer.
 *
 * <p>Frames wait for the window in a post queue by their task's priority (C14): HIGH first, FIFO
 * within a tier, a tier whose oldest frame waited 10 ms promoted one tier per pass. Only the order
 * in which waiting frames are sent changes: a frame on the wire is never preempted.
 *
 * <p>The lane is the only thread that touches its frames' memory, so when it fails a frame it has
 * already stopped touching it: every failure receipt is sent after local drain (C5).
 *
 * <p>Liveness ({@link LaneLiveness}): an idle lane sends KEEPALIVEs, and a lane whose peer stays
 * silent past {@code tcp.livenessTimeoutMillis} while it waits for an answer ends, so that its
 * owner ({@link TcpLink}) can drain it and reconnect.
 *
 * <p>Why this file is over 500 lines: the duty cycle (take, window, write, read, retire), the
 * deadline sweep and the drain are one state machine over the same frame queues, confined to one
 * thread; the socket's two halves ({@link RequestWriter}, {@link ResponseReader}) and the liveness
 * clock are already their own classes, and what is left is mostly the why of each step.
 */
final class RequesterLane extends LaneAgent<LaneFrame> {
  private static final long SELECT_MILLIS = 50;
  private static final Consumer<SelectionKey> IGNORE_KEY = k -> {};

  private final Conduit channel;
  private final Selector selector;
  private final SelectionKey key;
  private final long peerEpoch;
  private final long maxPayloadBytes;
  private final int windowFrames;
  private final long windowBytes;
  private final Consumer<Throwable> onEnd;
  private final EngineTally counters;
  private final FaultHooks hooks;

  /** When the peer was last heard, and whether a keepalive is due or overdue. */
  private final LaneLiveness liveness;

  /** The gate of the channel this lane serves: the kind of what it fails unsent. */
  private final ChannelGate gate;

  /** Takes frames of this lane, once it broke, to send them on another lane; null: no retries. */
  private volatile Retrier retrier;

  /**
   * Sends a frame of a broken lane on another lane of the same peer incarnation, if one is open.
   */
  interface Retrier {
    /**
     * @return whether another lane took the frame (it then owes the frame's receipt)
     */
    boolean retry(LaneFrame frame, RequesterLane from);
  }

  private final AtomicLong chargedBytes = new AtomicLong();

  /** Bytes of frames retired in this pass, uncharged from {@link #chargedBytes} once per pass. */
  private long retiredBytes;

  /** Where frames go back once this lane has sent their last receipt. */
  private final FramePool pool;

  /**
   * Frames retired in this pass, given back to {@link #pool} after the pass's receipts are sent.
   */
  private final ArrayList<LaneFrame> retired = new ArrayList<>();

  private volatile boolean sleeping;

  /**
   * Frames taken from the inbox and not yet sent, by priority; each is stamped when the lane takes
   * it, which trails its {@link #enqueue} by at most one pass.
   */
  private final PostQueue<LaneFrame> waiting =
      new PostQueue<>(PostQueue.DEFAULT_PROMOTION_TIMEOUT, false);

  /** When the running sweep started; read by {@link #unsendable}. */
  private long sweepNanos;

  /** A waiting frame the sweep fails: {@link Unsendable}. */
  private final Predicate<LaneFrame> unsendable =
      f -> Unsendable.applies(f.sink, f.deadlineNanos, sweepNanos);

  /** Made once, so that a sweep allocates nothing. */
  private final Consumer<LaneFrame> failUnsent = this::failUnsent;

  private final ArrayDeque<LaneFrame> inflight = new ArrayDeque<>();
  private long inflightBytes;

  /** The send side of the socket: requests encoded and written with gathering writes. */
  private final RequestWriter writer;

  /** Confirmed bytes of this lane, for per-lane throughput. */
  private final LongAdder laneBytes;

  /** The receive side of the socket: responses checked, payloads moved into local memory. */
  private final ResponseReader responses;

  RequesterLane(
      String name,
      Conduit channel,
      long peerEpoch,
      long maxPayloadBytes,
      int windowFrames,
      long windowBytes,
      FramePool pool,
      ChannelGate gate,
      EngineTally counters,
      FaultHooks hooks,
      long keepaliveMillis,
      long livenessMillis,
      LaneLiveness.KeepaliveReport report,
      Consumer<Throwable> onEnd)
      throws IOException {
    super(name, SWEEP_NANOS);
    this.liveness = new LaneLiveness(name, keepaliveMillis, livenessMillis, report, counters);
    this.gate = gate;
    this.pool = pool;
    this.counters = counters;
    this.laneBytes = counters.lane("tcp/" + name);
    this.hooks = hooks;
    this.channel = channel;
    this.peerEpoch = peerEpoch;
    this.maxPayloadBytes = maxPayloadBytes;
    this.windowFrames = windowFrames;
    this.windowBytes = windowBytes;
    this.onEnd = onEnd;
    channel.socket().configureBlocking(false);
    this.selector = Selector.open();
    this.key = channel.socket().register(selector, SelectionKey.OP_READ);
    this.responses = new ResponseReader(this, channel, peerEpoch, maxPayloadBytes);
    this.writer = new RequestWriter(channel, peerEpoch, windowFrames);
  }

  /** In-flight bytes charged to this lane, for lane selection. */
  long chargedBytes() {
    return chargedBytes.get();
  }

  /**
   * Queues a frame; any thread.
   *
   * @return false when the lane has ended: the frame was not taken (the caller still owns it)
   */
  boolean enqueue(LaneFrame frame) {
    chargedBytes.addAndGet(frame.length());
    if (offer(frame)) {
      return true;
    }
    chargedBytes.addAndGet(-frame.length());
    return false;
  }

  /**
   * Queues {@code frames}, in order, charging their {@code bytes} once; any thread. A lane that has
   * ended fails them at once, never sent.
   */
  void enqueueAll(List<LaneFrame> frames, long bytes) {
    chargedBytes.addAndGet(bytes);
    if (!inbox.offerAll(frames)) {
      chargedBytes.addAndGet(-bytes);
      failLate(frames);
    }
  }

  /**
   * Fails frames handed to a lane that had ended, never sent; on the producer's thread, which still
   * owns them.
   */
  static void failLate(List<LaneFrame> frames, String lane, ErrorKind kind) {
    ReceiptBatcher late = new ReceiptBatcher();
    for (LaneFrame f : frames) {
      f.fail(late, kind, RemoteEffect.NONE, Unsendable.neverSent(lane + ": lane closed"));
    }
    late.flush();
  }

  private void failLate(List<LaneFrame> frames) {
    failLate(frames, name(), neverSentKind());
  }

  /**
   * The kind of a frame this lane fails without having sent it: the channel's refusal kind once the
   * channel is closed or fenced (C18), else PEER_LOST (the lane broke or ended under it).
   */
  ErrorKind neverSentKind() {
    ErrorKind k = gate.refusalKind();
    return k != null ? k : ErrorKind.PEER_LOST;
  }

  /** Wakes the lane if it sleeps in its selector; call after a run of {@link #enqueue}. */
  @Override
  public void wake() {
    if (sleeping) {
      selector.wakeup();
    }
  }

  /** Lets frames of this lane be sent once more on another lane if this one breaks. */
  void retryOn(Retrier retrier) {
    this.retrier = retrier;
  }

  /** Closes the socket; the lane fails what it holds and ends. Any thread. */
  @Override
  public void close() {
    lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    try {
      channel.close();
    } catch (IOException ignored) {
      // The lane reports its own end.
    }
    selector.wakeup();
  }

  @Override
  protected void take(LaneFrame frame) {
    waiting.offer(frame, frame.priority, cycleNanos());
  }

  @Override
  protected int pass(long nowNanos) throws IOException, FrameRejectedException {
    int wrote = fillGather() + writer.writeSome();
    if (wrote > 0 && !inflight.isEmpty()) {
      // Request bytes only: a keepalive (sent with nothing in flight) is not a sign of the peer's.
      liveness.wroteRequests(nowNanos);
    }
    return wrote + responses.readSome();
  }

  /** Bytes came from the peer; the reader calls this on every read that returned some. */
  void heard() {
    liveness.heard(cycleNanos());
  }

  /** The peer answered the outstanding keepalive. */
  void keepaliveAnswered() {
    liveness.answered();
  }

  /**
   * Ends the lane if the peer has been silent past the liveness bound while the lane waits for an
   * answer; sends a keepalive if the lane has been idle for the keepalive interval.
   */
  private int keepLive(long now) throws LaneLiveness.LivenessLost {
    liveness.check(now, !inflight.isEmpty());
    if (inflight.isEmpty()
        && waiting.isEmpty()
        && !writer.busy()
        && liveness.keepaliveDue(now)
        && writer.begin()) {
      liveness.sendKeepalive(now, writer);
      return 1;
    }
    return 0;
  }

  @Override
  protected void drain(Throwable cause, List<LaneFrame> unstarted) {
    if (cause instanceof FrameRejectedException) {
      counters.increment(EngineTally.Count.FRAMES_REJECTED);
    }
    closeQuietly();
    failEverything(cause, unstarted);
  }

  @Override
  protected void ended(Throwable cause) {
    onEnd.accept(cause);
  }

  /**
   * Ends a pass: uncharges the lane for the frames it retired, sends their receipts, then gives
   * those frames back to the pool (no receipt of theirs is still to come, and nothing here refers
   * to them any more). The uncharge comes first: a caller that sees a task end and submits the next
   * one must find this lane's charge without the finished frames, as lane choice expects.
   */
  @Override
  protected void endPass() {
    if (retiredBytes != 0) {
      chargedBytes.addAndGet(-retiredBytes);
      retiredBytes = 0;
    }
    try {
      super.endPass();
    } finally {
      if (!retired.isEmpty()) {
        pool.giveBack(retired);
        retired.clear();
      }
    }
  }

  /**
   * Fails waiting frames whose batch was cancelled or whose deadline passed, even while the window
   * is full; ends the lane if a frame already on the wire is past its deadline (only closing the
   * socket proves that nothing will still land in its memory).
   */
  @Override
  protected int sweep(long now) throws LaneDeadlineException, LaneLiveness.LivenessLost {
    sweepNanos = now;
    int failed = waiting.removeIf(unsendable, failUnsent) + keepLive(now);
    for (LaneFrame f : inflight) {
      if (now - f.deadlineNanos > 0) {
        throw new LaneDeadlineException(
            name()
                + ": request "
                + f.requestId
                + " of "
                + f.taskLabel()
                + " passed its deadline on the wire; closing the lane to drain it");
      }
    }
    return failed;
  }

  /**
   * Fails a frame that was never sent because its batch was cancelled or, failing that, because its
   * deadline passed.
   */
  private void failUnsent(LaneFrame f) {
    ErrorKind kind = f.sink.cancelled() ? ErrorKind.CANCELLED : ErrorKind.TIMEOUT;
    finishFailed(f, kind, RemoteEffect.NONE, Unsendable.detail(kind));
  }

  /** A frame on the wire passed its deadline: the lane closes so its memory can be drained. */
  static final class LaneDeadlineException extends Exception {
    LaneDeadlineException(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * Moves waiting frames into the writer's gather list, in priority order (after an aging pass),
   * while the window and the list have room.
   */
  private int fillGather() {
    if (!writer.begin()) {
      return 0;
    }
    int added = 0;
    long now = System.nanoTime();
    waiting.promote(now);
    while (!waiting.isEmpty()
        && inflight.size() < windowFrames
        && inflightBytes < windowBytes
        && writer.room()) {
      LaneFrame f = waiting.poll();
      if (Unsendable.applies(f.sink, f.deadlineNanos, now)) {
        failUnsent(f);
        continue;
      }
      writer.append(f);
      inflight.add(f);
      inflightBytes += f.length();
      added++;
    }
    return added;
  }

  /** The oldest frame on the wire, whose response comes next; null when none is. */
  LaneFrame oldestInFlight() {
    return inflight.peekFirst();
  }

  /** Retires the oldest in-flight frame as confirmed: all its bytes moved. */
  void retireHeadOk(LaneFrame f, RemoteEffect effect) {
    inflight.pollFirst();
    inflightBytes -= f.length();
    laneBytes.add(f.length());
    f.ok(receipts, effect);
    retire(f);
  }

  /** Retires the oldest in-flight frame as refused by the source, with {@code kind}. */
  void retireHeadRefused(LaneFrame f, ErrorKind kind, String detail) {
    inflight.pollFirst();
    inflightBytes -= f.length();
    finishFailed(f, kind, RemoteEffect.NONE, detail);
  }

  /** A READ response's header checked: its payload moves next (a fault hook may hold here). */
  void beforePayload() throws IOException {
    hooks.beforeReadPayload(name());
    // A hook that held the lane is not the peer's silence.
    liveness.heard(System.nanoTime());
  }

  /** Hands a failure receipt for each task of the frame to its batch; the lane is done with it. */
  private void finishFailed(LaneFrame f, ErrorKind kind, RemoteEffect effect, String detail) {
    f.fail(receipts, kind, effect, detail);
    retire(f);
  }

  /** Marks {@code f} done: uncharged and given back to the pool when the pass ends. */
  private void retire(LaneFrame f) {
    retiredBytes += f.length();
    retired.add(f);
  }

  /**
   * Sleeps in the selector after a cycle that did nothing. A lane that holds no frame has no
   * deadline to sweep: it sleeps until the socket, new work ({@link #wake}) or a close rouses it,
   * so an idle engine's lanes cost no CPU.
   */
  @Override
  protected void idle(int work) {
    if (work > 0 || channel.buffered()) {
      // Bytes already read under TLS wake no selector: the next pass reads them.
      return;
    }
    try {
      int ops = SelectionKey.OP_READ | (writer.busy() ? SelectionKey.OP_WRITE : 0);
      if (key.interestOps() != ops) {
        key.interestOps(ops);
      }
      sleeping = true;
      try {
        if (inbox.count() == 0 && lifecycle.running()) {
          // The action form skips the selected-key set, whose insertions allocate on every wake.
          boolean holding = !waiting.isEmpty() || !inflight.isEmpty() || writer.busy();
          long sleep =
              Math.min(
                  holding ? SELECT_MILLIS : Long.MAX_VALUE,
                  liveness.untilNextNanos(System.nanoTime()) / 1_000_000L);
          selector.select(IGNORE_KEY, Math.max(1, sleep));
        }
      } finally {
        sleeping = false;
      }
    } catch (IOException | RuntimeException e) {
      // A closed channel or selector: the next cycle meets the close and ends the lane.
    }
  }

  /**
   * Fails every frame this lane holds. Only the lane thread, after the socket is closed, so no byte
   * of these frames moves any more (C5). If the connection broke (not a deliberate close, a
   * deadline or a protocol error), READ frames and frames never sent are first offered, once, to
   * another open lane of the same peer; a WRITE that may have reached the socket never is (C6).
   */
  private void failEverything(Throwable cause, List<LaneFrame> unstarted) {
    String why = cause == null ? "lane closed" : cause.getMessage();
    ErrorKind kind =
        cause instanceof FrameRejectedException ? ErrorKind.PROTOCOL : ErrorKind.PEER_LOST;
    boolean broke =
        cause instanceof IOException
            && !(cause instanceof LaneLiveness.LivenessLost)
            && lifecycle.state() == LaneLifecycle.State.DRAINING;
    long now = System.nanoTime();
    for (LaneFrame f : inflight) {
      RemoteEffect effect = RemoteEffect.NONE;
      boolean sent = writer.sent(f);
      if (f.op == Op.WRITE && sent) {
        // Some of this WRITE reached the socket and no acknowledgement came back.
        effect = RemoteEffect.UNKNOWN;
      }
      ErrorKind frameKind = now - f.deadlineNanos > 0 ? ErrorKind.TIMEOUT : kind;
      if (broke && frameKind == ErrorKind.PEER_LOST && (f.op == Op.READ || !sent) && handOver(f)) {
        continue;
      }
      if (sent) {
        finishFailed(f, frameKind, effect, name() + ": " + why);
      } else {
        // A frame admitted to the window whose bytes had not reached the socket says so, as a
        // queued one does.
        finishFailed(
            f,
            frameKind == ErrorKind.PEER_LOST ? neverSentKind() : frameKind,
            effect,
            Unsendable.neverSent(name() + ": " + why));
      }
    }
    inflight.clear();
    inflightBytes = 0;
    for (LaneFrame f : unstarted) {
      waiting.offer(f, f.priority, now);
    }
    // In priority order, so another lane takes the frames handed over in that order.
    waiting.drainTo(
        f -> {
          if (broke && now - f.deadlineNanos <= 0 && handOver(f)) {
            return;
          }
          finishFailed(
              f, neverSentKind(), RemoteEffect.NONE, Unsendable.neverSent(name() + ": " + why));
        });
    responses.reset();
  }

  /** Offers a frame of this broken lane to another lane; true if one took it (and its receipt). */
  private boolean handOver(LaneFrame f) {
    Retrier r = retrier;
    if (r == null || f.retried || f.sink.cancelled()) {
      return false;
    }
    f.retried = true;
    f.received = 0;
    f.view = null;
    if (!r.retry(f, this)) {
      return false;
    }
    chargedBytes.addAndGet(-f.length());
    return true;
  }

  private void closeQuietly() {
    try {
      channel.close();
      selector.close();
    } catch (IOException ignored) {
      // Closing is best effort; the frames are failed regardless.
    }
  }
}
