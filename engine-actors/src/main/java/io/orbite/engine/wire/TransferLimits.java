package io.orbite.engine.wire;

/**
 * The limits part of a Describe answer: the largest single transfers the source takes, so that its
 * requesters need not be configured by hand to match it (a requester whose TCP frames were larger
 * than the source's frame limit would break its lanes' protocol).
 *
 * @param tcpFramePayloadBytes the source's {@code tcp.maxFramePayloadBytes}: the largest payload a
 *     frame to its TCP source lanes may carry (the longest READ request, the longest WRITE frame);
 *     a requester cuts its frames to that peer to at most this and its own limit
 * @param maxTransferBytes the source's {@code merge.maxBytes}: the most bytes a requester merges
 *     into one physical transfer to it, on any transport
 */
public record TransferLimits(int tcpFramePayloadBytes, long maxTransferBytes) {
  /**
   * Checks the components.
   *
   * @throws IllegalArgumentException if either is not positive
   */
  public TransferLimits {
    if (tcpFramePayloadBytes <= 0 || maxTransferBytes <= 0) {
      throw new IllegalArgumentException(
          "transfer limits must be positive, got frame payload "
              + tcpFramePayloadBytes
              + " B and transfer "
              + maxTransferBytes
              + " B");
    }
  }

  /**
   * The frame payload limit to use towards a peer: the least of {@code own} and what the peer
   * advertised.
   *
   * @param own this engine's {@code tcp.maxFramePayloadBytes}
   * @param peer the peer's advertised limits, or null when its answer carried none (an older
   *     engine): then {@code own}, as before peers advertised it
   * @return the frame payload limit, in bytes
   */
  public static long framePayloadTowards(long own, TransferLimits peer) {
    return peer == null ? own : Math.min(own, peer.tcpFramePayloadBytes());
  }

  /**
   * The merge limit towards a peer: the least of {@code own} and what the peer advertised.
   *
   * @param own this side's merge limit ({@code merge.maxBytes}, or 0 when merging is off)
   * @param peer the peer's advertised limits, or null when its answer carried none (an older
   *     engine): then {@code own}
   * @return the merge limit, in bytes; 0 when {@code own} is 0
   */
  public static long mergeTowards(long own, TransferLimits peer) {
    return peer == null ? own : Math.min(own, peer.maxTransferBytes());
  }
}
