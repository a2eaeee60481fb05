package io.orbite.engine.spi;

import io.orbite.engine.EngineCounters;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.TaskState;
import io.orbite.engine.Transport;
import java.util.EnumMap;
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
    SOURCE_INCARNATIONS_FENCED
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
        tasks,
        bytes,
        laneBytes);
  }
}
