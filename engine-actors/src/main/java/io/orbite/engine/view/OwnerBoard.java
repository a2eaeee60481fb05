package io.orbite.engine.view;

import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.OwnerView.Owner;
import io.orbite.engine.OwnerView.Retired;
import io.orbite.engine.PeerEntry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Signal;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The per-engine view of its resource owners: every owner actor pushes its state and charges here
 * when they change, and is moved to the retired list when it stops. Readers (metrics, the
 * dashboard) take {@link #snapshot()}s; nothing here reaches into an actor, and no lock is taken
 * (concurrent maps and deques only). Thread-safe.
 */
public final class OwnerBoard {
  /** How many retired owners are remembered (newest first). */
  public static final int MAX_RETIRED = 64;

  private final ConcurrentHashMap<String, Owner> owners = new ConcurrentHashMap<>();

  /** The state each live owner's behaviour declared last ({@link #in}), by owner key. */
  private final ConcurrentHashMap<String, OwnerState> declared = new ConcurrentHashMap<>();

  private final ConcurrentLinkedDeque<Retired> retired = new ConcurrentLinkedDeque<>();
  private final AtomicLong version = new AtomicLong();
  private volatile String rootPath = "";
  private volatile List<PeerEntry> peers = List.of();

  /** Live figures merged into the rows of an owner kind when a snapshot is taken, by kind. */
  private final ConcurrentHashMap<String, Supplier<Map<String, Long>>> figures =
      new ConcurrentHashMap<>();

  /**
   * Adds live figures to every row of owners of {@code kind}, read each time a snapshot is taken:
   * for counts that threads other than the owner's move (the engine's self-healing counts, on the
   * guardian's row), which the owner's own reports, made after its messages, would show late.
   *
   * @param kind the owners' kind, for example {@code "EngineGuardian"}
   * @param live the figures, by name; a name the owner reports itself keeps the owner's value
   */
  public void figures(String kind, Supplier<Map<String, Long>> live) {
    figures.put(kind, live);
  }

  /** Names the engine's guardian: owner paths are given relative to it. */
  public void root(ActorRef<?> guardian) {
    rootPath = guardian.path().toStringWithoutAddress();
  }

  /** {@code engine/<path below the guardian>} for an actor of this engine. */
  public String key(ActorRef<?> self) {
    String p = self.path().toStringWithoutAddress();
    String root = rootPath;
    if (!root.isEmpty() && p.startsWith(root)) {
      return "engine" + p.substring(root.length());
    }
    return "engine/" + self.path().name();
  }

  /** An owner reports its state and charges (replacing what it reported before). */
  public void publish(
      ActorRef<?> self, String kind, OwnerState state, Map<String, Long> charges, String detail) {
    publish(key(self), kind, state, charges, detail);
  }

  /**
   * {@link #publish(ActorRef, String, OwnerState, Map, String)} under a key the owner computed once
   * with {@link #key} (an owner that publishes on every state change, as a pooled batch does on
   * each lease and free, need not rebuild its actor path each time).
   */
  public void publish(
      String key, String kind, OwnerState state, Map<String, Long> charges, String detail) {
    long now = System.currentTimeMillis();
    owners.compute(
        key,
        (k, before) ->
            new Owner(
                k,
                kind,
                state,
                Map.copyOf(charges),
                detail == null ? "" : detail,
                before != null && before.state() == state ? before.sinceMillis() : now));
    version.incrementAndGet();
  }

  /** An owner stopped: it leaves the live tree and is remembered among the retired. */
  public void retire(ActorRef<?> self) {
    declared.remove(key(self));
    Owner last = owners.remove(key(self));
    if (last != null) {
      retired.addFirst(
          new Retired(
              last.path(), last.kind(), last.state(), last.detail(), System.currentTimeMillis()));
      while (retired.size() > MAX_RETIRED) {
        retired.pollLast();
      }
      version.incrementAndGet();
    }
  }

  /**
   * Removes the row under {@code key} without remembering it among the retired: for the rows an
   * owner actor publishes on behalf of the plain objects it owns (a context's CQ lanes, a source
   * session's grants), which come and go too often for the retired list.
   */
  public void withdraw(String key) {
    if (owners.remove(key) != null) {
      version.incrementAndGet();
    }
  }

  /** The segment table publishes its entries (peer incarnations with their epochs and states). */
  public void peers(List<PeerEntry> entries) {
    peers = List.copyOf(entries);
    version.incrementAndGet();
  }

  /** Increases on every change; a reader can skip work when it did not move. */
  public long version() {
    return version.get();
  }

  public OwnerView snapshot() {
    long v = version.get();
    List<Owner> live = new ArrayList<>(owners.size());
    for (Owner o : owners.values()) {
      Supplier<Map<String, Long>> extra = figures.get(o.kind());
      if (extra == null) {
        live.add(o);
      } else {
        Map<String, Long> charges = new java.util.TreeMap<>(extra.get());
        charges.putAll(o.charges());
        live.add(
            new Owner(
                o.path(), o.kind(), o.state(), Map.copyOf(charges), o.detail(), o.sinceMillis()));
      }
    }
    live.sort(Comparator.comparing(Owner::path));
    return new OwnerView(v, live, List.copyOf(retired), peers);
  }

  /**
   * What an owner says about itself besides its state: its kind, charges and detail. Its state is
   * the one its behaviour declares ({@link #in}); a report that names one (not null) overrides it.
   */
  public record Report(String kind, OwnerState state, Map<String, Long> charges, String detail) {
    /** A report whose state is the one the behaviour declares. */
    public Report(String kind, Map<String, Long> charges, String detail) {
      this(kind, null, charges, detail);
    }
  }

  /**
   * {@code behavior}, declared to be the owner's state {@code state}: while the actor runs it (or a
   * behaviour it returns that declares nothing), the owner view shows {@code state}. Each state
   * method of an owner returns {@code board.in(STATE, ...)}, so the state shown is the behaviour
   * the actor is in, never a field kept beside it. Used under {@link #reporting}.
   *
   * @param state the state this behaviour is
   * @param behavior the behaviour
   * @return the declared behaviour
   * @param <T> the actor's protocol
   */
  public <T> Behavior<T> in(OwnerState state, Behavior<T> behavior) {
    return Behaviors.intercept(() -> new InState<>(this, state), behavior);
  }

  /**
   * The row a live owner published last, or null.
   *
   * @param self the owner
   * @return its row
   */
  public Owner row(ActorRef<?> self) {
    return owners.get(key(self));
  }

  /**
   * The state a live owner's behaviour declared last, or null.
   *
   * @param self the owner
   * @return its declared state
   */
  public OwnerState declaredState(ActorRef<?> self) {
    return declared.get(key(self));
  }

  /** Records the state a behaviour declares when the actor starts it. */
  private static final class InState<T> extends BehaviorInterceptor<T, T> {
    private final OwnerBoard board;
    private final OwnerState state;

    @SuppressWarnings("unchecked")
    InState(OwnerBoard board, OwnerState state) {
      super((Class<T>) (Class<?>) Object.class);
      this.board = board;
      this.state = state;
    }

    @Override
    public Behavior<T> aroundStart(TypedActorContext<T> ctx, PreStartTarget<T> target) {
      board.declared.put(board.key(ctx.asJava().getSelf()), state);
      return target.start(ctx);
    }

    @Override
    public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
      return target.apply(ctx, msg);
    }

    /** A newer declaration replaces an older one instead of nesting inside it. */
    @Override
    @SuppressWarnings("rawtypes")
    public boolean isSame(BehaviorInterceptor other) {
      return other instanceof InState;
    }
  }

  /**
   * Wraps an owner's behaviour so that, on its own thread, it reports {@code report.get()} when it
   * starts and after every message that changed it, and is retired when it stops. {@code report}
   * reads only the actor's own fields.
   */
  public static <T> Behavior<T> reporting(
      OwnerBoard board, java.util.function.Supplier<Report> report, Behavior<T> behavior) {
    return Behaviors.intercept(() -> new Reporting<>(board, report), behavior);
  }

  private static final class Reporting<T> extends BehaviorInterceptor<T, T> {
    private final OwnerBoard board;
    private final java.util.function.Supplier<Report> report;
    private Report last;

    @SuppressWarnings("unchecked")
    Reporting(OwnerBoard board, java.util.function.Supplier<Report> report) {
      super((Class<T>) (Class<?>) Object.class);
      this.board = board;
      this.report = report;
    }

    private void publish(TypedActorContext<T> ctx) {
      Report now = report.get();
      if (now.state() == null) {
        OwnerState declared = board.declaredState(ctx.asJava().getSelf());
        now = new Report(now.kind(), declared, now.charges(), now.detail());
      }
      if (!now.equals(last)) {
        last = now;
        board.publish(ctx.asJava().getSelf(), now.kind(), now.state(), now.charges(), now.detail());
      }
    }

    @Override
    public Behavior<T> aroundStart(TypedActorContext<T> ctx, PreStartTarget<T> target) {
      Behavior<T> started = target.start(ctx);
      publish(ctx);
      return started;
    }

    @Override
    public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
      Behavior<T> next = target.apply(ctx, msg);
      if (Behavior.isAlive(next)) {
        publish(ctx);
      } else {
        board.retire(ctx.asJava().getSelf());
      }
      return next;
    }

    @Override
    public Behavior<T> aroundSignal(
        TypedActorContext<T> ctx, Signal signal, SignalTarget<T> target) {
      if (signal instanceof PostStop) {
        // The owner's own PostStop runs first, so a reader that sees it retired sees it stopped.
        try {
          return target.apply(ctx, signal);
        } finally {
          board.retire(ctx.asJava().getSelf());
        }
      }
      Behavior<T> next = target.apply(ctx, signal);
      if (Behavior.isAlive(next)) {
        publish(ctx);
      }
      return next;
    }
  }

  /**
   * Wraps an owner's behaviour so that it is retired from {@code board} when it stops, however it
   * stops (its own choice, a failure, or its parent stopping).
   */
  public static <T> Behavior<T> retiredOnStop(OwnerBoard board, Behavior<T> behavior) {
    return Behaviors.intercept(() -> new RetireOnStop<>(board), behavior);
  }

  private static final class RetireOnStop<T> extends BehaviorInterceptor<T, T> {
    private final OwnerBoard board;

    @SuppressWarnings("unchecked")
    RetireOnStop(OwnerBoard board) {
      super((Class<T>) (Class<?>) Object.class);
      this.board = board;
    }

    @Override
    public Behavior<T> aroundReceive(TypedActorContext<T> ctx, T msg, ReceiveTarget<T> target) {
      Behavior<T> next = target.apply(ctx, msg);
      if (!Behavior.isAlive(next)) {
        board.retire(ctx.asJava().getSelf());
      }
      return next;
    }

    @Override
    public Behavior<T> aroundSignal(
        TypedActorContext<T> ctx, Signal signal, SignalTarget<T> target) {
      if (signal instanceof PostStop) {
        board.retire(ctx.asJava().getSelf());
      }
      return target.apply(ctx, signal);
    }
  }
}
