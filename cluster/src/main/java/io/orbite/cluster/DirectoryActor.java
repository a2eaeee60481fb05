package io.orbite.cluster;

import io.orbite.cluster.EntryCodec.Listed;
import io.orbite.config.DirectoryConfig;
import io.orbite.engine.TransferEngine;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.ddata.Key;
import org.apache.pekko.cluster.ddata.LWWMap;
import org.apache.pekko.cluster.ddata.LWWMapKey;
import org.apache.pekko.cluster.ddata.SelfUniqueAddress;
import org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData;
import org.apache.pekko.cluster.ddata.typed.javadsl.Replicator;
import org.apache.pekko.cluster.ddata.typed.javadsl.ReplicatorMessageAdapter;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One engine's membership in the peer directory: a system actor (spawned by {@link
 * PeerDirectory#join}, no children) that owns the engine's entry in the replicated map and this
 * replica's view of everyone else's.
 *
 * <p>It publishes the entry once the engine is ready, and again whenever what the engine has (named
 * regions) differs from what is listed, at {@code directory.writeConsistency}; it withdraws it when
 * the engine closes or the directory leaves. It follows the map (a Distributed Data subscription)
 * and the cluster's membership: an entry whose member is not up is not listed, and any node removes
 * the entries of a member that exited, was downed or removed (idempotent). Each new view goes to
 * the {@link PeerDirectory} (a volatile snapshot read without a mailbox round trip) with its
 * changes; a peer that restarted or went is passed to the engine's {@code checkPeer}, the authority
 * (C3).
 *
 * <p>When another incarnation publishes under this engine's name after this one did, the newer
 * claim stands (last writer wins, as a restarted process publishes over its dead predecessor): this
 * directory logs it once and stops publishing, and its withdrawal removes only its own entry.
 *
 * <p>States: {@link #running()} and {@link #leaving}. Supervised: a failure restarts it from its
 * setup (at most 10 times a minute), which subscribes again and republishes from the engine. What
 * the replica holds (the map, the membership) is a {@link Replica}; it and what was published are
 * fields of this instance, confined to the actor like a behaviour's data.
 */
final class DirectoryActor {
  private static final Logger LOG = LoggerFactory.getLogger(DirectoryActor.class);

  /** The one key of the replicated map: engine name to its entry as JSON. */
  static final Key<LWWMap<String, String>> KEY = LWWMapKey.create("orbite-peers");

  /** What the actor understands. */
  sealed interface Command {}

  /**
   * Withdraw this engine's entry and stop; sent by {@link PeerDirectory#close()}.
   *
   * @param replyTo told once the withdrawal was written (or failed) and the actor stops
   */
  record Leave(ActorRef<Done> replyTo) implements Command {}

  private enum Refresh implements Command {
    INSTANCE
  }

  private record ReplicaChanged(Replicator.SubscribeResponse<LWWMap<String, String>> response)
      implements Command {}

  private record MembershipChanged(ClusterEvent.MemberEvent event) implements Command {}

  private record Written(Replicator.UpdateResponse<LWWMap<String, String>> response, String value)
      implements Command {}

  private record Cleaned(Replicator.UpdateResponse<LWWMap<String, String>> response)
      implements Command {}

  private record Withdrawn(
      Replicator.UpdateResponse<LWWMap<String, String>> response, ActorRef<Done> replyTo)
      implements Command {}

  /** Where each new view and its changes go (the {@link PeerDirectory}). */
  interface Outlet extends BiConsumer<DirectoryView, List<DirectoryChange>> {}

  private final ActorContext<Command> context;
  private final ReplicatorMessageAdapter<Command, LWWMap<String, String>> replicator;
  private final TransferEngine engine;
  private final DirectoryConfig config;
  private final Outlet outlet;
  private final String name;
  private final SelfUniqueAddress self;
  private final String selfAddress;
  private final long selfUid;
  private final Replicator.WriteConsistency write;

  private final Replica replica;
  private DirectoryView view = DirectoryView.EMPTY;
  private String published;
  private boolean writing;
  private boolean cleaning;
  private boolean withdrawing;
  private boolean yielded;

  private DirectoryActor(
      ActorContext<Command> context,
      ReplicatorMessageAdapter<Command, LWWMap<String, String>> replicator,
      TransferEngine engine,
      Outlet outlet) {
    this.context = context;
    this.replicator = replicator;
    this.engine = engine;
    this.config = engine.config().directory();
    this.outlet = outlet;
    this.name = engine.config().name();
    this.self = DistributedData.get(context.getSystem()).selfUniqueAddress();
    this.selfAddress = self.uniqueAddress().address().toString();
    this.selfUid = self.uniqueAddress().longUid();
    this.write = Consistency.write(config);
    this.replica = new Replica(name);
  }

  /**
   * The directory of {@code engine}.
   *
   * @param engine the engine, spawned in a clustered ActorSystem
   * @param outlet told every new view and its changes
   */
  static Behavior<Command> create(TransferEngine engine, Outlet outlet) {
    // Supervised: a failure restarts the actor from setup (it subscribes again, and its first
    // refresh publishes the entry again from what the engine has), at most 10 times a minute;
    // past that it stops, logged, rather than spin.
    return Behaviors.supervise(
            Behaviors.<Command>setup(
                context ->
                    DistributedData.<Command, LWWMap<String, String>>withReplicatorMessageAdapter(
                        replicator ->
                            Behaviors.withTimers(
                                timers -> {
                                  DirectoryActor actor =
                                      new DirectoryActor(context, replicator, engine, outlet);
                                  return actor.start(timers);
                                }))))
        .onFailure(
            Exception.class, SupervisorStrategy.restart().withLimit(10, Duration.ofMinutes(1)));
  }

  private Behavior<Command> start(TimerScheduler<Command> timers) {
    replicator.subscribe(KEY, ReplicaChanged::new);
    ActorRef<ClusterEvent.MemberEvent> membership =
        context.messageAdapter(ClusterEvent.MemberEvent.class, MembershipChanged::new);
    Cluster.get(context.getSystem())
        .subscriptions()
        .tell(Subscribe.create(membership, ClusterEvent.MemberEvent.class));
    timers.startTimerWithFixedDelay(
        Refresh.INSTANCE, Refresh.INSTANCE, Duration.ofMillis(config.refreshMillis()));
    context.getSelf().tell(Refresh.INSTANCE);
    return running();
  }

  private Behavior<Command> running() {
    return Behaviors.receive(Command.class)
        .onMessageEquals(Refresh.INSTANCE, this::onRefresh)
        .onMessage(ReplicaChanged.class, this::onReplicaChanged)
        .onMessage(MembershipChanged.class, this::onMembershipChanged)
        .onMessage(Written.class, this::onWritten)
        .onMessage(Cleaned.class, this::onCleaned)
        .onMessage(Withdrawn.class, this::onWithdrawn)
        .onMessage(Leave.class, this::onLeave)
        .build();
  }

  /**
   * Waiting for the withdrawal of the entry before stopping; a second Leave is answered at once.
   */
  private Behavior<Command> leaving(ActorRef<Done> replyTo) {
    return Behaviors.receive(Command.class)
        .onMessage(
            Withdrawn.class,
            w -> {
              logWithdrawal(w.response());
              replyTo.tell(Done.getInstance());
              return Behaviors.stopped();
            })
        .onMessage(
            Leave.class,
            l -> {
              l.replyTo().tell(Done.getInstance());
              return Behaviors.same();
            })
        .onAnyMessage(m -> Behaviors.same())
        .build();
  }

  private Behavior<Command> onRefresh() {
    maybePublish();
    return Behaviors.same();
  }

  private Behavior<Command> onReplicaChanged(ReplicaChanged m) {
    if (m.response() instanceof Replicator.Changed<LWWMap<String, String>> changed) {
      replica.mapChanged(changed.get(KEY).getEntries());
      cleanDeparted();
      updateView();
      maybePublish();
    }
    return Behaviors.same();
  }

  private Behavior<Command> onMembershipChanged(MembershipChanged m) {
    replica.memberChanged(m.event().member());
    if (!Replica.LIVE.contains(m.event().member().status())) {
      cleanDeparted();
    }
    updateView();
    return Behaviors.same();
  }

  private Behavior<Command> onWritten(Written m) {
    writing = false;
    if (m.response() instanceof Replicator.UpdateSuccess<?>) {
      published = m.value();
    } else if (m.response() instanceof Replicator.UpdateTimeout<?>) {
      // The write is on this replica and spreads by gossip; fewer replicas than asked confirmed it.
      published = m.value();
      LOG.info(
          "directory of {}: publishing reached fewer replicas than '{}' within {} ms; it spreads"
              + " by gossip",
          name,
          config.writeConsistency(),
          config.consistencyTimeoutMillis());
    } else {
      LOG.warn(
          "directory of {}: publishing failed ({}); tried again in {} ms",
          name,
          m.response(),
          config.refreshMillis());
    }
    return Behaviors.same();
  }

  private Behavior<Command> onCleaned(Cleaned m) {
    cleaning = false;
    if (!(m.response() instanceof Replicator.UpdateSuccess<?>)
        && !(m.response() instanceof Replicator.UpdateTimeout<?>)) {
      LOG.warn(
          "directory of {}: removing departed members' entries failed: {}", name, m.response());
    }
    return Behaviors.same();
  }

  private Behavior<Command> onWithdrawn(Withdrawn m) {
    logWithdrawal(m.response());
    return Behaviors.same();
  }

  private Behavior<Command> onLeave(Leave m) {
    if (published == null && !writing) {
      m.replyTo().tell(Done.getInstance());
      return Behaviors.stopped();
    }
    if (!withdraw(m.replyTo())) {
      m.replyTo().tell(Done.getInstance());
      return Behaviors.stopped();
    }
    return leaving(m.replyTo());
  }

  /** Publishes the engine's entry when it is ready and differs from what is listed. */
  private void maybePublish() {
    if (!EngineFacts.running(engine)) {
      if (published != null && !withdrawing) {
        withdraw(null);
      }
      return;
    }
    if (yielded || writing || withdrawing || !EngineFacts.ready(engine)) {
      return;
    }
    Listed mine =
        new Listed(
            new DirectoryEntry(
                name,
                engine.localSegment(),
                EngineFacts.transports(engine),
                EngineFacts.publishedRegions(engine),
                selfAddress),
            selfUid);
    String value = EntryCodec.write(mine);
    String current = replica.value(name);
    if (value.equals(current)) {
      published = value;
      return;
    }
    Listed other = replica.entry(name).orElse(null);
    if (published != null && other != null && !isMine(other)) {
      yielded = true;
      LOG.warn(
          "directory of {}: another incarnation ({} in {}) now publishes under this name; this"
              + " engine ({}) no longer publishes",
          name,
          other.entry().segment(),
          other.entry().member(),
          engine.localSegment());
      return;
    }
    writing = true;
    replicator.askUpdate(
        replyTo ->
            new Replicator.Update<>(
                KEY, LWWMap.create(), write, replyTo, map -> map.put(self, name, value)),
        response -> new Written(response, value));
  }

  /**
   * Removes this engine's entry if the map still lists this incarnation under its name.
   *
   * @return whether a write was sent ({@link Withdrawn} follows); false when the map lists another
   *     incarnation under the name, whose entry stays
   */
  private boolean withdraw(ActorRef<Done> replyTo) {
    withdrawing = true;
    Listed listedNow = replica.entry(name).orElse(null);
    if (listedNow != null && !isMine(listedNow)) {
      LOG.info(
          "directory of {}: leaves the entry of {} in place (another incarnation published under"
              + " this name)",
          name,
          listedNow.entry().segment());
      published = null;
      return false;
    }
    String entryName = name;
    var segment = engine.localSegment();
    long uid = selfUid;
    replicator.askUpdate(
        to ->
            new Replicator.Update<>(
                KEY,
                LWWMap.create(),
                write,
                to,
                map -> {
                  String current = map.getEntries().get(entryName);
                  if (current == null) {
                    return map;
                  }
                  Listed listed = EntryCodec.read(entryName, current).listed();
                  boolean mine =
                      listed != null
                          && listed.memberUid() == uid
                          && listed.entry().segment().equals(segment);
                  return mine ? map.remove(self, entryName) : map;
                }),
        response -> new Withdrawn(response, replyTo));
    return true;
  }

  private void logWithdrawal(Replicator.UpdateResponse<LWWMap<String, String>> response) {
    published = null;
    if (response instanceof Replicator.UpdateSuccess<?>) {
      LOG.info("directory of {}: entry withdrawn", name);
    } else if (response instanceof Replicator.UpdateTimeout<?>) {
      LOG.info(
          "directory of {}: the withdrawal reached fewer replicas than '{}' within {} ms; it"
              + " spreads by gossip",
          name,
          config.writeConsistency(),
          config.consistencyTimeoutMillis());
    } else {
      LOG.warn(
          "directory of {}: withdrawing the entry did not complete ({}); its member's removal"
              + " takes it out",
          name,
          response);
    }
  }

  /** Removes the entries of members that exited, were downed or removed (any node; idempotent). */
  private void cleanDeparted() {
    if (cleaning || !replica.listsDeparted()) {
      return;
    }
    Set<String> departed = replica.departed();
    cleaning = true;
    replicator.askUpdate(
        to ->
            new Replicator.Update<>(
                KEY,
                LWWMap.create(),
                write,
                to,
                map -> {
                  LWWMap<String, String> out = map;
                  for (Map.Entry<String, String> e : map.getEntries().entrySet()) {
                    Listed listed = EntryCodec.read(e.getKey(), e.getValue()).listed();
                    if (listed != null && departed.contains(listed.memberKey())) {
                      out = out.remove(self, e.getKey());
                    }
                  }
                  return out;
                }),
        Cleaned::new);
  }

  private void updateView() {
    DirectoryView next = replica.view();
    List<DirectoryChange> changes =
        next.changesSince(view, name, Instant.now(), replica::removedReason);
    view = next;
    outlet.accept(next, changes);
    if (!EngineFacts.running(engine)) {
      return;
    }
    for (DirectoryChange change : changes) {
      switch (change) {
        case DirectoryChange.Restarted r ->
            EngineFacts.checkPeer(
                engine,
                r.previous().segment().endpoint(),
                "the directory lists engine '"
                    + r.name()
                    + "' as "
                    + r.entry().segment()
                    + " now, after "
                    + r.previous().segment());
        case DirectoryChange.Removed r ->
            EngineFacts.checkPeer(
                engine,
                r.previous().segment().endpoint(),
                "the directory no longer lists engine '"
                    + r.name()
                    + "' ("
                    + r.previous().segment()
                    + "): "
                    + r.reason());
        default -> {}
      }
    }
  }

  private boolean isMine(Listed listed) {
    return listed.memberUid() == selfUid && listed.entry().segment().equals(engine.localSegment());
  }
}
