package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import io.orbite.transport.endpoint.RequesterIncarnations;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneLifecycle;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source end of one data lane: one accepted socket, one lane-runtime thread, blocking I/O (a
 * pass serves the frames buffered, or blocks for more, so the lane never idles). Requests are
 * served in arrival order. Every READ and WRITE passes the {@link Authority} check before a byte of
 * registered memory is touched; READ responses buffered from one read of the socket leave in one
 * gathering write straight from registered memory, WRITE payloads are read straight into it. A
 * frame that breaks the protocol closes this lane only.
 *
 * <p>Before it answers its HELLO, a lane waits until every lane of its requester's older
 * incarnation has ended ({@code fenced}, see {@link
 * io.orbite.transport.endpoint.RequesterIncarnations}); one that took no data request for {@code
 * tcp.sourceIdleTimeoutMillis} is closed by its transport's sweep (its {@link #idle} clock). A
 * KEEPALIVE is answered in request order, and the SHM bytes it reports are counted as served.
 *
 * <p>Why this file is over 500 lines: the HELLO, the three request kinds and their gathered answers
 * share one receive buffer, one gather list and the loans on it, confined to the lane's thread; the
 * authority check, the idle clock and the incarnation fencing are already their own classes, and
 * what is left is one frame loop and the why of each step.
 */
final class SourceLane extends LaneAgent<Void> {
  private static final Logger LOG = LoggerFactory.getLogger(SourceLane.class);
  private static final int RECEIVE_BUFFER_BYTES = 256 * 1024;
  private static final int MAX_GATHER = 1024;
  private static final long MAX_GATHER_BYTES = 16L << 20;
  private static final int HEADER_SLOTS = MAX_GATHER / 2 + 1;

  private final Conduit channel;
  private final ByteBuffer hello;
  private final Authority authority;
  private final long localEpoch;
  private final long maxPayloadBytes;
  private final EngineTally counters;
  private final Consumer<SourceLane> onEnd;

  private final FaultHooks hooks;

  /** Non-zero when the transport has no room for this lane: the HELLO is refused with it. */
  private final int refusal;

  /** The end of every lane of this requester's older incarnations, fenced for this one. */
  private final CompletableFuture<Void> fenced;

  /** How long the HELLO waits on {@link #fenced} before it is refused UNAVAILABLE. */
  private final long fenceWaitMillis;

  /** Whether the lane took no data request for the idle timeout; see {@link SourceIdleClock}. */
  private final SourceIdleClock idle = new SourceIdleClock();

  private final ByteBuffer receive = ByteBuffer.allocateDirect(RECEIVE_BUFFER_BYTES);
  private final MemorySegment receiveSegment = MemorySegment.ofBuffer(receive);
  private int receiveStart;
  private int receiveEnd;

  private final ByteBuffer[] gather = new ByteBuffer[MAX_GATHER];
  private final ByteBuffer[] headerSlots = new ByteBuffer[HEADER_SLOTS];
  private final List<Registration> gatherLoans = new ArrayList<>();
  private int gatherCount;
  private int headersUsed;
  private long gatherBytes;
  private final Registration[] loan = new Registration[1];

  /**
   * The range of the latest READ in the group being gathered, on which {@link #gatherLoans} holds a
   * loan until the group is written: later READs of the same range in the group take no loan of
   * their own. Null once the group's loans are returned.
   */
  private Registration held;

  /** {@link #ioView} of {@link #held}. */
  private MemorySegment heldView;

  private final ByteBuffer discard = ByteBuffer.allocateDirect(64 * 1024);

  SourceLane(
      String name,
      Conduit channel,
      ByteBuffer hello,
      Authority authority,
      long localEpoch,
      long maxPayloadBytes,
      EngineTally counters,
      int refusal,
      FaultHooks hooks,
      CompletableFuture<Void> fenced,
      long fenceWaitMillis,
      Consumer<SourceLane> onEnd) {
    super(name, Long.MAX_VALUE);
    this.hooks = hooks;
    this.refusal = refusal;
    this.fenced = fenced;
    this.fenceWaitMillis = fenceWaitMillis;
    this.channel = channel;
    this.hello = hello;
    this.authority = authority;
    this.localEpoch = localEpoch;
    this.maxPayloadBytes = maxPayloadBytes;
    this.counters = counters;
    this.onEnd = onEnd;
    ByteBuffer headers = ByteBuffer.allocateDirect(HEADER_SLOTS * FrameCodec.HEADER_BYTES);
    for (int i = 0; i < HEADER_SLOTS; i++) {
      headerSlots[i] = headers.slice(i * FrameCodec.HEADER_BYTES, FrameCodec.HEADER_BYTES);
    }
  }

  /** Whether the HELLO was answered: the lane serves frames from then on. */
  private boolean greeted;

  /**
   * The requester as the source's ledger names it ({@link RequesterLabel}) and its epoch, from the
   * HELLO; set once it was accepted (the lane is then counted connected until it ends).
   */
  private String requester;

  private long requesterEpoch;

  /** The ledger row the bytes this lane serves are counted in; set with {@link #requester}. */
  private EngineTally.ServedTo servedTo;

  /** Closes the socket; the lane thread returns its loans and ends. Any thread. */
  @Override
  public void close() {
    lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    closeSocket();
  }

  /** Its idle clock: the transport's sweep closes the lane once the clock says it was idle. */
  SourceIdleClock idle() {
    return idle;
  }

  private void closeSocket() {
    try {
      channel.close();
    } catch (IOException ignored) {
      // The lane reports its own end.
    }
  }

  @Override
  protected void started() {
    // A qualification test may cut this lane's socket from under it, as a network fault would.
    hooks.sourceLaneStarted(name(), this::closeSocket);
  }

  @Override
  protected void take(Void item) {}

  /** Answers the HELLO, then serves one frame or waits (blocking) for more bytes. */
  @Override
  protected int pass(long nowNanos) throws IOException, FrameRejectedException {
    if (!greeted) {
      channel.socket().configureBlocking(true);
      if (!acceptHello()) {
        lifecycle.moveTo(LaneLifecycle.State.CLOSING);
        return 0;
      }
      greeted = true;
      idle.quiet();
      return 1;
    }
    if (!serveOne()) {
      LOG.debug("{}: peer closed", name());
      lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    }
    return 1;
  }

  /** A pass blocks in the socket when there is nothing to do: the lane never idles. */
  @Override
  protected void idle(int work) {}

  @Override
  protected void drain(Throwable cause, List<Void> unstarted) {
    if (cause instanceof FrameRejectedException e) {
      counters.increment(Count.FRAMES_REJECTED);
      LOG.warn("{}: closing after a frame that breaks the protocol: {}", name(), e.getMessage());
      // Requests that came before the bad frame were served; send their answers before closing.
      try {
        flush();
      } catch (IOException ignored) {
        // The peer is gone too; the loans are returned below either way.
      }
    } else if (cause instanceof EOFException) {
      LOG.debug("{}: peer closed", name());
    } else if (cause != null) {
      LOG.debug("{}: {}", name(), cause.toString());
    }
    returnGatherLoans();
    closeSocket();
  }

  @Override
  protected void ended(Throwable cause) {
    hooks.sourceLaneEnded(name());
    if (servedTo != null) {
      counters.requesterDisconnected(requester, requesterEpoch, Transport.TCP);
    }
    onEnd.accept(this);
  }

  private boolean acceptHello() throws IOException {
    long epoch = FrameCodec.epoch(hello, 0);
    int status = epoch != localEpoch ? ErrorKind.EPOCH_MISMATCH.code() : refusal;
    if (status == 0
        && !fenced.isDone()
        && !RequesterIncarnations.await(fenced, fenceWaitMillis, this::running)) {
      if (!running()) {
        return false; // closed while it waited: no answer, the socket is closed
      }
      status = ErrorKind.UNAVAILABLE.code();
      LOG.warn(
          "{}: its requester's older incarnation still holds lanes after {} ms: refusing this"
              + " one UNAVAILABLE (it may connect again)",
          name(),
          fenceWaitMillis);
    }
    ByteBuffer ack = headerSlots[0];
    FrameCodec.encode(
        ack,
        0,
        FrameType.HELLO_ACK,
        status,
        0,
        FrameCodec.requestId(hello, 0),
        localEpoch,
        0,
        0,
        0);
    ack.clear();
    writeFully(ack);
    if (status != 0) {
      LOG.info(
          "{}: refused a lane for epoch {} (this engine is {}): {}",
          name(),
          Long.toHexString(epoch),
          Long.toHexString(localEpoch),
          ErrorKind.fromCode(status));
      return false;
    }
    requesterEpoch = FrameCodec.regionId(hello, 0);
    requester = RequesterLabel.of(channel.socket(), requesterEpoch);
    servedTo = counters.servedTo(requester, requesterEpoch);
    counters.requesterConnected(requester, requesterEpoch, Transport.TCP);
    return true;
  }

  /**
   * Serves the next frame, or reads more bytes (blocking) when no whole header is buffered.
   *
   * @return false on a clean end of the stream between frames
   */
  private boolean serveOne() throws IOException, FrameRejectedException {
    int buffered = receiveEnd - receiveStart;
    if (buffered < FrameCodec.HEADER_BYTES) {
      if (buffered > 0) {
        FrameCodec.check(receive, receiveStart, buffered, maxPayloadBytes);
      }
      // About to block: send what is ready first, so the requester is never kept waiting.
      flush();
      if (buffered == 0) {
        idle.quiet(); // answered, loans returned: idle from now
      }
      return fill(buffered);
    }
    FrameCodec.check(receive, receiveStart, buffered, maxPayloadBytes);
    FrameType type = FrameCodec.type(receive, receiveStart);
    switch (type) {
      case READ_REQUEST -> serveRead();
      case WRITE_REQUEST -> serveWrite();
      case KEEPALIVE -> answerKeepalive();
      default ->
          throw new FrameRejectedException(
              FrameRejectedException.Reason.UNEXPECTED_TYPE, type + " on a data lane");
    }
    return true;
  }

  /** Reads more; false on a clean end between frames. */
  private boolean fill(int buffered) throws IOException, FrameRejectedException {
    if (receiveStart > 0) {
      MemorySegment.copy(receiveSegment, receiveStart, receiveSegment, 0, buffered);
      receiveStart = 0;
      receiveEnd = buffered;
    }
    receive.limit(RECEIVE_BUFFER_BYTES).position(receiveEnd);
    int n = channel.read(receive);
    if (n < 0) {
      if (buffered > 0) {
        throw new FrameRejectedException(
            FrameRejectedException.Reason.TRUNCATED_HEADER,
            "connection closed after "
                + buffered
                + " of "
                + FrameCodec.HEADER_BYTES
                + " header bytes");
      }
      return false;
    }
    receiveEnd += n;
    return true;
  }

  private void serveRead() throws IOException {
    if (!idle.serving()) {
      lifecycle.moveTo(LaneLifecycle.State.CLOSING); // closed idle as it arrived: not served
      return;
    }
    int at = receiveStart;
    long id = FrameCodec.requestId(receive, at);
    long count = FrameCodec.count(receive, at);
    long epoch = FrameCodec.epoch(receive, at);
    long regionId = FrameCodec.regionId(receive, at);
    long offset = FrameCodec.offset(receive, at);
    if (gatherCount + 2 > MAX_GATHER || headersUsed == HEADER_SLOTS) {
      // Before the check: writing the group out returns its loans, this frame's among them.
      flush();
    }
    int status;
    if (held != null && held.regionId() == regionId) {
      // The group already holds a loan on this range: checked again, but not loaned again.
      status = authority.checkHeld(Op.READ, epoch, held, offset, count);
    } else {
      status = authority.check(Op.READ, epoch, regionId, offset, count, loan);
      if (status == 0) {
        gatherLoans.add(loan[0]);
        held = loan[0];
        heldView = ioView(held);
      }
    }
    receiveStart += FrameCodec.HEADER_BYTES;
    ByteBuffer header = headerSlots[headersUsed++];
    if (status == 0) {
      FrameCodec.encode(header, 0, FrameType.READ_RESPONSE, 0, count, id, localEpoch, 0, 0, count);
      header.clear();
      gather[gatherCount++] = header;
      gather[gatherCount++] = heldView.asSlice(offset, count).asByteBuffer();
      gatherBytes += count;
      counters.add(Count.SOURCE_BYTES_READ, count);
      servedTo.add(Transport.TCP, Op.READ, count);
    } else {
      counters.increment(Count.SOURCE_REFUSALS);
      FrameCodec.encode(header, 0, FrameType.READ_RESPONSE, status, 0, id, localEpoch, 0, 0, count);
      header.clear();
      gather[gatherCount++] = header;
    }
    if (gatherBytes >= MAX_GATHER_BYTES) {
      flush();
    }
  }

  /**
   * The view of a loaned range that a gathering write reads from. For memory this engine allocated,
   * a view outside the range's arena: the loan already keeps it mapped (the registry frees it only
   * once every loan is back), and NIO would otherwise take and release the arena's shared session,
   * two atomic updates of one word that every lane of the process contends for, per response.
   * Memory the caller registered keeps its own arena's view, so that the arena's checks still stand
   * between a write and memory the caller freed.
   */
  private static MemorySegment ioView(Registration r) {
    MemorySegment s = r.segment();
    return r.engineOwned() ? MemorySegment.ofAddress(s.address()).reinterpret(s.byteSize()) : s;
  }

  /**
   * Answers a requester's keepalive in request order, and counts the SHM bytes it reports as served
   * (the copies themselves never reach this engine's code).
   */
  private void answerKeepalive() throws IOException {
    int at = receiveStart;
    long id = FrameCodec.requestId(receive, at);
    long shmRead = FrameCodec.regionId(receive, at);
    long shmWritten = FrameCodec.offset(receive, at);
    receiveStart += FrameCodec.HEADER_BYTES;
    if (shmRead > 0) {
      servedTo.add(Transport.SHM, Op.READ, shmRead);
    }
    if (shmWritten > 0) {
      servedTo.add(Transport.SHM, Op.WRITE, shmWritten);
    }
    if (gatherCount + 1 > MAX_GATHER || headersUsed == HEADER_SLOTS) {
      flush();
    }
    ByteBuffer header = headerSlots[headersUsed++];
    FrameCodec.encode(header, 0, FrameType.KEEPALIVE_ACK, 0, 0, id, localEpoch, 0, 0, 0);
    header.clear();
    gather[gatherCount++] = header;
  }

  private void serveWrite() throws IOException {
    if (!idle.serving()) {
      lifecycle.moveTo(LaneLifecycle.State.CLOSING); // closed idle as it arrived: not applied
      return;
    }
    int at = receiveStart;
    long id = FrameCodec.requestId(receive, at);
    long count = FrameCodec.count(receive, at);
    long offset = FrameCodec.offset(receive, at);
    int status =
        authority.check(
            Op.WRITE,
            FrameCodec.epoch(receive, at),
            FrameCodec.regionId(receive, at),
            offset,
            count,
            loan);
    receiveStart += FrameCodec.HEADER_BYTES;
    if (status == 0) {
      Registration r = loan[0];
      try {
        receivePayload(r.segment().asSlice(offset, count));
      } finally {
        r.returnLoan();
      }
    } else {
      counters.increment(Count.SOURCE_REFUSALS);
      discardPayload(count);
    }
    if (gatherCount + 1 > MAX_GATHER || headersUsed == HEADER_SLOTS) {
      flush();
    }
    ByteBuffer header = headerSlots[headersUsed++];
    FrameCodec.encode(header, 0, FrameType.WRITE_ACK, status, 0, id, localEpoch, 0, 0, count);
    header.clear();
    gather[gatherCount++] = header;
  }

  /**
   * Moves a WRITE payload into registered memory: the buffered part by copy, the rest by read.
   * Every byte that lands is counted in {@code sourceBytesWritten}, a torn payload's landed prefix
   * too: the counter says what this source's memory received, not what was acknowledged.
   */
  private void receivePayload(MemorySegment target) throws IOException {
    long length = target.byteSize();
    int buffered = receiveEnd - receiveStart;
    int fromBuffer = (int) Math.min(buffered, length);
    MemorySegment.copy(receiveSegment, receiveStart, target, 0, fromBuffer);
    receiveStart += fromBuffer;
    if (fromBuffer == length) {
      counters.add(Count.SOURCE_BYTES_WRITTEN, length);
      servedTo.add(Transport.TCP, Op.WRITE, length);
      return;
    }
    ByteBuffer view = target.asByteBuffer();
    view.position(fromBuffer);
    try {
      flush();
      while (view.hasRemaining()) {
        if (channel.read(view) < 0) {
          throw new EOFException("peer closed mid-WRITE payload");
        }
      }
    } finally {
      counters.add(Count.SOURCE_BYTES_WRITTEN, view.position());
      servedTo.add(Transport.TCP, Op.WRITE, view.position());
    }
  }

  /** Consumes a refused WRITE's payload without touching registered memory. */
  private void discardPayload(long length) throws IOException {
    int buffered = receiveEnd - receiveStart;
    int fromBuffer = (int) Math.min(buffered, length);
    receiveStart += fromBuffer;
    long left = length - fromBuffer;
    if (left > 0) {
      flush();
    }
    while (left > 0) {
      discard.clear().limit((int) Math.min(discard.capacity(), left));
      int n = channel.read(discard);
      if (n < 0) {
        throw new EOFException("peer closed mid-WRITE payload");
      }
      left -= n;
    }
  }

  private void flush() throws IOException {
    if (gatherCount == 0) {
      return;
    }
    int start = 0;
    while (start < gatherCount) {
      GatherWrites.writeSome(channel, gather, start, gatherCount);
      while (start < gatherCount && !gather[start].hasRemaining()) {
        gather[start++] = null;
      }
    }
    gatherCount = 0;
    headersUsed = 0;
    gatherBytes = 0;
    returnGatherLoans();
  }

  private void returnGatherLoans() {
    held = null;
    heldView = null;
    for (Registration r : gatherLoans) {
      r.returnLoan();
    }
    gatherLoans.clear();
    for (int i = 0; i < gatherCount; i++) {
      gather[i] = null;
    }
  }

  private void writeFully(ByteBuffer buf) throws IOException {
    while (buf.hasRemaining()) {
      channel.write(buf);
    }
  }
}
