package io.orbite.cluster;

import io.orbite.cluster.EntryCodec.Listed;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SegmentDescriptor;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.ddata.LWWMap;
import org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData;
import org.apache.pekko.cluster.ddata.typed.javadsl.Replicator;
import org.apache.pekko.stream.javadsl.Source;

/**
 * An engine's membership in the cluster's peer directory: engines find each other by name, and
 * learn of each other's restarts and departures without a reopen.
 *
 * <p>{@link #join} spawns the directory's actor in the engine's clustered ActorSystem. It publishes
 * the engine's entry ({@link DirectoryEntry}: its name, its incarnation, its transports and the
 * named regions that {@code directory.publish} lets it publish, except those registered with an
 * allow-list, which only the peers they name may learn of, through Describe) under the engine's
 * name in a replicated map (Pekko Distributed Data), once the engine is ready; and it follows
 * everyone else's. Lookups ({@link #members()}, {@link #region}, {@link #open}) read this replica's
 * view at once, without a round trip. A listing is a hint: {@link #open} checks it through
 * Describe, the authority (C3), and a listed region grants nothing, the source checks every request
 * (C2). The directory carries no memory contents and no keys.
 *
 * <p>When an entry changes incarnation or disappears (its engine closed, its member left, or was
 * downed and removed), {@link #changes()} says so, and this engine is told to check that peer
 * ({@code Engine.checkPeer}): its open segments of the old incarnation are fenced, their tasks
 * failing {@code EPOCH_MISMATCH}, through the same path as a restart its own lanes detect, with
 * {@code PeerFenced} on {@code peerEvents()} (or {@code PeerLost} when nothing answers there any
 * more). Segments whose own lanes saw the peer go first fail {@code PEER_LOST}.
 *
 * <p>The engine's dashboard shows the directory's members (panel {@value #PANEL}). Thread-safe.
 */
public final class PeerDirectory implements AutoCloseable {
  /** The title of the engine's dashboard panel listing the members. */
  public static final String PANEL = "directory";

  /** The panel's columns. */
  static final List<String> PANEL_COLUMNS =
      List.of("engine", "endpoint", "epoch", "transports", "regions", "member");

  /** Engines joined now, so that one engine joins once. */
  private static final Set<TransferEngine> JOINED = ConcurrentHashMap.newKeySet();

  private static final AtomicLong SEQUENCE = new AtomicLong();

  private final TransferEngine engine;
  private final ActorRef<DirectoryActor.Command> actor;
  private final ChangeHub hub = new ChangeHub();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AutoCloseable panel;
  private volatile DirectoryView view = DirectoryView.EMPTY;

  private PeerDirectory(TransferEngine engine) {
    this.engine = engine;
    this.actor =
        engine
            .system()
            .systemActorOf(
                DirectoryActor.create(engine, (next, changes) -> publish(next, changes)),
                "orbite-directory-" + engine.config().name() + "-" + SEQUENCE.incrementAndGet(),
                Props.empty());
    this.panel = engine.dashboardPanels().add(PANEL, PANEL_COLUMNS, this::panelRows);
  }

  /**
   * Joins {@code engine} to the directory of its cluster, with the options of {@code
   * engine.config().directory()}, under {@code engine.config().name()}.
   *
   * @param engine the engine, spawned in a clustered ActorSystem ({@code TransferEngine.spawn} in a
   *     system whose {@code pekko.actor.provider} is {@code cluster}); the system joins its cluster
   *     by its own configuration (seed nodes, or cluster bootstrap)
   * @return the directory; close it to withdraw the engine's entry
   * @throws TransferException INVALID_ARGUMENT when the engine's ActorSystem is not clustered
   *     (naming the system and its provider) or the engine has already joined; UNAVAILABLE when the
   *     engine is closing or closed
   */
  public static PeerDirectory join(TransferEngine engine) {
    if (engine == null) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, "PeerDirectory.join: engine is null");
    }
    String name = engine.config().name();
    ActorSystem<?> system = engine.system();
    String provider = system.settings().config().getString("pekko.actor.provider");
    if (!provider.equals("cluster") && !provider.endsWith("ClusterActorRefProvider")) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "PeerDirectory.join: engine '"
              + name
              + "' runs in ActorSystem '"
              + system.name()
              + "' whose pekko.actor.provider is '"
              + provider
              + "'; the directory needs a clustered system (pekko.actor.provider = cluster, with"
              + " seed nodes or cluster bootstrap, and the engine spawned in it with"
              + " TransferEngine.spawn)");
    }
    if (!EngineFacts.running(engine)) {
      throw new TransferException(
          ErrorKind.UNAVAILABLE, "PeerDirectory.join: engine '" + name + "' is closing or closed");
    }
    // An engine closed without closing its directory is not held here for ever.
    JOINED.removeIf(joined -> !EngineFacts.running(joined));
    if (!JOINED.add(engine)) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "PeerDirectory.join: engine '" + name + "' has already joined the directory");
    }
    try {
      return new PeerDirectory(engine);
    } catch (RuntimeException e) {
      JOINED.remove(engine);
      throw e;
    }
  }

  /** Called by the actor with each new view: published for lookups, changes to the streams. */
  private void publish(DirectoryView next, List<DirectoryChange> changes) {
    view = next;
    if (!changes.isEmpty()) {
      hub.publish(changes);
    }
  }

  /**
   * Opens the current incarnation of the engine named {@code engineName}, checked through Describe:
   * the segment descriptor this replica lists is opened ({@code
   * openSegmentAsync(SegmentDescriptor)}), so an incarnation other than the one listed is refused.
   * On {@code EPOCH_MISMATCH} the directory reads the map again at {@code
   * directory.readConsistency} and, when it lists a newer incarnation, opens that one once.
   *
   * @param engineName the engine's name
   * @return a stage with the segment (close it when done); it fails INVALID_ARGUMENT at once when
   *     no engine of that name is listed (naming those that are); EPOCH_MISMATCH when another
   *     incarnation answers and the directory lists no newer one (it lags); UNAVAILABLE when the
   *     re-read fails; or as the engine's open fails (UNAVAILABLE, TIMEOUT, PEER_LOST, ...)
   */
  public CompletionStage<RemoteSegment> openAsync(String engineName) {
    Listed listed;
    try {
      listed = listed(engineName, "open");
    } catch (TransferException e) {
      return CompletableFuture.failedFuture(e);
    }
    SegmentDescriptor tried = listed.entry().segment();
    return checked(engineName, engine.openSegmentAsync(tried))
        .handle(
            (segment, failure) -> {
              if (failure == null) {
                return CompletableFuture.completedFuture(segment);
              }
              Throwable cause = unwrap(failure);
              if (cause instanceof TransferException te && te.kind() == ErrorKind.EPOCH_MISMATCH) {
                return reopen(engineName, tried, te);
              }
              return CompletableFuture.<RemoteSegment>failedFuture(cause);
            })
        .thenCompose(stage -> stage);
  }

  /** After EPOCH_MISMATCH: reads the map again and opens a newer listing once. */
  private CompletionStage<RemoteSegment> reopen(
      String engineName, SegmentDescriptor tried, TransferException mismatch) {
    return readAgain()
        .thenCompose(
            entries -> {
              Listed again = entries.get(engineName);
              if (again == null || again.entry().segment().equals(tried)) {
                return CompletableFuture.failedFuture(
                    new TransferException(
                        ErrorKind.EPOCH_MISMATCH,
                        "open '"
                            + engineName
                            + "': the directory lags: it lists "
                            + tried
                            + (again == null ? " no longer" : " still")
                            + " after a read at "
                            + engine.config().directory().readConsistency()
                            + ", and another incarnation answers there ("
                            + mismatch.getMessage()
                            + ")",
                        mismatch));
              }
              return checked(engineName, engine.openSegmentAsync(again.entry().segment()));
            });
  }

  /** Refuses a segment whose Describe answer names another engine (a reused endpoint). */
  private CompletionStage<RemoteSegment> checked(
      String engineName, CompletionStage<RemoteSegment> open) {
    return open.thenApply(
        segment -> {
          String described = EngineFacts.describedName(segment);
          if (!described.isEmpty() && !described.equals(engineName)) {
            SegmentDescriptor at = segment.descriptor();
            segment.close();
            throw new TransferException(
                ErrorKind.EPOCH_MISMATCH,
                "open '"
                    + engineName
                    + "': the engine answering at "
                    + at
                    + " is named '"
                    + described
                    + "'; the directory's entry is stale");
          }
          return segment;
        });
  }

  /** The map read at {@code directory.readConsistency}, parsed (unreadable entries left out). */
  private CompletionStage<Map<String, Listed>> readAgain() {
    var directory = engine.config().directory();
    ActorSystem<?> system = engine.system();
    Duration timeout = Duration.ofMillis(directory.consistencyTimeoutMillis() + 1_000L);
    CompletionStage<Replicator.GetResponse<LWWMap<String, String>>> asked =
        AskPattern.ask(
            DistributedData.get(system).replicator(),
            (ActorRef<Replicator.GetResponse<LWWMap<String, String>>> replyTo) ->
                new Replicator.Get<>(DirectoryActor.KEY, Consistency.read(directory), replyTo),
            timeout,
            system.scheduler());
    return asked.handle(
        (response, failure) -> {
          if (response instanceof Replicator.GetSuccess<LWWMap<String, String>> ok) {
            Map<String, Listed> out = new java.util.HashMap<>();
            ok.get(DirectoryActor.KEY)
                .getEntries()
                .forEach(
                    (k, v) -> {
                      Listed listed = EntryCodec.read(k, v).listed();
                      if (listed != null) {
                        out.put(k, listed);
                      }
                    });
            return out;
          }
          if (response instanceof Replicator.NotFound<?>) {
            return Map.of();
          }
          throw new CompletionException(
              new TransferException(
                  ErrorKind.UNAVAILABLE,
                  "directory: reading the map at "
                      + directory.readConsistency()
                      + " did not complete within "
                      + directory.consistencyTimeoutMillis()
                      + " ms ("
                      + (failure != null ? TransferException.describe(failure) : response)
                      + ")"));
        });
  }

  /**
   * Blocking form of {@link #openAsync}.
   *
   * @param engineName the engine's name
   * @param timeout how long to wait; TIMEOUT after it
   * @return the segment (close it when done)
   * @throws TransferException as {@link #openAsync}'s stage fails; TIMEOUT when the wait ends
   *     first; CANCELLED when the thread is interrupted
   */
  public RemoteSegment open(String engineName, Duration timeout) {
    return join(openAsync(engineName), timeout, "open '" + engineName + "'");
  }

  /**
   * The region {@code regionName} that engine {@code engineName} published, as this replica lists
   * it now.
   *
   * @param engineName the engine's name
   * @param regionName the region's name
   * @return the region: its id is what requests to the engine's segment name
   * @throws TransferException INVALID_ARGUMENT at once when no engine of that name is listed
   *     (naming those that are) or it publishes no region of that name (naming those it publishes)
   */
  public DirectoryRegion region(String engineName, String regionName) {
    DirectoryEntry entry = listed(engineName, "region").entry();
    return entry
        .region(regionName)
        .orElseThrow(
            () ->
                new TransferException(
                    ErrorKind.INVALID_ARGUMENT,
                    "no region named '"
                        + regionName
                        + "' published by engine '"
                        + engineName
                        + "' in the directory (it publishes: "
                        + (entry.regions().isEmpty()
                            ? "none"
                            : entry.regions().stream()
                                .map(DirectoryRegion::name)
                                .collect(Collectors.joining(", ")))
                        + ")"));
  }

  /**
   * The entry of the engine named {@code engineName}, as this replica lists it now.
   *
   * @param engineName the engine's name
   * @return the entry, or empty when none of that name is listed
   */
  public Optional<DirectoryEntry> entry(String engineName) {
    return view.get(engineName).map(Listed::entry);
  }

  /**
   * What is published now, as this replica sees it (this engine's own entry included, once
   * published).
   *
   * @return the entries, in name order
   */
  public List<DirectoryEntry> members() {
    return view.entries();
  }

  /**
   * The directory's changes about other engines from now on, as a stream: {@link
   * DirectoryChange.Joined}, {@link DirectoryChange.Updated}, {@link DirectoryChange.Restarted} and
   * {@link DirectoryChange.Removed}. Each materialisation is a subscription of its own; a consumer
   * more than {@code 1024} changes behind loses the oldest. The stream ends when the directory is
   * closed.
   *
   * @return a source of changes, materialised as often as wanted
   */
  public Source<DirectoryChange, NotUsed> changes() {
    return hub.source();
  }

  /**
   * Withdraws this engine's entry (written at {@code directory.writeConsistency}, waiting at most
   * {@code directory.consistencyTimeoutMillis} and a second), ends the {@link #changes()} streams
   * and takes the dashboard panel away. The engine keeps running. Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      Duration timeout =
          Duration.ofMillis(engine.config().directory().consistencyTimeoutMillis() + 1_000L);
      CompletionStage<Done> left =
          AskPattern.ask(actor, DirectoryActor.Leave::new, timeout, engine.system().scheduler());
      join(left, timeout.plusSeconds(1), "close the directory of '" + engine.config().name() + "'");
    } catch (TransferException e) {
      // The actor stopped already (its system terminates) or the write timed out: the member's
      // removal takes the entry out.
    } finally {
      hub.complete();
      try {
        panel.close();
      } catch (Exception ignored) {
        // Removing a panel cannot fail.
      }
      JOINED.remove(engine);
    }
  }

  private Listed listed(String engineName, String call) {
    DirectoryView now = view;
    if (engineName == null) {
      throw new TransferException(ErrorKind.INVALID_ARGUMENT, call + ": the engine name is null");
    }
    return now.get(engineName)
        .orElseThrow(
            () ->
                new TransferException(
                    ErrorKind.INVALID_ARGUMENT,
                    "no engine named '"
                        + engineName
                        + "' in the directory (published now: "
                        + now.names()
                        + ")"));
  }

  private List<List<String>> panelRows() {
    List<List<String>> rows = new ArrayList<>();
    for (DirectoryEntry e : view.entries()) {
      rows.add(
          List.of(
              e.name(),
              e.segment().endpoint(),
              Long.toHexString(e.segment().epoch()),
              String.join(" ", e.transports()),
              e.regions().stream()
                  .map(r -> r.name() + "=" + r.regionId() + " (" + r.lengthBytes() + " B)")
                  .collect(Collectors.joining(", ")),
              e.member()));
    }
    return rows;
  }

  private static Throwable unwrap(Throwable t) {
    while (t instanceof CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private static <T> T join(CompletionStage<T> stage, Duration timeout, String what) {
    try {
      return stage.toCompletableFuture().get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      Throwable cause = unwrap(e.getCause());
      if (cause instanceof TransferException te) {
        throw te;
      }
      throw new TransferException(
          ErrorKind.UNAVAILABLE, what + ": " + TransferException.describe(cause), cause);
    } catch (TimeoutException e) {
      throw new TransferException(ErrorKind.TIMEOUT, what + ": no answer within " + timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, what + ": interrupted");
    }
  }
}
