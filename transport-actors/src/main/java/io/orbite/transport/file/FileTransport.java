package io.orbite.transport.file;

import io.orbite.config.FileConfig;
import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The file transport's supervisor (named {@code transport-file}): owns the per-engine file table
 * (one entry per path, at most {@code file.maxFileSegments} open files) and the ring lanes, which
 * it makes on first use: each lane's duty cycle runs on the lane runtime ({@link RingLane}), and
 * each lane's lifecycle has an owner actor, a child of this one under the engine's supervision
 * ({@link RingLaneOwner}, named {@code ring-lane-<i>}), which this actor watches.
 *
 * <p>An open runs on the blocking-I/O dispatcher (a FIFO's open waits for its writer). Opens of one
 * path are handled one at a time. A path whose entry still names the same file (device and inode)
 * and was opened with enough access reuses the entry; otherwise the old entry is retired (it closes
 * once the operations admitted through it end) and the file is opened afresh.
 *
 * <p>States: {@link #serving}, {@link #closing} (every lane's owner draining its lane), {@link
 * #closed} (every open refused UNAVAILABLE). CloseRequesterSide and Shutdown both close the lanes
 * and retire the table; the source side has nothing to close.
 */
public final class FileTransport {
  private record Entry(FileHandle handle, FileSegmentChannel channel) {}

  private record Checked(
      TransportCommand.OpenFile request, Path key, Object fileKey, FileOpener.Refused refused)
      implements TransportCommand {}

  private record Opened(
      TransportCommand.OpenFile request, Path key, FileHandle handle, FileOpener.Refused refused)
      implements TransportCommand {}

  private record LaneClosed(RingLaneOwner.Closed closed) implements TransportCommand {}

  /** A lane's owner stopped (watched): after its close, or when its lane ended by itself. */
  private record LaneOwnerStopped(String lane) implements TransportCommand {}

  private final ActorContext<TransportCommand> ctx;
  private final TransportContext context;
  private final FileConfig config;
  private final OwnerBoard board;
  private final Map<Path, Entry> table = new HashMap<>();

  /** Paths with an open or check in progress, and the requests waiting behind it. */
  private final Map<Path, List<TransportCommand.OpenFile>> busy = new HashMap<>();

  private final AtomicInteger openHandles = new AtomicInteger();

  /** The lanes, once made (first open); channels deal their work to them. */
  private List<RingLane> lanes;

  /** The lanes' owners still alive, by lane name. */
  private final Map<String, ActorRef<RingLaneOwner.Command>> laneOwners = new LinkedHashMap<>();

  private boolean uring;

  private FileTransport(ActorContext<TransportCommand> ctx, TransportContext context) {
    this.ctx = ctx;
    this.context = context;
    this.config = context.config().file();
    this.board = context.owners();
  }

  public static Behavior<TransportCommand> create(TransportContext context) {
    return Behaviors.setup(
        ctx -> {
          FileTransport transport = new FileTransport(ctx, context);
          return OwnerBoard.reporting(context.owners(), transport::report, transport.serving());
        });
  }

  private OwnerBoard.Report report() {
    return new OwnerBoard.Report(
        "FileTransport",
        Map.of("files", (long) table.size(), "filesLimit", (long) config.maxFileSegments()),
        "");
  }

  private Behavior<TransportCommand> serving() {
    return board.in(
        OwnerState.SERVING,
        Behaviors.receive(TransportCommand.class)
            .onMessage(TransportCommand.OpenFile.class, this::onOpenFile)
            .onMessage(Checked.class, this::onChecked)
            .onMessage(Opened.class, this::onOpened)
            .onMessage(TransportCommand.OpenPeer.class, m -> refusePeer(m, "does not open peers"))
            .onMessage(TransportCommand.AdoptConnection.class, this::onAdopt)
            .onMessage(TransportCommand.CloseSourceSide.class, this::onCloseSourceSide)
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> startClosing(List.of(m.replyTo()), List.of()))
            .onMessage(
                TransportCommand.Shutdown.class, m -> startClosing(List.of(), List.of(m.replyTo())))
            .onMessage(LaneClosed.class, m -> Behaviors.same())
            .onMessage(
                LaneOwnerStopped.class,
                m -> {
                  laneOwners.remove(m.lane());
                  ctx.getLog().warn("file transport: ring lane {} has ended", m.lane());
                  return Behaviors.same();
                })
            .build());
  }

  private Behavior<TransportCommand> refusePeer(TransportCommand.OpenPeer m, String why) {
    m.replyTo()
        .tell(
            new TransportCommand.PeerOpenFailed(
                ErrorKind.UNAVAILABLE, "the file transport " + why));
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onCloseSourceSide(TransportCommand.CloseSourceSide m) {
    m.replyTo().tell(new TransportCommand.SideClosed("FILE"));
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onAdopt(TransportCommand.AdoptConnection m) {
    try {
      m.channel().close();
    } catch (IOException ignored) {
      // a connection the file transport never wanted; nothing depends on its close
    }
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onOpenFile(TransportCommand.OpenFile m) {
    String lanesProblem = ensureLanes();
    if (lanesProblem != null) {
      m.replyTo()
          .tell(
              new TransportCommand.FileOpenFailed(
                  ErrorKind.UNAVAILABLE, "openFileSegment " + m.path() + ": " + lanesProblem));
      return Behaviors.same();
    }
    Path key = m.path().toAbsolutePath().normalize();
    List<TransportCommand.OpenFile> waiting = busy.get(key);
    if (waiting != null) {
      waiting.add(m);
      return Behaviors.same();
    }
    busy.put(key, new ArrayList<>());
    Entry existing = table.get(key);
    if (existing != null) {
      ctx.pipeToSelf(
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return new Checked(m, key, FileOpener.fileKey(key), null);
                } catch (FileOpener.Refused r) {
                  return new Checked(m, key, null, r);
                }
              },
              context.blockingIo()),
          (checked, failure) ->
              checked != null
                  ? checked
                  : new Checked(
                      m,
                      key,
                      null,
                      new FileOpener.Refused(ErrorKind.UNAVAILABLE, failure.toString())));
    } else {
      openFresh(m, key, m.access());
    }
    return Behaviors.same();
  }

  private Behavior<TransportCommand> onChecked(Checked c) {
    Entry existing = table.get(c.key());
    if (existing != null) {
      boolean sameFile =
          c.fileKey() != null && Objects.equals(c.fileKey(), existing.handle().fileKey());
      boolean covers =
          existing.handle().access() == Access.READ_WRITE
              || existing.handle().access() == c.request().access();
      if (sameFile && covers && !existing.handle().retired()) {
        reply(c.request(), existing);
        return done(c.key());
      }
      table.remove(c.key());
      existing
          .handle()
          .retire(
              !sameFile
                  ? "replaced: the path now names another file"
                  : "reopened with other access");
    }
    if (c.refused() != null) {
      c.request()
          .replyTo()
          .tell(new TransportCommand.FileOpenFailed(c.refused().kind, c.refused().getMessage()));
      return done(c.key());
    }
    // Opened for both when the old entry served the other direction; the answer still grants
    // only the access this request asked for.
    Access wanted =
        existing != null && existing.handle().access() != c.request().access()
            ? Access.READ_WRITE
            : c.request().access();
    openFresh(c.request(), c.key(), wanted);
    return Behaviors.same();
  }

  /** Opens {@code key} for {@code openAs} (at least what {@code m} asked), answering {@code m}. */
  private void openFresh(TransportCommand.OpenFile m, Path key, Access openAs) {
    int max = config.maxFileSegments();
    if (openHandles.incrementAndGet() > max) {
      openHandles.decrementAndGet();
      m.replyTo()
          .tell(
              new TransportCommand.FileOpenFailed(
                  ErrorKind.RESOURCE_EXHAUSTED,
                  "openFileSegment "
                      + m.path()
                      + ": the file table is full (file.maxFileSegments = "
                      + max
                      + " open files: "
                      + table.keySet()
                      + ")"));
      done(key);
      return;
    }
    boolean useUring = uring;
    ctx.pipeToSelf(
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return new Opened(
                    m, key, FileOpener.open(key, openAs, useUring, openHandles), null);
              } catch (FileOpener.Refused r) {
                return new Opened(m, key, null, r);
              }
            },
            context.blockingIo()),
        (opened, failure) ->
            opened != null
                ? opened
                : new Opened(
                    m,
                    key,
                    null,
                    new FileOpener.Refused(ErrorKind.UNAVAILABLE, failure.toString())));
  }

  private Behavior<TransportCommand> onOpened(Opened o) {
    if (o.refused() != null) {
      openHandles.decrementAndGet();
      o.request()
          .replyTo()
          .tell(new TransportCommand.FileOpenFailed(o.refused().kind, o.refused().getMessage()));
      return done(o.key());
    }
    Entry entry =
        new Entry(
            o.handle(),
            new FileSegmentChannel(o.request().self(), o.handle(), lanes, config.maxChunkBytes()));
    table.put(o.key(), entry);
    reply(o.request(), entry);
    return done(o.key());
  }

  private void reply(TransportCommand.OpenFile request, Entry entry) {
    request
        .replyTo()
        .tell(
            new TransportCommand.FileOpened(
                entry.channel(),
                entry.handle().lengthBytes(),
                request.access(),
                "file " + entry.handle().path()));
  }

  /** Ends the work on {@code key}; requests that waited behind it are handled now, in order. */
  private Behavior<TransportCommand> done(Path key) {
    List<TransportCommand.OpenFile> waiting = busy.remove(key);
    if (waiting != null) {
      waiting.forEach(ctx.getSelf()::tell);
    }
    return Behaviors.same();
  }

  /** Makes the lanes and their owners on first use; returns why they cannot run, or null. */
  private String ensureLanes() {
    if (lanes != null) {
      return null;
    }
    RingLanes.Made made;
    try {
      made = RingLanes.make(context);
    } catch (FileOpener.Refused r) {
      return r.getMessage();
    }
    uring = made.uring();
    for (int i = 0; i < made.lanes().size(); i++) {
      RingLane lane = made.lanes().get(i);
      ActorRef<RingLaneOwner.Command> owner =
          ctx.spawn(RingLaneOwner.create(lane, context), "ring-lane-" + i);
      ctx.watchWith(owner, new LaneOwnerStopped(lane.name()));
      laneOwners.put(lane.name(), owner);
    }
    lanes = made.lanes();
    return null;
  }

  private Behavior<TransportCommand> startClosing(
      List<ActorRef<TransportCommand.SideClosed>> sideWaiters,
      List<ActorRef<TransportCommand.ShutdownDone>> shutdownWaiters) {
    ActorRef<RingLaneOwner.Closed> adapter =
        ctx.messageAdapter(RingLaneOwner.Closed.class, LaneClosed::new);
    laneOwners.values().forEach(owner -> owner.tell(new RingLaneOwner.Close(adapter)));
    return closing(
        new HashSet<>(laneOwners.keySet()),
        new ArrayList<>(sideWaiters),
        new ArrayList<>(shutdownWaiters));
  }

  /** Waits for every lane in {@code lanesLeft} to be closed (or quarantined, or stopped). */
  private Behavior<TransportCommand> closing(
      Set<String> lanesLeft,
      List<ActorRef<TransportCommand.SideClosed>> sideWaiters,
      List<ActorRef<TransportCommand.ShutdownDone>> shutdownWaiters) {
    if (lanesLeft.isEmpty()) {
      table.values().forEach(e -> e.handle().retire("closed with the engine's requester side"));
      table.clear();
      sideWaiters.forEach(w -> w.tell(new TransportCommand.SideClosed("FILE")));
      shutdownWaiters.forEach(w -> w.tell(new TransportCommand.ShutdownDone("FILE")));
      return closed();
    }
    return board.in(
        OwnerState.CLOSING,
        refusingOpens("closing")
            .onMessage(
                LaneClosed.class,
                m -> {
                  if (m.closed().quarantined()) {
                    ctx.getLog()
                        .error(
                            "file transport: lane {} is quarantined; its ring and the memory its "
                                + "stuck operation uses stay retained",
                            m.closed().lane());
                  }
                  lanesLeft.remove(m.closed().lane());
                  return closing(lanesLeft, sideWaiters, shutdownWaiters);
                })
            .onMessage(
                LaneOwnerStopped.class,
                m -> {
                  laneOwners.remove(m.lane());
                  lanesLeft.remove(m.lane());
                  return closing(lanesLeft, sideWaiters, shutdownWaiters);
                })
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  sideWaiters.add(m.replyTo());
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.Shutdown.class,
                m -> {
                  shutdownWaiters.add(m.replyTo());
                  return Behaviors.same();
                })
            .build());
  }

  private Behavior<TransportCommand> closed() {
    return board.in(
        OwnerState.CLOSED,
        refusingOpens("closed")
            .onMessage(LaneClosed.class, m -> Behaviors.same())
            .onMessage(
                LaneOwnerStopped.class,
                m -> {
                  laneOwners.remove(m.lane());
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.CloseRequesterSide.class,
                m -> {
                  m.replyTo().tell(new TransportCommand.SideClosed("FILE"));
                  return Behaviors.same();
                })
            .onMessage(
                TransportCommand.Shutdown.class,
                m -> {
                  m.replyTo().tell(new TransportCommand.ShutdownDone("FILE"));
                  return Behaviors.same();
                })
            .build());
  }

  /**
   * What closing and closed share: every open refused, the source side answered at once. An open or
   * check that ends now is refused, and so is every open of its path that waited behind it.
   */
  private BehaviorBuilder<TransportCommand> refusingOpens(String state) {
    return Behaviors.receive(TransportCommand.class)
        .onMessage(TransportCommand.OpenFile.class, this::refuseOpen)
        .onMessage(
            Checked.class,
            m -> {
              refuseOpen(m.request());
              return done(m.key());
            })
        .onMessage(
            Opened.class,
            m -> {
              if (m.handle() != null) {
                m.handle().retire("opened while the engine was closing");
              } else {
                openHandles.decrementAndGet();
              }
              refuseOpen(m.request());
              return done(m.key());
            })
        .onMessage(TransportCommand.CloseSourceSide.class, this::onCloseSourceSide)
        .onMessage(TransportCommand.OpenPeer.class, m -> refusePeer(m, "is " + state))
        .onMessage(TransportCommand.AdoptConnection.class, this::onAdopt);
  }

  private Behavior<TransportCommand> refuseOpen(TransportCommand.OpenFile m) {
    m.replyTo()
        .tell(
            new TransportCommand.FileOpenFailed(
                ErrorKind.UNAVAILABLE,
                "openFileSegment " + m.path() + ": the file transport is closed"));
    return Behaviors.same();
  }
}
