package io.orbite.qualification.bench;

import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The READs of {@code bench heal} and their byte checks. Each round is one batch of {@link
 * #PER_BATCH} READs of {@link #TASK} bytes over TCP into the requester's region, at unaligned
 * offsets with guard bytes before, between and after them. After every round the whole region is
 * checked: each completed READ's destination holds the source's pattern from its remote offset,
 * every other byte the guard pattern; a READ that failed may have landed in part, so each byte of
 * its destination is either the guard's or the source's. Then the destinations get their guard
 * bytes back for the next round. A wrong byte is a failure of the run, a failed READ is counted (C5
 * allows it: it failed after drain, and claimed no byte).
 *
 * <p>One thread at a time runs rounds: the bench's own thread, or the {@link Loop}'s while it runs.
 */
final class HealReads {
  static final long TASK = 64L << 10;
  static final int PER_BATCH = 2;
  private static final int REMOTE_SLOTS = 16;

  /** Guard bytes before, between and after the destinations; odd, so no offset is aligned. */
  private static final long GAP = 4099;

  /** The source region: {@link #REMOTE_SLOTS} tasks, and room for the rounds' shifting offsets. */
  static final long REMOTE_BYTES = REMOTE_SLOTS * TASK + 8 * 511;

  /** Two rounds' destinations, so consecutive rounds never share one. */
  static final long LOCAL_BYTES = 2 * PER_BATCH * (TASK + GAP) + GAP;

  static final long GUARD_SEED = 0x6A2DL;

  private final RegisteredMemory local;
  private final Batch batch;
  private final AtomicLong readsVerified = new AtomicLong();
  private final AtomicLong readsFailed = new AtomicLong();
  private final List<String> failures;
  private volatile String lastFailed = "";
  private long round;

  /**
   * @param failures where a wrong byte or a broken round is reported (shared with the trials)
   */
  HealReads(TransferEngine engine, RegisteredMemory local, List<String> failures) {
    this.local = local;
    this.failures = failures;
    this.batch = engine.allocateBatch(PER_BATCH);
    Pattern.fill(local.segment(), 0, LOCAL_BYTES, GUARD_SEED, 0);
  }

  long readsVerified() {
    return readsVerified.get();
  }

  long readsFailed() {
    return readsFailed.get();
  }

  /** What the last READ that failed (or was refused) said, for the report. */
  String lastFailed() {
    return lastFailed;
  }

  /**
   * One round against {@code peer}'s region {@code remote}, which holds pattern {@code seed}.
   *
   * @return whether every READ completed and every byte was right
   */
  boolean once(RemoteSegment peer, long remote, long seed) {
    long r = round++;
    long[] at = new long[PER_BATCH];
    long[] from = new long[PER_BATCH];
    List<TransferRequest> reads = new ArrayList<>(PER_BATCH);
    for (int k = 0; k < PER_BATCH; k++) {
      at[k] = GAP + ((r & 1) * PER_BATCH + k) * (TASK + GAP);
      from[k] = ((r * PER_BATCH + k) % REMOTE_SLOTS) * TASK + (r % 8) * 511;
      reads.add(
          TransferRequest.read(local, at[k], peer, remote, from[k], TASK)
              .withTransport(Transport.TCP));
    }
    BatchStatus status;
    try {
      batch.submit(reads);
      status = batch.await(Duration.ofSeconds(60));
    } catch (TransferException refused) {
      // Refused at submit: nothing was admitted, no byte may have moved.
      readsFailed.addAndGet(PER_BATCH);
      lastFailed = "refused at submit: " + refused.getMessage();
      guardsHold(List.of(), "after a refused submit: " + refused.getMessage());
      return false;
    }
    if (!status.done()) {
      failures.add("a READ round was not done after 60 s: " + status);
      return false;
    }
    batch.reset();
    List<Span> completed = new ArrayList<>();
    boolean ok = true;
    for (int k = 0; k < PER_BATCH; k++) {
      TaskResult t = status.tasks().get(k);
      if (t.completed() && t.bytes() == TASK) {
        completed.add(new Span(at[k], TASK, seed, from[k]));
        continue;
      }
      ok = false;
      readsFailed.incrementAndGet();
      lastFailed = t.errorKind() + " (" + t.remoteEffect() + "): " + t.detail();
      if (t.completed()) {
        failures.add("a READ completed with " + t.bytes() + " bytes of " + TASK + ": " + t);
        return false;
      }
      if (!t.locallyDrained() || t.bytes() != 0 || t.remoteEffect() != RemoteEffect.NONE) {
        // C5 and C6: a failed READ is reported only after drain, claims no byte, changed nothing.
        failures.add("a READ failed undrained, with bytes or with a remote effect: " + t);
        return false;
      }
      long bad = oneOf(local.segment(), at[k], TASK, GUARD_SEED, seed, from[k]);
      if (bad >= 0) {
        failures.add("requester byte " + bad + " after a failed READ (" + t + ")");
        return false;
      }
      Pattern.fill(local.segment(), at[k], TASK, GUARD_SEED, at[k]);
    }
    if (!guardsHold(completed, "after a READ round")) {
      return false;
    }
    readsVerified.addAndGet(completed.size());
    return ok;
  }

  /**
   * Checks the whole region (each of {@code spans} holds its pattern, the rest the guard's) and
   * gives the spans their guard bytes back.
   */
  private boolean guardsHold(List<Span> spans, String when) {
    long bad = RegionCheck.check(local.segment(), spans, GUARD_SEED);
    if (bad >= 0) {
      failures.add("requester byte " + bad + " is wrong " + when);
      return false;
    }
    for (Span s : spans) {
      Pattern.fill(local.segment(), s.offset(), s.length(), GUARD_SEED, s.offset());
    }
    return true;
  }

  /**
   * A READ through {@code stale}, a segment whose incarnation was replaced: it must not complete,
   * and no byte of the region may change.
   *
   * @return what refused it, for the report
   */
  String refusedThroughStale(RemoteSegment stale, long remote) {
    long at = GAP;
    TransferRequest read =
        TransferRequest.read(local, at, stale, remote, 0, TASK).withTransport(Transport.TCP);
    String answer;
    try {
      batch.submit(List.of(read));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      if (!s.done()) {
        failures.add("a READ through the replaced incarnation's segment was not done after 30 s");
        return "not done";
      }
      batch.reset();
      TaskResult t = s.tasks().get(0);
      if (t.completed()) {
        failures.add("a READ through the replaced incarnation's segment completed: " + t);
      }
      answer = t.errorKind() + " (" + t.bytes() + " bytes)";
    } catch (TransferException refused) {
      answer = refused.kind() + " at submit";
    }
    guardsHold(List.of(), "after a READ through the replaced incarnation's segment");
    return answer;
  }

  /**
   * The index of the first byte of {@code [offset, offset + length)} that is neither the guard's
   * nor the data pattern's (at {@code from} onward), or -1.
   */
  private static long oneOf(
      MemorySegment m, long offset, long length, long guard, long data, long from) {
    for (long p = 0; p < length; p++) {
      byte b = m.get(ValueLayout.JAVA_BYTE, offset + p);
      if (b != Pattern.at(guard, offset + p) && b != Pattern.at(data, from + p)) {
        return offset + p;
      }
    }
    return -1;
  }

  void free() {
    batch.free();
  }

  /**
   * Rounds back to back on a thread of their own until closed, each one's submit and completion
   * time recorded (completed rounds only: a round with a failed READ is no completion).
   */
  final class Loop implements AutoCloseable {
    /** {submit, completion} in nanoTime, in order. */
    private final List<long[]> rounds = new CopyOnWriteArrayList<>();

    private final Thread thread;
    private volatile boolean stop;

    Loop(RemoteSegment peer, long remote, long seed) {
      thread =
          Thread.ofPlatform()
              .name("bench-heal-reads")
              .start(
                  () -> {
                    while (!stop) {
                      long submitted = System.nanoTime();
                      boolean done = once(peer, remote, seed);
                      long completed = System.nanoTime();
                      if (done) {
                        rounds.add(new long[] {submitted, completed});
                      } else if (!failures.isEmpty()) {
                        return;
                      } else {
                        // A READ failed (drained, C5) or was refused: do not spin on a refusal.
                        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
                      }
                    }
                  });
    }

    /** Whether the loop still runs (it ends at a wrong byte or a round that never finished). */
    boolean running() {
      return thread.isAlive();
    }

    /**
     * The longest time between two consecutive completions where the later one is at or after
     * {@code from} and the earlier one before {@code to}; when no round completed after the last
     * one before {@code to}, that open gap up to {@code to} counts too.
     *
     * @return milliseconds
     */
    double longestGapAcross(long from, long to) {
      List<long[]> r = List.copyOf(rounds);
      long longest = 0;
      for (int j = 1; j < r.size(); j++) {
        long a = r.get(j - 1)[1];
        long b = r.get(j)[1];
        if (b >= from && a < to) {
          longest = Math.max(longest, b - a);
        }
      }
      if (!r.isEmpty() && r.getLast()[1] < to) {
        longest = Math.max(longest, to - Math.max(from, r.getLast()[1]));
      }
      return longest / 1e6;
    }

    /**
     * The longest time between two consecutive completions both within {@code [from, to)}.
     *
     * @return milliseconds
     */
    double longestGapWithin(long from, long to) {
      List<long[]> r = List.copyOf(rounds);
      long longest = 0;
      for (int j = 1; j < r.size(); j++) {
        if (r.get(j - 1)[1] >= from && r.get(j)[1] < to) {
          longest = Math.max(longest, r.get(j)[1] - r.get(j - 1)[1]);
        }
      }
      return longest / 1e6;
    }

    /**
     * The completion time of the first round submitted at or after {@code after}, waiting up to
     * {@code timeout} for it.
     *
     * @return nanoTime, or -1 when none completed in time
     */
    long firstCompletedSubmittedAfter(long after, Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (true) {
        for (long[] r : rounds) {
          if (r[0] >= after) {
            return r[1];
          }
        }
        if (System.nanoTime() - deadline > 0 || !running()) {
          return -1;
        }
        Thread.sleep(1);
      }
    }

    @Override
    public void close() throws InterruptedException {
      stop = true;
      thread.join();
    }
  }
}
