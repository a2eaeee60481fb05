package io.orbite.engine.spi;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.wire.Description;
import java.nio.channels.SocketChannel;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The protocol every transport supervisor actor understands. Transports add their own internal
 * messages by implementing this interface privately.
 */
public interface TransportCommand {
  /**
   * Open (or reuse) the endpoint for one peer incarnation, as it described itself. Sent by the
   * SegmentTable for every open of the peer: to the segment's own transport (TCP) first, then to
   * each further transport (SHM, RDMA), which answers with its channel (reusing its endpoint for a
   * known incarnation) or a refusal.
   *
   * @param peer the incarnation
   * @param description what its Describe answer said (regions, the SHM exports)
   * @param replyTo where the channel, or the refusal, goes
   */
  record OpenPeer(SegmentDescriptor peer, Description description, ActorRef<OpenPeerReply> replyTo)
      implements TransportCommand {}

  /** The answer to {@link OpenPeer}. */
  sealed interface OpenPeerReply {}

  /**
   * The transport's channel to the peer.
   *
   * @param channel the channel
   * @param reaches the region ids it reaches (SHM: those the peer exports), or null for every
   *     region
   */
  record PeerOpened(PeerChannel channel, long[] reaches) implements OpenPeerReply {
    /** A channel that reaches every region of the peer. */
    public PeerOpened(PeerChannel channel) {
      this(channel, null);
    }
  }

  record PeerOpenFailed(ErrorKind kind, String detail) implements OpenPeerReply {}

  /**
   * An accepted connection whose first frame (a HELLO, its header in {@code hello}) opens a data
   * lane of this transport. Sent by the ControlService; the transport owns the socket from now on.
   *
   * @param conduit the connection (TLS over the socket, when the engine uses it)
   * @param requester who the HELLO said sent it (its payload, checked), or null when it named no
   *     identity: such a requester's lanes are never fenced as another incarnation's
   * @param peer who the connection's handshake proved the requester to be (its name and epoch are
   *     the HELLO's), or null on an engine that does not authenticate; the per-region allow-lists
   *     of this connection's frames are checked against it
   */
  record AdoptConnection(
      Conduit conduit,
      java.nio.ByteBuffer hello,
      io.orbite.engine.wire.EngineIdentity requester,
      io.orbite.engine.security.AuthenticatedPeer peer)
      implements TransportCommand {
    /** A plain connection whose HELLO named no identity. */
    public AdoptConnection(SocketChannel channel, java.nio.ByteBuffer hello) {
      this(Conduit.plain(channel), hello, null, null);
    }

    /** A plain connection to an engine that does not authenticate. */
    public AdoptConnection(
        SocketChannel channel,
        java.nio.ByteBuffer hello,
        io.orbite.engine.wire.EngineIdentity requester) {
      this(Conduit.plain(channel), hello, requester, null);
    }

    /** The socket under the conduit. */
    public SocketChannel channel() {
      return conduit.socket();
    }
  }

  /**
   * Close the requester side (C8): refuse new peers, close every endpoint's lanes, answer when they
   * have ended. The source side keeps serving.
   */
  record CloseRequesterSide(ActorRef<SideClosed> replyTo) implements TransportCommand {}

  /**
   * Close the source side (C8): refuse new data connections, close every source lane, answer when
   * their threads have ended (their loans are returned by then). The requester side keeps working.
   */
  record CloseSourceSide(ActorRef<SideClosed> replyTo) implements TransportCommand {}

  record SideClosed(String transport) {}

  /**
   * Open (or reuse) the file segment for {@code path} with {@code access} (READ: file to memory,
   * WRITE: memory to file) for the engine {@code self}. Sent by {@code
   * TransferEngine.openFileSegment} to the FILE transport.
   */
  record OpenFile(
      java.nio.file.Path path,
      Access access,
      SegmentDescriptor self,
      ActorRef<OpenFileReply> replyTo)
      implements TransportCommand {}

  /** The answer to {@link OpenFile}. */
  sealed interface OpenFileReply {}

  /**
   * The file is open: {@code lengthBytes} is its size at open (Long.MAX_VALUE for a FIFO, whose
   * offsets the kernel ignores), {@code label} names it in messages.
   */
  record FileOpened(PeerChannel channel, long lengthBytes, Access access, String label)
      implements OpenFileReply {
    /**
     * The segment a caller uses: the file as one region ({@link TransferEngine#FILE_REGION_ID}),
     * served through {@code channel}, under this engine's own descriptor {@code self}.
     */
    public PeerSegment segment(SegmentDescriptor self) {
      return new PeerSegment(
          self,
          List.of(new RemoteRegion(TransferEngine.FILE_REGION_ID, lengthBytes, access)),
          channel,
          label,
          () -> {});
    }
  }

  record FileOpenFailed(ErrorKind kind, String detail) implements OpenFileReply {}

  /** Stop serving and drain: close lanes, answer when every lane thread has ended. */
  record Shutdown(ActorRef<ShutdownDone> replyTo) implements TransportCommand {}

  record ShutdownDone(String transport) {}
}
