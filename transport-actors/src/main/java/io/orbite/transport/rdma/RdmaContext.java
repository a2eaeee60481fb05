package io.orbite.transport.rdma;

import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.rail.RailHealth;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * Owner of one rail ({@link Rail}: device context, PD, persistent MRs, CQ lanes). Child of the
 * RdmaTransport.
 *
 * <p>States: {@link #active} ⇄ {@link #paused} (its port is down: the monitor, one scan a second
 * even without traffic, saw it; its MRs are kept, its pairs are failed in the rail circuit so
 * requests go to other rails; it resumes when the port is ACTIVE again; while active, a lane whose
 * CQ failed is replaced once natively drained, {@link #laneFaults}) → {@link #closing} (lanes
 * stopped and joined on the blocking-I/O executor, then the native objects released in dependency
 * order) → stopped; or {@link #quarantined} when a release failed: what depends on it is kept,
 * nothing is retried.
 */
final class RdmaContext {
  sealed interface Command {}

  record Close(ActorRef<Closed> replyTo) implements Command {}

  record Closed(String device) {}

  private enum Tick implements Command {
    INSTANCE
  }

  /** Re-publishes the owner view's figures (they move on lane threads, between messages). */
  private enum Refresh implements Command {
    INSTANCE
  }

  private record Released(List<String> failures) implements Command {}

  private static final Duration SCAN = Duration.ofSeconds(1);

  private final Rail rail;
  private final TransportContext context;
  private final RailHealth health;
  private final RailSelector selector;
  private final TimerScheduler<Command> timers;
  private OwnerState state = OwnerState.ACTIVE;
  private long pauses;
  private String detail = "";

  /** The reclaim of a faulted lane in progress on the blocking-I/O executor, or a done one. */
  private CompletableFuture<Void> reclaiming = CompletableFuture.completedFuture(null);

  /** Faulted lanes replaced by fresh ones after their native drain (written by the reclaim). */
  private final java.util.concurrent.atomic.AtomicLong lanesReplaced =
      new java.util.concurrent.atomic.AtomicLong();

  /** Faulted lanes kept for good: their release failed or their thread did not end. */
  private final java.util.Set<CqLane> lanesKept =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  private RdmaContext(
      Rail rail,
      TransportContext context,
      RailHealth health,
      RailSelector selector,
      TimerScheduler<Command> timers) {
    this.selector = selector;
    this.rail = rail;
    this.context = context;
    this.health = health;
    this.timers = timers;
  }

  static Behavior<Command> create(
      Rail rail, TransportContext context, RailHealth health, RailSelector selector) {
    return Behaviors.withTimers(
        timers -> {
          RdmaContext c = new RdmaContext(rail, context, health, selector, timers);
          timers.startTimerWithFixedDelay(Tick.INSTANCE, SCAN);
          timers.startTimerWithFixedDelay(Refresh.INSTANCE, RdmaTransport.VIEW_REFRESH);
          return OwnerBoard.reporting(context.owners(), c::report, c.active());
        });
  }

  private OwnerBoard.Report report() {
    RailHealth.RailCounts circuit = health.rail(rail.index);
    RailSelector.Load load = selector.load(rail.index);
    return new OwnerBoard.Report(
        "RdmaContext",
        state,
        Map.ofEntries(
            Map.entry("mrs", (long) rail.mrs.size()),
            Map.entry("mrsRegistered", rail.mrs.registered.sum()),
            Map.entry("mrsKept", (long) rail.mrs.kept()),
            Map.entry("lanes", (long) rail.lanes.size()),
            Map.entry("lanesFaulted", rail.lanesFaulted.sum()),
            Map.entry("lanesReplaced", lanesReplaced.get()),
            Map.entry("lanesKept", (long) lanesKept.size()),
            Map.entry("pauses", pauses),
            Map.entry("railPairsOpen", (long) circuit.pairsOpen()),
            Map.entry("railPairsHalfOpen", (long) circuit.pairsHalfOpen()),
            Map.entry("railErrors", circuit.errors()),
            Map.entry("linkBytesPerSecond", load.linkBytesPerSecond()),
            Map.entry("selectionBytesPerSecond", load.selectionBytesPerSecond()),
            Map.entry("transmitBytesPerSecond", load.transmitBytesPerSecond()),
            Map.entry("chargedBytes", load.chargedBytes()),
            Map.entry("postedBytes", load.postedBytes()),
            Map.entry("completedBytes", load.completedBytes()),
            Map.entry("allocatedBytes", load.allocatedBytes()),
            Map.entry("numaNode", (long) rail.numaNode),
            Map.entry("tier", (long) load.tier()),
            Map.entry("eligible", selector.policy().allowed(rail.index) ? 1L : 0L)),
        rail.device + (detail.isEmpty() ? "" : ": " + detail));
  }

  private Behavior<Command> active() {
    state = OwnerState.ACTIVE;
    return Behaviors.receive(Command.class)
        .onMessageEquals(
            Tick.INSTANCE,
            () -> {
              laneFaults();
              if (!rail.portActive()) {
                pauses++;
                detail = "port " + Rail.PORT + " is down";
                health.portFault(rail.index);
                return paused();
              }
              return Behaviors.same();
            })
        .onMessageEquals(Refresh.INSTANCE, this::onRefresh)
        .onMessage(Close.class, this::onClose)
        .build();
  }

  /**
   * The MR sweep: a hidden registration's MR is deregistered once no work holds the range, so that
   * its unregister can free the memory (the MR's device pin keeps it until then). Deregistration is
   * a native call (on hardware it unpins the pages), so it runs on the blocking-I/O executor, one
   * sweep at a time.
   */
  private Behavior<Command> onRefresh() {
    if (rail.mrs.anyHidden() && sweeping.compareAndSet(false, true)) {
      CompletableFuture.runAsync(
          () -> {
            try {
              rail.mrs.sweep();
            } finally {
              sweeping.set(false);
            }
          },
          context.blockingIo());
    }
    return Behaviors.same();
  }

  private final java.util.concurrent.atomic.AtomicBoolean sweeping =
      new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * Shows a faulted lane in the owner detail and reclaims it once it is natively drained (every QP
   * on its CQ destroyed): on the blocking-I/O executor its thread is stopped and joined, its id MR
   * and CQ released, and a fresh lane with a CQ of its own takes its index. A lane whose release
   * fails (or whose thread does not end) is kept as it is, never released again; its failure
   * quarantines the context at close. One reclaim at a time.
   */
  private void laneFaults() {
    String shown = null;
    for (CqLane lane : rail.lanes) {
      if (lane.faulted() == null) {
        continue;
      }
      shown =
          lane.name
              + ": "
              + lane.faulted()
              + (lanesKept.contains(lane)
                  ? " (kept, not reclaimed)"
                  : lane.nativelyDrained() ? "" : " (waiting for its QPs' destroy)");
      if (lane.nativelyDrained() && !lanesKept.contains(lane) && reclaiming.isDone()) {
        reclaiming = CompletableFuture.runAsync(() -> reclaim(lane), context.blockingIo());
      }
    }
    if (shown != null) {
      detail = shown;
    } else if (lanesReplaced.get() > 0) {
      detail = lanesReplaced.get() + " faulted lane(s) replaced after their QPs were destroyed";
    }
  }

  private void reclaim(CqLane old) {
    old.stop();
    if (!old.join(10_000)) {
      lanesKept.add(old);
      return;
    }
    if (!old.release().isEmpty()) {
      lanesKept.add(old);
      return;
    }
    var fresh = rail.freshLane(old.index);
    if (!fresh.ok()) {
      // Released, but not replaced: the index keeps the faulted lane, on which no QP is made.
      lanesKept.add(old);
      return;
    }
    fresh.value().start();
    rail.lanes.set(old.index, fresh.value());
    lanesReplaced.incrementAndGet();
  }

  private Behavior<Command> paused() {
    state = OwnerState.FENCED;
    return Behaviors.receive(Command.class)
        .onMessageEquals(
            Tick.INSTANCE,
            () -> {
              if (rail.portActive()) {
                detail = "";
                return active();
              }
              health.portFault(rail.index);
              return Behaviors.same();
            })
        .onMessageEquals(Refresh.INSTANCE, this::onRefresh)
        .onMessage(Close.class, this::onClose)
        .build();
  }

  private Behavior<Command> onClose(Close m) {
    timers.cancelAll();
    state = OwnerState.CLOSING;
    CompletableFuture<List<String>> released =
        reclaiming.handleAsync(
            (done, error) -> {
              // After a lane reclaim in progress, so that its fresh lane is closed too.
              rail.lanes.forEach(CqLane::stop);
              for (CqLane lane : rail.lanes) {
                if (!lane.join(10_000)) {
                  return List.of(lane.name + " did not end within 10 s");
                }
              }
              return rail.close();
            },
            context.blockingIo());
    ActorRef<Closed> replyTo = m.replyTo();
    return Behaviors.setup(
        ctx -> {
          ctx.pipeToSelf(
              released,
              (failures, error) ->
                  new Released(failures != null ? failures : List.of(String.valueOf(error))));
          return Behaviors.receive(Command.class)
              .onMessage(
                  Released.class,
                  r -> {
                    replyTo.tell(new Closed(rail.device));
                    if (r.failures().isEmpty()) {
                      state = OwnerState.CLOSED;
                      return Behaviors.stopped();
                    }
                    return quarantined(r.failures());
                  })
              .onMessage(
                  Close.class,
                  c -> {
                    c.replyTo().tell(new Closed(rail.device));
                    return Behaviors.same();
                  })
              .onMessageEquals(Tick.INSTANCE, Behaviors::same)
              .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
              .build();
        });
  }

  private Behavior<Command> quarantined(List<String> failures) {
    state = OwnerState.QUARANTINED;
    detail = String.join("; ", failures);
    context
        .quarantine()
        .enter(
            new QuarantinedOwner(
                "RdmaContext " + rail.device,
                QuarantinedOwner.Kind.LANE,
                "native release failed (never retried): " + detail,
                0,
                0,
                java.time.Instant.now()),
            () -> true);
    return Behaviors.receive(Command.class)
        .onMessage(
            Close.class,
            c -> {
              c.replyTo().tell(new Closed(rail.device));
              return Behaviors.same();
            })
        .onMessageEquals(Tick.INSTANCE, Behaviors::same)
        .onMessageEquals(Refresh.INSTANCE, Behaviors::same)
        .build();
  }
}
