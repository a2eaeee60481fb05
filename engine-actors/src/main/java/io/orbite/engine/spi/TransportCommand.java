package io.orbite.engine.spi;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferEngine;
import java.nio.channels.SocketChannel;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The protocol every transport supervisor actor understands. Transports add their own internal
 * messages by implementing this interface privately.
 */
public interface TransportCommand {
  /** Open (or reuse) the endpoint for one peer incarnation. Sent by the SegmentTable. */
  record OpenPeer(SegmentDescriptor peer, ActorRef<OpenPeerReply> replyTo)
      implements TransportCommand {}

  /**
   * Open (or reuse) the SHM endpoint for one peer incarnation that published {@code exports} (the
   * regions it exports and its host identity). Sent by the engine after a Describe; the SHM
   * transport answers PeerOpenFailed when the peer is on another host or its memory cannot be
   * opened from here.
   */
  record OpenSharedPeer(
      SegmentDescriptor peer,
      io.orbite.engine.wire.SharedExports exports,
      ActorRef<OpenPeerReply> replyTo)
      implements TransportCommand {}

  /** The answer to {@link OpenPeer}. */
  sealed interface OpenPeerReply {}

  record PeerOpened(PeerChannel channel) implements OpenPeerReply {}

  record PeerOpenFailed(ErrorKind kind, String detail) implements OpenPeerReply {}

  /**
   * An accepted connection whose first frame (a HELLO, in {@code hello}) opens a data lane of this
   * transport. Sent by the ControlService; the transport owns the socket from now on.
   */
  record AdoptConnection(SocketChannel channel, java.nio.ByteBuffer hello)
      implements TransportCommand {}

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
          label);
    }
  }

  record FileOpenFailed(ErrorKind kind, String detail) implements OpenFileReply {}

  /** Stop serving and drain: close lanes, answer when every lane thread has ended. */
  record Shutdown(ActorRef<ShutdownDone> replyTo) implements TransportCommand {}

  record ShutdownDone(String transport) {}
}
