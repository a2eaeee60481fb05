package io.orbite.engine.notify;

import io.orbite.config.NotificationConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.ReceivedNotification;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameRejectedException.Reason;
import io.orbite.engine.wire.FrameType;
import io.orbite.engine.wire.NotifyCodec;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One notification connection, served on its control thread: reads NOTIFY frames (several may be in
 * flight), decides each one, puts an accepted one straight into the inbox (which wakes a waiting
 * taker from this thread) and answers NOTIFY_ACK in the order of the frames. Answers are written
 * when no whole frame is left to read, so a burst is answered in one write and a lone notification
 * at once. A refused notification's bytes are read past, never kept: its tag or payload over this
 * engine's bound ({@code INVALID_ARGUMENT}, naming the key), another incarnation named ({@code
 * EPOCH_MISMATCH}), the inbox full ({@code RESOURCE_EXHAUSTED}), the engine closing ({@code
 * UNAVAILABLE}). A frame that breaks the protocol is answered {@code PROTOCOL} when it was a NOTIFY
 * whose head is malformed, and the connection closes.
 */
final class NotifyConnection {
  private static final int BUFFER_BYTES = 64 * 1024;

  private final NotifyReceiver receiver;
  private final NotificationConfig config;
  private final SegmentDescriptor self;
  private final Conduit channel;
  private final ByteBuffer in = ByteBuffer.allocate(BUFFER_BYTES).flip();
  private ByteBuffer acks = ByteBuffer.allocate(4096);

  NotifyConnection(NotifyReceiver receiver, Conduit channel) {
    this.receiver = receiver;
    this.config = receiver.config();
    this.self = receiver.self();
    this.channel = channel;
  }

  /** Serves from the first NOTIFY's header (already read) until the connection ends. */
  void run(ByteBuffer firstHeader) throws IOException, FrameRejectedException {
    in.clear();
    in.put(firstHeader.duplicate().position(0).limit(FrameCodec.HEADER_BYTES)).flip();
    try {
      while (true) {
        if (in.remaining() < FrameCodec.HEADER_BYTES) {
          flushAcks(); // about to block: answer what was read first
          if (!fill(FrameCodec.HEADER_BYTES)) {
            return;
          }
        }
        FrameCodec.check(in, in.position(), in.remaining(), 0);
        if (FrameCodec.type(in, in.position()) != FrameType.NOTIFY) {
          throw new FrameRejectedException(
              Reason.UNEXPECTED_TYPE,
              FrameCodec.type(in, in.position()) + " on a notification connection");
        }
        serveOne();
      }
    } finally {
      flushAcksQuietly();
    }
  }

  /** Reads and decides the NOTIFY whose header starts at {@code in}'s position. */
  private void serveOne() throws IOException, FrameRejectedException {
    int at = in.position();
    long sequence = FrameCodec.requestId(in, at);
    long named = FrameCodec.epoch(in, at);
    long senderEpoch = FrameCodec.regionId(in, at);
    long count = FrameCodec.count(in, at);
    int headLength = (int) (FrameCodec.payloadLength(in, at) - count);
    in.position(at + FrameCodec.HEADER_BYTES);
    if (in.remaining() < headLength && !fill(headLength)) {
      throw truncated("the NOTIFY head");
    }
    NotifyCodec.Head head;
    try {
      head = NotifyCodec.decodeHead(in.slice(in.position(), headLength));
    } catch (FrameRejectedException e) {
      answer(sequence, ErrorKind.PROTOCOL, e.getMessage());
      throw e;
    }
    in.position(in.position() + headLength);
    String refusal = refusal(named, head, count);
    if (refusal != null) {
      skip(count);
      receiver.counters().increment(Count.NOTIFICATIONS_REFUSED);
      answer(
          sequence,
          named != self.epoch() ? ErrorKind.EPOCH_MISMATCH : ErrorKind.INVALID_ARGUMENT,
          refusal);
      return;
    }
    byte[] bytes = new byte[(int) count];
    readFully(bytes);
    ReceivedNotification n =
        new ReceivedNotification(
            head.sender().name(),
            new SegmentDescriptor(head.sender().host(), head.sender().port(), senderEpoch),
            head.tag(),
            bytes,
            System.nanoTime());
    switch (receiver.inbox().offer(n, head.tagBytes() + count)) {
      case ACCEPTED -> {
        receiver.counters().increment(Count.NOTIFICATIONS_RECEIVED);
        answer(sequence, null, null);
      }
      case FULL -> {
        receiver.counters().increment(Count.NOTIFICATIONS_REFUSED);
        answer(
            sequence,
            ErrorKind.RESOURCE_EXHAUSTED,
            "the inbox of "
                + self
                + " is full (notifications.inboxCapacity "
                + receiver.inbox().capacity()
                + ", notifications.inboxBytes "
                + receiver.inbox().maxBytes()
                + "): its receivers take too slowly");
      }
      case CLOSED -> {
        receiver.counters().increment(Count.NOTIFICATIONS_REFUSED);
        answer(sequence, ErrorKind.UNAVAILABLE, "engine " + self + " is closing");
      }
    }
  }

  /** Why this engine refuses the notification before reading its bytes, or null. */
  private String refusal(long named, NotifyCodec.Head head, long count) {
    if (named != self.epoch()) {
      return "the notification names incarnation "
          + Long.toHexString(named)
          + " of "
          + self.endpoint()
          + ", which is now "
          + self
          + "; not delivered";
    }
    if (head.tagBytes() > config.maxTagBytes()) {
      return "the tag of "
          + head.tagBytes()
          + " bytes is over notifications.maxTagBytes ("
          + config.maxTagBytes()
          + ") at "
          + self;
    }
    if (count > config.maxPayloadBytes()) {
      return "the payload of "
          + count
          + " bytes is over notifications.maxPayloadBytes ("
          + config.maxPayloadBytes()
          + ") at "
          + self;
    }
    return null;
  }

  /** Queues a NOTIFY_ACK; {@code kind} null: accepted. */
  private void answer(long sequence, ErrorKind kind, String detail) throws IOException {
    ByteBuffer ack =
        NotifyCodec.ack(sequence, self.epoch(), kind == null ? 0 : kind.code(), detail);
    if (acks.remaining() < ack.remaining()) {
      flushAcks();
      if (acks.remaining() < ack.remaining()) {
        acks = ByteBuffer.allocate(ack.remaining());
      }
    }
    acks.put(ack);
  }

  private void flushAcks() throws IOException {
    acks.flip();
    while (acks.hasRemaining()) {
      channel.write(acks);
    }
    acks.clear();
  }

  private void flushAcksQuietly() {
    try {
      flushAcks();
    } catch (IOException ignored) {
      // The connection is ending anyway; the sender resolves what it did not hear of.
    }
  }

  /**
   * Reads until {@code in} holds at least {@code want} bytes (at most its capacity).
   *
   * @return false on a clean end of stream before any byte of what was wanted
   */
  private boolean fill(int want) throws IOException, FrameRejectedException {
    // The connection's first frame was judged by the control connection; later headers are
    // checked whole by run().
    in.compact();
    try {
      while (in.position() < want) {
        if (channel.read(in) < 0) {
          if (in.position() == 0) {
            return false;
          }
          throw truncated(in.position() + " of " + want + " bytes");
        }
      }
      return true;
    } finally {
      in.flip();
    }
  }

  /** Fills {@code dst} from what is buffered, then straight from the connection. */
  private void readFully(byte[] dst) throws IOException {
    int buffered = Math.min(in.remaining(), dst.length);
    in.get(dst, 0, buffered);
    ByteBuffer rest = ByteBuffer.wrap(dst, buffered, dst.length - buffered);
    while (rest.hasRemaining()) {
      if (channel.read(rest) < 0) {
        throw new EOFException("connection closed inside a notification's bytes");
      }
    }
  }

  /** Reads past {@code n} bytes of a refused notification. */
  private void skip(long n) throws IOException {
    long left = n;
    while (left > 0) {
      if (!in.hasRemaining()) {
        in.clear();
        int got = channel.read(in);
        in.flip();
        if (got < 0) {
          throw new EOFException("connection closed inside a refused notification's bytes");
        }
      }
      int step = (int) Math.min(left, in.remaining());
      in.position(in.position() + step);
      left -= step;
    }
  }

  private static FrameRejectedException truncated(String what) {
    return new FrameRejectedException(
        Reason.TRUNCATED_HEADER, "connection closed after " + what + " of a NOTIFY");
  }
}
