package io.orbite.transport.endpoint;

import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.wire.EngineIdentity;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The source side's record of which requester incarnation each of one transport's workers (TCP
 * source lanes, RDMA source sessions) serves, and the fencing of an old incarnation when a new one
 * says HELLO.
 *
 * <p>A requester is known by the identity its HELLO carries (engine name and listen endpoint) and
 * the address its connection comes from: a requester restarted with the same name at the same
 * endpoint is the same engine, while two engines that both say {@code 127.0.0.1} (each listening on
 * {@code 0.0.0.0} on its own host) are told apart by where they connect from. When a HELLO from
 * such a requester names epoch E2 while workers of the same requester with another epoch are still
 * here, those are closed (fenced): the old incarnation is dead, or will be refused by its peers,
 * and its sockets may never end by themselves (a lost FIN, a host that died). The new worker waits,
 * before it answers its HELLO, until every fenced worker has ended, so the old incarnation's loans
 * are back before the new one's first transfer can complete. A HELLO of the same epoch (a lane
 * reconnecting, a second lane) never fences; a HELLO without an identity neither fences nor is
 * fenced.
 *
 * <p>Used on the transport actor's thread only; the futures it hands out are completed there too
 * and may be waited on by the workers' own threads ({@link #await}).
 *
 * @param <W> the worker type
 */
public final class RequesterIncarnations<W> {
  private static final Logger LOG = LoggerFactory.getLogger(RequesterIncarnations.class);

  private record Requester(EngineIdentity identity, InetAddress from) {}

  private static final class Entry {
    final Requester requester;
    final long epoch;
    final CompletableFuture<Void> ended = new CompletableFuture<>();
    boolean fenced;

    Entry(Requester requester, long epoch) {
      this.requester = requester;
      this.epoch = epoch;
    }
  }

  private final String what;
  private final EngineTally counters;
  private final Map<W, Entry> entries = new HashMap<>();
  private int fencing;

  /**
   * The record of one transport's workers.
   *
   * @param what how the log names them, e.g. {@code "TCP source lanes"}
   * @param counters where the fenced workers are counted ({@code SOURCE_INCARNATIONS_FENCED})
   */
  public RequesterIncarnations(String what, EngineTally counters) {
    this.what = what;
    this.counters = counters;
  }

  /**
   * A HELLO from {@code requester}'s incarnation {@code epoch} arrived: when {@code mayFence},
   * fences every worker of that requester's other incarnations with {@code close}. Then {@link
   * #record} the worker made for it.
   *
   * @param requester the identity the HELLO carried, or null for none
   * @param from the address its connection comes from, or null if unknown
   * @param mayFence whether this HELLO may fence: false for one that will be refused anyway (it
   *     names another incarnation of this engine)
   * @param close closes a fenced worker (it drains and returns its loans), with the reason
   * @return what the new worker waits for before it answers the HELLO: the end of every worker of
   *     the requester's other incarnations, those fenced now and those fenced before that have not
   *     ended yet; complete when there is none
   */
  public CompletableFuture<Void> fence(
      EngineIdentity requester,
      long epoch,
      InetAddress from,
      boolean mayFence,
      BiConsumer<W, String> close) {
    Requester who = requester == null ? null : new Requester(requester, from);
    if (who == null || !mayFence) {
      return CompletableFuture.completedFuture(null);
    }
    List<CompletableFuture<Void>> waits = new ArrayList<>();
    List<W> fencedNow = new ArrayList<>();
    TreeSet<String> oldEpochs = new TreeSet<>();
    for (Map.Entry<W, Entry> e : entries.entrySet()) {
      Entry old = e.getValue();
      if (!who.equals(old.requester) || old.epoch == epoch) {
        continue;
      }
      waits.add(old.ended);
      if (!old.fenced) {
        old.fenced = true;
        fencing++;
        fencedNow.add(e.getKey());
        oldEpochs.add(Long.toHexString(old.epoch));
      }
    }
    if (!fencedNow.isEmpty()) {
      counters.add(Count.SOURCE_INCARNATIONS_FENCED, fencedNow.size());
      LOG.info(
          "requester {} (from {}) said HELLO as epoch {}: closing {} {} of its older incarnation"
              + " (epoch {}); they drain and return their loans before it is answered",
          requester,
          from,
          Long.toHexString(epoch),
          fencedNow.size(),
          what,
          String.join(", ", oldEpochs));
      String why =
          "requester " + requester + " restarted: epoch " + Long.toHexString(epoch) + " said HELLO";
      fencedNow.forEach(w -> close.accept(w, why));
    }
    return CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new));
  }

  /**
   * Records {@code worker}, made for a HELLO from {@code requester}'s incarnation {@code epoch}
   * (after its {@link #fence}).
   */
  public void record(W worker, EngineIdentity requester, long epoch, InetAddress from) {
    entries.put(
        worker, new Entry(requester == null ? null : new Requester(requester, from), epoch));
  }

  /** {@code worker} ended (its loans are back): whoever waited on it may go on. */
  public void ended(W worker) {
    Entry e = entries.remove(worker);
    if (e != null) {
      if (e.fenced) {
        fencing--;
      }
      e.ended.complete(null);
    }
  }

  /**
   * Workers fenced that have not ended yet: they are on their way out, so a bound on workers does
   * not count them against the new incarnation.
   *
   * @return how many
   */
  public int fencing() {
    return fencing;
  }

  /**
   * Waits on a worker's own thread until {@code fenced} completed, while {@code wanted} holds, at
   * most {@code millis}.
   *
   * @return true once it completed; false when the time ran out, the worker is no longer wanted (it
   *     was closed meanwhile) or its thread was interrupted (the flag is kept)
   */
  public static boolean await(CompletableFuture<Void> fenced, long millis, BooleanSupplier wanted) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (wanted.getAsBoolean()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      try {
        // In short steps: a close of the waiting worker is seen within one.
        fenced.get(Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)), TimeUnit.NANOSECONDS);
        return true;
      } catch (TimeoutException e) {
        // Not yet.
      } catch (java.util.concurrent.ExecutionException e) {
        return true; // never completed exceptionally; an end is an end
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return false;
  }
}
