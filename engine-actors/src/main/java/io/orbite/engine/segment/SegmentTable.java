package io.orbite.engine.segment;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.control.DescribeClient;
import io.orbite.engine.segment.TableEntry.Slot;
import io.orbite.engine.segment.TableEntry.Waiter;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.Description;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Owner of remote peer identities (endpoint, epoch): a bounded table (C9), one entry per peer
 * incarnation ({@link TableEntry}), holding every channel to it: the segment's own transport's
 * (TCP) and one per further transport that reaches it (SHM for a same-host peer that exports
 * memory, RDMA when enabled), in the order UNSPEC tries them. The table knows no transport by name:
 * it asks each {@link PeerTransport} it was given, and each decides whether a peer is within its
 * reach. Charged channels are counted against {@code budgets.maxEndpoints}; every channel of an
 * entry is fenced with it when a newer epoch answers at its endpoint. Child of the EngineGuardian.
 * {@code openSegment} always asks the peer (Describe) for its current epoch, so a restarted peer is
 * reached only through a fresh open, under a fresh entry (C3).
 *
 * <p>Every {@link RemoteSegment} handed out is a counted reference to its entry, dropped by {@code
 * close()} or by the garbage collector (a {@link java.lang.ref.Cleaner} tells this actor). An
 * entry, with its table slot and endpoint charges, is reclaimed only when no RemoteSegment refers
 * to it and its incarnation is fenced (replaced) or every channel to it has closed; a live,
 * reachable entry is never dropped from under its users.
 *
 * <p>States: {@link #active}, {@link #fenced} (the requester side is closed: no new opens).
 */
public final class SegmentTable {
  public sealed interface Command {}

  /**
   * Re-reads its entries' channel states for the owner view (lanes end without telling the table).
   */
  private enum RefreshView implements Command {
    INSTANCE
  }

  /** How often the table refreshes what the owner view shows of its peers. */
  private static final Duration VIEW_REFRESH = Duration.ofMillis(250);

  /**
   * Open the peer at {@code endpoint}; with {@code expectedEpoch} non-null, only if it still runs
   * that incarnation (EPOCH_MISMATCH otherwise).
   */
  public record OpenSegment(String endpoint, Long expectedEpoch, ActorRef<OpenReply> replyTo)
      implements Command {
    public OpenSegment(String endpoint, ActorRef<OpenReply> replyTo) {
      this(endpoint, null, replyTo);
    }
  }

  public sealed interface OpenReply {}

  public record Opened(RemoteSegment segment) implements OpenReply {}

  public record OpenFailed(ErrorKind kind, String detail) implements OpenReply {}

  /** Stop opening peers (closeRequester, C8); opens in progress still finish. */
  public record Fence(String reason) implements Command {}

  /** List the table's entries. */
  public record GetPeers(ActorRef<List<PeerEntry>> replyTo) implements Command {}

  private record Described(
      OpenSegment open, InetSocketAddress address, Description description, Throwable failure)
      implements Command {}

  private record EndpointCharged(SegmentDescriptor peer, Admission.Decision decision)
      implements Command {}

  private record BaseReady(SegmentDescriptor peer, TransportCommand.OpenPeerReply reply)
      implements Command {}

  /** The endpoint charge for the further transport the entry's answer has reached was decided. */
  private record FurtherCharged(TableEntry entry, Admission.Decision decision) implements Command {}

  /** That further transport answered; {@code charged}: the table charged an endpoint for it. */
  private record FurtherReady(
      TableEntry entry, boolean charged, TransportCommand.OpenPeerReply reply) implements Command {}

  /** A RemoteSegment referring to the entry of {@code channel} was closed or collected. */
  private record Released(PeerChannel channel) implements Command {}

  /**
   * How a quarantined table answers {@code m} (see {@code OwnerSupervision}): an open fails
   * UNAVAILABLE, the peer list is empty (its entries are out of reach); the rest needs no answer.
   */
  public static void refuse(Command m, String why) {
    switch (m) {
      case OpenSegment o ->
          o.replyTo()
              .tell(new OpenFailed(ErrorKind.UNAVAILABLE, "open " + o.endpoint() + ": " + why));
      case GetPeers g -> g.replyTo().tell(List.of());
      default -> {}
    }
  }

  private final ActorContext<Command> ctx;
  private final OwnerBoard board;
  private final ActorRef<Admission.Command> admission;
  private final PeerTransport base;
  private final List<PeerTransport> further;
  private final Executor blockingIo;
  private final int describeTimeoutMillis;
  private final int capacity;

  /** Set once the table has stopped: a RemoteSegment dropped later has nothing to tell. */
  private final AtomicBoolean stopped = new AtomicBoolean();

  /** Every entry not yet reclaimed, by its own channel: current, superseded but referenced. */
  private final Map<PeerChannel, TableEntry> entries = new IdentityHashMap<>();

  /** The entry through which each incarnation is reached now. */
  private final Map<SegmentDescriptor, TableEntry> current = new HashMap<>();

  /** Opens waiting for a new entry's own channel, by incarnation. */
  private final Map<SegmentDescriptor, List<Waiter>> opening = new HashMap<>();

  /** The newest epoch each endpoint ({@code host:port}) answered with. */
  private final Map<String, Long> latestEpoch;

  private List<PeerEntry> reportedPeers = List.of();

  private SegmentTable(
      ActorContext<Command> ctx,
      OwnerBoard board,
      ActorRef<Admission.Command> admission,
      PeerTransport base,
      List<PeerTransport> further,
      Executor blockingIo,
      int describeTimeoutMillis,
      int capacity) {
    this.ctx = ctx;
    this.board = board;
    this.admission = admission;
    this.base = base;
    this.further = List.copyOf(further);
    this.blockingIo = blockingIo;
    this.describeTimeoutMillis = describeTimeoutMillis;
    this.capacity = capacity;
    this.latestEpoch =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            // Bounded (C9): endpoints not seen for a while are forgotten; reopening them describes
            // again.
            return size() > 4 * capacity;
          }
        };
  }

  /**
   * The table, reporting its state, its entry counts and every peer entry to {@code board}.
   *
   * @param base the transport whose channel every entry opens first, and every segment falls back
   *     to (TCP)
   * @param further the transports that may also reach a peer, in the order UNSPEC tries them (SHM,
   *     then RDMA when enabled); each is asked for every open, and its channel joins the segment
   */
  public static Behavior<Command> create(
      ActorRef<Admission.Command> admission,
      PeerTransport base,
      List<PeerTransport> further,
      Executor blockingIo,
      Duration describeTimeout,
      int capacity,
      OwnerBoard board) {
    return Behaviors.withTimers(
        timers ->
            Behaviors.setup(
                ctx -> {
                  timers.startTimerWithFixedDelay(RefreshView.INSTANCE, VIEW_REFRESH);
                  SegmentTable table =
                      new SegmentTable(
                          ctx,
                          board,
                          admission,
                          base,
                          further,
                          blockingIo,
                          (int) describeTimeout.toMillis(),
                          capacity);
                  return OwnerBoard.reporting(board, table::report, table.active());
                }));
  }

  private OwnerBoard.Report report() {
    List<PeerEntry> peers = peerEntries();
    if (!peers.equals(reportedPeers)) {
      reportedPeers = peers;
      board.peers(peers);
    }
    return new OwnerBoard.Report(
        "SegmentTable",
        Map.of(
            "entries",
            (long) entries.size(),
            "entriesLimit",
            (long) capacity,
            "opening",
            (long) opening.size()),
        "");
  }

  private Behavior<Command> active() {
    return board.in(
        OwnerState.ACTIVE,
        handling(
            Behaviors.receive(Command.class)
                .onMessage(OpenSegment.class, this::onOpen)
                .onMessage(Fence.class, m -> fenced(m.reason()))));
  }

  /** No new opens: the engine's requester side is closed. */
  private Behavior<Command> fenced(String reason) {
    return board.in(
        OwnerState.FENCED,
        handling(
            Behaviors.receive(Command.class)
                .onMessage(
                    OpenSegment.class,
                    m -> {
                      m.replyTo()
                          .tell(
                              new OpenFailed(
                                  ErrorKind.UNAVAILABLE, "open " + m.endpoint() + ": " + reason));
                      return Behaviors.same();
                    })
                .onMessage(Fence.class, m -> Behaviors.same())));
  }

  /** The handlers every state shares: the steps of opens already under way. */
  private Behavior<Command> handling(BehaviorBuilder<Command> builder) {
    return builder
        .onMessage(Released.class, this::onReleased)
        .onMessage(GetPeers.class, this::onGetPeers)
        .onMessageEquals(RefreshView.INSTANCE, Behaviors::same)
        .onMessage(Described.class, this::onDescribed)
        .onMessage(EndpointCharged.class, this::onEndpointCharged)
        .onMessage(BaseReady.class, this::onBaseReady)
        .onMessage(FurtherCharged.class, this::onFurtherCharged)
        .onMessage(FurtherReady.class, this::onFurtherReady)
        .onSignal(
            PostStop.class,
            signal -> {
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
      m.replyTo()
          .tell(
              new OpenFailed(
                  ErrorKind.EPOCH_MISMATCH, mismatch(m.endpoint(), m.expectedEpoch(), latest)));
      return Behaviors.same();
    }
    ctx.pipeToSelf(
        CompletableFuture.supplyAsync(
            () -> DescribeClient.describe(address, describeTimeoutMillis), blockingIo),
        (description, failure) -> new Described(m, address, description, failure));
    return Behaviors.same();
  }

  private Behavior<Command> onDescribed(Described d) {
    if (d.failure() != null) {
      Throwable cause =
          d.failure() instanceof CompletionException ce && ce.getCause() != null
              ? ce.getCause()
              : d.failure();
      ErrorKind kind = cause instanceof TransferException te ? te.kind() : ErrorKind.UNAVAILABLE;
      d.open().replyTo().tell(new OpenFailed(kind, TransferException.describe(cause)));
      return Behaviors.same();
    }
    SegmentDescriptor peer =
        new SegmentDescriptor(
            d.address().getHostString(), d.description().port(), d.description().epoch());
    learnEpoch(peer);
    if (d.open().expectedEpoch() != null && d.open().expectedEpoch() != peer.epoch()) {
      d.open()
          .replyTo()
          .tell(
              new OpenFailed(
                  ErrorKind.EPOCH_MISMATCH,
                  mismatch(d.open().endpoint(), d.open().expectedEpoch(), peer.epoch())));
      return Behaviors.same();
    }
    Waiter waiter = new Waiter(d.open(), d.description());
    TableEntry existing = current.get(peer);
    if (existing != null && existing.base.gate().active()) {
      answer(existing, waiter);
      return Behaviors.same();
    }
    if (existing != null) {
      // Its own channel has closed: the same incarnation is opened afresh under a new entry; the
      // old one is reclaimed once nothing refers to it.
      current.remove(peer);
      existing.state.moveTo(TableEntry.State.SUPERSEDED);
    }
    List<Waiter> waiters = opening.get(peer);
    if (waiters != null) {
      waiters.add(waiter);
      return Behaviors.same();
    }
    retireReclaimable();
    if (entries.size() + opening.size() >= capacity) {
      long held =
          entries.values().stream()
              .filter(e -> e.references > 0 && !e.base.gate().active())
              .count();
      d.open()
          .replyTo()
          .tell(
              new OpenFailed(
                  ErrorKind.RESOURCE_EXHAUSTED,
                  "peer segments: table of "
                      + capacity
                      + " entries is full ("
                      + held
                      + " of them fenced or closed but still "
                      + "referenced by RemoteSegments: close those); cannot open "
                      + peer));
      return Behaviors.same();
    }
    opening.put(peer, new ArrayList<>(List.of(waiter)));
    chargeEndpoint(decision -> new EndpointCharged(peer, decision));
    return Behaviors.same();
  }

  /**
   * Asks Admission for one of {@code budgets.maxEndpoints}; the decision comes back as a message.
   */
  private void chargeEndpoint(java.util.function.Function<Admission.Decision, Command> then) {
    ctx.ask(
        Admission.Decision.class,
        admission,
        Duration.ofSeconds(10),
        Admission.AcquireEndpoint::new,
        (decision, failure) ->
            then.apply(
                decision != null
                    ? decision
                    : new Admission.Decision.Unavailable("admission did not answer: " + failure)));
  }

  private void askOpen(
      PeerTransport transport,
      SegmentDescriptor peer,
      Description description,
      java.util.function.Function<TransportCommand.OpenPeerReply, Command> then) {
    ctx.ask(
        TransportCommand.OpenPeerReply.class,
        transport.ref(),
        Duration.ofMinutes(2),
        replyTo -> new TransportCommand.OpenPeer(peer, description, replyTo),
        (reply, failure) ->
            then.apply(
                reply != null
                    ? reply
                    : new TransportCommand.PeerOpenFailed(
                        ErrorKind.UNAVAILABLE,
                        "the " + transport.kind() + " transport did not answer: " + failure)));
  }

  private Behavior<Command> onEndpointCharged(EndpointCharged m) {
    if (!m.decision().granted()) {
      ErrorKind kind = m.decision().fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED;
      failWaiters(m.peer(), kind, m.decision().refusal());
      return Behaviors.same();
    }
    Description first = opening.get(m.peer()).getFirst().description();
    askOpen(base, m.peer(), first, reply -> new BaseReady(m.peer(), reply));
    return Behaviors.same();
  }

  private Behavior<Command> onBaseReady(BaseReady m) {
    switch (m.reply()) {
      case TransportCommand.PeerOpened opened -> {
        TableEntry entry = new TableEntry(m.peer(), opened.channel());
        adoptLiveSlots(entry);
        entries.put(opened.channel(), entry);
        current.put(m.peer(), entry);
        for (Waiter w : opening.remove(m.peer())) {
          answer(entry, w);
        }
      }
      case TransportCommand.PeerOpenFailed failed -> {
        admission.tell(new Admission.ReleaseEndpoint());
        failWaiters(m.peer(), failed.kind(), failed.detail());
      }
    }
    return Behaviors.same();
  }

  /**
   * Records the epoch an endpoint answered with; every entry of another epoch at that endpoint is a
   * replaced incarnation and is fenced: it refuses new work and its endpoints drain and retire.
   */
  private void learnEpoch(SegmentDescriptor peer) {
    String key = peer.host() + ":" + peer.port();
    latestEpoch.put(key, peer.epoch());
    String reason = "the peer at " + key + " now runs epoch " + Long.toHexString(peer.epoch());
    // Every entry of another epoch at that endpoint, current or not (one whose own channel closed
    // is no longer current, and is still refused with its replacement's kind, C3).
    for (TableEntry replaced : entries.values()) {
      SegmentDescriptor old = replaced.peer;
      if (old.host().equals(peer.host())
          && old.port() == peer.port()
          && old.epoch() != peer.epoch()) {
        replaced.fence(peer.epoch(), reason);
        replaced.state.moveTo(TableEntry.State.SUPERSEDED);
        current.remove(old, replaced);
      }
    }
    retireReclaimable();
  }

  /**
   * Answers {@code w} with a segment of {@code entry} once every further transport had its say, one
   * open of the entry at a time. The reference is taken now, so that the entry is not reclaimed
   * while the answer is under way.
   */
  private void answer(TableEntry entry, Waiter w) {
    entry.references++;
    entry.answering.add(w);
    if (entry.answering.size() == 1) {
      startAnswer(entry);
    }
  }

  private void startAnswer(TableEntry entry) {
    Waiter w = entry.answering.getFirst();
    ActorRef<Command> self = ctx.getSelf();
    PeerChannel own = entry.base;
    AtomicBoolean tableStopped = stopped;
    entry.building =
        new PeerSegment(
            entry.peer,
            w.description().regions(),
            own,
            entry.peer.toString(),
            () -> {
              if (!tableStopped.get()) {
                self.tell(new Released(own));
              }
            });
    entry.step = 0;
    nextFurther(entry);
  }

  /**
   * Takes the answer under way to the next further transport: one out of reach is noted and passed;
   * a live channel is attached again; a missing one is charged (when the transport is) and opened.
   * Once every transport had its say, the open is answered and the next one starts.
   */
  private void nextFurther(TableEntry entry) {
    Waiter w = entry.answering.getFirst();
    while (entry.step < further.size()) {
      PeerTransport t = further.get(entry.step);
      String unreachable = t.unreachable().apply(w.description());
      if (unreachable != null) {
        entry.building = entry.building.without(t.kind(), unreachable);
        entry.step++;
        continue;
      }
      Slot slot = entry.slots.get(t.kind());
      if (slot != null && slot.channel().gate().state() instanceof ChannelGate.Closed) {
        // Its endpoint has ended: drop it and its charge, and open afresh.
        entry.slots.remove(t.kind());
        releaseIfCharged(slot.charged());
        slot = null;
      }
      if (slot == null && t.chargesEndpoint()) {
        chargeEndpoint(decision -> new FurtherCharged(entry, decision));
        return;
      }
      askOpen(t, entry.peer, w.description(), reply -> new FurtherReady(entry, false, reply));
      return;
    }
    w.open().replyTo().tell(new Opened(entry.building));
    entry.building = null;
    entry.answering.removeFirst();
    if (!entry.answering.isEmpty()) {
      startAnswer(entry);
    }
    retireReclaimable();
  }

  private Behavior<Command> onFurtherCharged(FurtherCharged m) {
    TableEntry entry = m.entry();
    PeerTransport t = further.get(entry.step);
    if (!m.decision().granted()) {
      entry.building =
          entry.building.without(t.kind(), t.kind() + " not used: " + m.decision().refusal());
      entry.step++;
      nextFurther(entry);
      return Behaviors.same();
    }
    if (entry.base.gate().state() instanceof ChannelGate.Fenced f) {
      // Fenced while the charge was decided: open no further channel to a replaced incarnation.
      admission.tell(new Admission.ReleaseEndpoint());
      entry.building = entry.building.without(t.kind(), t.kind() + " not used: " + f.reason());
      entry.step++;
      nextFurther(entry);
      return Behaviors.same();
    }
    Description d = entry.answering.getFirst().description();
    askOpen(t, entry.peer, d, reply -> new FurtherReady(entry, true, reply));
    return Behaviors.same();
  }

  private Behavior<Command> onFurtherReady(FurtherReady m) {
    TableEntry entry = m.entry();
    PeerTransport t = further.get(entry.step);
    switch (m.reply()) {
      case TransportCommand.PeerOpened opened -> {
        // The entry holds one charge per charged slot, for whichever channel the transport keeps
        // for the incarnation now (it replaces an endpoint that ended meanwhile).
        Slot slot = entry.slots.get(t.kind());
        boolean charged = m.charged() || slot != null && slot.charged();
        if (m.charged() && slot != null && slot.charged()) {
          admission.tell(new Admission.ReleaseEndpoint());
        }
        entry.slots.put(t.kind(), new Slot(opened.channel(), charged));
        if (entry.base.gate().state() instanceof ChannelGate.Fenced f) {
          opened.channel().fence(f.newerEpoch(), f.reason());
        }
        entry.building = entry.building.withChannel(opened.channel(), opened.reaches());
      }
      case TransportCommand.PeerOpenFailed failed -> {
        releaseIfCharged(m.charged());
        entry.building =
            entry.building.without(
                t.kind(), "the " + t.kind() + " endpoint could not be opened: " + failed.detail());
      }
    }
    entry.step++;
    nextFurther(entry);
    return Behaviors.same();
  }

  private void releaseIfCharged(boolean charged) {
    if (charged) {
      admission.tell(new Admission.ReleaseEndpoint());
    }
  }

  /**
   * A new entry for an incarnation whose previous entry's own channel closed takes over that
   * entry's live further channels and their charges (a transport keeps one endpoint per
   * incarnation).
   */
  private void adoptLiveSlots(TableEntry entry) {
    for (TableEntry old : entries.values()) {
      if (!old.peer.equals(entry.peer) || !old.answering.isEmpty()) {
        continue;
      }
      var it = old.slots.entrySet().iterator();
      while (it.hasNext()) {
        var s = it.next();
        if (s.getValue().channel().gate().active() && !entry.slots.containsKey(s.getKey())) {
          entry.slots.put(s.getKey(), s.getValue());
          it.remove();
        }
      }
    }
  }

  private Behavior<Command> onReleased(Released m) {
    TableEntry entry = entries.get(m.channel());
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
    for (TableEntry e : entries.values()) {
      out.add(e.view());
    }
    return List.copyOf(out);
  }

  private static String key(InetSocketAddress address) {
    return address.getHostString() + ":" + address.getPort();
  }

  private static String mismatch(String endpoint, long expected, long actual) {
    return "open "
        + endpoint
        + "@"
        + Long.toHexString(expected)
        + ": the peer now runs epoch "
        + Long.toHexString(actual);
  }

  /**
   * Drops entries that nothing refers to any more and whose channels are all done (fenced or
   * closed), returning their table slot and endpoint charges.
   */
  private void retireReclaimable() {
    var it = entries.values().iterator();
    while (it.hasNext()) {
      TableEntry e = it.next();
      if (e.reclaimable()) {
        it.remove();
        current.remove(e.peer, e);
        e.state.moveTo(TableEntry.State.RECLAIMED);
        for (int i = 0; i < e.charges(); i++) {
          admission.tell(new Admission.ReleaseEndpoint());
        }
      }
    }
  }

  private void failWaiters(SegmentDescriptor peer, ErrorKind kind, String detail) {
    for (Waiter w : opening.remove(peer)) {
      w.open().replyTo().tell(new OpenFailed(kind, "open " + peer + ": " + detail));
    }
  }
}
