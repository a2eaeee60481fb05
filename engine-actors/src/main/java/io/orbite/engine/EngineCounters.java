package io.orbite.engine;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.LongAdder;

/**
 * Cumulative counters of one engine incarnation, written by any thread. Observability reads them;
 * they carry no authority to release anything.
 */
public final class EngineCounters {
  /**
   * Counters all at zero; the engine makes one per incarnation ({@link TransferEngine#counters()}).
   */
  public EngineCounters() {}

  /** Data-lane and control connections this engine opened to peers. */
  public final LongAdder connectionsOpened = new LongAdder();

  /** Connections this engine accepted. */
  public final LongAdder connectionsAccepted = new LongAdder();

  /** Accepted connections closed at once because too many were waiting for their first frame. */
  public final LongAdder connectionsRefused = new LongAdder();

  /** Frames refused for breaking the protocol (foreign magic, truncated, absurd length...). */
  public final LongAdder framesRejected = new LongAdder();

  /** Source side: bytes queued to READ responses. */
  public final LongAdder sourceBytesRead = new LongAdder();

  /**
   * Source side: bytes WRITEs put into registered memory, the landed prefix of a payload torn by a
   * broken connection included (whether or not it was acknowledged).
   */
  public final LongAdder sourceBytesWritten = new LongAdder();

  /** Source side: requests refused by the authority check. */
  public final LongAdder sourceRefusals = new LongAdder();

  /** Requester side: bytes of completed tasks. */
  public final LongAdder bytesCompleted = new LongAdder();

  /** Requester side: tasks that ended COMPLETED. */
  public final LongAdder tasksCompleted = new LongAdder();

  /** Requester side: tasks that ended in any state but COMPLETED (UNQUIESCED ones included). */
  public final LongAdder tasksFailed = new LongAdder();

  /**
   * Requester side: tasks reported UNQUIESCED (their workers did not let go within the destruction
   * window).
   */
  public final LongAdder tasksUnquiesced = new LongAdder();

  /**
   * Requester side: frames sent again on another lane after their lane broke (READs, and frames
   * never sent), each once and only after the broken lane drained them (C5);
   * tcp.retryReadOnOtherLane.
   */
  public final LongAdder readRetries = new LongAdder();

  /** Requester side, per transport: what the engine handed to that transport. */
  public static final class TransportCounters {
    /** Zero counters; one per transport, made by {@link EngineCounters}. */
    public TransportCounters() {}

    /** Tasks dispatched to this transport. */
    public final LongAdder tasksDispatched = new LongAdder();

    /** Bytes of the tasks dispatched to this transport. */
    public final LongAdder bytesDispatched = new LongAdder();
  }

  private final Map<Transport, TransportCounters> byTransport = new EnumMap<>(Transport.class);

  {
    for (Transport t : Transport.values()) {
      byTransport.put(t, new TransportCounters());
    }
  }

  /**
   * The counters of one transport (UNSPEC never dispatches: a task always runs on a chosen one).
   *
   * @param transport the transport
   * @return its counters
   */
  public TransportCounters of(Transport transport) {
    return byTransport.get(transport);
  }

  /**
   * SHM requester: bytes copied out of peers' mappings (READ) and into them (WRITE), of confirmed
   * tasks.
   */
  public final LongAdder shmBytesRead = new LongAdder();

  /** SHM requester: bytes copied into peers' mappings (WRITE), of confirmed tasks. */
  public final LongAdder shmBytesWritten = new LongAdder();

  /** SHM requester: tasks that failed (refused by a fence, cancelled, expired, peer gone). */
  public final LongAdder shmTasksFailed = new LongAdder();

  /**
   * SHM requester: peer allocations mapped, unmapped, and quarantined after a failed munmap (never
   * retried).
   */
  public final LongAdder shmMappingsOpened = new LongAdder();

  /** SHM requester: peer allocations unmapped. */
  public final LongAdder shmMappingsClosed = new LongAdder();

  /** SHM requester: peer allocations kept mapped after a failed munmap (never retried). */
  public final LongAdder shmMappingsQuarantined = new LongAdder();

  /**
   * SHM requester: opens of a peer's shared memory that could not be proven (the peer is reached
   * over TCP).
   */
  public final LongAdder shmOpensRefused = new LongAdder();

  /**
   * SHM requester: mappings refused because their source unregistered them or died (a fence held).
   */
  public final LongAdder shmFenced = new LongAdder();

  /** SHM requester: small tasks copied on the submitting thread because their lane was idle. */
  public final LongAdder shmCopiedByCaller = new LongAdder();

  /**
   * SHM requester: tasks an idle copy lane took from a sibling lane's backlog (the endpoint has
   * {@code shm.lanes} lanes) and copied itself.
   */
  public final LongAdder shmTasksStolen = new LongAdder();

  /**
   * Owners (file ring lanes) that could not prove their work stopped touching memory within the
   * destruction window and were quarantined: their native resources, loans and charges are kept.
   */
  public final LongAdder ownersQuarantined = new LongAdder();

  /**
   * Told of every task that ended through a batch (never blocks; called on the thread that ended
   * it: a lane's, or the submitting caller's).
   */
  public interface TaskObserver {
    /**
     * One task ended.
     *
     * @param transport the transport that carried it, {@code null} when it never reached one
     * @param op READ or WRITE
     * @param state its terminal state
     * @param error its error kind, {@code null} when it completed
     * @param lengthBytes the task's length (the bytes moved when it completed)
     * @param elapsedNanos from submit to the moment its result became visible
     */
    void taskEnded(
        Transport transport,
        Op op,
        TaskState state,
        ErrorKind error,
        long lengthBytes,
        long elapsedNanos);
  }

  private final List<TaskObserver> observers = new CopyOnWriteArrayList<>();

  /**
   * Adds an observer of ended tasks (the metrics' latency histogram is one).
   *
   * @param observer told of every task that ends from now on
   */
  public void addObserver(TaskObserver observer) {
    observers.add(observer);
  }

  /**
   * Removes an observer added with {@link #addObserver}.
   *
   * @param observer the observer to remove
   */
  public void removeObserver(TaskObserver observer) {
    observers.remove(observer);
  }

  /**
   * A batch reports a terminal task to the observers (the engine calls this; an application only
   * observes).
   *
   * @param transport the transport that carried it, {@code null} when it never reached one
   * @param op READ or WRITE
   * @param state its terminal state
   * @param error its error kind, {@code null} when it completed
   * @param lengthBytes the task's length
   * @param elapsedNanos from submit to the moment its result became visible
   */
  public void taskEnded(
      Transport transport,
      Op op,
      TaskState state,
      ErrorKind error,
      long lengthBytes,
      long elapsedNanos) {
    for (TaskObserver o : observers) {
      o.taskEnded(transport, op, state, error, lengthBytes, elapsedNanos);
    }
  }

  private final ConcurrentHashMap<String, LongAdder> lanes = new ConcurrentHashMap<>();

  /**
   * Most lanes counted by name; later lanes share the {@code "other"} counter, so churn cannot grow
   * the map.
   */
  public static final int MAX_LANES = 1024;

  /**
   * The cumulative confirmed bytes of one lane (created on first use; kept for the engine's life).
   *
   * @param name the lane's name, for example {@code "tcp/lane 0 to 127.0.0.1:4000@1f"}
   * @return its counter
   */
  public LongAdder lane(String name) {
    LongAdder mine = lanes.get(name);
    if (mine != null) {
      return mine;
    }
    return lanes.size() >= MAX_LANES
        ? lanes.computeIfAbsent("other", n -> new LongAdder())
        : lanes.computeIfAbsent(name, n -> new LongAdder());
  }

  /**
   * Every lane's cumulative confirmed bytes, by lane name.
   *
   * @return a sorted copy
   */
  public Map<String, Long> laneBytes() {
    Map<String, Long> out = new java.util.TreeMap<>();
    lanes.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }
}
