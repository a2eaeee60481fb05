package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameRejectedException;
import io.orbite.engine.wire.FrameType;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * The receive side of one requester lane's socket: responses come back in request order, each
 * header checked against the oldest frame on the wire (type, request id, and the epoch the lane's
 * HELLO named) before a byte of its payload is read; a READ payload of {@link #DIRECT_READ_BYTES}
 * or more is read straight into local memory, smaller ones through one off-heap receive buffer.
 * Confined to the lane's thread.
 */
final class ResponseReader {
  /** Frames whose READ payload is at least this big are read straight into local memory. */
  static final int DIRECT_READ_BYTES = 32 * 1024;

  private static final int RECEIVE_BUFFER_BYTES = 256 * 1024;

  private final RequesterLane lane;
  private final Conduit channel;
  private final long peerEpoch;
  private final long maxPayloadBytes;
  private final ByteBuffer receive = ByteBuffer.allocateDirect(RECEIVE_BUFFER_BYTES);
  private final MemorySegment receiveSegment = MemorySegment.ofBuffer(receive);
  private int receiveStart;
  private int receiveEnd;

  /** The frame whose READ payload is being received, or null while a header is expected. */
  private LaneFrame payloadFrame;

  ResponseReader(RequesterLane lane, Conduit channel, long peerEpoch, long maxPayloadBytes) {
    this.lane = lane;
    this.channel = channel;
    this.peerEpoch = peerEpoch;
    this.maxPayloadBytes = maxPayloadBytes;
  }

  /** Forgets the payload under way: the lane failed its frame after closing the socket. */
  void reset() {
    payloadFrame = null;
  }

  /** Reads and handles responses; returns non-zero if anything arrived. */
  int readSome() throws IOException, FrameRejectedException {
    int work = 0;
    while (true) {
      if (payloadFrame != null) {
        int moved = receivePayload();
        if (moved < 0) {
          return work;
        }
        work += moved;
        continue;
      }
      int buffered = receiveEnd - receiveStart;
      if (buffered >= FrameCodec.HEADER_BYTES) {
        handleHeader();
        work++;
        continue;
      }
      if (buffered > 0) {
        // Refuse a foreign magic from its first bytes, before waiting for a whole header.
        FrameCodec.check(receive, receiveStart, buffered, maxPayloadBytes);
      }
      // Read even with nothing in flight: that is how a closed or misbehaving peer is noticed.
      if (fillReceive() == 0) {
        return work;
      }
      work++;
    }
  }

  /** Reads more bytes into the receive buffer; returns how many (0 if none are ready). */
  private int fillReceive() throws IOException {
    if (receiveStart == receiveEnd) {
      receiveStart = 0;
      receiveEnd = 0;
    } else if (receiveStart > 0 && RECEIVE_BUFFER_BYTES - receiveEnd < FrameCodec.HEADER_BYTES) {
      int buffered = receiveEnd - receiveStart;
      MemorySegment.copy(receiveSegment, receiveStart, receiveSegment, 0, buffered);
      receiveStart = 0;
      receiveEnd = buffered;
    }
    // When the next response carries a large READ payload, take only its header so the payload
    // can be read straight into local memory rather than through this buffer.
    LaneFrame head = lane.oldestInFlight();
    int limit = RECEIVE_BUFFER_BYTES;
    if (head != null && head.op == Op.READ && head.length() >= DIRECT_READ_BYTES) {
      limit = Math.min(limit, receiveStart + FrameCodec.HEADER_BYTES);
      limit = Math.max(limit, receiveEnd + 1);
    }
    receive.limit(limit).position(receiveEnd);
    int n = channel.read(receive);
    if (n < 0) {
      throw new EOFException("peer closed the lane");
    }
    if (n > 0) {
      lane.heard();
    }
    receiveEnd += n;
    return n;
  }

  private void handleHeader() throws FrameRejectedException, IOException {
    int at = receiveStart;
    FrameCodec.check(receive, at, FrameCodec.HEADER_BYTES, maxPayloadBytes);
    FrameType type = FrameCodec.type(receive, at);
    if (type == FrameType.KEEPALIVE_ACK) {
      // The source answers a keepalive in request order, from the incarnation the HELLO named.
      if (FrameCodec.epoch(receive, at) != peerEpoch) {
        throw new FrameRejectedException(
            FrameRejectedException.Reason.WRONG_EPOCH,
            "KEEPALIVE_ACK names epoch "
                + Long.toHexString(FrameCodec.epoch(receive, at))
                + ", but this lane is to epoch "
                + Long.toHexString(peerEpoch));
      }
      receiveStart += FrameCodec.HEADER_BYTES;
      lane.keepaliveAnswered();
      return;
    }
    LaneFrame f = lane.oldestInFlight();
    if (f == null) {
      throw new FrameRejectedException(
          FrameRejectedException.Reason.UNEXPECTED_TYPE, "unsolicited " + type);
    }
    FrameType expected = f.op == Op.READ ? FrameType.READ_RESPONSE : FrameType.WRITE_ACK;
    long id = FrameCodec.requestId(receive, at);
    if (type != expected || id != f.requestId) {
      throw new FrameRejectedException(
          FrameRejectedException.Reason.UNEXPECTED_TYPE,
          "expected " + expected + " for request " + f.requestId + ", got " + type + " for " + id);
    }
    // Every response on a lane comes from the incarnation its HELLO named: a source answers even a
    // refusal with its own epoch, so another one here means the bytes are not that peer's.
    long epoch = FrameCodec.epoch(receive, at);
    if (epoch != peerEpoch) {
      throw new FrameRejectedException(
          FrameRejectedException.Reason.WRONG_EPOCH,
          type
              + " for request "
              + id
              + " names epoch "
              + Long.toHexString(epoch)
              + ", but this lane is to epoch "
              + Long.toHexString(peerEpoch));
    }
    int status = FrameCodec.status(receive, at);
    receiveStart += FrameCodec.HEADER_BYTES;
    if (status != 0) {
      ErrorKind kind = ErrorKind.fromCode(status);
      lane.retireHeadRefused(
          f,
          kind == null ? ErrorKind.PROTOCOL : kind,
          (f.op == Op.READ ? "READ" : "WRITE")
              + " of region "
              + f.regionId
              + " ["
              + f.remoteOffset
              + ", +"
              + f.length()
              + (f.tasks == 1 ? "" : ", " + f.taskLabel())
              + ") refused by the source: "
              + (kind == null ? "status " + status : kind));
      return;
    }
    if (f.op == Op.WRITE) {
      lane.retireHeadOk(f, RemoteEffect.APPLIED);
      return;
    }
    if (FrameCodec.count(receive, at) != f.length()) {
      throw new FrameRejectedException(
          FrameRejectedException.Reason.INCONSISTENT_LENGTH,
          "READ response of "
              + FrameCodec.count(receive, at)
              + " B for a request of "
              + f.length()
              + " B");
    }
    f.received = 0;
    payloadFrame = f;
    lane.beforePayload();
  }

  /** Moves READ payload bytes into local memory; -1 when the socket has nothing more now. */
  private int receivePayload() throws IOException {
    LaneFrame f = payloadFrame;
    long remaining = f.length() - f.received;
    int buffered = receiveEnd - receiveStart;
    if (buffered > 0) {
      int n = (int) Math.min(buffered, remaining);
      MemorySegment.copy(receiveSegment, receiveStart, f.local, f.localOffset + f.received, n);
      receiveStart += n;
      f.received += n;
    } else if (remaining >= DIRECT_READ_BYTES || f.view != null) {
      ByteBuffer view = f.view();
      view.limit((int) f.length()).position((int) f.received);
      int n = channel.read(view);
      if (n < 0) {
        throw new EOFException("peer closed the lane mid-payload");
      }
      if (n == 0) {
        return -1;
      }
      lane.heard();
      f.received += n;
    } else if (fillReceive() == 0) {
      return -1;
    }
    if (f.received == f.length()) {
      payloadFrame = null;
      lane.retireHeadOk(f, RemoteEffect.NONE);
    }
    return 1;
  }
}
