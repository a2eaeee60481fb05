package io.orbite.engine;

/**
 * Why a task ran on the transport its {@link TaskResult} names: the request named it, or the rule
 * that {@link Transport#UNSPEC} follows picked it, and which step of that rule decided. The engine
 * records it when it hands the task to a transport; {@link #NOT_DISPATCHED} is the value of a task
 * that never reached one.
 *
 * <p>UNSPEC tries, in order: SHM for a region the peer exports to this host, RDMA when the
 * segment's RDMA endpoint has a healthy rail pair (C13), and otherwise the segment's own transport
 * (TCP to a peer, FILE for a file segment). Every {@code RDMA_} and {@code TCP_} value therefore
 * also means SHM could not carry the task: the peer is on another host, it does not export that
 * region through SHM, or SHM to it was not opened.
 *
 * <p>A first-match transport policy ({@code policies} in the configuration) replaces that rule for
 * the requests it matches: {@link #POLICY}, and the result's {@link TaskResult#rule()} names the
 * rule.
 */
public enum Route {
  /**
   * The task was never handed to a transport (its local region was unregistered when it was
   * admitted, or it was refused before dispatch); its result's transport is {@code null}.
   */
  NOT_DISPATCHED,
  /**
   * The task may have reached a transport, but which one is not known: the streams stage lost sight
   * of its batch before the batch reported (its result is UNQUIESCED); its result's transport is
   * {@code null}.
   */
  UNREPORTED,
  /** The request named its transport (anything but UNSPEC); the engine did not choose. */
  REQUESTED,
  /** UNSPEC: the peer is on this host and exports the region through SHM. */
  SHM_SAME_HOST,
  /** UNSPEC, not SHM: the segment's RDMA endpoint had at least one healthy rail pair. */
  RDMA_HEALTHY_RAIL,
  /**
   * UNSPEC, TCP: the segment has an RDMA endpoint, but no rail pair to the peer was healthy when
   * the task was dispatched (every pair's circuit open, C13), or the endpoint stopped taking work.
   */
  TCP_NO_HEALTHY_RAIL,
  /**
   * UNSPEC, TCP: RDMA was enabled here, but no RDMA endpoint to this peer could be opened (the peer
   * runs without RDMA or publishes no rail, refused it, or the endpoint budget was spent); the
   * endpoint's open failure is in the engine's log and owner view.
   */
  TCP_NO_RDMA_ENDPOINT,
  /** UNSPEC, TCP: RDMA is not enabled in this engine ({@code rdma.enabled} is false). */
  TCP_RDMA_NOT_ENABLED,
  /** UNSPEC on a file segment: only the file transport reaches it. */
  FILE_SEGMENT,
  /**
   * UNSPEC, TCP after a failover: the engine first handed the task to SHM or RDMA, that transport
   * failed it drained with nothing posted (the transport unavailable, its peer lost, an SHM mapping
   * refused), and the task ran once more on the segment's own TCP channel, to the same incarnation,
   * within its deadline ({@code retry.maxTransportFailovers}). Its result's {@link
   * TaskResult#attempts()} is then 2, and its bytes and state are the TCP run's alone.
   */
  FAILED_OVER,
  /**
   * UNSPEC, chosen by a transport policy rule: the first rule of {@code policies} that matched the
   * request named this transport, and it was the first of the rule's transports whose channel
   * reached the region and took work at submit. The result's {@link TaskResult#rule()} is the
   * rule's index.
   */
  POLICY
}
