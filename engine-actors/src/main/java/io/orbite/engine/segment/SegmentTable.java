package io.orbite.engine.segment;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.PeerCheck;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.control.DescribeClient;
import io.orbite.engine.security.PeerAuth;
import io.orbite.engine.segment.TableEntry.Waiter;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerEventHub;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.engine.wire.Description;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
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
 * reached only through a fresh open, under a fresh entry (C3). An open that expects an epoch is
 * refused without asking only when that epoch is known to be replaced at its endpoint.
 *
 * <p>Every {@link RemoteSegment} handed out is a counted reference to its entry, dropped by {@code
 * close()} or by the garbage collector (a {@link java.lang.ref.Cleaner} tells this actor). An
 * entry, with its table slot and endpoint charges, is reclaimed only when no RemoteSegment refers
 * to it and its incarnation is fenced (replaced) or every channel to it has closed; a live,
 * reachable entry is never dropped from under its users.
 *
 * <p>States: {@link #active}, {@link #fenced} (the requester side is closed: no new opens).
 *
 * <p>Longer than 500 lines: the open's steps (Describe, endpoint charge, base and further
 * transports), the replacement learned without an open ({@code Replaced}) and the events it
 * publishes all move one entry's state, and splitting them would spread that state over classes.
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

  /**
   * A hint that the peer at {@code address} may have restarted or gone ({@code Engine.checkPeer}):
   * describe it and fence what it no longer runs.
   */
  public record CheckPeer(InetSocketAddress address, String reason, ActorRef<PeerCheck> replyTo)
      implements Command {}

  private record Checked(CheckPeer check, Description description, Throwable failure)
      implements Command {}

  private record Described(
      OpenSegment open, InetSocketAddress address, Description description, Throwable failure)
      implements Command {}

  private record EndpointCharged(SegmentDescriptor peer, Admission.Decision decision)
      implements Command {}

  private record BaseReady(SegmentDescriptor peer, TransportCommand.OpenPeerReply reply)
      implements Command {}

  /** The endpoint charge for the further transport the entry's answer has reached was decided. */
  record FurtherCharged(TableEntry entry, Admission.Decision decision) implements Command {}

  /** That further transport answered; {@code charged}: the table charged an endpoint for it. */
  record FurtherReady(TableEntry entry, boolean charged, TransportCommand.OpenPeerReply reply)
      implements Command {}

  /**
   * An owner learned that {@code newerEpoch} answers at {@code old}'s endpoint (a reconnecting
   * lane's HELLO was refused by it), with no open asking.
   */
  private record Replaced(SegmentDescriptor old, long newerEpoch) implements Command {}

  /** A RemoteSegment referring to the entry of {@code channel} was closed or collected. */
  record Released(PeerChannel channel) implements Command {}

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
      case CheckPeer k ->
          k.replyTo().tell(new PeerCheck(key(k.address()), null, List.of(), List.of(), why));
      default -> {}
    }
  }

  final ActorContext<Command> ctx;
  private final OwnerBoard board;
  private final ActorRef<Admission.Command> admission;
  private final PeerTransport base;
  private final List<PeerTransport> further;
  private final Executor blockingIo;
  private final PeerEventHub events;
  private final EngineTally counters;
  private final int describeTimeoutMillis;
  private final int capacity;
  private final PeerAuth auth;

  /** Set once the table has stopped: a RemoteSegment dropped later has nothing to tell. */
  final AtomicBoolean stopped = new AtomicBoolean();

  /** The entries, by channel and by incarnation, and the epochs learned. */
  private final TableEntries entries;

  /** Opens waiting for a new entry's own channel, by incarnation. */
  private final Map<SegmentDescriptor, List<Waiter>> opening = new HashMap<>();

  private List<PeerEntry> reportedPeers = List.of();

  /** Takes each open of an entry through the further transports. */
  private final FurtherAnswers answers;

  private SegmentTable(
      ActorContext<Command> ctx,
      OwnerBoard board,
      ActorRef<Admission.Command> admission,
      PeerTransport base,
      List<PeerTransport> further,
      Executor blockingIo,
      PeerEventHub events,
      EngineTally counters,
      int describeTimeoutMillis,
      int capacity,
      PeerAuth auth) {
    this.auth = auth;
    this.events = events;
    this.counters = counters;
    this.ctx = ctx;
    this.board = board;
    this.admission = admission;
    this.base = base;
    this.further = List.copyOf(further);
    this.blockingIo = blockingIo;
    this.describeTimeoutMillis = describeTimeoutMillis;
    this.capacity = capacity;
    this.answers = new FurtherAnswers(this, this.further, admission);
    this.entries =
        new TableEntries(capacity, () -> admission.tell(new Admission.ReleaseEndpoint()));
  }

  /**
   * The table, reporting its state, its entry counts and every peer entry to {@code board}.
   *
   * @param base the transport whose channel every entry opens first, and every segment falls back
   *     to (TCP)
   * @param further the transports that may also reach a peer, in the order UNSPEC tries them (SHM,
   *     then RDMA when enabled); each is asked for every open, and its channel joins the segment
   * @param auth this engine's handshake, which every Describe opens with when it is required
   */
  public static Behavior<Command> create(
      ActorRef<Admission.Command> admission,
      PeerTransport base,
      List<PeerTransport> further,
      Executor blockingIo,
      PeerEventHub events,
      EngineTally counters,
      Duration describeTimeout,
      int capacity,
      OwnerBoard board,
      PeerAuth auth) {
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
                          events,
                          counters,
                          (int) describeTimeout.toMillis(),
                          capacity,
                          auth);
                  ActorRef<Command> self = ctx.getSelf();
                  events.onReplaced((old, newer) -> self.tell(new Replaced(old, newer)));
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
        .onMessage(
            Replaced.class,
            m -> {
              learnEpoch(new SegmentDescriptor(m.old().host(), m.old().port(), m.newerEpoch()));
              return Behaviors.same();
            })
        .onMessage(GetPeers.class, this::onGetPeers)
        .onMessage(CheckPeer.class, this::onCheckPeer)
        .onMessage(Checked.class, this::onChecked)
        .onMessageEquals(RefreshView.INSTANCE, Behaviors::same)
        .onMessage(Described.class, this::onDescribed)
        .onMessage(EndpointCharged.class, this::onEndpointCharged)
        .onMessage(BaseReady.class, this::onBaseReady)
        .onMessage(
            FurtherCharged.class,
            m -> {
              answers.charged(m.entry(), m.decision());
              return Behaviors.same();
            })
        .onMessage(
            FurtherReady.class,
            m -> {
              answers.ready(m.entry(), m.charged(), m.reply());
              return Behaviors.same();
            })
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
    String key = key(address);
    if (m.expectedEpoch() != null && entries.replaced(key, m.expectedEpoch())) {
      // Already known to be replaced: refuse without touching the network (C3). Any other epoch,
      // the newest one remembered included, is checked against what Describe answers now: the
      // remembered incarnation may have died, and the expected one may be its replacement.
      m.replyTo()
          .tell(
              new OpenFailed(
                  ErrorKind.EPOCH_MISMATCH,
                  mismatch(m.endpoint(), m.expectedEpoch(), entries.latestEpoch(key))));
      return Behaviors.same();
    }
    // Off the mailbox: a source that is not ready yet is asked again until the describe timeout.
    ctx.pipeToSelf(
        DescribeClient.describeWhenReady(address, describeTimeoutMillis, blockingIo, auth),
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
    if (!learnEpoch(peer)) {
      // Describe reached the incarnation before it was replaced, and answered after its
      // replacement did: stale, never a way back to the replaced incarnation (C3).
      Long latest = entries.latestEpoch(key(d.address()));
      d.open()
          .replyTo()
          .tell(
              d.open().expectedEpoch() != null
                  ? new OpenFailed(
                      ErrorKind.EPOCH_MISMATCH,
                      mismatch(d.open().endpoint(), d.open().expectedEpoch(), latest))
                  : new OpenFailed(
                      ErrorKind.UNAVAILABLE,
                      "open "
                          + d.open().endpoint()
                          + ": Describe answered epoch "
                          + Long.toHexString(peer.epoch())
                          + ", which epoch "
                          + Long.toHexString(latest)
                          + " has replaced; open again"));
      return Behaviors.same();
    }
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
    TableEntry existing = entries.current(peer);
    if (existing != null && existing.base.gate().active()) {
      answers.answer(existing, waiter);
      return Behaviors.same();
    }
    if (existing != null) {
      // Its own channel has closed: the same incarnation is opened afresh under a new entry; the
      // old one is reclaimed once nothing refers to it.
      entries.supersede(existing);
    }
    List<Waiter> waiters = opening.get(peer);
    if (waiters != null) {
      waiters.add(waiter);
      return Behaviors.same();
    }
    entries.retireReclaimable();
    if (entries.size() + opening.size() >= capacity) {
      long held =
          entries.all().stream().filter(e -> e.references > 0 && !e.base.gate().active()).count();
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
  void chargeEndpoint(java.util.function.Function<Admission.Decision, Command> then) {
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

  void askOpen(
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
        answers.adoptLiveSlots(entry, entries.all());
        entries.add(entry);
        for (Waiter w : opening.remove(m.peer())) {
          answers.answer(entry, w);
        }
        events.publish(new PeerEvent.PeerUp(m.peer(), Instant.now()));
      }
      case TransportCommand.PeerOpenFailed failed -> {
        admission.tell(new Admission.ReleaseEndpoint());
        failWaiters(m.peer(), failed.kind(), failed.detail());
      }
    }
    return Behaviors.same();
  }

  /**
   * Records the epoch {@code peer}'s endpoint runs; every entry of another epoch there is fenced,
   * counted and published ({@link PeerEvent.PeerFenced}).
   */
  private boolean learnEpoch(SegmentDescriptor peer) {
    return learnEpoch(peer, "") != null;
  }

  /**
   * {@link #learnEpoch(SegmentDescriptor)}, with {@code why} (what asked, for the log) and the
   * incarnations it fenced: null for a stale answer (see {@link TableEntries#learnEpoch}).
   */
  private List<SegmentDescriptor> learnEpoch(SegmentDescriptor peer, String why) {
    List<SegmentDescriptor> fenced = entries.learnEpoch(peer);
    if (fenced == null) {
      return null;
    }
    for (SegmentDescriptor old : fenced) {
      counters.increment(EngineTally.Count.PEERS_FENCED);
      ctx.getLog()
          .info(
              "peer {} fenced{}: its endpoint now runs epoch {}",
              old,
              why.isEmpty() ? "" : " (" + why + ")",
              Long.toHexString(peer.epoch()));
      events.publish(new PeerEvent.PeerFenced(old, Instant.now(), peer));
    }
    return fenced;
  }

  private Behavior<Command> onCheckPeer(CheckPeer m) {
    ctx.pipeToSelf(
        CompletableFuture.supplyAsync(
            () -> DescribeClient.describe(m.address(), describeTimeoutMillis, auth), blockingIo),
        (description, failure) -> new Checked(m, description, failure));
    return Behaviors.same();
  }

  /**
   * Acts on a check's Describe: an answering epoch is learned (older entries there are fenced, as a
   * reconnecting lane's refused HELLO would have it); no answer fences every entry there that still
   * takes work as "no longer that incarnation" and publishes {@link PeerEvent.PeerLost}.
   */
  private Behavior<Command> onChecked(Checked c) {
    InetSocketAddress address = c.check().address();
    String endpoint = key(address);
    if (c.failure() == null) {
      SegmentDescriptor answering =
          new SegmentDescriptor(
              address.getHostString(), c.description().port(), c.description().epoch());
      List<SegmentDescriptor> fenced = learnEpoch(answering, c.check().reason());
      if (fenced == null) {
        fenced = List.of();
      }
      c.check().replyTo().tell(new PeerCheck(endpoint, answering, fenced, List.of(), ""));
      return Behaviors.same();
    }
    Throwable cause =
        c.failure() instanceof CompletionException ce && ce.getCause() != null
            ? ce.getCause()
            : c.failure();
    String detail = TransferException.describe(cause);
    String reason = c.check().reason() + "; nothing answers at " + endpoint + " (" + detail + ")";
    List<SegmentDescriptor> lost =
        entries.loseAt(address.getHostString(), address.getPort(), reason);
    for (SegmentDescriptor old : lost) {
      counters.increment(EngineTally.Count.PEERS_FENCED);
      ctx.getLog().info("peer {} fenced: {}", old, reason);
      events.publish(new PeerEvent.PeerLost(old, Instant.now(), reason));
    }
    c.check().replyTo().tell(new PeerCheck(endpoint, null, List.of(), lost, detail));
    return Behaviors.same();
  }

  private Behavior<Command> onReleased(Released m) {
    TableEntry entry = entries.byChannel(m.channel());
    if (entry != null) {
      entry.references--;
      entries.retireReclaimable();
    }
    return Behaviors.same();
  }

  private Behavior<Command> onGetPeers(GetPeers m) {
    // An entry whose channel closed after its last reference went (its peer lost while it sat
    // unused) became reclaimable with no message to say so: it goes now, so no list shows it.
    entries.retireReclaimable();
    m.replyTo().tell(peerEntries());
    return Behaviors.same();
  }

  private List<PeerEntry> peerEntries() {
    return entries.views();
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

  /** Drops the entries that can be reclaimed (see {@link TableEntries#retireReclaimable}). */
  void retireReclaimable() {
    entries.retireReclaimable();
  }

  private void failWaiters(SegmentDescriptor peer, ErrorKind kind, String detail) {
    for (Waiter w : opening.remove(peer)) {
      w.open().replyTo().tell(new OpenFailed(kind, "open " + peer + ": " + detail));
    }
  }
}
