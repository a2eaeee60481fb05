package io.orbite.engine.registry;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.spi.SharedBacking;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
 * before the memory is released. A range whose loans do not come back within the destruction
 * window stays retained: its memory is never freed and the caller is told UNQUIESCED.
 *
 * <p>States: {@link #active}.
 */
public final class Registry {
  /** Messages the Registry understands. */
  public sealed interface Command {}

  /**
   * Register {@code segment}; {@code ownedArena} is non-null when the engine allocated it, {@code
   * shared} when that memory is a memfd exported to same-host peers.
   */
  public record Register(MemorySegment segment, Access access, Arena ownedArena, SharedBacking shared,
      ActorRef<RegisterReply> replyTo) implements Command {
    public Register(MemorySegment segment, Access access, Arena ownedArena, ActorRef<RegisterReply> replyTo) {
      this(segment, access, ownedArena, null, replyTo);
    }
  }

  public sealed interface RegisterReply {}

  public record Registered(RegisteredMemory memory) implements RegisterReply {}

  public record RegisterRefused(ErrorKind kind, String detail) implements RegisterReply {}

  /** Hide the range, wait for its loans, then release it. */
  public record Unregister(long regionId, ActorRef<UnregisterReply> replyTo) implements Command {}

  public sealed interface UnregisterReply {}

  public record Unregistered(long regionId) implements UnregisterReply {}

  public record UnregisterFailed(ErrorKind kind, String detail) implements UnregisterReply {}

  private enum LoanTick implements Command {
    INSTANCE
  }

  private record PendingRelease(Registration registration, long deadlineNanos, ActorRef<UnregisterReply> replyTo) {}

  private static final Duration LOAN_POLL = Duration.ofMillis(1);

  private final RegistryView view;
  private final int maxRegistrations;
  private final long destructionWindowNanos;
  private final TimerScheduler<Command> timers;
  private final Map<Long, Registration> live = new HashMap<>();
  private final List<PendingRelease> releasing = new ArrayList<>();
  private long nextRegionId = 1;

  private Registry(RegistryView view, int maxRegistrations, Duration destructionWindow, TimerScheduler<Command> timers) {
    this.view = view;
    this.maxRegistrations = maxRegistrations;
    this.destructionWindowNanos = destructionWindow.toNanos();
    this.timers = timers;
  }

  public static Behavior<Command> create(RegistryView view, int maxRegistrations, Duration destructionWindow) {
    return Behaviors.withTimers(timers -> new Registry(view, maxRegistrations, destructionWindow, timers).active());
  }

  private Behavior<Command> active() {
    return Behaviors.receive(Command.class)
        .onMessage(Register.class, this::onRegister)
        .onMessage(Unregister.class, this::onUnregister)
        .onMessageEquals(LoanTick.INSTANCE, this::onLoanTick)
        .onSignal(PostStop.class, s -> onStop())
        .build();
  }

  /**
   * The engine is closing (its transports have already drained): hide everything and free what no
   * worker holds. A range still on loan is left mapped, never freed under a worker.
   */
  private Behavior<Command> onStop() {
    List<Registration> all = new ArrayList<>(live.values());
    releasing.forEach(p -> all.add(p.registration()));
    live.clear();
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
      msg.replyTo().tell(new RegisterRefused(
          ErrorKind.RESOURCE_EXHAUSTED, "registrations: budget of " + maxRegistrations + " is in use"));
      return Behaviors.same();
    }
    Registration registration = new Registration(nextRegionId++, msg.segment(), msg.access(), msg.ownedArena(),
        msg.shared());
    live.put(registration.regionId(), registration);
    view.publish(live);
    msg.replyTo().tell(new Registered(new RegisteredMemory(registration)));
    return Behaviors.same();
  }

  private Behavior<Command> onUnregister(Unregister msg) {
    Registration registration = live.remove(msg.regionId());
    if (registration == null) {
      msg.replyTo().tell(new UnregisterFailed(
          ErrorKind.INVALID_ARGUMENT, "region " + msg.regionId() + " is not registered (or already unregistered)"));
      return Behaviors.same();
    }
    registration.hide();
    view.publish(live);
    releasing.add(new PendingRelease(registration, System.nanoTime() + destructionWindowNanos, msg.replyTo()));
    return onLoanTick();
  }

  private Behavior<Command> onLoanTick() {
    long now = System.nanoTime();
    releasing.removeIf(p -> {
      Registration r = p.registration();
      // Shared memory is also fenced against same-host peers (their copies hold no local loan).
      if (r.loans() == 0 && r.fenceShared()) {
        r.release();
        p.replyTo().tell(new Unregistered(r.regionId()));
        return true;
      }
      if (now - p.deadlineNanos() > 0) {
        // Workers still hold loans after the destruction window: the memory stays mapped and
        // charged for the life of the process (quarantined), never freed under them.
        p.replyTo().tell(new UnregisterFailed(
            ErrorKind.UNQUIESCED, r + ": " + r.loans() + " loan(s) still held after the destruction window; memory retained"));
        return true;
      }
      return false;
    });
    if (releasing.isEmpty()) {
      timers.cancel(LoanTick.INSTANCE);
    } else if (!timers.isTimerActive(LoanTick.INSTANCE)) {
      timers.startTimerWithFixedDelay(LoanTick.INSTANCE, LOAN_POLL);
    }
    return Behaviors.same();
  }
}
