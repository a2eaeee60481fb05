package io.orbite.engine;

import java.util.Map;

/**
 * Cumulative counters of one engine incarnation, read at one moment ({@link Engine#counters()}): an
 * immutable snapshot, so a reader can neither write them nor see them change under it.
 * Observability reads them; they carry no authority to release anything.
 *
 * @param connectionsOpened Data-lane and control connections this engine opened to peers.
 * @param connectionsAccepted Connections this engine accepted.
 * @param connectionsRefused Accepted connections closed at once because too many were waiting for
 *     their first frame.
 * @param framesRejected Frames refused for breaking the protocol (foreign magic, truncated, absurd
 *     length...).
 * @param sourceBytesRead Source side: bytes queued to READ responses (TCP) and of READ windows
 *     whose completion arrived (RDMA). SHM copies, which requesters make without the source, are
 *     not here: {@link Engine#sourceLedger()} has them as the requesters report them, and every
 *     served byte by requester and transport.
 * @param sourceBytesWritten Source side: bytes WRITEs put into registered memory, the landed prefix
 *     of a payload torn by a broken connection included (whether or not it was acknowledged); TCP
 *     and RDMA, as {@code sourceBytesRead}.
 * @param sourceRefusals Source side: requests refused by the authority check.
 * @param bytesCompleted Requester side: bytes of completed tasks.
 * @param tasksCompleted Requester side: tasks that ended COMPLETED.
 * @param tasksFailed Requester side: tasks that ended in any state but COMPLETED (UNQUIESCED ones
 *     included).
 * @param tasksUnquiesced Requester side: tasks reported UNQUIESCED (their workers did not let go
 *     within the destruction window).
 * @param readRetries Requester side: frames sent again on another lane after their lane broke
 *     (READs, and frames never sent), each once and only after the broken lane drained them (C5);
 *     tcp.retryReadOnOtherLane.
 * @param shmBytesRead SHM requester: bytes copied out of peers' mappings (READ), of confirmed
 *     tasks.
 * @param shmBytesWritten SHM requester: bytes copied into peers' mappings (WRITE), of confirmed
 *     tasks.
 * @param shmTasksFailed SHM requester: tasks that failed (refused by a fence, cancelled, expired,
 *     peer gone).
 * @param shmMappingsOpened SHM requester: peer allocations mapped.
 * @param shmMappingsClosed SHM requester: peer allocations unmapped.
 * @param shmMappingsQuarantined SHM requester: peer allocations kept mapped after a failed munmap
 *     (never retried).
 * @param shmOpensRefused SHM requester: opens of a peer's shared memory that could not be proven
 *     (the peer is reached over TCP).
 * @param shmFenced SHM requester: mappings refused because their source unregistered them or died
 *     (a fence held).
 * @param shmCopiedByCaller SHM requester: small tasks copied on the submitting thread because their
 *     lane was idle.
 * @param shmTasksStolen SHM requester: tasks an idle copy lane took from a sibling lane's backlog
 *     (the endpoint has {@code shm.lanes} lanes) and copied itself.
 * @param ownersQuarantined Owners (file ring lanes) that could not prove their work stopped
 *     touching memory within the destruction window and were quarantined: their native resources,
 *     loans and charges are kept.
 * @param lanesLost Requester side: data lanes (TCP lanes, the RDMA control connection) whose
 *     connection broke or missed its keepalives; each drained before anything else happened to it.
 * @param lanesRestored Requester side: lanes reconnected to the same peer incarnation (its HELLO
 *     proved the same epoch).
 * @param keepaliveMisses Requester side: lanes ended because their peer answered no keepalive
 *     within {@code tcp.livenessTimeoutMillis}.
 * @param peersFenced Requester side: peer entries fenced because a newer incarnation answered at
 *     their endpoint (learned by a reconnect, a keepalive's lane or an open).
 * @param tasksMerged Requester side: tasks that request merging carried in a physical transfer
 *     shared with adjacent tasks of their submission (each keeps its own result); {@code
 *     tasksDispatched} counts physical transfers
 * @param mergedTransfers Requester side: physical transfers that carried two or more merged tasks
 * @param transportFailovers Requester side: tasks that ran once more on another transport after
 *     their first transport drained them ({@code retry.maxTransportFailovers}).
 * @param sourceIdleCloses Source side: lanes closed after {@code tcp.sourceIdleTimeoutMillis}
 *     without a request.
 * @param sourceIncarnationsFenced Source side: lanes and sessions of a requester's old incarnation
 *     closed because its new incarnation said HELLO.
 * @param notificationsSent Requester side: notifications written to a peer's control connection,
 *     each once (whatever became of them: the sender's result says).
 * @param notificationsReceived Receiver side: notifications accepted into this engine's inbox.
 * @param notificationsRefused Receiver side: notifications refused: the inbox full ({@code
 *     RESOURCE_EXHAUSTED}), a tag or payload over this engine's bound ({@code INVALID_ARGUMENT}),
 *     another incarnation named ({@code EPOCH_MISMATCH}), or the engine closing.
 * @param peersRefused Source side: connections refused {@code PERMISSION_DENIED} for want of
 *     authentication (no handshake where one is required, a handshake that failed, a HELLO naming
 *     another engine than the handshake proved), before any payload was read.
 * @param tasksDispatched per transport, physical transfers the engine handed to it: a task, or a
 *     group of adjacent tasks merged into one (UNSPEC never dispatches: a task always runs on a
 *     chosen transport)
 * @param bytesDispatched per transport, bytes of the tasks handed to it
 * @param laneBytes every lane's cumulative confirmed bytes, by lane name (at most 1024 lanes by
 *     name; later ones share {@code "other"})
 */
public record EngineCounters(
    long connectionsOpened,
    long connectionsAccepted,
    long connectionsRefused,
    long framesRejected,
    long sourceBytesRead,
    long sourceBytesWritten,
    long sourceRefusals,
    long bytesCompleted,
    long tasksCompleted,
    long tasksFailed,
    long tasksUnquiesced,
    long readRetries,
    long shmBytesRead,
    long shmBytesWritten,
    long shmTasksFailed,
    long shmMappingsOpened,
    long shmMappingsClosed,
    long shmMappingsQuarantined,
    long shmOpensRefused,
    long shmFenced,
    long shmCopiedByCaller,
    long shmTasksStolen,
    long ownersQuarantined,
    long lanesLost,
    long lanesRestored,
    long keepaliveMisses,
    long peersFenced,
    long transportFailovers,
    long sourceIdleCloses,
    long sourceIncarnationsFenced,
    long tasksMerged,
    long mergedTransfers,
    long notificationsSent,
    long notificationsReceived,
    long notificationsRefused,
    long peersRefused,
    Map<Transport, Long> tasksDispatched,
    Map<Transport, Long> bytesDispatched,
    Map<String, Long> laneBytes) {
  /** Copies the maps, so the snapshot stays as it was read. */
  public EngineCounters {
    tasksDispatched = Map.copyOf(tasksDispatched);
    bytesDispatched = Map.copyOf(bytesDispatched);
    laneBytes = Map.copyOf(laneBytes);
  }

  /**
   * Tasks handed to {@code transport}.
   *
   * @param transport the transport
   * @return its count, 0 when it took none
   */
  public long tasksDispatched(Transport transport) {
    return tasksDispatched.getOrDefault(transport, 0L);
  }

  /**
   * Bytes of the tasks handed to {@code transport}.
   *
   * @param transport the transport
   * @return its count, 0 when it took none
   */
  public long bytesDispatched(Transport transport) {
    return bytesDispatched.getOrDefault(transport, 0L);
  }
}
