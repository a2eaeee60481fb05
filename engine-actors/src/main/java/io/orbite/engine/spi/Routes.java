package io.orbite.engine.spi;

import io.orbite.engine.Route;
import io.orbite.engine.Transport;
import java.util.Map;

/**
 * The names the routing step gives its choices ({@link Route}) and its refusals, per transport: the
 * one place that knows what each transport's route means, so that {@link PeerSegment}'s routing and
 * the SegmentTable stay free of any one transport.
 */
final class Routes {
  private Routes() {}

  /**
   * The route of a request without a named transport that a further channel took.
   *
   * @param transport the channel's transport
   * @return SHM_SAME_HOST, RDMA_HEALTHY_RAIL, or FILE_SEGMENT
   */
  static Route chosen(Transport transport) {
    return switch (transport) {
      case SHM -> Route.SHM_SAME_HOST;
      case RDMA -> Route.RDMA_HEALTHY_RAIL;
      case FILE -> Route.FILE_SEGMENT;
      default -> Route.REQUESTED;
    };
  }

  /**
   * Whether a channel of {@code transport} can be passed over for rail health (C13).
   *
   * @param transport a transport
   * @return true for RDMA
   */
  static boolean hasRails(Transport transport) {
    return transport == Transport.RDMA;
  }

  /**
   * The route of a request without a named transport that fell back to the segment's own channel.
   *
   * @param base the segment's own transport
   * @param skippedUnhealthy whether a channel with rails was passed over for its health
   * @param absent why each transport tried for the segment has no channel there
   * @return FILE_SEGMENT for a file, else the step that left TCP
   */
  static Route fellBack(Transport base, boolean skippedUnhealthy, Map<Transport, String> absent) {
    if (base == Transport.FILE) {
      return Route.FILE_SEGMENT;
    }
    if (skippedUnhealthy) {
      return Route.TCP_NO_HEALTHY_RAIL;
    }
    return absent.containsKey(Transport.RDMA)
        ? Route.TCP_NO_RDMA_ENDPOINT
        : Route.TCP_RDMA_NOT_ENABLED;
  }

  /**
   * Why a segment has no channel of {@code transport}, when no transport said why.
   *
   * @param transport the transport a request names
   * @param base the segment's own transport
   * @return a sentence for the refusal
   */
  static String neverTried(Transport transport, Transport base) {
    return switch (transport) {
      case RDMA ->
          base == Transport.FILE
              ? "not a peer reached over RDMA"
              : "RDMA is not enabled here (rdma.enabled is false)";
      case SHM ->
          base == Transport.FILE
              ? "not a peer with shared memory"
              : "the peer exports no memory through SHM";
      default -> "it is reached over " + base + ", not " + transport;
    };
  }

  /**
   * Why a channel that reaches a region cannot carry a request now.
   *
   * @param channel the channel
   * @return a sentence for the refusal
   */
  static String unhealthy(PeerChannel channel) {
    if (channel.gate().active() && hasRails(channel.transport())) {
      return "no rail pair to the peer is healthy now (C13)";
    }
    return channel.gate().refusal();
  }

  /**
   * Why a channel of {@code transport} does not reach {@code regionId}.
   *
   * @param transport the channel's transport
   * @param regionId the region a request names
   * @return a sentence for the refusal
   */
  static String notReached(Transport transport, long regionId) {
    return transport == Transport.SHM
        ? "region "
            + regionId
            + " is not exported through SHM (only engine-allocated memory of an engine with "
            + "shm.enabled is)"
        : "region " + regionId + " is not reachable over " + transport + " here";
  }
}
