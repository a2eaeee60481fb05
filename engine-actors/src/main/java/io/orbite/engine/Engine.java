package io.orbite.engine;

import io.orbite.config.EngineConfig;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Source;

/**
 * What an application calls on an engine incarnation: memory, peers, batches, directional close and
 * close, and what the engine owes. {@link TransferEngine} is the engine ({@link
 * TransferEngine#start}, {@link TransferEngine#spawn}); code that only uses an engine can hold this
 * interface; it is sealed (only {@link TransferEngine} implements it). Thread-safe.
 *
 * <p>Naming: a method named {@code xxxAsync} returns a {@link CompletionStage} and never blocks the
 * caller; the method {@code xxx} without the suffix either blocks, waiting at most the time it
 * names and failing with what the stage fails with (a {@link TransferException}; TIMEOUT when the
 * wait ends first), or answers at once without waiting on anything. No method wraps an answer it
 * already has in a completed stage.
 *
 * <p>Once a close has begun, every operation fails UNAVAILABLE at once, naming the engine and the
 * call ({@code "engine <name> closing|closed (<call>)"}); {@link #owed()}, {@link #config()},
 * {@link #localSegment()}, {@link #counters()}, {@link #sourceLedger()}, {@link #ownerView()},
 * {@link #nicLoadStats()}, {@link #quarantined()}, {@link #localRegions()}, {@link #isReady()} and
 * {@link #dashboardPanels()} still answer.
 *
 * <p>Names and readiness: a range may be registered under a name ({@link #allocate(long, Access,
 * String)}, {@link #register(MemorySegment, Access, String)}), which this engine's Describe answer
 * carries with its own name ({@code EngineConfig.name}); a peer finds it with {@link
 * RemoteSegment#region(String)}. An engine started with {@code listen.readyAtStart} off answers
 * Describe "not ready" until {@link #markReady()}, and peers' opens wait for that within their
 * describe timeout, so none of them sees the engine before its regions are registered. A range may
 * also be kept to the peers an allow-list names ({@link #allocate(long, Access, String, Set)},
 * {@link #register(MemorySegment, Access, String, Set)}): the others neither see nor reach it.
 *
 * <p>Longer than 500 lines: it is the whole API an application calls, each call with its async and
 * blocking form and the Javadoc that states its refusals; splitting it would split what a caller
 * reads in one place.
 */
public sealed interface Engine extends AutoCloseable permits TransferEngine {
  /**
   * The observability endpoints by name ({@code "metrics"}, {@code "dashboard"}): empty unless
   * {@code observability} enables them, and once the engine closes.
   *
   * @return a map from endpoint name to its URL
   */
  Map<String, String> observabilityUrls();

  /**
   * The tables optional modules add to this engine's dashboard (the peer directory's members, for
   * one), drawn when {@code observability.dashboard} serves it; still answers after close.
   *
   * @return this engine's panels, where a module adds its own
   */
  DashboardPanels dashboardPanels();

  /**
   * What every owner actor last reported, retired owners and peers; still answers after close.
   *
   * @return a snapshot of the owner board
   */
  io.orbite.engine.OwnerView ownerView();

  /**
   * Each RDMA rail's link rate, bandwidth estimates and byte charges, as the rail selection sees
   * them; local observations, never a device query. Still answers after close.
   *
   * @return one entry per rail; empty when the RDMA transport is off, and until its rails have
   *     opened (the transport opens them off the caller's thread after {@code start})
   */
  default java.util.List<NicLoadStats> nicLoadStats() {
    return NicLoadStats.of(ownerView());
  }

  /**
   * What the engine still has charged ({@link EngineOwed}), read at once from objects the guardian
   * publishes, never from a mailbox: current while the engine runs and closes, and after a
   * confirmed close what it retains. Never throws.
   *
   * @return the figures, in phase RUNNING, CLOSING or CLOSED
   */
  EngineOwed owed();

  /**
   * The configuration the engine was started with; still answers after close.
   *
   * @return the configuration
   */
  EngineConfig config();

  /**
   * This incarnation's endpoint and epoch, to publish to peers; still answers after close.
   *
   * @return the descriptor peers open with {@link #openSegmentAsync(SegmentDescriptor)}
   */
  SegmentDescriptor localSegment();

  /**
   * Cumulative counters of this incarnation; still answers after close.
   *
   * @return a snapshot of the counters now (immutable; call again for later figures)
   */
  EngineCounters counters();

  /**
   * What this incarnation served as a source: bytes by requester, transport and op, and the
   * requesters connected now with their epochs; still answers after close.
   *
   * @return a snapshot of the ledger now (immutable; call again for later figures)
   */
  SourceLedger sourceLedger();

  /**
   * The actor system the engine runs in (its own, or the host's).
   *
   * @return the system; after a close of an engine started with {@link TransferEngine#start} it has
   *     terminated
   */
  ActorSystem<?> system();

  /**
   * Allocates {@code bytes} of zeroed, 64-byte aligned off-heap memory owned by the engine; with
   * {@code shm.enabled} a memfd (page aligned) that same-host peers may map.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @return a stage with the registered range, visible to peers at once; it fails INVALID_ARGUMENT
   *     for {@code bytes <= 0} or a null {@code access}, RESOURCE_EXHAUSTED when the memory cannot
   *     be allocated or {@code budgets.maxRegistrations} is in use (a memfd that cannot be made:
   *     RESOURCE_EXHAUSTED or UNAVAILABLE), UNAVAILABLE when the Registry is quarantined or a close
   *     has begun
   */
  default CompletionStage<RegisteredMemory> allocateAsync(long bytes, Access access) {
    return allocateAsync(bytes, access, null);
  }

  /**
   * Allocates as {@link #allocateAsync(long, Access)} does, registered under {@code name}.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @param name the name peers find the range by in this engine's Describe answer ({@link
   *     RemoteSegment#region(String)}), 1..128 characters of {@code A-Z a-z 0-9 . _ : / -}, unique
   *     among this engine's live registrations (free again once the range holding it is
   *     unregistered); null for an unnamed range
   * @return a stage with the registered range; it fails as {@link #allocateAsync(long, Access)}
   *     does, and INVALID_ARGUMENT, naming the name, for a name that breaks the rule above or that
   *     a live registration holds (naming that region), before any memory is allocated for a
   *     malformed one
   */
  default CompletionStage<RegisteredMemory> allocateAsync(long bytes, Access access, String name) {
    return allocateAsync(bytes, access, name, null);
  }

  /**
   * Allocates as {@link #allocateAsync(long, Access, String)} does, reachable only by the peers
   * {@code allowedPeers} names.
   *
   * <p>An allow-list needs peers whose names are proven: this engine must hold its peers' public
   * keys ({@code security.identityKeyFile} and {@code security.peerKeysDir}) or run mutual TLS
   * ({@code security.tlsKeyStore}, certificates naming engines), so that each connection's
   * handshake proves which engine it comes from; a shared secret alone proves only membership. The
   * check is made by the source on every connection: a peer whose proven name is not listed does
   * not see the range in this engine's Describe answer (nor in its shared-memory exports), and each
   * of its READ and WRITE requests for the range is refused PERMISSION_DENIED before a byte moves,
   * on every transport. A range with an allow-list (even one naming every member) is never
   * published in a peer directory ({@code io.orbite.cluster.PeerDirectory}): peers that may reach
   * it find it by name in Describe.
   *
   * @param bytes the size of the range; positive
   * @param access what the allowed peers may do with it
   * @param name the range's name, as for {@link #allocateAsync(long, Access, String)}; null for an
   *     unnamed range
   * @param allowedPeers who may see and reach the range: null for every peer this engine serves; a
   *     set for only the peers whose handshake proved one of these engine names (each matching
   *     {@code EngineConfig.NAME_REGEX}, at most {@value TransferEngine#MAX_ALLOWED_PEERS}); an
   *     empty set for no peer at all (local use only, allowed on any engine). Copied
   * @return a stage with the registered range; it fails as {@link #allocateAsync(long, Access,
   *     String)} does, and INVALID_ARGUMENT, naming what is wrong and before any memory is
   *     allocated, for a set holding a null, a name that is not an engine name or more than {@value
   *     TransferEngine#MAX_ALLOWED_PEERS} names, and for a non-empty set on an engine whose peers
   *     do not prove their names (the message names {@code security.peerKeysDir})
   */
  CompletionStage<RegisteredMemory> allocateAsync(
      long bytes, Access access, String name, Set<String> allowedPeers);

  /**
   * Blocking form of {@link #allocateAsync}.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @return the registered range
   */
  default RegisteredMemory allocate(long bytes, Access access) {
    return Batch.join(allocateAsync(bytes, access), CallTimeouts.CONTROL, "allocate");
  }

  /**
   * Blocking form of {@link #allocateAsync(long, Access, String)}.
   *
   * @param bytes the size of the range; positive
   * @param access what peers may do with it
   * @param name the range's name, or null for an unnamed range
   * @return the registered range
   */
  default RegisteredMemory allocate(long bytes, Access access, String name) {
    return Batch.join(allocateAsync(bytes, access, name), CallTimeouts.CONTROL, "allocate");
  }

  /**
   * Blocking form of {@link #allocateAsync(long, Access, String, Set)}.
   *
   * @param bytes the size of the range; positive
   * @param access what the allowed peers may do with it
   * @param name the range's name, or null for an unnamed range
   * @param allowedPeers the engine names that may reach the range; null for every peer, empty for
   *     none
   * @return the registered range
   */
  default RegisteredMemory allocate(
      long bytes, Access access, String name, Set<String> allowedPeers) {
    return Batch.join(
        allocateAsync(bytes, access, name, allowedPeers), CallTimeouts.CONTROL, "allocate");
  }

  /**
   * Registers caller-owned native memory; the caller keeps it alive until unregister completes.
   *
   * @param range the native memory to register; the engine never frees it
   * @param access what peers may do with it
   * @return a stage with the registered range, visible to peers at once; it fails INVALID_ARGUMENT
   *     for a null range or access, a heap segment or an empty range, RESOURCE_EXHAUSTED when
   *     {@code budgets.maxRegistrations} is in use, UNAVAILABLE as {@link #allocateAsync} does
   */
  default CompletionStage<RegisteredMemory> registerAsync(MemorySegment range, Access access) {
    return registerAsync(range, access, null);
  }

  /**
   * Registers as {@link #registerAsync(MemorySegment, Access)} does, under {@code name}.
   *
   * @param range the native memory to register; the engine never frees it
   * @param access what peers may do with it
   * @param name the name peers find the range by, as for {@link #allocateAsync(long, Access,
   *     String)}; null for an unnamed range
   * @return a stage with the registered range; it fails as {@link #registerAsync(MemorySegment,
   *     Access)} does, and INVALID_ARGUMENT, naming the name, for a name that breaks the rule or
   *     that a live registration holds (naming that region)
   */
  default CompletionStage<RegisteredMemory> registerAsync(
      MemorySegment range, Access access, String name) {
    return registerAsync(range, access, name, null);
  }

  /**
   * Registers as {@link #registerAsync(MemorySegment, Access, String)} does, reachable only by the
   * peers {@code allowedPeers} names, as {@link #allocateAsync(long, Access, String, Set)}
   * describes.
   *
   * @param range the native memory to register; the engine never frees it
   * @param access what the allowed peers may do with it
   * @param name the range's name, or null for an unnamed range
   * @param allowedPeers who may see and reach the range: null for every peer this engine serves; a
   *     set for only the peers whose handshake proved one of these engine names; an empty set for
   *     no peer at all (local use only). Copied
   * @return a stage with the registered range; it fails as {@link #registerAsync(MemorySegment,
   *     Access, String)} does, and INVALID_ARGUMENT for an allow-list that {@link
   *     #allocateAsync(long, Access, String, Set)} refuses, before anything is registered
   */
  CompletionStage<RegisteredMemory> registerAsync(
      MemorySegment range, Access access, String name, Set<String> allowedPeers);

  /**
   * Blocking form of {@link #registerAsync}.
   *
   * @param range the native memory to register
   * @param access what peers may do with it
   * @return the registered range
   */
  default RegisteredMemory register(MemorySegment range, Access access) {
    return Batch.join(registerAsync(range, access), CallTimeouts.CONTROL, "register");
  }

  /**
   * Blocking form of {@link #registerAsync(MemorySegment, Access, String)}.
   *
   * @param range the native memory to register
   * @param access what peers may do with it
   * @param name the range's name, or null for an unnamed range
   * @return the registered range
   */
  default RegisteredMemory register(MemorySegment range, Access access, String name) {
    return Batch.join(registerAsync(range, access, name), CallTimeouts.CONTROL, "register");
  }

  /**
   * Blocking form of {@link #registerAsync(MemorySegment, Access, String, Set)}.
   *
   * @param range the native memory to register
   * @param access what the allowed peers may do with it
   * @param name the range's name, or null for an unnamed range
   * @param allowedPeers the engine names that may reach the range; null for every peer, empty for
   *     none
   * @return the registered range
   */
  default RegisteredMemory register(
      MemorySegment range, Access access, String name, Set<String> allowedPeers) {
    return Batch.join(
        registerAsync(range, access, name, allowedPeers), CallTimeouts.CONTROL, "register");
  }

  /**
   * The ranges registered now and visible to peers (not those being unregistered), read at once
   * from what the Registry last published, never from a mailbox; empty once the engine has closed.
   *
   * @return an unmodifiable list in region id order
   */
  List<RegisteredMemory> localRegions();

  /**
   * Marks the engine ready (idempotent): from now on its Describe answers say ready, listing every
   * range whose registration completed before this call, and peers' opens waiting for it complete.
   * An engine started with {@code listen.readyAtStart} on (the default) is ready from the start.
   *
   * @throws TransferException UNAVAILABLE once a close has begun
   */
  void markReady();

  /**
   * Whether the engine's Describe answers say ready; still answers after close.
   *
   * @return true once {@link #markReady()} was called, or from the start with {@code
   *     listen.readyAtStart} on
   */
  boolean isReady();

  /**
   * Hides the range from peers at once, waits for admitted work to return its loans, then releases
   * it (engine-owned memory is freed).
   *
   * @param memory the range to unregister
   * @return a stage that completes once the range is released; it fails INVALID_ARGUMENT for null
   *     or a range that is not (or no longer) registered, UNQUIESCED when its loans did not come
   *     back within the destruction window (the range stays hidden and retained, and is listed by
   *     {@link #quarantined()}), UNAVAILABLE as {@link #allocateAsync} does
   */
  CompletionStage<Void> unregisterAsync(RegisteredMemory memory);

  /**
   * Blocking form of {@link #unregisterAsync}.
   *
   * @param memory the range to unregister
   */
  default void unregister(RegisteredMemory memory) {
    Batch.join(unregisterAsync(memory), CallTimeouts.unregister(config()), "unregister");
  }

  /**
   * The segment table (C9): every peer incarnation this engine opened that is still active or still
   * referenced by a {@link RemoteSegment}, with its state and reference count.
   *
   * @return one entry per incarnation; UNAVAILABLE when the table is quarantined or a close has
   *     begun
   */
  List<PeerEntry> peers();

  /**
   * What this engine learns of its peers from now on, as a stream: {@link PeerEvent.PeerUp}, {@link
   * PeerEvent.LaneLost}, {@link PeerEvent.LaneRestored}, {@link PeerEvent.PeerFenced} and {@link
   * PeerEvent.PeerLost}. Each materialisation is a subscription of its own, ended when the stream
   * ends (or is cancelled); a consumer more than {@code 1024} events behind loses the oldest.
   *
   * @return a source of events, materialised as often as wanted
   * @throws TransferException UNAVAILABLE once the engine is closing or closed
   */
  Source<PeerEvent, NotUsed> peerEvents();

  /**
   * Calls {@code listener} with every {@link PeerEvent} from now on, one at a time, on the engine's
   * blocking-I/O dispatcher (never on a lane thread), until the handle is closed; what it throws is
   * logged.
   *
   * @param listener the listener
   * @return closes the subscription (idempotent)
   * @throws TransferException UNAVAILABLE once the engine is closing or closed
   */
  AutoCloseable onPeerEvent(Consumer<PeerEvent> listener);

  /**
   * Sends a notification to the peer incarnation {@code segment} names, at once and at most once,
   * over one persistent control connection per peer incarnation (opened on first use, off the
   * caller's thread), whichever transport carries the segment's data. It is delivered to the peer's
   * {@link #notifications()} and polls if the peer's inbox accepts it; a notification that follows
   * WRITEs goes with them: {@code batch.submit(requests, notification)} (C16).
   *
   * @param segment the peer to notify, opened by this engine and not closed
   * @param tag what the receiver dispatches on, at most {@code notifications.maxTagBytes} of UTF-8
   * @param bytes the payload (null: empty), at most {@code notifications.maxPayloadBytes}; copied
   * @return a stage with the result: DELIVERED (the peer's inbox took it), REFUSED (its inbox was
   *     full: RESOURCE_EXHAUSTED; over the peer's own bound: INVALID_ARGUMENT; another incarnation
   *     answers there now: EPOCH_MISMATCH), NOT_SENT (no byte of it left: the segment's peer is
   *     lost or fenced, or no connection could be made) or UNKNOWN (sent, and the answer was lost:
   *     it may have been delivered; it is never sent again). The stage fails INVALID_ARGUMENT,
   *     naming what is wrong, for a null segment, one not opened by an engine, a file segment, a
   *     closed segment, a null tag, or a tag or payload over this engine's bound (nothing is sent);
   *     UNAVAILABLE once the requester side or the engine is closing
   */
  CompletionStage<NotificationResult> notifyAsync(RemoteSegment segment, String tag, byte[] bytes);

  /**
   * Blocking form of {@link #notifyAsync}: waits for the peer's answer, at most {@code
   * tcp.connectTimeoutMillis} + {@code notifications.answerTimeoutMillis} and a few seconds.
   *
   * @param segment the peer to notify
   * @param tag the tag
   * @param bytes the payload (null: empty)
   * @return the result, as {@link #notifyAsync}'s stage completes
   * @throws TransferException as {@link #notifyAsync}'s stage fails
   */
  NotificationResult notify(RemoteSegment segment, String tag, byte[] bytes);

  /**
   * The notifications peers send this engine, as a stream with backpressure: a notification is
   * taken from the bounded inbox only when the stream demands one, so a consumer that falls behind
   * leaves them in the inbox, which then refuses senders ({@code REFUSED}, RESOURCE_EXHAUSTED).
   * Every materialisation and the poll calls take from the same inbox, each notification by exactly
   * one of them. A stream ends once the engine has closed and the inbox is empty.
   *
   * @return a source of notifications, materialised as often as wanted
   * @throws TransferException UNAVAILABLE once the engine is closing or closed
   */
  Source<ReceivedNotification, NotUsed> notifications();

  /**
   * Takes up to {@code max} notifications from the inbox, oldest first, without waiting.
   *
   * @param max how many at most, positive
   * @return the notifications taken; empty when there were none
   * @throws TransferException INVALID_ARGUMENT for {@code max < 1}; UNAVAILABLE once the engine is
   *     closing
   */
  List<ReceivedNotification> pollNotifications(int max);

  /**
   * Takes the oldest notification, waiting at most {@code timeout} for one; the waiting thread is
   * parked and woken by the connection that puts the next one in.
   *
   * @param timeout how long to wait, zero or positive
   * @return the notification, or empty when none came in time
   * @throws TransferException INVALID_ARGUMENT for a null or negative timeout; CANCELLED when the
   *     thread is interrupted; UNAVAILABLE once the engine is closing
   */
  Optional<ReceivedNotification> pollNotification(Duration timeout);

  /**
   * Describes the peer at {@code endpoint} ({@code host:port}) and opens its current incarnation.
   *
   * @param endpoint the peer's {@code host:port}
   * @return a stage with the segment, a new reference to the peer's table entry (close it when
   *     done); it fails INVALID_ARGUMENT for a malformed endpoint; UNAVAILABLE, TIMEOUT, PEER_LOST
   *     or PROTOCOL when Describe or the connection fails; RESOURCE_EXHAUSTED when the peer table
   *     or {@code budgets.maxEndpoints} is full; UNAVAILABLE when the requester side is closed, the
   *     table is quarantined or a close has begun
   */
  CompletionStage<RemoteSegment> openSegmentAsync(String endpoint);

  /**
   * Opens exactly the incarnation {@code expected} names: EPOCH_MISMATCH if a different epoch now
   * answers at its endpoint. The epoch is checked against what Describe answers now, so the
   * descriptor a restarted peer published opens at once; only an epoch this engine already knows to
   * be replaced at that endpoint is refused without a network round trip.
   *
   * @param expected the incarnation to open
   * @return a stage with the segment; it fails EPOCH_MISMATCH as above, or as {@link
   *     #openSegmentAsync(String)} does
   */
  CompletionStage<RemoteSegment> openSegmentAsync(SegmentDescriptor expected);

  /**
   * Blocking form of {@link #openSegmentAsync(SegmentDescriptor)}.
   *
   * @param expected the incarnation to open
   * @param timeout how long to wait; TIMEOUT after it
   * @return the segment
   */
  default RemoteSegment openSegment(SegmentDescriptor expected, Duration timeout) {
    return Batch.join(openSegmentAsync(expected), timeout, "openSegment " + expected);
  }

  /**
   * Blocking form of {@link #openSegmentAsync(String)}.
   *
   * @param endpoint the peer's {@code host:port}
   * @param timeout how long to wait; TIMEOUT after it
   * @return the segment
   */
  default RemoteSegment openSegment(String endpoint, Duration timeout) {
    return Batch.join(openSegmentAsync(endpoint), timeout, "openSegment " + endpoint);
  }

  /**
   * Reaches the incarnation that answers now at {@code old}'s endpoint, in one call: Describes the
   * endpoint (as {@link #openSegmentAsync(String)} does, through the segment table) and opens what
   * answers, then looks up {@code old}'s region ids again. After a restart that is the new
   * incarnation (a new epoch); when {@code old}'s incarnation was not replaced, it is that
   * incarnation again (a new reference to its entry, or a fresh entry when its channel has closed).
   * The regions of {@code old} that the answering peer no longer publishes are listed by {@link
   * RemoteSegment#regionsGone()} on the result.
   *
   * <p>{@code old} is never revived: once another epoch has answered at its endpoint it stays
   * refused EPOCH_MISMATCH, for data and for {@link #openSegmentAsync(SegmentDescriptor)} (C3).
   * Close it when it is no longer used (it may be closed already: only its descriptor and regions
   * are read). The usual trigger is a {@link PeerEvent.PeerFenced} from {@link #peerEvents()} or
   * {@link #onPeerEvent}, or a task that failed EPOCH_MISMATCH or PEER_LOST.
   *
   * @param old a segment this engine opened from a peer
   * @return a stage with the segment of the incarnation answering now (close it when done); it
   *     fails INVALID_ARGUMENT for a null segment or a file segment ({@link #openFileSegmentAsync}:
   *     there is no peer to describe; open the file again), otherwise as {@link
   *     #openSegmentAsync(String)} does
   */
  CompletionStage<RemoteSegment> reopenAsync(RemoteSegment old);

  /**
   * Blocking form of {@link #reopenAsync(RemoteSegment)}.
   *
   * @param old a segment this engine opened from a peer
   * @param timeout how long to wait; TIMEOUT after it
   * @return the segment of the incarnation answering now; {@link RemoteSegment#regionsGone()} lists
   *     the regions of {@code old} it no longer publishes
   */
  default RemoteSegment reopen(RemoteSegment old, Duration timeout) {
    return Batch.join(reopenAsync(old), timeout, "reopen " + (old == null ? "null" : old.label()));
  }

  /**
   * Acts on a hint from outside the engine (a peer directory, an operator) that the peer at {@code
   * endpoint} may have restarted or gone, without waiting for a lane to notice. The hint is only a
   * reason to ask: the endpoint is described (off any mailbox; Describe is the authority, C3), and
   *
   * <ul>
   *   <li>when an incarnation answers, every entry of this engine's segment table at that endpoint
   *       with another epoch is fenced, through the same path as a restart a reconnecting lane
   *       learns: {@link PeerEvent.PeerFenced} on {@link #peerEvents()}, its tasks and later
   *       submissions fail EPOCH_MISMATCH with no byte moved; entries of the answering epoch are
   *       left alone;
   *   <li>when nothing answers (refused, unreachable, no answer within {@code
   *       timeouts.describeTimeoutMillis}), every entry at that endpoint that still takes work is
   *       fenced as "no longer that incarnation" (newer epoch unknown): {@link PeerEvent.PeerLost}
   *       on {@link #peerEvents()}, its tasks fail EPOCH_MISMATCH. Use it only where the hint's
   *       source knows the incarnation cannot come back (a member removed from the cluster).
   * </ul>
   *
   * <p>{@link #reopen} reaches whatever answers later. A check of an endpoint this engine never
   * opened describes it and changes nothing.
   *
   * @param endpoint the peer's endpoint, {@code host:port} as its segment's descriptor names it
   * @param reason why the check was asked for, for the log and the events' sentences
   * @return a stage with what was learned; it fails INVALID_ARGUMENT for a malformed endpoint,
   *     UNAVAILABLE when a close has begun
   */
  CompletionStage<PeerCheck> checkPeer(String endpoint, String reason);

  /**
   * Opens the file at {@code path} as a segment of one region ({@link
   * TransferEngine#FILE_REGION_ID}) covering its bytes at open; requests use it like a peer's
   * segment. {@code READ} lets READ tasks copy file bytes into registered memory, {@code WRITE}
   * lets WRITE tasks copy into the file (never past its size). The file is opened once, so admitted
   * work keeps using it even if the path is replaced; the table is bounded by {@code
   * file.maxFileSegments}.
   *
   * @param path the file to open
   * @param access which directions requests may use on it
   * @return a stage with the segment, labelled {@code "file <path>"}; it fails INVALID_ARGUMENT for
   *     a missing path, a directory or another non-file, PERMISSION_DENIED for a file that may not
   *     be opened as asked, RESOURCE_EXHAUSTED when the table is full, UNAVAILABLE when there is no
   *     file transport or a close has begun
   */
  CompletionStage<RemoteSegment> openFileSegmentAsync(Path path, Access access);

  /**
   * Blocking form of {@link #openFileSegmentAsync(Path, Access)}.
   *
   * @param path the file to open
   * @param access which directions requests may use on it
   * @param timeout how long to wait; TIMEOUT after it
   * @return the file segment
   */
  default RemoteSegment openFileSegment(Path path, Access access, Duration timeout) {
    return Batch.join(openFileSegmentAsync(path, access), timeout, "openFileSegment " + path);
  }

  /**
   * Charges a batch slot (on the caller's thread) and creates a batch of at most {@code capacity}
   * tasks, reusing a freed one of that capacity without an ask when there is one.
   *
   * @param capacity how many tasks the batch may hold in all, 1 to {@code budgets.maxBatchCapacity}
   * @return a stage with the batch (free it when done); it fails INVALID_ARGUMENT for a capacity
   *     out of range, RESOURCE_EXHAUSTED when {@code budgets.maxBatches} batches are held,
   *     UNAVAILABLE when the requester side is closed or a close has begun
   */
  CompletionStage<Batch> allocateBatchAsync(int capacity);

  /**
   * Blocking form of {@link #allocateBatchAsync}.
   *
   * @param capacity how many tasks the batch may hold in all
   * @return the batch
   */
  default Batch allocateBatch(int capacity) {
    return Batch.join(allocateBatchAsync(capacity), CallTimeouts.CONTROL, "allocateBatch");
  }

  /**
   * Closes the requester side (C8): new batches, submissions and opens are refused at once
   * (UNAVAILABLE); admitted work may finish within {@code timeout}; then every lane to a peer is
   * closed, so whatever is still in flight fails after local drain. The engine keeps serving peers.
   * Can be called again.
   *
   * @param timeout how long admitted work may take to finish before the lanes are closed
   * @return a stage with what the engine still has charged afterwards
   */
  CompletionStage<EngineOwed> closeRequesterAsync(Duration timeout);

  /**
   * Blocking form of {@link #closeRequesterAsync}.
   *
   * @param timeout how long admitted work may take to finish before the lanes are closed
   * @return what the engine still has charged afterwards
   */
  default EngineOwed closeRequester(Duration timeout) {
    return Batch.join(
        closeRequesterAsync(timeout), timeout.plus(CallTimeouts.CLOSE_LIMIT), "closeRequester");
  }

  /**
   * Closes the source side (C8): the listener closes, so peers can neither describe nor connect;
   * every source lane is closed and its loans come back once its thread has ended; every range
   * shared with same-host peers (SHM) is fenced, so no peer starts a copy into or out of it. The
   * engine keeps working as a requester. Can be called again.
   *
   * @param timeout how long the source side may take to close
   * @return a stage with what the engine still has charged afterwards
   */
  CompletionStage<EngineOwed> closeSourceAsync(Duration timeout);

  /**
   * Blocking form of {@link #closeSourceAsync}.
   *
   * @param timeout how long the source side may take to close
   * @return what the engine still has charged afterwards
   */
  default EngineOwed closeSource(Duration timeout) {
    return Batch.join(
        closeSourceAsync(timeout), timeout.plus(CallTimeouts.CLOSE_LIMIT), "closeSource");
  }

  /**
   * Closes the engine: stops serving and requesting, closes the transports and, if the engine owns
   * it, its ActorSystem. Idempotent: once a close has begun (here or by CoordinatedShutdown), a
   * later call completes at once with what is owed.
   *
   * @param timeout how long the engine may take to confirm its close; TIMEOUT after it, and {@link
   *     #owed()} then says what it still holds
   * @return a stage with what is still owed: after a clean close nothing; otherwise the memory kept
   *     under loans and every quarantined owner
   */
  CompletionStage<EngineOwed> closeAsync(Duration timeout);

  /**
   * Blocking form of {@link #closeAsync}.
   *
   * @param timeout how long the engine may take to confirm its close
   * @return what is still owed, in phase CLOSED once the close is confirmed
   */
  default EngineOwed close(Duration timeout) {
    return Batch.join(closeAsync(timeout), timeout.plusSeconds(5), "close");
  }

  /**
   * The owners that could not prove their drain within the destruction window and keep what they
   * hold (C5, C7); empty on a healthy engine; still answers after close.
   *
   * @return the quarantined owners, each with what it retains
   */
  List<QuarantinedOwner> quarantined();

  /** {@link #close(Duration)} with 30 s; what is still owed afterwards is logged, not returned. */
  @Override
  void close();
}
