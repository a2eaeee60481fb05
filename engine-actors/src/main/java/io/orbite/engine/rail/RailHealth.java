package io.orbite.engine.rail;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * Rail health (C13): a circuit per (peer epoch, local rail, remote rail) pair, shared by the
 * requester's workers and the port monitor. Thread-safe: only the pair accounting is serialized, so
 * two workers never arm two trials of one pair.
 *
 * <ul>
 *   <li>{@link Policy#errorThreshold} failures inside {@link Policy#errorWindow} (defaults 3 in 10
 *       s) open a closed pair for {@link Policy#cooldown} (30 s): it is refused.
 *   <li>A failure reported while the pair is open (work admitted before it opened) leaves the
 *       cooldown as it is.
 *   <li>Once the cooldown has passed, one half-open trial is admitted, at most once per {@link
 *       Policy#probeInterval} (1 s; zero allows an immediate trial); while it runs, everything else
 *       on the pair is refused. Only that trial's own success closes the pair again; its failure
 *       reopens it with the cooldown doubled, up to {@link Policy#maxCooldown} (5 min). A trial
 *       cancelled before it was posted gives its slot back at once.
 *   <li>Every admission is a {@link Ticket} naming the pair's generation; the generation moves on
 *       every open, close and port fault, so a late receipt from before cannot close, open or
 *       reopen the circuit now. {@link #portFault} opens every pair of a local rail at once.
 *   <li>{@link #healthy} only looks: it never arms a trial.
 *   <li>The table holds at most {@link Policy#maxPairs} pairs. A new pair evicts the oldest closed
 *       one with no work in flight and no recent error; when none can go (every pair active or
 *       unproven), the admission is {@link Admission.Exhausted}.
 * </ul>
 */
public final class RailHealth {
  /** The circuit's thresholds; {@link #DEFAULTS} are the reference's. */
  public record Policy(
      int errorThreshold,
      Duration errorWindow,
      Duration cooldown,
      Duration probeInterval,
      Duration maxCooldown,
      int maxPairs) {
    /** Three errors in 10 s, 30 s cooldown, 1 s probe interval, 5 min at most, 4096 pairs. */
    public static final Policy DEFAULTS =
        new Policy(
            3,
            Duration.ofSeconds(10),
            Duration.ofSeconds(30),
            Duration.ofSeconds(1),
            Duration.ofMinutes(5),
            4096);

    /** Checks every field; a bad one is named. */
    public Policy {
      if (errorThreshold < 1) {
        throw new IllegalArgumentException(
            "errorThreshold must be at least 1, got " + errorThreshold);
      }
      positive("errorWindow", errorWindow);
      positive("cooldown", cooldown);
      Objects.requireNonNull(probeInterval, "probeInterval");
      if (probeInterval.isNegative()) {
        throw new IllegalArgumentException(
            "probeInterval must not be negative, got " + probeInterval);
      }
      positive("maxCooldown", maxCooldown);
      if (maxCooldown.compareTo(cooldown) < 0) {
        throw new IllegalArgumentException(
            "maxCooldown (" + maxCooldown + ") must be at least cooldown (" + cooldown + ")");
      }
      if (maxPairs < 1) {
        throw new IllegalArgumentException("maxPairs must be at least 1, got " + maxPairs);
      }
    }

    private static void positive(String name, Duration d) {
      Objects.requireNonNull(d, name);
      if (d.isZero() || d.isNegative()) {
        throw new IllegalArgumentException(name + " must be positive, got " + d);
      }
    }
  }

  /** A rail pair toward one peer incarnation. */
  public record Pair(long peerEpoch, int localRail, int remoteRail) {}

  /** A pair's circuit. */
  public enum State {
    /** Healthy: work is admitted. */
    CLOSED,
    /** Paused: refused until the cooldown has passed and a trial is admitted. */
    OPEN,
    /** One trial is running; only its outcome moves the pair. */
    HALF_OPEN
  }

  /**
   * What the holder of admitted work reports its outcome with: exactly one of {@link #succeeded},
   * {@link #failed} or {@link #cancelled}.
   */
  public record Ticket(Pair pair, long generation, boolean trial) {}

  /** The answer to {@link #admit}. */
  public sealed interface Admission {
    /** Work may run on the pair; report its outcome with the ticket. */
    record Admitted(Ticket ticket) implements Admission {}

    /** The pair is open, or a trial is running on it; {@code why} says which and until when. */
    record Refused(String why) implements Admission {}

    /** The table is full of active or unproven pairs (RESOURCE_EXHAUSTED). */
    record Exhausted(String why) implements Admission {}
  }

  /** One pair as the owner view and the metrics show it. */
  public record PairView(
      Pair pair,
      State state,
      int recentErrors,
      Duration cooldown,
      long inFlight,
      long generation) {}

  /** Totals since start, for the metrics. */
  public record Counts(long errors, long opens, long trials, long recoveries, long evictions) {}

  private static final class Entry {
    State state = State.CLOSED;
    long generation;
    final ArrayDeque<Long> errors = new ArrayDeque<>();
    long cooldownNanos;
    long openUntil;
    long lastTrialAt = Long.MIN_VALUE;
    long inFlight;

    Entry(long cooldownNanos) {
      this.cooldownNanos = cooldownNanos;
    }
  }

  private final Policy policy;
  private final LongSupplier nanoClock;
  private final Map<Pair, Entry> pairs = new LinkedHashMap<>();
  private long errors;

  /** {@link #errors} by local rail, for the per-rail metrics (rails are few and small indexes). */
  private long[] errorsByRail = new long[0];

  private long opens;
  private long trials;
  private long recoveries;
  private long evictions;

  /**
   * A table with {@code policy}, reading time from {@code nanoClock} ({@code System::nanoTime} in
   * production; a manual clock in tests).
   */
  public RailHealth(Policy policy, LongSupplier nanoClock) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
  }

  /** Whether work on {@code pair} would be admitted as ordinary work now. Arms nothing. */
  public synchronized boolean healthy(Pair pair) {
    Entry e = pairs.get(pair);
    return e == null || e.state == State.CLOSED;
  }

  /**
   * Whether {@link #admit} would admit work on {@code pair} now: ordinary work on a closed pair, or
   * the trial of an open one whose cooldown and probe interval have passed. Arms nothing: a
   * selector uses it to keep a pair due for its trial among the candidates.
   */
  public synchronized boolean admissible(Pair pair) {
    Entry e = pairs.get(pair);
    if (e == null || e.state == State.CLOSED) {
      return true;
    }
    if (e.state == State.HALF_OPEN) {
      return false;
    }
    long now = nanoClock.getAsLong();
    if (now - e.openUntil < 0) {
      return false;
    }
    return e.lastTrialAt == Long.MIN_VALUE
        || now - e.lastTrialAt >= policy.probeInterval().toNanos();
  }

  /** The pair's circuit now ({@link State#CLOSED} for a pair the table does not hold). */
  public synchronized State state(Pair pair) {
    Entry e = pairs.get(pair);
    return e == null ? State.CLOSED : e.state;
  }

  /**
   * Admits work on {@code pair}: ordinary work on a closed pair, or the one trial of an open one.
   */
  public synchronized Admission admit(Pair pair) {
    long now = nanoClock.getAsLong();
    Entry e = pairs.get(pair);
    if (e == null) {
      if (pairs.size() >= policy.maxPairs() && !evictOne(now)) {
        return new Admission.Exhausted(
            "rail health: " + policy.maxPairs() + " pairs are held, each active or unproven");
      }
      e = new Entry(policy.cooldown().toNanos());
      pairs.put(pair, e);
    }
    switch (e.state) {
      case CLOSED -> {
        e.inFlight++;
        return new Admission.Admitted(new Ticket(pair, e.generation, false));
      }
      case HALF_OPEN -> {
        return new Admission.Refused(describe(pair) + " is half-open: its one trial is running");
      }
      case OPEN -> {
        if (now - e.openUntil < 0) {
          return new Admission.Refused(
              describe(pair)
                  + " is open for another "
                  + Duration.ofNanos(e.openUntil - now).toMillis()
                  + " ms (cooldown "
                  + Duration.ofNanos(e.cooldownNanos).toMillis()
                  + " ms)");
        }
        long interval = policy.probeInterval().toNanos();
        if (e.lastTrialAt != Long.MIN_VALUE && now - e.lastTrialAt < interval) {
          long left = interval - (now - e.lastTrialAt);
          return new Admission.Refused(
              describe(pair) + " is open: its next trial is due in " + left / 1_000_000 + " ms");
        }
        e.state = State.HALF_OPEN;
        e.generation++;
        e.lastTrialAt = now;
        e.inFlight++;
        trials++;
        return new Admission.Admitted(new Ticket(pair, e.generation, true));
      }
      default -> throw new IllegalStateException("unknown state " + e.state);
    }
  }

  /** The work of {@code ticket} completed: a current trial's success closes the pair. */
  public synchronized void succeeded(Ticket ticket) {
    Entry e = settle(ticket);
    if (e == null || ticket.generation() != e.generation) {
      return; // late: from before the pair last moved
    }
    if (ticket.trial() && e.state == State.HALF_OPEN) {
      e.state = State.CLOSED;
      e.generation++;
      e.errors.clear();
      e.cooldownNanos = policy.cooldown().toNanos();
      recoveries++;
    }
  }

  /** The work of {@code ticket} failed on its rail. */
  public synchronized void failed(Ticket ticket) {
    Entry e = settle(ticket);
    if (e == null) {
      return;
    }
    errors++;
    int rail = ticket.pair().localRail();
    if (rail >= 0) {
      if (rail >= errorsByRail.length) {
        errorsByRail = java.util.Arrays.copyOf(errorsByRail, rail + 1);
      }
      errorsByRail[rail]++;
    }
    long now = nanoClock.getAsLong();
    if (ticket.generation() != e.generation) {
      return; // late, or admitted before the pair opened: the cooldown stays as it is
    }
    if (ticket.trial() && e.state == State.HALF_OPEN) {
      e.cooldownNanos = Math.min(e.cooldownNanos * 2, policy.maxCooldown().toNanos());
      open(e, now);
      return;
    }
    if (e.state == State.CLOSED) {
      e.errors.addLast(now);
      long window = policy.errorWindow().toNanos();
      while (!e.errors.isEmpty() && now - e.errors.peekFirst() >= window) {
        e.errors.removeFirst();
      }
      if (e.errors.size() >= policy.errorThreshold()) {
        open(e, now);
      }
    }
  }

  /**
   * The work of {@code ticket} was never posted: it counts neither way, and a cancelled trial gives
   * its slot back (the next trial is admitted once the probe interval since the cancelled one's
   * admission has passed: at once with a zero interval).
   */
  public synchronized void cancelled(Ticket ticket) {
    Entry e = settle(ticket);
    if (e != null
        && ticket.trial()
        && ticket.generation() == e.generation
        && e.state == State.HALF_OPEN) {
      e.state = State.OPEN;
      e.generation++;
    }
  }

  /** The port monitor saw {@code localRail} fail: every pair on it opens now (one cooldown). */
  public synchronized void portFault(int localRail) {
    long now = nanoClock.getAsLong();
    for (Map.Entry<Pair, Entry> p : pairs.entrySet()) {
      if (p.getKey().localRail() == localRail && p.getValue().state != State.OPEN) {
        open(p.getValue(), now);
      }
    }
  }

  /** Every pair the table holds, oldest first. */
  public synchronized List<PairView> view() {
    long now = nanoClock.getAsLong();
    List<PairView> out = new ArrayList<>(pairs.size());
    for (Map.Entry<Pair, Entry> p : pairs.entrySet()) {
      Entry e = p.getValue();
      long window = policy.errorWindow().toNanos();
      int recent = 0;
      for (long t : e.errors) {
        if (now - t < window) {
          recent++;
        }
      }
      out.add(
          new PairView(
              p.getKey(),
              e.state,
              recent,
              Duration.ofNanos(e.cooldownNanos),
              e.inFlight,
              e.generation));
    }
    return out;
  }

  /**
   * What the circuit says of one local rail now: its pairs that refuse work (open, or half-open
   * with a trial) and the failures counted on it since the table was made (every failure, also
   * those that opened nothing).
   *
   * @param localRail the local rail's index
   * @return the rail's figures; zeros for a rail the table never saw
   */
  public synchronized RailCounts rail(int localRail) {
    int open = 0;
    int halfOpen = 0;
    for (Map.Entry<Pair, Entry> p : pairs.entrySet()) {
      if (p.getKey().localRail() == localRail) {
        if (p.getValue().state == State.OPEN) {
          open++;
        } else if (p.getValue().state == State.HALF_OPEN) {
          halfOpen++;
        }
      }
    }
    long failures = localRail >= 0 && localRail < errorsByRail.length ? errorsByRail[localRail] : 0;
    return new RailCounts(open, halfOpen, failures);
  }

  /**
   * One local rail's circuit figures.
   *
   * @param pairsOpen its pairs in state OPEN
   * @param pairsHalfOpen its pairs in state HALF_OPEN (one trial admitted or awaited)
   * @param errors failures counted on it since start
   */
  public record RailCounts(int pairsOpen, int pairsHalfOpen, long errors) {}

  /** Totals since the table was made. */
  public synchronized Counts counts() {
    return new Counts(errors, opens, trials, recoveries, evictions);
  }

  /** The policy in force. */
  public Policy policy() {
    return policy;
  }

  private Entry settle(Ticket ticket) {
    Entry e = pairs.get(ticket.pair());
    if (e != null && e.inFlight > 0) {
      e.inFlight--;
    }
    return e;
  }

  private void open(Entry e, long now) {
    e.state = State.OPEN;
    e.generation++;
    e.openUntil = now + e.cooldownNanos;
    e.lastTrialAt = Long.MIN_VALUE;
    e.errors.clear();
    opens++;
  }

  /** Evicts the oldest closed, idle pair with no recent error; false when every pair must stay. */
  private boolean evictOne(long now) {
    long window = policy.errorWindow().toNanos();
    Iterator<Map.Entry<Pair, Entry>> it = pairs.entrySet().iterator();
    while (it.hasNext()) {
      Entry e = it.next().getValue();
      boolean recentError = !e.errors.isEmpty() && now - e.errors.peekLast() < window;
      if (e.state == State.CLOSED && e.inFlight == 0 && !recentError) {
        it.remove();
        evictions++;
        return true;
      }
    }
    return false;
  }

  private static String describe(Pair pair) {
    return "rail pair (peer epoch "
        + Long.toHexString(pair.peerEpoch())
        + ", local rail "
        + pair.localRail()
        + ", remote rail "
        + pair.remoteRail()
        + ")";
  }
}
