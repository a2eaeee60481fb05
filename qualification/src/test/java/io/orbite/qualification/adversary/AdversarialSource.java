package io.orbite.qualification.adversary;

import io.orbite.qualification.verify.Pattern;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A source that speaks the engine's wire protocol from this test's own code ({@link Wire}), on
 * 127.0.0.1, one thread per connection. It serves Describe (one READ_WRITE region, {@link
 * #REGION_ID}), accepts lanes whose HELLO names its epoch, and answers data frames as its {@link
 * Script} says: correctly, late, partly, never, or falsely. It refuses what a correct source
 * refuses (another epoch, an unknown region, a range outside the region) with the documented status
 * codes. Everything it receives, applies and sends goes into its {@link Ledger}.
 *
 * <p>{@link #kill()} resets every connection and closes the listener, as a process death would;
 * {@link #restart} then starts the next incarnation at the same port with a fresh epoch, the same
 * region memory and the same ledger.
 */
final class AdversarialSource implements AutoCloseable {
  static final long REGION_ID = 0x5A11L;
  private static final int CHUNK = 1 << 20;

  /** How long a late send waits to see whether the requester already closed the lane. */
  private static final int CLOSE_PROBE_MILLIS = 2_000;

  /** How long {@link Script.Reply.ApplyThenReset} keeps reading what the requester already sent. */
  private static final int DRAIN_QUIET_MILLIS = 300;

  private final Ledger ledger;
  private final MemorySegment region;
  private final Script script;
  private final int incarnation;
  private final long epoch;
  private final ServerSocket server;
  private final AtomicInteger connections;
  private final AtomicInteger framesOverall;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final List<Thread> threads = new CopyOnWriteArrayList<>();
  private final Thread acceptor;
  private volatile long helloAckEpoch;

  /** The tag of a NOTIFY to be read and then left unanswered, its connection reset; or null. */
  private volatile String resetAfterNotify;

  private volatile boolean killed;

  private AdversarialSource(
      Ledger ledger,
      MemorySegment region,
      Script script,
      int incarnation,
      int port,
      AtomicInteger connections,
      AtomicInteger framesOverall)
      throws IOException {
    this.ledger = ledger;
    this.region = region;
    this.script = script;
    this.incarnation = incarnation;
    this.connections = connections;
    this.framesOverall = framesOverall;
    long e;
    do {
      e = ThreadLocalRandom.current().nextLong();
    } while (e == 0);
    this.epoch = e;
    this.helloAckEpoch = e;
    this.server = new ServerSocket();
    server.setReuseAddress(true);
    try {
      server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    } catch (IOException bindFailed) {
      throw new IOException(
          "adversarial source: bind 127.0.0.1:" + port + ": " + bindFailed.getMessage(),
          bindFailed);
    }
    this.acceptor =
        Thread.ofPlatform()
            .daemon()
            .name("adversary-accept-" + port() + "-" + incarnation)
            .start(this::acceptLoop);
  }

  /** A peer with a region of {@code regionBytes} holding pattern {@code seed} at every position. */
  static AdversarialSource start(long regionBytes, long seed, Script script) throws IOException {
    MemorySegment region = Arena.ofAuto().allocate(regionBytes, 64);
    Pattern.fill(region, 0, regionBytes, seed, 0);
    return new AdversarialSource(
        new Ledger(), region, script, 1, 0, new AtomicInteger(), new AtomicInteger());
  }

  /**
   * The next incarnation at the same port: fresh epoch, same region and ledger. Kills this one
   * first.
   */
  AdversarialSource restart(Script next) throws IOException {
    kill();
    return new AdversarialSource(
        ledger, region, next, incarnation + 1, port(), connections, framesOverall);
  }

  /** Answer every HELLO that names this incarnation with status 0 but naming {@code otherEpoch}. */
  void acceptHellosAs(long otherEpoch) {
    this.helloAckEpoch = otherEpoch;
  }

  /**
   * The next NOTIFY tagged {@code tag} is read and recorded, and its connection reset instead of
   * answered (a connection broken after the notification was sent). Every other NOTIFY is answered:
   * accepted when it names this incarnation, EPOCH_MISMATCH otherwise.
   */
  void resetAfterNotify(String tag) {
    this.resetAfterNotify = tag;
  }

  int port() {
    return server.getLocalPort();
  }

  String endpoint() {
    return "127.0.0.1:" + port();
  }

  long epoch() {
    return epoch;
  }

  MemorySegment region() {
    return region;
  }

  Ledger ledger() {
    return ledger;
  }

  /** Resets every connection and closes the listener, as if the process died. */
  void kill() {
    killed = true;
    try {
      server.close();
    } catch (IOException ignored) {
      // Already closed.
    }
    for (Socket s : open) {
      reset(s);
    }
    // The JDK releases a listener's port only once the thread blocked in accept() has left it.
    try {
      acceptor.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    kill();
    try {
      for (Thread t : threads) {
        t.join(5_000);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void acceptLoop() {
    while (!killed) {
      Socket s;
      try {
        s = server.accept();
      } catch (IOException e) {
        if (!killed) {
          ledger.problem(e);
        }
        return;
      }
      int id = connections.incrementAndGet();
      open.add(s);
      if (killed) {
        reset(s);
        return;
      }
      threads.add(
          Thread.ofPlatform().daemon().name("adversary-conn-" + id).start(() -> serve(s, id)));
    }
  }

  private void serve(Socket s, int connection) {
    String how = "requester closed";
    try {
      s.setTcpNoDelay(true);
      InputStream in = new BufferedInputStream(s.getInputStream(), 256 * 1024);
      OutputStream out = s.getOutputStream();
      Wire.Header first = Wire.Header.read(in);
      if (first == null) {
        return;
      }
      switch (first.type()) {
        case DESCRIBE_REQUEST -> describe(first, in, out);
        case HELLO -> {
          in.skipNBytes(first.payloadLength()); // the requester's identity: not judged here
          if (hello(first, connection, out)) {
            how = lane(s, in, out, connection, first.offset());
          } else {
            how = "HELLO refused";
          }
        }
        case NOTIFY -> how = notifications(s, first, in, out, connection);
        default -> throw new Wire.Violation(first.type() + " as the first frame");
      }
    } catch (Wire.Violation e) {
      ledger.problem(e);
      how = "violation: " + e.getMessage();
    } catch (IOException e) {
      how = killed ? "killed" : "I/O: " + e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      how = "interrupted";
    } catch (RuntimeException e) {
      ledger.problem(e);
      how = "bug: " + e;
    } finally {
      open.remove(s);
      ledger.laneEnded(new Ledger.LaneEnd(incarnation, connection, how));
      try {
        s.close();
      } catch (IOException ignored) {
        // Gone already.
      }
    }
  }

  /** Serves a notification connection from its first NOTIFY; says how it ended. */
  private String notifications(
      Socket s, Wire.Header first, InputStream in, OutputStream out, int connection)
      throws IOException {
    Wire.Header h = first;
    while (h != null) {
      if (h.type() != Wire.Type.NOTIFY) {
        throw new Wire.Violation(h.type() + " on a notification connection");
      }
      Wire.Notify n = Wire.Notify.decode(in.readNBytes((int) h.payloadLength()), h.count());
      boolean reset = n.tag().equals(resetAfterNotify);
      ledger.notified(
          new Ledger.Notified(
              incarnation, connection, h.requestId(), h.epoch(), h.regionId(), n, !reset));
      if (reset) {
        resetAfterNotify = null;
        reset(s);
        return "reset after NOTIFY " + n.tag();
      }
      int status = h.epoch() == epoch ? Wire.OK : Wire.EPOCH_MISMATCH;
      out.write(
          new Wire.Header(Wire.Type.NOTIFY_ACK, status, 0, h.requestId(), epoch, 0, 0, 0).encode());
      out.flush();
      h = Wire.Header.read(in);
    }
    return "requester closed";
  }

  private void describe(Wire.Header request, InputStream in, OutputStream out) throws IOException {
    Wire.Header h = request;
    while (h != null) {
      if (h.type() != Wire.Type.DESCRIBE_REQUEST) {
        throw new Wire.Violation(h.type() + " on a Describe connection");
      }
      byte[] payload =
          Wire.describePayload(
              "127.0.0.1",
              port(),
              epoch,
              List.of(new Wire.Region(REGION_ID, region.byteSize(), Wire.ACCESS_READ_WRITE)));
      Wire.Header answer =
          new Wire.Header(
              Wire.Type.DESCRIBE_RESPONSE, Wire.OK, payload.length, h.requestId(), epoch, 0, 0, 0);
      out.write(Wire.concat(answer.encode(), payload));
      out.flush();
      h = Wire.Header.read(in);
    }
  }

  /** Answers a HELLO; true when the lane is accepted. */
  private boolean hello(Wire.Header h, int connection, OutputStream out) throws IOException {
    int status =
        h.epoch() == epoch && h.count() == Wire.TRANSPORT_TCP ? Wire.OK : Wire.EPOCH_MISMATCH;
    ledger.hello(
        new Ledger.Hello(incarnation, connection, h.epoch(), h.regionId(), h.offset(), status));
    long named = status == Wire.OK ? helloAckEpoch : epoch;
    out.write(
        new Wire.Header(Wire.Type.HELLO_ACK, status, 0, h.requestId(), named, 0, 0, 0).encode());
    out.flush();
    return status == Wire.OK;
  }

  /** Serves one lane until it ends; returns how it ended. */
  private String lane(Socket s, InputStream in, OutputStream out, int connection, long laneIndex)
      throws IOException, InterruptedException {
    int onLane = 0;
    while (true) {
      Wire.Header h = Wire.Header.read(in);
      if (h == null) {
        return "requester closed";
      }
      if (h.type() == Wire.Type.KEEPALIVE) {
        // An idle requester lane asks whether this source is still there: answer in order.
        synchronized (out) {
          out.write(
              new Wire.Header(Wire.Type.KEEPALIVE_ACK, Wire.OK, 0, h.requestId(), epoch, 0, 0, 0)
                  .encode());
          out.flush();
        }
        continue;
      }
      if (h.type() != Wire.Type.READ_REQUEST && h.type() != Wire.Type.WRITE_REQUEST) {
        throw new Wire.Violation(h.type() + " on a data lane");
      }
      if (h.type() == Wire.Type.READ_REQUEST
          ? h.payloadLength() != 0
          : h.payloadLength() != h.count()) {
        throw new Wire.Violation(h + ": payload length breaks the frame's rule");
      }
      ledger.received(new Ledger.Received(incarnation, connection, laneIndex, h));
      Script.Request request =
          new Script.Request(
              incarnation, connection, laneIndex, onLane++, framesOverall.getAndIncrement(), h);
      int refusal = refusal(h);
      if (refusal != Wire.OK) {
        if (h.type() == Wire.Type.WRITE_REQUEST) {
          discard(in, h.count());
        }
        respond(out, connection, h, refusal, epoch, false);
        continue;
      }
      String end =
          h.type() == Wire.Type.READ_REQUEST
              ? read(s, in, out, connection, h, script.on(request))
              : write(s, in, out, connection, laneIndex, h, script.on(request));
      if (end != null) {
        return end;
      }
    }
  }

  /** The status a correct source answers this frame with. */
  private int refusal(Wire.Header h) {
    if (h.epoch() != epoch) {
      return Wire.EPOCH_MISMATCH;
    }
    if (h.regionId() != REGION_ID) {
      return Wire.PERMISSION_DENIED;
    }
    if (h.count() <= 0 || h.offset() < 0 || h.offset() > region.byteSize() - h.count()) {
      return Wire.INVALID_ARGUMENT;
    }
    return Wire.OK;
  }

  /** Answers a READ as scripted; returns how the lane ended, or null to go on. */
  private String read(
      Socket s, InputStream in, OutputStream out, int connection, Wire.Header h, Script.Reply reply)
      throws IOException, InterruptedException {
    switch (reply) {
      case Script.Reply.Serve x -> respond(out, connection, h, Wire.OK, epoch, true);
      case Script.Reply.WrongEpoch w -> respond(out, connection, h, Wire.OK, w.epoch(), true);
      case Script.Reply.Silent x -> {}
      case Script.Reply.Hold hold -> {
        await(hold.release());
        return lateSend(s, in, out, connection, h, 0);
      }
      case Script.Reply.Partial p -> {
        out.write(responseHeader(h, Wire.OK, epoch).encode());
        sendPayload(out, h.offset(), p.bytes());
        out.flush();
        ledger.answered(
            new Ledger.Answered(
                incarnation,
                connection,
                h.requestId(),
                Wire.Type.READ_RESPONSE,
                Wire.OK,
                epoch,
                p.bytes()));
        await(p.release());
        return lateSend(s, in, out, connection, h, p.bytes());
      }
      case Script.Reply.CutMidPayload c -> {
        out.write(responseHeader(h, Wire.OK, epoch).encode());
        sendPayload(out, h.offset(), c.bytes());
        out.flush();
        ledger.answered(
            new Ledger.Answered(
                incarnation,
                connection,
                h.requestId(),
                Wire.Type.READ_RESPONSE,
                Wire.OK,
                epoch,
                c.bytes()));
        reset(s);
        return "reset by the script mid-payload";
      }
      default -> throw new IllegalArgumentException(reply + " is not a READ script");
    }
    return null;
  }

  /** Answers a WRITE as scripted; returns how the lane ended, or null to go on. */
  private String write(
      Socket s,
      InputStream in,
      OutputStream out,
      int connection,
      long laneIndex,
      Wire.Header h,
      Script.Reply reply)
      throws IOException, InterruptedException {
    switch (reply) {
      case Script.Reply.Serve x -> {
        apply(in, connection, h);
        respond(out, connection, h, Wire.OK, epoch, false);
      }
      case Script.Reply.WrongEpoch w -> {
        apply(in, connection, h);
        respond(out, connection, h, Wire.OK, w.epoch(), false);
      }
      case Script.Reply.Silent x -> discard(in, h.count());
      case Script.Reply.DropAck x -> apply(in, connection, h);
      case Script.Reply.Hold hold -> {
        apply(in, connection, h);
        await(hold.release());
        boolean closedFirst = peerClosed(s, in);
        String error = null;
        try {
          // Not recorded as answered: the requester may no longer be there to read it.
          out.write(responseHeader(h, Wire.OK, epoch).encode());
          out.flush();
        } catch (IOException e) {
          error = e.toString();
        }
        ledger.lateSend(new Ledger.LateSend(connection, h.requestId(), closedFirst, 0, error));
        return closedFirst
            ? "requester closed before the held acknowledgement"
            : "late acknowledgement on a lane still open";
      }
      case Script.Reply.ApplyThenReset x -> {
        apply(in, connection, h);
        drainUnapplied(s, in, connection, laneIndex);
        reset(s);
        return "reset by the script after applying a WRITE";
      }
      default -> throw new IllegalArgumentException(reply + " is not a WRITE script");
    }
    return null;
  }

  /** Reads a WRITE payload into the region and records the range applied (as far as it got). */
  private void apply(InputStream in, int connection, Wire.Header h) throws IOException {
    byte[] chunk = new byte[(int) Math.min(CHUNK, h.count())];
    long done = 0;
    try {
      while (done < h.count()) {
        int n = in.read(chunk, 0, (int) Math.min(chunk.length, h.count() - done));
        if (n < 0) {
          throw new java.io.EOFException(
              "end of stream after " + done + " of " + h.count() + " WRITE payload bytes");
        }
        MemorySegment.copy(chunk, 0, region, ValueLayout.JAVA_BYTE, h.offset() + done, n);
        done += n;
      }
    } finally {
      if (done > 0) {
        ledger.applied(
            new Ledger.Applied(incarnation, connection, h.requestId(), h.offset(), done));
      }
    }
  }

  private static void discard(InputStream in, long length) throws IOException {
    long left = length;
    byte[] scratch = new byte[64 * 1024];
    while (left > 0) {
      int n = in.read(scratch, 0, (int) Math.min(scratch.length, left));
      if (n < 0) {
        throw new java.io.EOFException("end of stream inside a WRITE payload");
      }
      left -= n;
    }
  }

  /**
   * Reads the frames the requester already sent behind the current one, until the lane is quiet,
   * recording each as received and applying none (their payloads are thrown away).
   */
  private void drainUnapplied(Socket s, InputStream in, int connection, long laneIndex)
      throws IOException {
    s.setSoTimeout(DRAIN_QUIET_MILLIS);
    try {
      while (true) {
        Wire.Header h = Wire.Header.read(in);
        if (h == null) {
          return;
        }
        ledger.received(new Ledger.Received(incarnation, connection, laneIndex, h));
        framesOverall.getAndIncrement();
        if (h.type() == Wire.Type.WRITE_REQUEST) {
          discard(in, h.count());
        }
      }
    } catch (SocketTimeoutException quiet) {
      // Nothing more was on its way.
    }
  }

  private Wire.Header responseHeader(Wire.Header h, int status, long named) {
    boolean read = h.type() == Wire.Type.READ_REQUEST;
    long payload = read && status == Wire.OK ? h.count() : 0;
    return new Wire.Header(
        read ? Wire.Type.READ_RESPONSE : Wire.Type.WRITE_ACK,
        status,
        payload,
        h.requestId(),
        named,
        0,
        0,
        h.count());
  }

  private void respond(
      OutputStream out, int connection, Wire.Header h, int status, long named, boolean withPayload)
      throws IOException {
    Wire.Header r = responseHeader(h, status, named);
    out.write(r.encode());
    long sent = 0;
    if (withPayload && status == Wire.OK) {
      sendPayload(out, h.offset(), h.count());
      sent = h.count();
    }
    out.flush();
    ledger.answered(
        new Ledger.Answered(incarnation, connection, h.requestId(), r.type(), status, named, sent));
  }

  /** Writes region bytes {@code [offset, offset + length)}. */
  private void sendPayload(OutputStream out, long offset, long length) throws IOException {
    byte[] chunk = new byte[(int) Math.min(CHUNK, Math.max(1, length))];
    for (long done = 0; done < length; ) {
      int n = (int) Math.min(chunk.length, length - done);
      MemorySegment.copy(region, ValueLayout.JAVA_BYTE, offset + done, chunk, 0, n);
      out.write(chunk, 0, n);
      done += n;
    }
  }

  /**
   * Sends a held READ response (from payload byte {@code from} on) after its release, first looking
   * whether the requester has already closed the lane, and records the outcome.
   */
  private String lateSend(
      Socket s, InputStream in, OutputStream out, int connection, Wire.Header h, long from) {
    boolean closedFirst;
    try {
      closedFirst = peerClosed(s, in);
    } catch (IOException e) {
      closedFirst = true;
    }
    long written = 0;
    String error = null;
    try {
      if (from == 0) {
        out.write(responseHeader(h, Wire.OK, epoch).encode());
      }
      byte[] chunk = new byte[(int) Math.min(CHUNK, h.count() - from)];
      for (long done = from; done < h.count(); ) {
        int n = (int) Math.min(chunk.length, h.count() - done);
        MemorySegment.copy(region, ValueLayout.JAVA_BYTE, h.offset() + done, chunk, 0, n);
        out.write(chunk, 0, n);
        done += n;
        written += n;
      }
      out.flush();
    } catch (IOException e) {
      error = e.toString();
    }
    ledger.lateSend(new Ledger.LateSend(connection, h.requestId(), closedFirst, written, error));
    return closedFirst ? "requester closed before the late send" : "late send on a lane still open";
  }

  /**
   * Whether the requester has closed this connection: end of stream or a reset, after reading (and
   * throwing away) whatever it had sent before, or nothing new for a short while (then it is open).
   * Either way the lane's byte stream is no longer in step, so the caller ends the lane afterwards.
   */
  private static boolean peerClosed(Socket s, InputStream in) throws IOException {
    s.setSoTimeout(CLOSE_PROBE_MILLIS);
    byte[] scratch = new byte[64 * 1024];
    try {
      while (true) {
        if (in.read(scratch) < 0) {
          return true;
        }
      }
    } catch (SocketTimeoutException stillOpen) {
      return false;
    } catch (SocketException reset) {
      return true;
    }
  }

  private static void await(java.util.concurrent.CountDownLatch release)
      throws InterruptedException {
    // Bounded, so that a failed test never leaves the peer's thread behind for good.
    release.await(5, TimeUnit.MINUTES);
  }

  private static void reset(Socket s) {
    try {
      s.setSoLinger(true, 0);
      s.close();
    } catch (IOException ignored) {
      // Closed already.
    }
  }
}
