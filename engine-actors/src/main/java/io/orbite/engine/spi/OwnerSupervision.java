package io.orbite.engine.spi;

import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.view.OwnerBoard;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Supervision of the engine's owner actors (the Registry, Admission, the SegmentTable, the control
 * service, the batches' owners, and every transport's owners: supervisors, endpoints, contexts,
 * lanes' owners, sessions, grants): an unexpected exception in one of them does not stop it, and
 * does not restart it with its state lost. The owner turns <em>quarantined</em>: what it held stays
 * held (its registrations stay mapped, its charges charged, for the process's life), it is listed
 * by {@code quarantined()} with the charges it last reported, every message still reaching it is
 * answered UNAVAILABLE naming it, and the facade refuses calls that need it at once, without a
 * message ({@link #unavailable}). The guardian also watches each of them, and an owner that stopped
 * is marked the same way ({@link #stopped}).
 */
public final class OwnerSupervision {
  private static final Logger LOG = LoggerFactory.getLogger(OwnerSupervision.class);

  /**
   * Answers one message of a quarantined owner, when it expects an answer: UNAVAILABLE, saying
   * {@code why}.
   */
  @FunctionalInterface
  public interface Refusal<T> {
    void refuse(T message, String why);
  }

  private final String engine;
  private final QuarantineLedger ledger;
  private final OwnerBoard board;
  private final EngineTally counters;
  private final FaultHooks hooks;

  /** Why each quarantined owner is down, by owner name. */
  private final Map<String, String> down = new ConcurrentHashMap<>();

  public OwnerSupervision(
      String engine,
      QuarantineLedger ledger,
      EngineTally counters,
      OwnerBoard board,
      FaultHooks hooks) {
    this.engine = engine;
    this.ledger = ledger;
    this.board = board;
    this.counters = counters;
    this.hooks = hooks;
  }

  /** Why {@code owner} is quarantined, or null while it runs. */
  public String downBecause(String owner) {
    return down.get(owner);
  }

  /**
   * What a call that needs {@code owner} is refused with while it is quarantined.
   *
   * @return "the Registry of engine ... is quarantined (why)", or null while the owner runs
   */
  public String unavailable(String owner) {
    String why = down.get(owner);
    return why == null ? null : message(owner, why);
  }

  private String message(String owner, String why) {
    return "the " + owner + " of engine " + engine + " is quarantined (" + why + ")";
  }

  /**
   * {@code behavior} under supervision.
   *
   * @param owner the owner's name in messages and in {@code quarantined()}, for example {@code
   *     Registry}
   * @param refusal how a message is answered once the owner is quarantined
   */
  public <T> Behavior<T> supervise(
      String owner, Class<T> type, Behavior<T> behavior, Refusal<T> refusal) {
    return Behaviors.intercept(() -> new Supervising<>(owner, type, refusal), behavior);
  }

  /** The guardian saw {@code owner} stop while the engine runs. */
  public void stopped(String owner, String path) {
    enter(owner, "its actor " + path + " stopped unexpectedly", Map.of());
  }

  private void enter(String owner, String why, Map<String, Long> charges) {
    if (down.putIfAbsent(owner, why) != null) {
      return;
    }
    ledger.enter(
        new QuarantinedOwner(
            owner,
            QuarantinedOwner.Kind.OWNER,
            why + "; it keeps what it held" + (charges.isEmpty() ? "" : ": " + charges),
            charges.getOrDefault("tasks", 0L),
            charges.getOrDefault("bytes", 0L),
            Instant.now()),
        () -> true);
    counters.increment(Count.OWNERS_QUARANTINED);
  }

  private final class Supervising<T> extends BehaviorInterceptor<T, T> {
    private final String owner;
    private final Class<T> type;
    private final Refusal<T> refusal;

    Supervising(String owner, Class<T> type, Refusal<T> refusal) {
      super(type);
      this.owner = owner;
      this.type = type;
      this.refusal = refusal;
    }

    @Override
    public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
      try {
        if (!down.containsKey(owner)) {
          hooks.beforeOwnerMessage(owner, msg);
        }
        return target.apply(ctx, msg);
      } catch (RuntimeException e) {
        return quarantine(ctx, msg, e);
      }
    }

    private Behavior<T> quarantine(TypedActorContext<T> ctx, T msg, RuntimeException e) {
      String why = "unexpected " + e + " while it handled " + msg.getClass().getSimpleName();
      LOG.error("engine {}: {} quarantined: {}", engine, owner, why, e);
      Map<String, Long> charges = new TreeMap<>();
      // The row keeps the kind its owner reported (several owners of one kind have one row each).
      String kind = owner;
      OwnerView.Owner row = board.row(ctx.asJava().getSelf());
      if (row != null) {
        kind = row.kind();
        row.charges()
            .forEach(
                (name, value) -> {
                  if (!name.endsWith("Limit")) { // the configured limits are not held
                    charges.put(name, value);
                  }
                });
      }
      enter(owner, why, charges);
      board.publish(ctx.asJava().getSelf(), kind, OwnerState.QUARANTINED, charges, why);
      refuse(msg);
      return Behaviors.receive(type)
          .onAnyMessage(
              m -> {
                refuse(m);
                return Behaviors.same();
              })
          .build();
    }

    private void refuse(T m) {
      try {
        refusal.refuse(m, message(owner, down.get(owner)));
      } catch (RuntimeException e) {
        LOG.error("engine {}: quarantined {} could not refuse {}", engine, owner, m, e);
      }
    }
  }
}
