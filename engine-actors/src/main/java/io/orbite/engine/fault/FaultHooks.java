package io.orbite.engine.fault;

import java.io.IOException;

/**
 * Points where a qualification test can interfere with a worker thread, to prove what the engine
 * does when a worker is held or a single connection breaks: a test-only SPI, outside the exported
 * API, reached through {@link FaultInjection#start}. Production engines use {@link #NONE}. Hooks
 * run on the worker's own thread, in the data path: an implementation that blocks holds that worker
 * (with its loans) for as long as it blocks.
 */
public interface FaultHooks {
  /** No interference. */
  FaultHooks NONE = new FaultHooks() {};

  /**
   * Called by a requester lane just before it moves a READ response's payload into local memory.
   * Blocking here holds the lane thread while it owns that memory; throwing breaks this lane's
   * connection (as a reset would).
   *
   * @param lane the lane's name, for example {@code lane 1 to 127.0.0.1:4000@5e1f}
   * @throws IOException to break the lane's connection, as a reset would
   */
  default void beforeReadPayload(String lane) throws IOException {}

  /**
   * Called by a same-host (SHM) copy thread just before it copies one task's bytes, while it holds
   * the peer allocation's activity lock. Blocking here holds the copy thread while it owns that
   * task's memory.
   *
   * @param lane the copy lane's name, for example {@code shm lane to 127.0.0.1:4000@5e1f}
   */
  default void beforeSharedCopy(String lane) {}

  /**
   * Called by an engine owner actor (the Registry, Admission, the SegmentTable) before it handles
   * each message. Throwing here is an unexpected exception inside that owner: it turns quarantined
   * (see {@code OwnerSupervision}).
   *
   * @param owner the owner's name, for example {@code Registry}
   * @param message the message it is about to handle
   */
  default void beforeOwnerMessage(String owner, Object message) {}

  /**
   * The fault table the software RDMA provider of this engine is made with: a {@code
   * io.orbite.nativebind.verbs.soft.SoftFaults} (typed {@code Object} because this module does not
   * see the bindings), or {@code null} for none. Read once, when the RDMA transport starts; only
   * tests and the bench's null-wire measurement set it, never configuration.
   *
   * @return the table, or {@code null}
   */
  default Object rdmaFaults() {
    return null;
  }

  /**
   * Called by an RDMA lane just before it posts a slice's payload work request (and its completion
   * SEND) on a QP; a test may arm a fault of the software provider for exactly that WR here, or
   * hold the lane. Blocking here holds the lane thread with the slice's grant reserved.
   *
   * @param lane the lane's name, for example {@code rdma soft0 lane 1}
   * @param qpNum the QP's number
   * @param wrId the payload WR's id (the completion SEND's is {@code wrId + 1})
   * @param write whether the payload is an RDMA WRITE (else a READ)
   */
  default void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {}

  /**
   * Called by an RDMA channel's control reader once the channel's gate has closed because its peer
   * was lost (its control connection ended or broke, or it broke the protocol): from here on no
   * payload of that channel is posted. A test holding a lane in {@link #beforeRdmaPost} waits for
   * this before it lets the lane go, so that the held payload is never posted.
   *
   * @param peer the lost peer ({@code host:port@epoch-hex})
   */
  default void rdmaPeerLost(String peer) {}

  /**
   * Called by a source's RDMA lane after a slice's completion SEND landed in its posted receive and
   * its window was released, just before the lane answers the requester's ACK (the source's
   * receipt, without which the slice does not succeed). Blocking here holds that lane thread with
   * the ACK unsent.
   *
   * @param lane the source lane's name, for example {@code rdma soft0 lane 0}
   * @param sliceId the slice's id, as its grant request named it
   */
  default void beforeRdmaAck(String lane, long sliceId) {}

  /**
   * A source lane started serving an accepted connection; {@code cut} closes its socket from under
   * it, as a network fault would (the requester sees its connection break). Any thread may run
   * {@code cut}, once or more.
   *
   * @param lane the source lane's name
   * @param cut closes the lane's socket
   */
  default void sourceLaneStarted(String lane, Runnable cut) {}

  /**
   * A source lane that {@link #sourceLaneStarted} reported has ended.
   *
   * @param lane the source lane's name
   */
  default void sourceLaneEnded(String lane) {}

  /**
   * A notification link (the requester's control connection that carries NOTIFYs to one peer
   * incarnation) connected; {@code cut} closes its socket from under it, as a network fault would:
   * its notifications still unanswered resolve UNKNOWN, and the peer still reads what reached it.
   *
   * @param peer the peer incarnation, as {@code host:port@epoch-hex}
   * @param cut closes the link's socket
   */
  default void notificationLinkStarted(String peer, Runnable cut) {}
}
