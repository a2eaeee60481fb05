package io.orbite.engine.registry;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import io.orbite.engine.spi.SharedBacking;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * Owner of every registered range (C1). Child of the EngineGuardian; no children.
 *
 * <p>A range becomes visible to peers when the registry publishes it in the {@link RegistryView};
 * unregister hides it at once, then waits (on a timer) until workers have returned every loan
 * before the memory is released. A range whose loans do not come back within the destruction window
 * stays retained: its memory is never freed and the caller is told UNQUIESCED.
 *
 * <p>States: {@link #active}.
 */
public final class Registry {
  /** Messages the Registry understands. */
  public sealed interface Command {}

  /**
   * Register {@code segment}; {@code ownedArena} is non-null when the engine allocated it, {@code
   * shared} when that memory is a memfd exported to same-host peers, {@code name} when it is
   * registered under a name (already checked against {@code RegionNames}' rule by the caller; the
   * Registry refuses one that a live registration holds), {@code allowedPeers} when only the peers
   * it names may reach it (already checked by the caller; null for every peer).
   */
  public record Register(
      MemorySegment segment,
      Access access,
      Arena ownedArena,
      SharedBacking shared,
      String name,
      Set<String> allowedPeers,
      ActorRef<RegisterReply> replyTo)
      implements Command {
    /** A range every peer may reach. */
    public Register(
        MemorySegment segment,
        Access access,
        Arena ownedArena,
        SharedBacking shared,
        String name,
        ActorRef<RegisterReply> replyTo) {
      this(segment, access, ownedArena, shared, name, null, replyTo);
    }

    /** An unnamed range. */
    public Register(
        MemorySegment segment,
        Access access,
        Arena ownedArena,
        SharedBacking shared,
        ActorRef<RegisterReply> replyTo) {
      this(segment, access, ownedArena, shared, null, null, replyTo);
    }

    /** An unnamed range that is not shared. */
    public Register(
        MemorySegment segment, Access access, Arena ownedArena, ActorRef<RegisterReply> replyTo) {
      this(segment, access, ownedArena, null, null, null, replyTo);
    }
  }

  public sealed interface RegisterReply {}

  public record Registered(Registration memory) implements RegisterReply {}

  public record RegisterRefused(ErrorKind kind, String detail) implements RegisterReply {}

  /** Hide the range, wait for its loans, then release it. */
  public record Unregister(long regionId, ActorRef<UnregisterReply> replyTo) implements Command {}

  public sealed interface UnregisterReply {}

  public record Unregistered(long regionId) implements UnregisterReply {}

  public record UnregisterFailed(ErrorKind kind, String detail) implements UnregisterReply {}

  /**
   * The source side is closing (C8): fence every range exported through shared memory, so no
   * same-host peer starts a copy into or out of it any more; answer once no copy is in progress (or
   * at the destruction window, saying how many ranges still had one). The ranges stay registered
   * for local use. Every later shared range is fenced as it is registered.
   */
  public record FenceShared(ActorRef<SharedFenced> replyTo) implements Command {}

  /**
   * @param fenced the shared ranges fenced
   * @param stillCopying ranges a peer was still copying at the window's end (0: all fenced); -1:
   *     the Registry could not fence them
   */
  public record SharedFenced(int fenced, int stillCopying) {}

  private record PendingFence(
      List<Registration> ranges, long deadlineNanos, ActorRef<SharedFenced> replyTo) {}

  private enum LoanTick implements Command {
    INSTANCE
  }

  /** An unregistered range waiting for its loans; {@code quarantined} once the window passed. */
  private static final class PendingRelease {
    final Registration registration;
    final long deadlineNanos;
    final ActorRef<UnregisterReply> replyTo;
    boolean quarantined;

    PendingRelease(
        Registration registration, long deadlineNanos, ActorRef<UnregisterReply> replyTo) {
      this.registration = registration;
      this.deadlineNanos = deadlineNanos;
      this.replyTo = replyTo;
    }
  }

  private static final Duration LOAN_POLL = Duration.ofMillis(1);

  /** How often quarantined ranges are checked for a late return of their loans. */
  private static final Duration QUARANTINE_POLL = Duration.ofMillis(100);

  private final RegistryView view;
  private final int maxRegistrations;

  /**
   * How a quarantined Registry answers {@code m} (see {@code OwnerSupervision}): UNAVAILABLE for a
   * registration or unregistration; a FenceShared gets {@code stillCopying} -1, "could not fence"
   * (its ranges are out of reach); ticks need no answer.
   */
  public static void refuse(Command m, String why) {
    switch (m) {
      case Register r -> r.replyTo().tell(new RegisterRefused(ErrorKind.UNAVAILABLE, why));
      case Unregister u -> u.replyTo().tell(new UnregisterFailed(ErrorKind.UNAVAILABLE, why));
      case FenceShared f -> f.replyTo().tell(new SharedFenced(0, -1));
      default -> {}
    }
  }

  private final long destructionWindowNanos;
  private final TimerScheduler<Command> timers;
  private final QuarantineLedger quarantine;
  private final OwnerBoard board;
  private final Map<Long, Registration> live = new HashMap<>();

  /** The names of the live registrations, each to its region id; freed when it is unregistered. */
  private final Map<String, Long> names = new HashMap<>();

  private final List<PendingRelease> releasing = new ArrayList<>();
  private long nextRegionId = 1;
  private Duration currentPoll;
  private final List<PendingFence> fencing = new ArrayList<>();

  /**
   * Set by {@link FenceShared}: the source side is closed, no range is shared with peers any more.
   */
  private boolean sharedClosed;

  private Registry(
      RegistryView view,
      int maxRegistrations,
      Duration destructionWindow,
      QuarantineLedger quarantine,
      OwnerBoard board,
      TimerScheduler<Command> timers) {
    this.view = view;
    this.quarantine = quarantine;
    this.board = board;
    this.maxRegistrations = maxRegistrations;
    this.destructionWindowNanos = destructionWindow.toNanos();
    this.timers = timers;
  }

  public static Behavior<Command> create(
      RegistryView view, int maxRegistrations, Duration destructionWindow) {
    return create(view, maxRegistrations, destructionWindow, new QuarantineLedger());
  }

  /**
   * @param quarantine where ranges whose loans outlive the destruction window are listed
   */
  public static Behavior<Command> create(
      RegistryView view,
      int maxRegistrations,
      Duration destructionWindow,
      QuarantineLedger quarantine) {
    return create(view, maxRegistrations, destructionWindow, quarantine, new OwnerBoard());
  }

  /**
   * As above, reporting its registrations and the ranges it is releasing to {@code board} after
   * every change.
   */
  public static Behavior<Command> create(
      RegistryView view,
      int maxRegistrations,
      Duration destructionWindow,
      QuarantineLedger quarantine,
      OwnerBoard board) {
    return Behaviors.withTimers(
        timers -> {
          Registry registry =
              new Registry(view, maxRegistrations, destructionWindow, quarantine, board, timers);
          return OwnerBoard.reporting(board, registry::report, registry.active());
        });
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "Registry",
        Map.of(
            "registrations",
            (long) live.size(),
            "registrationsLimit",
            (long) maxRegistrations,
            "releasing",
            (long) releasing.size()),
        "");
  }

  private Behavior<Command> active() {
    return board.in(
        OwnerState.ACTIVE,
        Behaviors.receive(Command.class)
            .onMessage(Register.class, this::onRegister)
            .onMessage(Unregister.class, this::onUnregister)
            .onMessage(FenceShared.class, this::onFenceShared)
            .onMessageEquals(LoanTick.INSTANCE, this::onLoanTick)
            .onSignal(PostStop.class, s -> onStop())
            .build());
  }

  /**
   * The engine is closing (its transports have already drained): hide everything and free what no
   * worker holds. A range still on loan is left mapped, never freed under a worker.
   */
  private Behavior<Command> onStop() {
    List<Registration> all = new ArrayList<>(live.values());
    releasing.forEach(p -> all.add(p.registration));
    live.clear();
    names.clear();
    view.publish(live);
    for (Registration r : all) {
      r.hide();
      if (r.loans() == 0) {
        r.release();
      }
    }
    return Behaviors.same();
  }

  private Behavior<Command> onRegister(Register msg) {
    if (live.size() + releasing.size() >= maxRegistrations) {
      msg.replyTo()
          .tell(
              new RegisterRefused(
                  ErrorKind.RESOURCE_EXHAUSTED,
                  "registrations: budget of " + maxRegistrations + " is in use"));
      return Behaviors.same();
    }
    Long holder = msg.name() == null ? null : names.get(msg.name());
    if (holder != null) {
      msg.replyTo()
          .tell(
              new RegisterRefused(
                  ErrorKind.INVALID_ARGUMENT,
                  "region name '"
                      + msg.name()
                      + "' is held by region "
                      + holder
                      + "; names are unique among this engine's live registrations (unregister"
                      + " region "
                      + holder
                      + " first, or choose another name)"));
      return Behaviors.same();
    }
    Registration registration =
        new Registration(
            nextRegionId++,
            msg.segment(),
            msg.access(),
            msg.ownedArena(),
            msg.shared(),
            msg.name(),
            msg.allowedPeers());
    if (msg.name() != null) {
      names.put(msg.name(), registration.regionId());
    }
    if (sharedClosed) {
      // The source side is closed: a new range is never offered to same-host peers (nobody can
      // have mapped it yet, so its first fencing step succeeds).
      registration.fenceShared();
    }
    live.put(registration.regionId(), registration);
    view.publish(live);
    msg.replyTo().tell(new Registered(registration));
    return Behaviors.same();
  }

  private Behavior<Command> onUnregister(Unregister msg) {
    Registration registration = live.remove(msg.regionId());
    if (registration == null) {
      msg.replyTo()
          .tell(
              new UnregisterFailed(
                  ErrorKind.INVALID_ARGUMENT,
                  "region " + msg.regionId() + " is not registered (or already unregistered)"));
      return Behaviors.same();
    }
    registration.name().ifPresent(names::remove);
    registration.hide();
    view.publish(live);
    releasing.add(
        new PendingRelease(
            registration, System.nanoTime() + destructionWindowNanos, msg.replyTo()));
    return onLoanTick();
  }

  private Behavior<Command> onFenceShared(FenceShared msg) {
    sharedClosed = true;
    List<Registration> shared = live.values().stream().filter(r -> r.shared() != null).toList();
    fencing.add(
        new PendingFence(shared, System.nanoTime() + destructionWindowNanos, msg.replyTo()));
    return onLoanTick();
  }

  private Behavior<Command> onLoanTick() {
    long now = System.nanoTime();
    fencing.removeIf(
        f -> {
          // Every range gets its fencing step on every tick, so all of them withdraw liveness at
          // once.
          int copying = 0;
          for (Registration r : f.ranges()) {
            if (!r.fenceShared()) {
              copying++;
            }
          }
          if (copying == 0 || now - f.deadlineNanos() > 0) {
            f.replyTo().tell(new SharedFenced(f.ranges().size() - copying, copying));
            return true;
          }
          return false;
        });
    releasing.removeIf(
        p -> {
          Registration r = p.registration;
          // Shared memory is also fenced against same-host peers (their copies hold no local loan).
          if (r.loans() == 0 && r.fenceShared()) {
            r.release();
            if (p.quarantined) {
              quarantine.leave(owner(r));
            } else {
              p.replyTo.tell(new Unregistered(r.regionId()));
            }
            return true;
          }
          if (!p.quarantined && now - p.deadlineNanos > 0) {
            // Workers still hold loans after the destruction window: the range is quarantined. Its
            // memory stays mapped and charged, never freed under them; it is released if they let
            // go.
            p.quarantined = true;
            String why =
                r.loans() + " loan(s) still held after the destruction window; memory retained";
            quarantine.enter(
                new QuarantinedOwner(
                    owner(r),
                    QuarantinedOwner.Kind.REGISTRATION,
                    why,
                    0,
                    r.segment().byteSize(),
                    Instant.now()),
                () -> r.loans() > 0 && !r.released());
            p.replyTo.tell(new UnregisterFailed(ErrorKind.UNQUIESCED, r + ": " + why));
          }
          return false;
        });
    Duration poll = null;
    if (!releasing.isEmpty() || !fencing.isEmpty()) {
      // Poll fast while an unregister or a fence waits for its answer, slowly for quarantined
      // ranges.
      poll =
          !fencing.isEmpty() || releasing.stream().anyMatch(p -> !p.quarantined)
              ? LOAN_POLL
              : QUARANTINE_POLL;
    }
    if (poll == null) {
      timers.cancel(LoanTick.INSTANCE);
    } else if (!poll.equals(currentPoll) || !timers.isTimerActive(LoanTick.INSTANCE)) {
      timers.startTimerWithFixedDelay(LoanTick.INSTANCE, poll);
    }
    currentPoll = poll;
    return Behaviors.same();
  }

  private static String owner(Registration r) {
    return "registration " + r.regionId();
  }
}
