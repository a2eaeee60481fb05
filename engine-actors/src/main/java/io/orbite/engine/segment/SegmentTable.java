package io.orbite.engine.segment;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.control.DescribeClient;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.wire.Description;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of remote peer identities (endpoint, epoch): a bounded table (C9), one entry and one
 * transport endpoint per peer incarnation. Child of the EngineGuardian. {@code openSegment} always
 * asks the peer (Describe) for its current epoch, so a restarted peer is reached only through a
 * fresh open, under a fresh entry (C3).
 *
 * <p>Every {@link RemoteSegment} handed out is a counted reference to its entry, dropped by {@code
 * close()} or by the garbage collector (a {@link java.lang.ref.Cleaner} tells this actor). An entry,
 * with its table slot and endpoint charge, is reclaimed only when no RemoteSegment refers to it and
 * its incarnation is fenced (replaced) or every lane to it has closed; a live, reachable entry is
 * never dropped from under its users.
 *
 * <p>States: {@link #active}, {@link #fenced} (the requester side is closed: no new opens).
 */
public final class SegmentTable {
  public sealed interface Command {}

  /** Re-reads its entries' channel states for the owner view (lanes end without telling the table). */
  private enum RefreshView implements Command { INSTANCE }

  /** How often the table refreshes what the owner view shows of its peers. */
  private static final Duration VIEW_REFRESH = Duration.ofMillis(250);

  /**
   * Open the peer at {@code endpoint}; with {@code expectedEpoch} non-null, only if it still runs
   * that incarnation (EPOCH_MISMATCH otherwise).
   */
  public record OpenSegment(String endpoint, Long expectedEpoch, ActorRef<OpenReply> replyTo) implements Command {
    public OpenSegment(String endpoint, ActorRef<OpenReply> replyTo) {
      this(endpoint, null, replyTo);
    }
  }

  public sealed interface OpenReply {}

  public record Opened(RemoteSegment segment) implements OpenReply {}

  public record OpenFailed(ErrorKind kind, String detail) implements OpenReply {}

  /** Stop opening peers (closeRequester, C8); opens in progress still finish. */
  public record Fence(String reason) implements Command {}

  private record Described(OpenSegment open, InetSocketAddress address, Description description, Throwable failure)
      implements Command {}

  private record EndpointCharged(SegmentDescriptor peer, Admission.Decision decision) implements Command {}

  private record PeerReady(SegmentDescriptor peer, TransportCommand.OpenPeerReply reply) implements Command {}

  private record Waiter(OpenSegment open, Description description) {}

  /** A RemoteSegment referring to {@code channel}'s entry was closed or collected. */
  private record Released(PeerChannel channel) implements Command {}

  /** List the table's entries. */
  public record GetPeers(ActorRef<List<PeerEntry>> replyTo) implements Command {}

  /** One table entry: a channel to one peer incarnation and the RemoteSegments referring to it. */
  private static final class Entry {
    final SegmentDescriptor peer;
    final PeerChannel channel;
    int references;

    Entry(SegmentDescriptor peer, PeerChannel channel) {
      this.peer = peer;
      this.channel = channel;
    }

    boolean reclaimable() {
      return references == 0 && (!channel.active() || channel.fencedBecause() != null);
    }
  }

  private final ActorContext<Command> ctx;
  private final ActorRef<Admission.Command> admission;
  private final ActorRef<TransportCommand> transport;
  private final Executor blockingIo;
  private final int describeTimeoutMillis;
  private final int capacity;
  /** Every entry, by channel: current, fenced or closed ones still referenced. */
  private final Map<PeerChannel, Entry> entries = new IdentityHashMap<>();
  /** The entry through which each incarnation is reached now. */
  private final Map<SegmentDescriptor, Entry> current = new HashMap<>();
  private final Map<SegmentDescriptor, List<Waiter>> opening = new HashMap<>();
  /** The newest epoch each endpoint ({@code host:port}) answered with. */
  private final Map<String, Long> latestEpoch = new java.util.LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      // Bounded (C9): endpoints not seen for a while are forgotten; reopening them describes again.
      return size() > 4 * capacity;
    }
  };

  private SegmentTable(
      ActorContext<Command> ctx,
      ActorRef<Admission.Command> admission,
      ActorRef<TransportCommand> transport,
      Executor blockingIo,
      int describeTimeoutMillis,
      int capacity) {
    this.ctx = ctx;
    this.admission = admission;
    this.transport = transport;
    this.blockingIo = blockingIo;
    this.describeTimeoutMillis = describeTimeoutMillis;
    this.capacity = capacity;
  }

  public static Behavior<Command> create(
      ActorRef<Admission.Command> admission,
      ActorRef<TransportCommand> transport,
      Executor blockingIo,
      Duration describeTimeout,
      int capacity) {
    return create(admission, transport, blockingIo, describeTimeout, capacity, new io.orbite.engine.view.OwnerBoard());
  }

  /** As above, reporting its state, its entry counts and every peer entry to {@code board}. */
  public static Behavior<Command> create(
      ActorRef<Admission.Command> admission,
      ActorRef<TransportCommand> transport,
      Executor blockingIo,
      Duration describeTimeout,
      int capacity,
      io.orbite.engine.view.OwnerBoard board) {
    return Behaviors.withTimers(timers -> Behaviors.setup(ctx -> {
      timers.startTimerWithFixedDelay(RefreshView.INSTANCE, VIEW_REFRESH);
      SegmentTable table =
          new SegmentTable(ctx, admission, transport, blockingIo, (int) describeTimeout.toMillis(), capacity);
      return io.orbite.engine.view.OwnerBoard.reporting(board, () -> table.report(board), table.active());
    }));
  }

  private String state = "active";
  /** Set once the table has stopped: a RemoteSegment dropped later has nothing to tell. */
  private final java.util.concurrent.atomic.AtomicBoolean stopped = new java.util.concurrent.atomic.AtomicBoolean();
  private List<PeerEntry> reportedPeers = List.of();

  private io.orbite.engine.view.OwnerBoard.Report report(io.orbite.engine.view.OwnerBoard board) {
    List<PeerEntry> peers = peerEntries();
    if (!peers.equals(reportedPeers)) {
      reportedPeers = peers;
      board.peers(peers);
    }
    return new io.orbite.engine.view.OwnerBoard.Report("SegmentTable", state, Map.of(
        "entries", (long) entries.size(), "entriesLimit", (long) capacity, "opening", (long) opening.size()), "");
  }

  private Behavior<Command> active() {
    return handling(Behaviors.receive(Command.class)
        .onMessage(OpenSegment.class, this::onOpen)
        .onMessage(Fence.class, m -> fenced(m.reason())));
  }

  /** No new opens: the engine's requester side is closed. */
  private Behavior<Command> fenced(String reason) {
    state = "fenced";
    return handling(Behaviors.receive(Command.class)
        .onMessage(OpenSegment.class, m -> {
          m.replyTo().tell(new OpenFailed(ErrorKind.UNAVAILABLE, "open " + m.endpoint() + ": " + reason));
          return Behaviors.same();
        })
        .onMessage(Fence.class, m -> Behaviors.same()));
  }

  /** The handlers every state shares: the steps of opens already under way. */
  private Behavior<Command> handling(org.apache.pekko.actor.typed.javadsl.BehaviorBuilder<Command> builder) {
    return builder
        .onMessage(Released.class, this::onReleased)
        .onMessage(GetPeers.class, this::onGetPeers)
        .onMessageEquals(RefreshView.INSTANCE, Behaviors::same)
        .onMessage(Described.class, this::onDescribed)
        .onMessage(EndpointCharged.class, this::onEndpointCharged)
        .onMessage(PeerReady.class, this::onPeerReady)
        .onSignal(org.apache.pekko.actor.typed.PostStop.class, signal -> {
          stopped.set(true);
          return Behaviors.same();
        })
        .build();
  }

  private Behavior<Command> onOpen(OpenSegment m) {
    InetSocketAddress address;
    try {
      address = DescribeClient.parseEndpoint(m.endpoint());
    } catch (TransferException e) {
      m.replyTo().tell(new OpenFailed(e.kind(), e.detail()));
      return Behaviors.same();
    }
    Long latest = latestEpoch.get(key(address));
    if (m.expectedEpoch() != null && latest != null && latest.longValue() != m.expectedEpoch()) {
      // Already known to be replaced: refuse without touching the network (C3).
      m.replyTo().tell(new OpenFailed(ErrorKind.EPOCH_MISMATCH, mismatch(m.endpoint(), m.expectedEpoch(), latest)));
      return Behaviors.same();
    }
    ctx.pipeToSelf(
        CompletableFuture.supplyAsync(() -> DescribeClient.describe(address, describeTimeoutMillis), blockingIo),
        (description, failure) -> new Described(m, address, description, failure));
    return Behaviors.same();
  }

  private Behavior<Command> onDescribed(Described d) {
    if (d.failure() != null) {
      Throwable cause = d.failure() instanceof CompletionException ce && ce.getCause() != null ? ce.getCause() : d.failure();
      ErrorKind kind = cause instanceof TransferException te ? te.kind() : ErrorKind.UNAVAILABLE;
      d.open().replyTo().tell(new OpenFailed(kind, TransferException.describe(cause)));
      return Behaviors.same();
    }
    SegmentDescriptor peer = new SegmentDescriptor(d.address().getHostString(), d.description().port(), d.description().epoch());
    learnEpoch(peer);
    if (d.open().expectedEpoch() != null && d.open().expectedEpoch() != peer.epoch()) {
      d.open().replyTo().tell(new OpenFailed(ErrorKind.EPOCH_MISMATCH,
          mismatch(d.open().endpoint(), d.open().expectedEpoch(), peer.epoch())));
      return Behaviors.same();
    }
    Entry existing = current.get(peer);
    if (existing != null && existing.channel.active()) {
      d.open().replyTo().tell(new Opened(handOut(existing, d.description())));
      return Behaviors.same();
    }
    if (existing != null) {
      // Every lane of that endpoint has closed: open the same incarnation afresh under a new entry;
      // the old one is reclaimed once nothing refers to it.
      current.remove(peer);
    }
    List<Waiter> waiters = opening.get(peer);
    if (waiters != null) {
      waiters.add(new Waiter(d.open(), d.description()));
      return Behaviors.same();
    }
    retireReclaimable();
    if (entries.size() + opening.size() >= capacity) {
      long held = entries.values().stream().filter(e -> e.references > 0 && !e.channel.active()
          || e.references > 0 && e.channel.fencedBecause() != null).count();
      d.open().replyTo().tell(new OpenFailed(ErrorKind.RESOURCE_EXHAUSTED,
          "peer segments: table of " + capacity + " entries is full (" + held + " of them fenced or closed but still "
              + "referenced by RemoteSegments: close those); cannot open " + peer));
      return Behaviors.same();
    }
    opening.put(peer, new ArrayList<>(List.of(new Waiter(d.open(), d.description()))));
    ctx.ask(Admission.Decision.class, admission, Duration.ofSeconds(10), Admission.AcquireEndpoint::new,
        (decision, failure) -> new EndpointCharged(peer,
            decision != null ? decision : new Admission.Decision("admission did not answer: " + failure, false)));
    return Behaviors.same();
  }

  private Behavior<Command> onEndpointCharged(EndpointCharged m) {
    if (!m.decision().granted()) {
      ErrorKind kind = m.decision().fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED;
      failWaiters(m.peer(), kind, m.decision().refusal());
      return Behaviors.same();
    }
    ctx.ask(TransportCommand.OpenPeerReply.class, transport, Duration.ofMinutes(2),
        replyTo -> new TransportCommand.OpenPeer(m.peer(), replyTo),
        (reply, failure) -> new PeerReady(m.peer(), reply != null ? reply
            : new TransportCommand.PeerOpenFailed(ErrorKind.UNAVAILABLE, "transport did not answer: " + failure)));
    return Behaviors.same();
  }

  private Behavior<Command> onPeerReady(PeerReady m) {
    if (m.reply() instanceof TransportCommand.PeerOpened opened) {
      Entry entry = new Entry(m.peer(), opened.channel());
      entries.put(opened.channel(), entry);
      current.put(m.peer(), entry);
      for (Waiter w : opening.remove(m.peer())) {
        w.open().replyTo().tell(new Opened(handOut(entry, w.description())));
      }
    } else if (m.reply() instanceof TransportCommand.PeerOpenFailed failed) {
      admission.tell(new Admission.ReleaseEndpoint());
      failWaiters(m.peer(), failed.kind(), failed.detail());
    }
    return Behaviors.same();
  }

  /**
   * Records the epoch an endpoint answered with; every entry of another epoch at that endpoint is
   * a replaced incarnation and is fenced: it refuses new work and its endpoint drains and retires.
   */
  private void learnEpoch(SegmentDescriptor peer) {
    String key = peer.host() + ":" + peer.port();
    latestEpoch.put(key, peer.epoch());
    var it = current.entrySet().iterator();
    while (it.hasNext()) {
      var e = it.next();
      SegmentDescriptor old = e.getKey();
      if (old.host().equals(peer.host()) && old.port() == peer.port() && old.epoch() != peer.epoch()) {
        e.getValue().channel.fence("the peer at " + key + " now runs epoch " + Long.toHexString(peer.epoch()));
        it.remove();
      }
    }
    retireReclaimable();
  }

  /** A counted reference to {@code entry}, dropped when the RemoteSegment is closed or collected. */
  private RemoteSegment handOut(Entry entry, Description description) {
    entry.references++;
    ActorRef<Command> self = ctx.getSelf();
    PeerChannel channel = entry.channel;
    java.util.concurrent.atomic.AtomicBoolean tableStopped = stopped;
    return new RemoteSegment(entry.peer, description.regions(), channel, description.shared(), () -> {
      if (!tableStopped.get()) {
        self.tell(new Released(channel));
      }
    });
  }

  private Behavior<Command> onReleased(Released m) {
    Entry entry = entries.get(m.channel());
    if (entry != null) {
      entry.references--;
      retireReclaimable();
    }
    return Behaviors.same();
  }

  private Behavior<Command> onGetPeers(GetPeers m) {
    m.replyTo().tell(peerEntries());
    return Behaviors.same();
  }

  private List<PeerEntry> peerEntries() {
    List<PeerEntry> out = new ArrayList<>();
    for (Entry e : entries.values()) {
      String fenced = e.channel.fencedBecause();
      PeerEntry.State state = fenced != null ? PeerEntry.State.FENCED
          : e.channel.active() ? PeerEntry.State.ACTIVE : PeerEntry.State.CLOSED;
      String detail = fenced != null ? fenced : state == PeerEntry.State.CLOSED ? "every lane to it has closed" : "";
      out.add(new PeerEntry(e.peer, state, e.references, detail));
    }
    return List.copyOf(out);
  }

  private static String key(InetSocketAddress address) {
    return address.getHostString() + ":" + address.getPort();
  }

  private static String mismatch(String endpoint, long expected, long actual) {
    return "open " + endpoint + "@" + Long.toHexString(expected) + ": the peer now runs epoch " + Long.toHexString(actual);
  }

  /**
   * Drops entries that nothing refers to any more and whose incarnation is fenced or whose lanes
   * have all closed, returning their table slot and endpoint charge.
   */
  private void retireReclaimable() {
    var it = entries.values().iterator();
    while (it.hasNext()) {
      Entry e = it.next();
      if (e.reclaimable()) {
        it.remove();
        current.remove(e.peer, e);
        admission.tell(new Admission.ReleaseEndpoint());
      }
    }
  }

  private void failWaiters(SegmentDescriptor peer, ErrorKind kind, String detail) {
    for (Waiter w : opening.remove(peer)) {
      w.open().replyTo().tell(new OpenFailed(kind, "open " + peer + ": " + detail));
    }
  }
}
