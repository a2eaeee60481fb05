package io.orbite.transport.tcp;

import io.orbite.engine.Op;
import io.orbite.engine.spi.Conduit;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The send side of one requester lane's socket: each request's header is encoded into one of the
 * lane's preallocated header slots and gathered, with a WRITE's payload straight from local memory,
 * into one gathering write; it keeps count of the bytes queued and written, so the lane knows
 * whether any byte of a frame reached the socket (C6). Confined to the lane's thread.
 */
final class RequestWriter {
  private static final int MAX_GATHER = 1024;
  private static final long MAX_GATHER_BYTES = 16L << 20;

  private final Conduit channel;
  private final long peerEpoch;
  private final ByteBuffer[] headerSlots;
  private final ByteBuffer[] gather = new ByteBuffer[MAX_GATHER];
  private int nextHeaderSlot;
  private int gatherStart;
  private int gatherEnd;
  private long gatherBytes;
  private long nextRequestId = 1;
  private long streamQueued;
  private long streamWritten;

  /** TLS records sealed from taken bytes wait for the socket (never with a plain socket). */
  private boolean sealed;

  RequestWriter(Conduit channel, long peerEpoch, int windowFrames) {
    this.channel = channel;
    this.peerEpoch = peerEpoch;
    ByteBuffer headers = ByteBuffer.allocateDirect(windowFrames * FrameCodec.HEADER_BYTES);
    this.headerSlots = new ByteBuffer[windowFrames];
    for (int i = 0; i < windowFrames; i++) {
      headerSlots[i] = headers.slice(i * FrameCodec.HEADER_BYTES, FrameCodec.HEADER_BYTES);
    }
  }

  /** Whether gathered bytes (or TLS records sealed from them) wait to be written. */
  boolean busy() {
    return gatherStart < gatherEnd || sealed;
  }

  /** Starts a new gather list; false while the last one is still being written. */
  boolean begin() {
    if (gatherStart < gatherEnd) {
      return false;
    }
    gatherStart = 0;
    gatherEnd = 0;
    gatherBytes = 0;
    return true;
  }

  /** Whether the gather list takes one more frame. */
  boolean room() {
    return gatherEnd < MAX_GATHER - 1 && gatherBytes < MAX_GATHER_BYTES;
  }

  /** Encodes {@code f}'s request (a fresh request id) and gathers it, with a WRITE's payload. */
  void append(LaneFrame f) {
    f.requestId = nextRequestId++;
    ByteBuffer header = headerSlots[nextHeaderSlot];
    nextHeaderSlot = (nextHeaderSlot + 1) % headerSlots.length;
    boolean write = f.op == Op.WRITE;
    long payload = write ? f.length() : 0;
    FrameCodec.encode(
        header,
        0,
        write ? FrameType.WRITE_REQUEST : FrameType.READ_REQUEST,
        0,
        payload,
        f.requestId,
        peerEpoch,
        f.regionId,
        f.remoteOffset,
        f.length());
    header.clear();
    gather[gatherEnd++] = header;
    f.streamStart = streamQueued;
    streamQueued += FrameCodec.HEADER_BYTES;
    if (write) {
      ByteBuffer view = f.view();
      view.clear();
      gather[gatherEnd++] = view;
      streamQueued += payload;
      gatherBytes += payload;
    }
  }

  /**
   * Encodes a KEEPALIVE (request id 0, so no response is confused with it) and gathers it; after
   * {@link #begin}. Its region id and offset report the SHM bytes read and written since the last.
   */
  void appendKeepalive(long shmRead, long shmWritten) {
    ByteBuffer header = headerSlots[nextHeaderSlot];
    nextHeaderSlot = (nextHeaderSlot + 1) % headerSlots.length;
    FrameCodec.encode(header, 0, FrameType.KEEPALIVE, 0, 0, 0, peerEpoch, shmRead, shmWritten, 0);
    header.clear();
    gather[gatherEnd++] = header;
    streamQueued += FrameCodec.HEADER_BYTES;
  }

  /** Writes what the socket takes now; non-zero if it took any byte. */
  int writeSome() throws IOException {
    if (gatherStart >= gatherEnd) {
      if (sealed) {
        sealed = !channel.flush();
        return sealed ? 0 : 1;
      }
      return 0;
    }
    long n = GatherWrites.writeSome(channel, gather, gatherStart, gatherEnd);
    // Under TLS a write can take bytes whose records the socket has not taken yet.
    sealed = !channel.flush();
    streamWritten += n;
    while (gatherStart < gatherEnd && !gather[gatherStart].hasRemaining()) {
      gather[gatherStart++] = null;
    }
    return n > 0 ? 1 : 0;
  }

  /** Whether any byte of {@code f}'s request reached the socket. */
  boolean sent(LaneFrame f) {
    return streamWritten > f.streamStart;
  }
}
