package io.orbite.engine.segment;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.PeerEntry;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferException;
import io.orbite.engine.admission.Admission;
import io.orbite.engine.control.DescribeClient;
import io.orbite.engine.spi.ChannelGate;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
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
 * Owner of remote peer identities (endpoint, epoch): a bounded table (C9), one entry per peer
 * incarnation, holding every channel to it: the TCP endpoint's and, for a same-host peer that
 * exports memory, the SHM endpoint's. Each channel is charged against {@code budgets.maxEndpoints},
 * counted by the entry's references and fenced with it when a newer epoch answers at its endpoint.
 * Child of the EngineGuardian. {@code openSegment} always asks the peer (Describe) for its current
 * epoch, so a restarted peer is reached only through a fresh open, under a fresh entry (C3).
 *
 * <p>Every {@link RemoteSegment} handed out is a counted reference to its entry, dropped by {@code
 * close()} or by the garbage collector (a {@link java.lang.ref.Cleaner} tells this actor). An
 * entry, with its table slot and endpoint charge, is reclaimed only when no RemoteSegment refers to
 * it and its incarnation is fenced (replaced) or every lane to it has closed; a live, reachable
 * entry is never dropped from under its users.
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

  private record Described(
      OpenSegment open, InetSocketAddress address, Description description, Throwable failure)
      implements Command {}

  private record EndpointCharged(SegmentDescriptor peer, Admission.Decision decision)
      implements Command {}

  /** The RDMA transport answered the open of {@code entry}'s RDMA endpoint. */
  private record RdmaReady(Entry entry, TransportCommand.OpenPeerReply reply) implements Command {}

  private record PeerReady(SegmentDescriptor peer, TransportCommand.OpenPeerReply reply)
      implements Command {}

  /** The endpoint charge for an entry's SHM channel was decided. */
  private record SharedCharged(Entry entry, Admission.Decision decision) implements Command {}

  /** The SHM transport answered an attach of {@code waiter}'s exports to {@code entry}. */
  private record SharedAttached(
      Entry entry, Waiter waiter, boolean charged, TransportCommand.OpenPeerReply reply)
      implements Command {}

  private record Waiter(OpenSegment open, Description description) {}

  /** A RemoteSegment referring to {@code channel}'s entry was closed or collected. */
  private record Released(PeerChannel channel) implements Command {}

  /** List the table's entries. */
  public record GetPeers(ActorRef<List<PeerEntry>> replyTo) implements Command {}

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

  /**
   * One table entry: the channels to one peer incarnation and the RemoteSegments referring to it.
   * Each channel holds one endpoint charge, returned when the entry is reclaimed (or, for the SHM
   * channel, when it is found ended and dropped).
   */
  private static final class Entry {
    final SegmentDescriptor peer;
    final PeerChannel channel;

    /**
     * The SHM channel to the peer's exported memory, or null (none yet, refused, or not same-host).
     */
    PeerChannel shared;

    /** An SHM charge or open is under way; these opens wait for it (each holds a reference). */
    final List<Waiter> sharedWaiters = new ArrayList<>();

    boolean sharedOpening;

    /**
     * The RDMA channel to the peer, or null (RDMA off, or its open failed: {@link #rdmaRefusal}).
     */
    PeerChannel rdma;

    String rdmaRefusal = "RDMA is not enabled here (rdma.enabled is false)";
    int references;

    Entry(SegmentDescriptor peer, PeerChannel channel) {
      this.peer = peer;
      this.channel = channel;
    }

    boolean reclaimable() {
      return references == 0
          && !sharedOpening
          && done(channel)
          && (shared == null || done(shared))
          && (rdma == null || done(rdma));
    }

    /** Endpoint charges the entry holds. */
    int charges() {
      return 1 + (shared != null ? 1 : 0);
    }

    private static boolean done(PeerChannel c) {
      return !c.gate().active();
    }
  }

  private final ActorContext<Command> ctx;
  private final ActorRef<Admission.Command> admission;
  private final ActorRef<TransportCommand> transport;

  /** The RDMA transport, or null when RDMA is not enabled: entries then have no RDMA channel. */
  private final ActorRef<TransportCommand> rdmaTransport;

  /** The SHM transport, or null when this engine has none. */
  private final ActorRef<TransportCommand> sharedTransport;

  private final Executor blockingIo;
  private final int describeTimeoutMillis;
  private final int capacity;

  /** Every entry, by channel: current, fenced or closed ones still referenced. */
  private final Map<PeerChannel, Entry> entries = new IdentityHashMap<>();

  /** The entry through which each incarnation is reached now. */
  private final Map<SegmentDescriptor, Entry> current = new HashMap<>();

  private final Map<SegmentDescriptor, List<Waiter>> opening = new HashMap<>();

  /** The newest epoch each endpoint ({@code host:port}) answered with. */
  private final Map<String, Long> latestEpoch =
      new java.util.LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
          // Bounded (C9): endpoints not seen for a while are forgotten; reopening them describes
          // again.
          return size() > 4 * capacity;
        }
      };

  private SegmentTable(
      ActorContext<Command> ctx,
      ActorRef<Admission.Command> admission,
      ActorRef<TransportCommand> transport,
      ActorRef<TransportCommand> sharedTransport,
      ActorRef<TransportCommand> rdmaTransport,
      Executor blockingIo,
      int describeTimeoutMillis,
      int capacity) {
    this.ctx = ctx;
    this.admission = admission;
    this.transport = transport;
    this.rdmaTransport = rdmaTransport;
    this.sharedTransport = sharedTransport;
    this.blockingIo = blockingIo;
    this.describeTimeoutMillis = describeTimeoutMillis;
    this.capacity = capacity;
  }

  /**
   * The table, reporting its state, its entry counts and every peer entry to {@code board}.
   *
   * @param transport the TCP transport, which opens every entry's first channel
   * @param sharedTransport the SHM transport, or null: same-host peers are then reached over TCP
   *     only
   * @param rdmaTransport the RDMA transport when {@code rdma.enabled}, else null: every entry then
   *     also opens an RDMA endpoint to its peer (counted against {@code rdma.maxEndpoints} by that
   *     transport), and its segments carry it when the open succeeded
   */
  public static Behavior<Command> create(
      ActorRef<Admission.Command> admission,
      ActorRef<TransportCommand> transport,
      ActorRef<TransportCommand> sharedTransport,
      ActorRef<TransportCommand> rdmaTransport,
      Executor blockingIo,
      Duration describeTimeout,
      int capacity,
      io.orbite.engine.view.OwnerBoard board) {
    return Behaviors.withTimers(
        timers ->
            Behaviors.setup(
                ctx -> {
                  timers.startTimerWithFixedDelay(RefreshView.INSTANCE, VIEW_REFRESH);
                  SegmentTable table =
                      new SegmentTable(
                          ctx,
                          admission,
                          transport,
                          sharedTransport,
                          rdmaTransport,
                          blockingIo,
                          (int) describeTimeout.toMillis(),
                          capacity);
                  return io.orbite.engine.view.OwnerBoard.reporting(
                      board, () -> table.report(board), table.active());
                }));
  }

  private OwnerState state = OwnerState.ACTIVE;

  /** Set once the table has stopped: a RemoteSegment dropped later has nothing to tell. */
  private final java.util.concurrent.atomic.AtomicBoolean stopped =
      new java.util.concurrent.atomic.AtomicBoolean();

  private List<PeerEntry> reportedPeers = List.of();

  private io.orbite.engine.view.OwnerBoard.Report report(io.orbite.engine.view.OwnerBoard board) {
    List<PeerEntry> peers = peerEntries();
    if (!peers.equals(reportedPeers)) {
      reportedPeers = peers;
      board.peers(peers);
    }
    return new io.orbite.engine.view.OwnerBoard.Report(
        "SegmentTable",
        state,
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
    return handling(
        Behaviors.receive(Command.class)
            .onMessage(OpenSegment.class, this::onOpen)
            .onMessage(Fence.class, m -> fenced(m.reason())));
  }

  /** No new opens: the engine's requester side is closed. */
  private Behavior<Command> fenced(String reason) {
    state = OwnerState.FENCED;
    return handling(
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
            .onMessage(Fence.class, m -> Behaviors.same()));
  }

  /** The handlers every state shares: the steps of opens already under way. */
  private Behavior<Command> handling(
      org.apache.pekko.actor.typed.javadsl.BehaviorBuilder<Command> builder) {
    return builder
        .onMessage(Released.class, this::onReleased)
        .onMessage(GetPeers.class, this::onGetPeers)
        .onMessageEquals(RefreshView.INSTANCE, Behaviors::same)
        .onMessage(Described.class, this::onDescribed)
        .onMessage(EndpointCharged.class, this::onEndpointCharged)
        .onMessage(PeerReady.class, this::onPeerReady)
        .onMessage(RdmaReady.class, this::onRdmaReady)
        .onMessage(SharedCharged.class, this::onSharedCharged)
        .onMessage(SharedAttached.class, this::onSharedAttached)
        .onSignal(
            org.apache.pekko.actor.typed.PostStop.class,
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
    Entry existing = current.get(peer);
    if (existing != null && existing.channel.gate().active()) {
      reply(existing, new Waiter(d.open(), d.description()));
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
      long held =
          entries.values().stream()
              .filter(e -> e.references > 0 && !e.channel.gate().active())
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
    opening.put(peer, new ArrayList<>(List.of(new Waiter(d.open(), d.description()))));
    ctx.ask(
        Admission.Decision.class,
        admission,
        Duration.ofSeconds(10),
        Admission.AcquireEndpoint::new,
        (decision, failure) ->
            new EndpointCharged(
                peer,
                decision != null
                    ? decision
                    : new Admission.Decision.Unavailable("admission did not answer: " + failure)));
    return Behaviors.same();
  }

  private Behavior<Command> onEndpointCharged(EndpointCharged m) {
    if (!m.decision().granted()) {
      ErrorKind kind = m.decision().fenced() ? ErrorKind.UNAVAILABLE : ErrorKind.RESOURCE_EXHAUSTED;
      failWaiters(m.peer(), kind, m.decision().refusal());
      return Behaviors.same();
    }
    ctx.ask(
        TransportCommand.OpenPeerReply.class,
        transport,
        Duration.ofMinutes(2),
        replyTo -> new TransportCommand.OpenPeer(m.peer(), replyTo),
        (reply, failure) ->
            new PeerReady(
                m.peer(),
                reply != null
                    ? reply
                    : new TransportCommand.PeerOpenFailed(
                        ErrorKind.UNAVAILABLE, "transport did not answer: " + failure)));
    return Behaviors.same();
  }

  private Behavior<Command> onPeerReady(PeerReady m) {
    if (m.reply() instanceof TransportCommand.PeerOpened opened) {
      Entry entry = new Entry(m.peer(), opened.channel());
      adoptSharedChannel(entry);
      entries.put(opened.channel(), entry);
      current.put(m.peer(), entry);
      if (rdmaTransport != null) {
        // The waiters wait for the RDMA endpoint too: a segment carries every channel it will have.
        ctx.ask(
            TransportCommand.OpenPeerReply.class,
            rdmaTransport,
            Duration.ofMinutes(2),
            replyTo -> new TransportCommand.OpenPeer(m.peer(), replyTo),
            (reply, failure) ->
                new RdmaReady(
                    entry,
                    reply != null
                        ? reply
                        : new TransportCommand.PeerOpenFailed(
                            ErrorKind.UNAVAILABLE,
                            "the RDMA transport did not answer: " + failure)));
        return Behaviors.same();
      }
      for (Waiter w : opening.remove(m.peer())) {
        reply(entry, w);
      }
    } else if (m.reply() instanceof TransportCommand.PeerOpenFailed failed) {
      admission.tell(new Admission.ReleaseEndpoint());
      failWaiters(m.peer(), failed.kind(), failed.detail());
    }
    return Behaviors.same();
  }

  private Behavior<Command> onRdmaReady(RdmaReady m) {
    Entry entry = m.entry();
    if (m.reply() instanceof TransportCommand.PeerOpened opened) {
      entry.rdma = opened.channel();
      entry.rdmaRefusal = null;
      if (entry.channel.gate().state() instanceof ChannelGate.Fenced f) {
        entry.rdma.fence(f.newerEpoch(), f.reason());
      }
    } else if (m.reply() instanceof TransportCommand.PeerOpenFailed failed) {
      entry.rdmaRefusal = "the RDMA endpoint could not be opened: " + failed.detail();
    }
    List<Waiter> waiting = opening.remove(entry.peer);
    if (waiting != null) {
      for (Waiter w : waiting) {
        reply(entry, w);
      }
    }
    return Behaviors.same();
  }

  /**
   * Records the epoch an endpoint answered with; every entry of another epoch at that endpoint is a
   * replaced incarnation and is fenced: it refuses new work and its endpoint drains and retires.
   */
  private void learnEpoch(SegmentDescriptor peer) {
    String key = peer.host() + ":" + peer.port();
    latestEpoch.put(key, peer.epoch());
    String reason = "the peer at " + key + " now runs epoch " + Long.toHexString(peer.epoch());
    // Every entry of another epoch at that endpoint, current or not (one whose lanes all ended is
    // no longer current, and still refused with its replacement's kind, C3).
    for (Entry replaced : entries.values()) {
      SegmentDescriptor old = replaced.peer;
      if (old.host().equals(peer.host())
          && old.port() == peer.port()
          && old.epoch() != peer.epoch()) {
        replaced.channel.fence(peer.epoch(), reason);
        if (replaced.shared != null) {
          replaced.shared.fence(peer.epoch(), reason);
        }
        if (replaced.rdma != null) {
          replaced.rdma.fence(peer.epoch(), reason);
        }
        current.remove(old, replaced);
      }
    }
    retireReclaimable();
  }

  /**
   * Answers {@code w} with a segment of {@code entry}: at once when the peer exports no memory
   * through SHM (or this engine has no SHM transport), else once its exports are attached to the
   * entry's SHM channel, opening and charging that channel first when the entry has none. The
   * reference is taken now, so that the entry is not reclaimed while the answer is under way.
   */
  private void reply(Entry entry, Waiter w) {
    entry.references++;
    if (w.description().shared() == null) {
      w.open().replyTo().tell(new Opened(segment(entry, w.description(), null, null)));
      return;
    }
    if (sharedTransport == null) {
      w.open()
          .replyTo()
          .tell(
              new Opened(
                  segment(entry, w.description(), null, "this engine has no SHM transport")));
      return;
    }
    if (entry.shared != null && entry.shared.gate().state() instanceof ChannelGate.Closed) {
      // Its SHM endpoint has ended (its lane closed): drop it and its charge, and open afresh.
      entry.shared = null;
      admission.tell(new Admission.ReleaseEndpoint());
    }
    if (entry.shared != null && !entry.sharedOpening) {
      attachShared(entry, w, false);
      return;
    }
    entry.sharedWaiters.add(w);
    if (!entry.sharedOpening) {
      entry.sharedOpening = true;
      ctx.ask(
          Admission.Decision.class,
          admission,
          Duration.ofSeconds(10),
          Admission.AcquireEndpoint::new,
          (decision, failure) ->
              new SharedCharged(
                  entry,
                  decision != null
                      ? decision
                      : new Admission.Decision.Unavailable(
                          "admission did not answer: " + failure)));
    }
  }

  private void attachShared(Entry entry, Waiter w, boolean charged) {
    ctx.ask(
        TransportCommand.OpenPeerReply.class,
        sharedTransport,
        Duration.ofSeconds(30),
        replyTo ->
            new TransportCommand.OpenSharedPeer(entry.peer, w.description().shared(), replyTo),
        (reply, failure) ->
            new SharedAttached(
                entry,
                w,
                charged,
                reply != null
                    ? reply
                    : new TransportCommand.PeerOpenFailed(
                        ErrorKind.UNAVAILABLE, "the SHM transport did not answer: " + failure)));
  }

  private Behavior<Command> onSharedCharged(SharedCharged m) {
    Entry entry = m.entry();
    if (!m.decision().granted()) {
      finishSharedOpen(entry, "SHM not used: " + m.decision().refusal());
      return Behaviors.same();
    }
    if (entry.channel.gate().state() instanceof ChannelGate.Fenced f) {
      // Fenced while the charge was decided: open no SHM channel to a replaced incarnation.
      admission.tell(new Admission.ReleaseEndpoint());
      finishSharedOpen(entry, "SHM not used: " + f.reason());
      return Behaviors.same();
    }
    attachShared(entry, entry.sharedWaiters.removeFirst(), true);
    return Behaviors.same();
  }

  private Behavior<Command> onSharedAttached(SharedAttached m) {
    Entry entry = m.entry();
    Waiter w = m.waiter();
    switch (m.reply()) {
      case TransportCommand.PeerOpened opened -> {
        // The entry holds one SHM charge, for whichever channel the SHM transport now keeps for the
        // incarnation (it replaces an endpoint that ended since the check in reply()). With none, a
        // charged open is under way (reply() started it when it dropped the ended one) and sets it.
        if (m.charged()) {
          if (entry.shared != null) {
            admission.tell(new Admission.ReleaseEndpoint());
          }
          entry.shared = opened.channel();
        } else if (entry.shared != null) {
          entry.shared = opened.channel();
        }
        if (entry.channel.gate().state() instanceof ChannelGate.Fenced f) {
          opened.channel().fence(f.newerEpoch(), f.reason());
        }
        w.open()
            .replyTo()
            .tell(new Opened(segment(entry, w.description(), opened.channel(), null)));
        if (m.charged()) {
          entry.sharedOpening = false;
          List<Waiter> waiting = List.copyOf(entry.sharedWaiters);
          entry.sharedWaiters.clear();
          for (Waiter next : waiting) {
            attachShared(entry, next, false);
          }
        }
      }
      case TransportCommand.PeerOpenFailed failed -> {
        w.open().replyTo().tell(new Opened(segment(entry, w.description(), null, failed.detail())));
        if (m.charged()) {
          admission.tell(new Admission.ReleaseEndpoint());
          finishSharedOpen(entry, failed.detail());
        }
      }
    }
    retireReclaimable();
    return Behaviors.same();
  }

  /** Answers every open waiting for the entry's SHM channel without one, saying why. */
  private void finishSharedOpen(Entry entry, String why) {
    entry.sharedOpening = false;
    List<Waiter> waiting = List.copyOf(entry.sharedWaiters);
    entry.sharedWaiters.clear();
    for (Waiter w : waiting) {
      w.open().replyTo().tell(new Opened(segment(entry, w.description(), null, why)));
    }
    retireReclaimable();
  }

  /**
   * A new entry for an incarnation whose previous entry's TCP lanes all closed takes over that
   * entry's live SHM channel and its charge (the SHM transport keeps one endpoint per incarnation).
   */
  private void adoptSharedChannel(Entry entry) {
    for (Entry old : entries.values()) {
      if (old.peer.equals(entry.peer)
          && old.shared != null
          && old.shared.gate().active()
          && !old.sharedOpening) {
        entry.shared = old.shared;
        old.shared = null;
        return;
      }
    }
  }

  /**
   * The segment handed to one open: a counted reference to {@code entry} (taken by {@link #reply}),
   * dropped when the RemoteSegment is closed or collected.
   */
  private RemoteSegment segment(
      Entry entry, Description description, PeerChannel shared, String sharedRefusal) {
    ActorRef<Command> self = ctx.getSelf();
    PeerChannel channel = entry.channel;
    java.util.concurrent.atomic.AtomicBoolean tableStopped = stopped;
    PeerSegment segment =
        new PeerSegment(
            entry.peer,
            description.regions(),
            channel,
            description.shared(),
            () -> {
              if (!tableStopped.get()) {
                self.tell(new Released(channel));
              }
            });
    if (rdmaTransport != null) {
      segment = segment.withRdmaChannel(entry.rdma, entry.rdmaRefusal);
    }
    if (shared != null) {
      return segment.withSharedChannel(shared);
    }
    return sharedRefusal != null ? segment.withoutSharedChannel(sharedRefusal) : segment;
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
      PeerEntry.State state =
          switch (e.channel.gate().state()) {
            case ChannelGate.Active a -> PeerEntry.State.ACTIVE;
            case ChannelGate.Fenced f -> PeerEntry.State.FENCED;
            case ChannelGate.Closed c -> PeerEntry.State.CLOSED;
          };
      String detail =
          switch (e.channel.gate().state()) {
            case ChannelGate.Active a -> "";
            case ChannelGate.Fenced f -> f.reason();
            case ChannelGate.Closed c -> c.reason();
          };
      out.add(new PeerEntry(e.peer, state, e.references, sharedState(e.shared), detail));
    }
    return List.copyOf(out);
  }

  private static PeerEntry.Shared sharedState(PeerChannel shared) {
    if (shared == null) {
      return PeerEntry.Shared.NONE;
    }
    return switch (shared.gate().state()) {
      case ChannelGate.Active a -> PeerEntry.Shared.ACTIVE;
      case ChannelGate.Fenced f -> PeerEntry.Shared.FENCED;
      case ChannelGate.Closed c -> PeerEntry.Shared.CLOSED;
    };
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
