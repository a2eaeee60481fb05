package io.orbite.engine.spi;

import io.orbite.engine.EngineCounters;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.SourceLedger;
import io.orbite.engine.TaskState;
import io.orbite.engine.Transport;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.LongAdder;

/**
 * The writers of one engine incarnation's cumulative counters, used by any thread of the engine and
 * its transports. The API reads them only as an immutable {@link EngineCounters} snapshot ({@link
 * #snapshot}); nothing outside the engine can write them.
 */
public final class EngineTally {
  /** One cumulative count; the snapshot's accessors carry each one's meaning. */
  public enum Count {
    CONNECTIONS_OPENED,
    CONNECTIONS_ACCEPTED,
    CONNECTIONS_REFUSED,
    FRAMES_REJECTED,
    SOURCE_BYTES_READ,
    SOURCE_BYTES_WRITTEN,
    SOURCE_REFUSALS,
    BYTES_COMPLETED,
    TASKS_COMPLETED,
    TASKS_FAILED,
    TASKS_UNQUIESCED,
    READ_RETRIES,
    SHM_BYTES_READ,
    SHM_BYTES_WRITTEN,
    SHM_TASKS_FAILED,
    SHM_MAPPINGS_OPENED,
    SHM_MAPPINGS_CLOSED,
    SHM_MAPPINGS_QUARANTINED,
    SHM_OPENS_REFUSED,
    SHM_FENCED,
    SHM_COPIED_BY_CALLER,
    SHM_TASKS_STOLEN,
    OWNERS_QUARANTINED,
    LANES_LOST,
    LANES_RESTORED,
    KEEPALIVE_MISSES,
    PEERS_FENCED,
    TRANSPORT_FAILOVERS,
    SOURCE_IDLE_CLOSES,
    SOURCE_INCARNATIONS_FENCED,
    TASKS_MERGED,
    MERGED_TRANSFERS,
    NOTIFICATIONS_SENT,
    NOTIFICATIONS_RECEIVED,
    NOTIFICATIONS_REFUSED,
    PEERS_REFUSED
  }

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

  /**
   * Most lanes counted by name; later lanes share the {@code "other"} counter, so churn cannot grow
   * the map.
   */
  public static final int MAX_LANES = 1024;

  private final LongAdder[] counts = new LongAdder[Count.values().length];
  private final LongAdder[] tasksDispatched = new LongAdder[Transport.values().length];
  private final LongAdder[] bytesDispatched = new LongAdder[Transport.values().length];
  private final List<TaskObserver> observers = new CopyOnWriteArrayList<>();
  private final ConcurrentHashMap<String, LongAdder> lanes = new ConcurrentHashMap<>();

  /** The source side's ledger: bytes served by requester label, at most MAX_REQUESTERS + 1. */
  private final ConcurrentHashMap<String, ServedTo> served = new ConcurrentHashMap<>();

  /** Requester incarnations connected now, by transport; bounded by the open connections. */
  private final ConcurrentHashMap<Connection, Open> connected = new ConcurrentHashMap<>();

  /** Every count at zero; the engine makes one per incarnation. */
  public EngineTally() {
    for (int i = 0; i < counts.length; i++) {
      counts[i] = new LongAdder();
    }
    for (int i = 0; i < tasksDispatched.length; i++) {
      tasksDispatched[i] = new LongAdder();
      bytesDispatched[i] = new LongAdder();
    }
  }

  /**
   * Adds one to {@code count}.
   *
   * @param count the count
   */
  public void increment(Count count) {
    counts[count.ordinal()].increment();
  }

  /**
   * Adds {@code n} to {@code count}.
   *
   * @param count the count
   * @param n what to add
   */
  public void add(Count count, long n) {
    counts[count.ordinal()].add(n);
  }

  /**
   * The sum of {@code count} now.
   *
   * @param count the count
   * @return its sum
   */
  public long sum(Count count) {
    return counts[count.ordinal()].sum();
  }

  /**
   * Records tasks handed to {@code transport}.
   *
   * @param transport the transport that took them
   * @param tasks how many
   * @param bytes their bytes
   */
  public void dispatched(Transport transport, int tasks, long bytes) {
    tasksDispatched[transport.ordinal()].add(tasks);
    bytesDispatched[transport.ordinal()].add(bytes);
  }

  /**
   * The cumulative confirmed bytes of one lane (created on first use; kept for the engine's life).
   *
   * @param name the lane's name, for example {@code "tcp/lane 0 to 127.0.0.1:4000@1f"}
   * @return its counter, written by that lane only
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
   * The bytes this source served to one requester label, one adder per transport and op; a source
   * lane or session looks it up once ({@link #servedTo}) and adds to it per request. Thread-safe.
   */
  public static final class ServedTo {
    private final String requester;
    private volatile long epoch;
    private final LongAdder[] bytes = new LongAdder[Transport.values().length * Op.values().length];

    private ServedTo(String requester, long epoch) {
      this.requester = requester;
      this.epoch = epoch;
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] = new LongAdder();
      }
    }

    /**
     * Counts {@code n} bytes served.
     *
     * @param transport the transport that carried them
     * @param op READ (bytes this source gave) or WRITE (bytes that landed in its memory)
     * @param n the bytes; nothing is counted when not positive
     */
    public void add(Transport transport, Op op, long n) {
      if (n > 0) {
        bytes[transport.ordinal() * Op.values().length + op.ordinal()].add(n);
      }
    }

    /**
     * The label the bytes are counted under.
     *
     * @return the requester's label, or {@link SourceLedger#OTHER}
     */
    public String requester() {
      return requester;
    }
  }

  /**
   * The ledger row of {@code requester}, made on first use. Past {@link
   * SourceLedger#MAX_REQUESTERS} labels, a new label gets the shared {@link SourceLedger#OTHER}
   * row, so churn of requesters cannot grow the ledger.
   *
   * @param requester the requester's label (its HELLO's identity; today its address and epoch)
   * @param requesterEpoch the requester incarnation's epoch, remembered as the row's latest
   * @return its row
   */
  public ServedTo servedTo(String requester, long requesterEpoch) {
    ServedTo row = served.get(requester);
    if (row == null) {
      // Rare (once per lane or session): the bound is checked and the row added under one lock.
      synchronized (served) {
        row = served.get(requester);
        if (row == null) {
          String label =
              served.size() >= SourceLedger.MAX_REQUESTERS ? SourceLedger.OTHER : requester;
          row = served.computeIfAbsent(label, l -> new ServedTo(l, requesterEpoch));
        }
      }
    }
    if (row.epoch != requesterEpoch) {
      row.epoch = requesterEpoch;
    }
    return row;
  }

  /**
   * Counts bytes this engine served as a source ({@link #servedTo} and {@link ServedTo#add} in one
   * call, for a caller that does not keep the row).
   *
   * @param requester the requester's label
   * @param requesterEpoch its epoch
   * @param transport the transport that carried them (SHM: as the requester reported its copies)
   * @param op READ or WRITE
   * @param bytes the bytes
   */
  public void served(
      String requester, long requesterEpoch, Transport transport, Op op, long bytes) {
    servedTo(requester, requesterEpoch).add(transport, op, bytes);
  }

  /** A requester incarnation connected over one transport. */
  private record Connection(String requester, long epoch, Transport transport) {}

  /** How many of its connections are open, since when. */
  private record Open(int count, long sinceMillis) {}

  /**
   * A requester incarnation opened a connection to this source (a TCP lane's HELLO, an RDMA
   * endpoint's control connection); each call is matched by one {@link #requesterDisconnected}.
   *
   * @param requester the requester's label
   * @param requesterEpoch its epoch
   * @param transport the transport
   */
  public void requesterConnected(String requester, long requesterEpoch, Transport transport) {
    long now = System.currentTimeMillis();
    connected.compute(
        new Connection(requester, requesterEpoch, transport),
        (k, open) ->
            open == null ? new Open(1, now) : new Open(open.count() + 1, open.sinceMillis()));
  }

  /**
   * A connection counted by {@link #requesterConnected} ended; the incarnation leaves the list with
   * its last one.
   *
   * @param requester the requester's label
   * @param requesterEpoch its epoch
   * @param transport the transport
   */
  public void requesterDisconnected(String requester, long requesterEpoch, Transport transport) {
    connected.computeIfPresent(
        new Connection(requester, requesterEpoch, transport),
        (k, open) -> open.count() <= 1 ? null : new Open(open.count() - 1, open.sinceMillis()));
  }

  /**
   * The source side's ledger now, as the API's immutable snapshot.
   *
   * @return the bytes served by requester, transport and op, and the requesters connected now
   */
  public SourceLedger sourceLedger() {
    List<SourceLedger.Served> rows = new ArrayList<>();
    served.forEach(
        (label, row) -> {
          for (Transport t : Transport.values()) {
            for (Op op : Op.values()) {
              long n = row.bytes[t.ordinal() * Op.values().length + op.ordinal()].sum();
              if (n > 0) {
                rows.add(new SourceLedger.Served(label, row.epoch, t, op, n));
              }
            }
          }
        });
    List<SourceLedger.Connected> open = new ArrayList<>();
    connected.forEach(
        (k, v) ->
            open.add(
                new SourceLedger.Connected(
                    k.requester(), k.epoch(), k.transport(), v.count(), v.sinceMillis())));
    return new SourceLedger(rows, open);
  }

  /**
   * The self-healing counts and the requesters connected now, by name, for the engine's row in the
   * owner view (read when the view is taken, so they are never stale).
   *
   * @return {@code lanesLost}, {@code lanesRestored}, {@code keepaliveMisses}, {@code peersFenced},
   *     {@code transportFailovers}, {@code sourceIdleCloses}, {@code sourceIncarnationsFenced} and
   *     {@code requestersConnected}
   */
  public Map<String, Long> healingFigures() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("lanesLost", sum(Count.LANES_LOST));
    m.put("lanesRestored", sum(Count.LANES_RESTORED));
    m.put("keepaliveMisses", sum(Count.KEEPALIVE_MISSES));
    m.put("peersFenced", sum(Count.PEERS_FENCED));
    m.put("transportFailovers", sum(Count.TRANSPORT_FAILOVERS));
    m.put("sourceIdleCloses", sum(Count.SOURCE_IDLE_CLOSES));
    m.put("sourceIncarnationsFenced", sum(Count.SOURCE_INCARNATIONS_FENCED));
    m.put(
        "requestersConnected",
        connected.keySet().stream()
            .map(c -> new Connection(c.requester(), c.epoch(), Transport.UNSPEC))
            .distinct()
            .count());
    return m;
  }

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
   * A batch reports a terminal task to the observers.
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

  /**
   * Every count now, as the API's immutable snapshot.
   *
   * @return a snapshot; later changes do not show in it
   */
  public EngineCounters snapshot() {
    Map<Transport, Long> tasks = new EnumMap<>(Transport.class);
    Map<Transport, Long> bytes = new EnumMap<>(Transport.class);
    for (Transport t : Transport.values()) {
      tasks.put(t, tasksDispatched[t.ordinal()].sum());
      bytes.put(t, bytesDispatched[t.ordinal()].sum());
    }
    Map<String, Long> laneBytes = new TreeMap<>();
    lanes.forEach((k, v) -> laneBytes.put(k, v.sum()));
    long[] sums = new long[counts.length];
    for (int i = 0; i < sums.length; i++) {
      sums[i] = counts[i].sum();
    }
    return new EngineCounters(
        sums[Count.CONNECTIONS_OPENED.ordinal()],
        sums[Count.CONNECTIONS_ACCEPTED.ordinal()],
        sums[Count.CONNECTIONS_REFUSED.ordinal()],
        sums[Count.FRAMES_REJECTED.ordinal()],
        sums[Count.SOURCE_BYTES_READ.ordinal()],
        sums[Count.SOURCE_BYTES_WRITTEN.ordinal()],
        sums[Count.SOURCE_REFUSALS.ordinal()],
        sums[Count.BYTES_COMPLETED.ordinal()],
        sums[Count.TASKS_COMPLETED.ordinal()],
        sums[Count.TASKS_FAILED.ordinal()],
        sums[Count.TASKS_UNQUIESCED.ordinal()],
        sums[Count.READ_RETRIES.ordinal()],
        sums[Count.SHM_BYTES_READ.ordinal()],
        sums[Count.SHM_BYTES_WRITTEN.ordinal()],
        sums[Count.SHM_TASKS_FAILED.ordinal()],
        sums[Count.SHM_MAPPINGS_OPENED.ordinal()],
        sums[Count.SHM_MAPPINGS_CLOSED.ordinal()],
        sums[Count.SHM_MAPPINGS_QUARANTINED.ordinal()],
        sums[Count.SHM_OPENS_REFUSED.ordinal()],
        sums[Count.SHM_FENCED.ordinal()],
        sums[Count.SHM_COPIED_BY_CALLER.ordinal()],
        sums[Count.SHM_TASKS_STOLEN.ordinal()],
        sums[Count.OWNERS_QUARANTINED.ordinal()],
        sums[Count.LANES_LOST.ordinal()],
        sums[Count.LANES_RESTORED.ordinal()],
        sums[Count.KEEPALIVE_MISSES.ordinal()],
        sums[Count.PEERS_FENCED.ordinal()],
        sums[Count.TRANSPORT_FAILOVERS.ordinal()],
        sums[Count.SOURCE_IDLE_CLOSES.ordinal()],
        sums[Count.SOURCE_INCARNATIONS_FENCED.ordinal()],
        sums[Count.TASKS_MERGED.ordinal()],
        sums[Count.MERGED_TRANSFERS.ordinal()],
        sums[Count.NOTIFICATIONS_SENT.ordinal()],
        sums[Count.NOTIFICATIONS_RECEIVED.ordinal()],
        sums[Count.NOTIFICATIONS_REFUSED.ordinal()],
        sums[Count.PEERS_REFUSED.ordinal()],
        tasks,
        bytes,
        laneBytes);
  }
}
