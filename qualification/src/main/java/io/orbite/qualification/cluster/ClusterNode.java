package io.orbite.qualification.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.orbite.cluster.DirectoryChange;
import io.orbite.cluster.DirectoryEntry;
import io.orbite.cluster.DirectoryRegion;
import io.orbite.cluster.PeerDirectory;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteRegion;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.AddressFromURIString;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.JoinSeedNodes;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.apache.pekko.management.javadsl.PekkoManagement;
import org.apache.pekko.stream.javadsl.Sink;

/**
 * A Pekko Cluster member with an engine in it, in a JVM of its own, driven over its standard
 * streams like {@code EngineMain}: one command per line, one answer line per command. Started by
 * {@link ClusterNodeProcess} with a {@link NodeSpec} as its arguments.
 *
 * <p>At start it creates the clustered ActorSystem, spawns the engine named after the spec (not
 * ready), allocates {@value #POOL} (the spec's size, filled with the pattern seeded by the engine's
 * epoch, so a READ proves which incarnation answered) and {@value #SCRATCH} (64 KiB, the pattern
 * seeded by the epoch's complement), marks the engine ready, joins the cluster (seed nodes, or
 * cluster bootstrap) and then the directory. Only then does it print {@code READY <endpoint>
 * <epoch-hex> <member-address>}: its regions are served before any member can list it.
 *
 * <pre>
 * UP n timeoutMs                 -> OK ms         (n members Up, as this member sees the cluster)
 * ENTRY name epoch-hex|* timeoutMs -> OK millis   (the directory lists name, of that epoch: when)
 * GONE name timeoutMs            -> OK millis     (the directory no longer lists name: when)
 * MEMBERS                        -> OK name:epoch-hex:region+region ...   (directory.members())
 * REGION name region             -> OK regionId lengthBytes access   (directory.region)
 * OPEN name slot region          -> OK endpoint epoch-hex regionId lengthBytes   (directory.open,
 *                                   the region as Describe answers it, kept in slot)
 * READ slot seed-hex timeoutMs rounds -> OK bytes nanos | MISMATCH index
 *                                 | FAILED kind bytes untouched|touched detail
 *                                   (the slot's whole region into a destination with guards of
 *                                   its own, rounds times, every byte and guard checked; on a
 *                                   failure, or a refusal at submit ("at submit: ..."), the bytes
 *                                   every task moved and whether the destination still holds
 *                                   only its guard pattern)
 * CHANGE name kinds sinceMillis timeoutMs -> OK kind atMillis   (the first change about name of
 *                                   one of kinds, e.g. Removed,Restarted, seen at or after since)
 * CHANGES                        -> OK kind:name:atMillis ...   (every directory change seen)
 * PEERS                          -> OK event ...  (the engine's peer events, by type)
 * UNREGISTER region              -> OK            (this engine unregisters its named region)
 * REFUSALS                       -> OK n          (requests this engine refused as a source)
 * LEAVE                          -> OK ms         (closes the directory, then CoordinatedShutdown
 *                                   with the cluster-leaving reason: the member leaves, the
 *                                   engine closes, the system terminates)
 * QUIT                           -> OK, then exit
 * </pre>
 *
 * Any failure answers {@code ERR <kind> <message>} (the TransferException's kind, else {@code
 * OTHER}).
 */
public final class ClusterNode {
  /** The name of the region every node publishes. */
  public static final String POOL = "kv-pool";

  /** The name of a small second region, for the unregister check. */
  public static final String SCRATCH = "scratch";

  /** The scratch region's size. */
  public static final long SCRATCH_BYTES = 64 * 1024;

  /** The guard bytes before and after every READ destination (odd, so nothing lines up). */
  static final long GUARD_BYTES = 4099;

  /** The READ destination's guard pattern. */
  static final long GUARD_SEED = 0x6C75_7374_6572L;

  /** The largest READ task: a region is read as tasks of this size, in one batch. */
  static final long TASK_BYTES = 1024 * 1024;

  /** A segment opened by name and one of its regions, with a destination for READs of it. */
  private record Slot(RemoteSegment segment, RemoteRegion region, RegisteredMemory destination) {}

  /** A directory change and when this process received it. */
  private record Seen(DirectoryChange change, long receivedMillis) {}

  private final NodeSpec spec;
  private final ActorSystem<Void> system;
  private final TransferEngine engine;
  private final PeerDirectory directory;
  private final Map<String, RegisteredMemory> named = new HashMap<>();
  private final Map<String, Slot> slots = new HashMap<>();
  private final List<Seen> changes = new CopyOnWriteArrayList<>();
  private final List<PeerEvent> peerEvents = new CopyOnWriteArrayList<>();

  private ClusterNode(NodeSpec spec) {
    this.spec = spec;
    Config pekko = ConfigFactory.parseString(spec.pekkoConfig()).withFallback(ConfigFactory.load());
    this.system = ActorSystem.create(Behaviors.empty(), NodeSpec.SYSTEM, pekko);
    // Not ready until its regions are registered: an open that races the start waits for them.
    EngineConfig config =
        EngineConfig.fromJson(
                "{\"listen\":{\"port\":%d,\"readyAtStart\":false}}".formatted(spec.enginePort()))
            .withName(spec.name());
    this.engine = TransferEngine.spawn(system, config);
    long epoch = engine.localSegment().epoch();
    RegisteredMemory pool = engine.allocate(spec.poolBytes(), Access.READ_WRITE, POOL);
    Pattern.fill(pool.segment(), 0, pool.lengthBytes(), epoch, 0);
    named.put(POOL, pool);
    RegisteredMemory scratch = engine.allocate(SCRATCH_BYTES, Access.READ_WRITE, SCRATCH);
    Pattern.fill(scratch.segment(), 0, SCRATCH_BYTES, ~epoch, 0);
    named.put(SCRATCH, scratch);
    engine.markReady();
    joinCluster();
    this.directory = PeerDirectory.join(engine);
    directory
        .changes()
        .runWith(Sink.foreach(c -> changes.add(new Seen(c, System.currentTimeMillis()))), system);
    engine.peerEvents().runWith(Sink.foreach(peerEvents::add), system);
  }

  /** Runs the command loop; the process exits when it ends, however it ends. */
  public static void main(String[] args) {
    int status = 0;
    try {
      org.slf4j.LoggerFactory.getLogger(ClusterNode.class);
      PrintStream out =
          new PrintStream(
              new java.io.FileOutputStream(java.io.FileDescriptor.out),
              true,
              StandardCharsets.UTF_8);
      // Logs go to stderr; stdout carries only the protocol.
      System.setOut(System.err);
      new ClusterNode(NodeSpec.parse(args)).serve(out);
    } catch (Throwable t) {
      t.printStackTrace();
      status = 1;
    }
    System.exit(status);
  }

  private void joinCluster() {
    if (spec.join() == NodeSpec.Join.SEEDS) {
      List<Address> seeds =
          spec.seeds().stream()
              .map(s -> AddressFromURIString.parse("pekko://" + NodeSpec.SYSTEM + "@" + s))
              .toList();
      Cluster.get(system).manager().tell(new JoinSeedNodes(seeds));
    } else {
      PekkoManagement.get(system).start().toCompletableFuture().join();
      ClusterBootstrap.get(system).start();
    }
  }

  private void serve(PrintStream out) throws Exception {
    out.println(
        "READY "
            + engine.localSegment().endpoint()
            + " "
            + Long.toHexString(engine.localSegment().epoch())
            + " "
            + Cluster.get(system).selfMember().address());
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] t = line.trim().split("\\s+");
      if (t[0].equals("QUIT")) {
        out.println("OK");
        break;
      }
      String answer;
      try {
        answer = answer(t);
      } catch (TransferException e) {
        answer = "ERR " + e.kind() + " " + oneLine(e.getMessage());
      } catch (RuntimeException e) {
        Throwable cause = e.getCause() instanceof TransferException te ? te : e;
        answer =
            cause instanceof TransferException te
                ? "ERR " + te.kind() + " " + oneLine(te.getMessage())
                : "ERR OTHER " + oneLine(String.valueOf(e));
      }
      out.println(answer);
    }
    try {
      directory.close();
    } catch (RuntimeException closedBefore) {
      // LEAVE closed it already.
    }
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  private String answer(String[] t) throws Exception {
    return switch (t[0]) {
      case "UP" -> up(Integer.parseInt(t[1]), millis(t[2]));
      case "ENTRY" ->
          waitFor(
              millis(t[3]),
              () -> entry(t[1]).filter(e -> t[2].equals("*") || epochHex(e).equals(t[2])),
              "the directory to list " + t[1] + " of epoch " + t[2]);
      case "GONE" ->
          waitFor(
              millis(t[2]),
              () -> entry(t[1]).isEmpty() ? Optional.of(t[1]) : Optional.empty(),
              "the directory to no longer list " + t[1]);
      case "MEMBERS" ->
          "OK " + String.join(" ", directory.members().stream().map(e -> entryText(e)).toList());
      case "REGION" -> {
        DirectoryRegion r = directory.region(t[1], t[2]);
        yield "OK " + r.regionId() + " " + r.lengthBytes() + " " + r.access();
      }
      case "OPEN" -> open(t[1], t[2], t[3]);
      case "READ" ->
          read(slot(t[1]), Long.parseUnsignedLong(t[2], 16), millis(t[3]), Integer.parseInt(t[4]));
      case "CHANGE" -> change(t[1], List.of(t[2].split(",")), Long.parseLong(t[3]), millis(t[4]));
      case "CHANGES" ->
          "OK "
              + String.join(
                  " ",
                  changes.stream()
                      .map(
                          s ->
                              s.change().getClass().getSimpleName()
                                  + ":"
                                  + s.change().name()
                                  + ":"
                                  + s.change().at().toEpochMilli())
                      .toList());
      case "PEERS" ->
          "OK "
              + String.join(
                  " ", peerEvents.stream().map(e -> e.getClass().getSimpleName()).toList());
      case "UNREGISTER" -> {
        RegisteredMemory m = named.remove(t[1]);
        if (m == null) {
          yield "ERR INVALID_ARGUMENT this node has no region named '" + t[1] + "'";
        }
        engine.unregister(m);
        yield "OK";
      }
      case "REFUSALS" -> "OK " + engine.counters().sourceRefusals();
      case "LEAVE" -> {
        long start = System.nanoTime();
        directory.close();
        CoordinatedShutdown.get(Adapter.toClassic(system))
            .runAll(CoordinatedShutdown.clusterLeavingReason())
            .toCompletableFuture()
            .get(60, TimeUnit.SECONDS);
        yield "OK " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      }
      default -> "ERR OTHER unknown command " + t[0];
    };
  }

  private String up(int members, Duration timeout) {
    long start = System.nanoTime();
    Supplier<Optional<Integer>> enough =
        () -> {
          int up = 0;
          for (var m : Cluster.get(system).state().getMembers()) {
            if (m.status().equals(MemberStatus.up())) {
              up++;
            }
          }
          return up >= members ? Optional.of(up) : Optional.empty();
        };
    if (until(timeout, enough).isEmpty()) {
      return "ERR TIMEOUT fewer than "
          + members
          + " members Up within "
          + timeout
          + ": "
          + Cluster.get(system).state().getMembers();
    }
    return "OK " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
  }

  private <T> String waitFor(Duration timeout, Supplier<Optional<T>> probe, String what) {
    Optional<T> found = until(timeout, probe);
    if (found.isEmpty()) {
      return "ERR TIMEOUT waited "
          + timeout.toMillis()
          + " ms for "
          + what
          + "; the directory lists "
          + directory.members().stream().map(ClusterNode::entryText).toList();
    }
    return "OK " + System.currentTimeMillis();
  }

  private String open(String engineName, String slotName, String regionName) {
    DirectoryRegion listed = directory.region(engineName, regionName);
    RemoteSegment segment = directory.open(engineName, Duration.ofSeconds(30));
    // Describe is the authority (C3): the region as the incarnation that answered serves it.
    RemoteRegion region =
        segment
            .region(regionName)
            .orElseThrow(
                () ->
                    new TransferException(
                        io.orbite.engine.ErrorKind.INVALID_ARGUMENT,
                        "the directory lists region '"
                            + regionName
                            + "' (id "
                            + listed.regionId()
                            + ") of "
                            + engineName
                            + ", but its Describe does not"));
    Slot old = slots.get(slotName);
    RegisteredMemory destination =
        old != null && old.destination().lengthBytes() == region.lengthBytes() + 2 * GUARD_BYTES
            ? old.destination()
            : engine.allocate(region.lengthBytes() + 2 * GUARD_BYTES, Access.READ_WRITE);
    slots.put(slotName, new Slot(segment, region, destination));
    return "OK "
        + segment.descriptor().endpoint()
        + " "
        + Long.toHexString(segment.descriptor().epoch())
        + " "
        + region.regionId()
        + " "
        + region.lengthBytes();
  }

  /** The READ command: see the class comment. */
  private String read(Slot slot, long seed, Duration timeout, int rounds) {
    long length = slot.region().lengthBytes();
    int tasks = (int) ((length + TASK_BYTES - 1) / TASK_BYTES);
    long bytes = 0;
    long nanos = 0;
    for (int round = 0; round < rounds; round++) {
      Pattern.fill(
          slot.destination().segment(), 0, slot.destination().lengthBytes(), GUARD_SEED, 0);
      List<TransferRequest> reads = new ArrayList<>(tasks);
      for (int i = 0; i < tasks; i++) {
        long offset = i * TASK_BYTES;
        reads.add(
            TransferRequest.read(
                slot.destination(),
                GUARD_BYTES + offset,
                slot.segment(),
                slot.region().regionId(),
                offset,
                Math.min(TASK_BYTES, length - offset)));
      }
      Batch batch = engine.allocateBatch(tasks);
      BatchStatus status;
      long start = System.nanoTime();
      try {
        batch.submit(reads);
        status = batch.await(timeout);
      } catch (TransferException refused) {
        // Refused at submit (a fenced or closed segment): nothing was admitted.
        return failed(slot, refused.kind(), 0, "at submit: " + refused.getMessage());
      } finally {
        nanos += System.nanoTime() - start;
        batch.free();
      }
      if (!status.allCompleted()) {
        TaskResult failed =
            status.tasks().stream().filter(r -> !r.completed()).findFirst().orElseThrow();
        long moved = status.tasks().stream().mapToLong(TaskResult::bytes).sum();
        return failed(slot, failed.errorKind(), moved, failed.detail());
      }
      long bad =
          RegionCheck.check(
              slot.destination().segment(),
              List.of(new Span(GUARD_BYTES, length, seed, 0)),
              GUARD_SEED);
      if (bad >= 0) {
        return "MISMATCH " + bad;
      }
      bytes += status.completedBytes();
    }
    return "OK " + bytes + " " + nanos;
  }

  /** A READ that failed or was refused: its kind, the bytes moved, whether the guards are whole. */
  private static String failed(
      Slot slot, io.orbite.engine.ErrorKind kind, long moved, String detail) {
    boolean untouched = RegionCheck.check(slot.destination().segment(), List.of(), GUARD_SEED) < 0;
    return "FAILED "
        + kind
        + " "
        + moved
        + " "
        + (untouched ? "untouched" : "touched")
        + " "
        + oneLine(detail);
  }

  private String change(String name, List<String> kinds, long sinceMillis, Duration timeout) {
    Optional<Seen> seen =
        until(
            timeout,
            () ->
                changes.stream()
                    .filter(s -> s.change().name().equals(name))
                    .filter(s -> kinds.contains(s.change().getClass().getSimpleName()))
                    .filter(s -> s.change().at().toEpochMilli() >= sinceMillis)
                    .findFirst());
    if (seen.isEmpty()) {
      return "ERR TIMEOUT no change about "
          + name
          + " of "
          + kinds
          + " within "
          + timeout.toMillis()
          + " ms; seen: "
          + changes.stream().map(s -> s.change().toString()).toList();
    }
    return "OK "
        + seen.get().change().getClass().getSimpleName()
        + " "
        + seen.get().change().at().toEpochMilli();
  }

  private Optional<DirectoryEntry> entry(String name) {
    return directory.members().stream().filter(e -> e.name().equals(name)).findFirst();
  }

  private Slot slot(String name) {
    Slot s = slots.get(name);
    if (s == null) {
      throw new IllegalArgumentException("no slot " + name + " (OPEN one first)");
    }
    return s;
  }

  private static String epochHex(DirectoryEntry e) {
    return Long.toHexString(e.segment().epoch());
  }

  private static String entryText(DirectoryEntry e) {
    return e.name()
        + ":"
        + epochHex(e)
        + ":"
        + String.join("+", e.regions().stream().map(DirectoryRegion::name).toList());
  }

  private static Duration millis(String text) {
    return Duration.ofMillis(Long.parseLong(text));
  }

  private static String oneLine(String s) {
    return s == null ? "" : s.replace('\n', ' ');
  }

  /** Probes {@code probe} until it yields a value or {@code timeout} passes. */
  private static <T> Optional<T> until(Duration timeout, Supplier<Optional<T>> probe) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Optional<T> v = probe.get();
    while (v.isEmpty() && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      v = probe.get();
    }
    return v;
  }
}
