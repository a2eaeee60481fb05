package io.orbite.qualification.cluster;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The three-node scenario of issue 40 as processes on loopback, shared by {@code ./orbite example
 * cluster} and {@code ClusterDirectoryIT}: a prefill engine and two decode engines, each in a JVM
 * of its own and a member of one Pekko Cluster (Artery TCP), formed by seed nodes or by cluster
 * bootstrap with the {@code config} discovery method; a fourth node ({@value #LATE}) can join
 * later. The decode engines find {@value #PREFILL} by name in the directory and READ its {@code
 * kv-pool}, every byte and guard checked; the prefill is SIGKILLed and restarted with a new epoch
 * at the same member address and engine port, and each decode engine reports when it saw the
 * change, when its old segment was refused and when it verified the new incarnation.
 *
 * <p>A step that finds something other than what the scenario expects throws {@link
 * ScenarioFailure}, naming the node, the command, its answer and the node's log.
 */
public final class ClusterScenario implements AutoCloseable {
  /** The prefill engine's name. */
  public static final String PREFILL = "prefill";

  /** The first decode engine's name. */
  public static final String DECODE_1 = "decode-1";

  /** The second decode engine's name. */
  public static final String DECODE_2 = "decode-2";

  /** The engine that joins later. */
  public static final String LATE = "late";

  /** How long one step may take (a JVM start, a cluster formation, a READ). */
  public static final Duration STEP = Duration.ofSeconds(90);

  /** A step of the scenario found something else than it expects. */
  public static final class ScenarioFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * A failure.
     *
     * @param message what was expected and what was found
     */
    public ScenarioFailure(String message) {
      super(message);
    }
  }

  /**
   * One READ of a region by name, verified.
   *
   * @param reader the engine that read
   * @param source the engine read
   * @param epoch the incarnation that answered
   * @param bytes bytes read (every round)
   * @param nanos time in the transfers (submit to the last result)
   */
  public record Read(String reader, String source, long epoch, long bytes, long nanos) {
    /**
     * The rate of the transfers.
     *
     * @return GB/s (10^9 bytes per second)
     */
    public double gigabytesPerSecond() {
      return nanos == 0 ? 0 : (double) bytes / nanos;
    }
  }

  /**
   * What one decode engine saw of the prefill's restart, in ms from the SIGKILL.
   *
   * @param decode the decode engine
   * @param change the first change about the prefill on its {@code directory.changes()} ({@code
   *     Removed} or {@code Restarted})
   * @param changeSeenMillis when that change was seen
   * @param refusedKind the error kind of a READ on the old segment
   * @param refusedBytes bytes that READ moved (the scenario requires 0)
   * @param oldRefusedMillis when that READ was refused
   * @param newVerifiedMillis when a READ through {@code directory.open("prefill")} of the new
   *     incarnation was verified
   */
  public record RestartSeen(
      String decode,
      String change,
      long changeSeenMillis,
      String refusedKind,
      long refusedBytes,
      long oldRefusedMillis,
      long newVerifiedMillis) {
    /**
     * The line a note can quote.
     *
     * @return the steps' times
     */
    public String line() {
      return "%s: kill -> change seen on directory.changes() (%s) %d ms; -> old segment refused %s (%d B) %d ms; -> directory.open(\"prefill\") reached the new incarnation and verified %d ms"
          .formatted(
              decode,
              change,
              changeSeenMillis,
              refusedKind,
              refusedBytes,
              oldRefusedMillis,
              newVerifiedMillis);
    }
  }

  private final NodeSpec.Join join;
  private final Path logDir;
  private final PrintStream out;
  private final Map<String, NodeSpec> specs = new LinkedHashMap<>();
  private final Map<String, ClusterNodeProcess> nodes = new LinkedHashMap<>();

  private ClusterScenario(NodeSpec.Join join, Path logDir, PrintStream out) {
    this.join = join;
    this.logDir = logDir;
    this.out = out;
  }

  /**
   * Plans the four nodes (addresses and ports) without starting any.
   *
   * @param join how the cluster forms
   * @param prefillPoolBytes the size of the prefill's {@code kv-pool} (the decode engines publish
   *     64 KiB ones)
   * @param logDir where the nodes' logs go
   * @param out where the steps are reported
   * @return the scenario
   */
  public static ClusterScenario plan(
      NodeSpec.Join join, long prefillPoolBytes, Path logDir, PrintStream out) {
    ClusterScenario s = new ClusterScenario(join, logDir, out);
    List<String> names = List.of(PREFILL, DECODE_1, DECODE_2, LATE);
    Set<Integer> taken = new HashSet<>();
    // Bootstrap counts one contact point per address: each node has a loopback address of its own.
    List<String> hosts = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      hosts.add(join == NodeSpec.Join.SEEDS ? "127.0.0.1" : "127.0.0.%d".formatted(i + 2));
    }
    int management = join == NodeSpec.Join.BOOTSTRAP ? commonFreePort(hosts, taken) : 0;
    List<Integer> artery = new ArrayList<>();
    List<Integer> engine = new ArrayList<>();
    for (String host : hosts) {
      artery.add(freePort(host, taken));
      engine.add(freePort("127.0.0.1", taken));
    }
    // The first seed forms the cluster when no other seed answers; the prefill, which the
    // scenario kills, is never first, so that its restart joins the running cluster.
    List<String> seeds =
        List.of(hosts.get(1) + ":" + artery.get(1), hosts.get(0) + ":" + artery.get(0));
    List<String> contactPoints = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      contactPoints.add(hosts.get(i) + ":" + management);
    }
    for (int i = 0; i < names.size(); i++) {
      List<String> points = new ArrayList<>(contactPoints);
      if (i == 3) {
        points.add(hosts.get(3) + ":" + management);
      }
      s.specs.put(
          names.get(i),
          new NodeSpec(
              names.get(i),
              hosts.get(i),
              artery.get(i),
              engine.get(i),
              join,
              join == NodeSpec.Join.SEEDS ? seeds : List.of(),
              management,
              join == NodeSpec.Join.BOOTSTRAP ? points : List.of(),
              i == 0 ? prefillPoolBytes : 64 * 1024));
    }
    return s;
  }

  /**
   * Starts prefill, decode-1 and decode-2 side by side and waits until each sees three members Up
   * and each lists all three engines in its directory.
   *
   * @return ms from the launch to the last engine listed everywhere
   * @throws IOException when a node cannot start or answer
   */
  public long form() throws IOException {
    long start = System.nanoTime();
    List<String> three = List.of(PREFILL, DECODE_1, DECODE_2);
    for (String n : three) {
      nodes.put(n, ClusterNodeProcess.launch(specs.get(n), logDir));
    }
    for (String n : three) {
      nodes.get(n).awaitReady(STEP);
    }
    for (String n : three) {
      ok(n, "UP 3 " + STEP.toMillis());
    }
    for (String n : three) {
      for (String listed : three) {
        ok(n, "ENTRY " + listed + " " + node(listed).epochHex() + " " + STEP.toMillis());
      }
    }
    long ms = (System.nanoTime() - start) / 1_000_000;
    out.printf(
        "  cluster formed (%s): 3 members Up, every directory lists %s, in %.1f s%n",
        join == NodeSpec.Join.SEEDS ? "seed nodes" : "cluster bootstrap, config discovery",
        String.join(", ", three),
        ms / 1000.0);
    return ms;
  }

  /**
   * Starts the fourth node ({@value #LATE}) and waits until it is Up and its directory lists every
   * running engine at the epoch that engine started with.
   *
   * @return the late node
   * @throws IOException when it cannot start or answer
   */
  public ClusterNodeProcess startLate() throws IOException {
    ClusterNodeProcess late = ClusterNodeProcess.launch(specs.get(LATE), logDir).awaitReady(STEP);
    nodes.put(LATE, late);
    ok(LATE, "UP " + nodes.size() + " " + STEP.toMillis());
    for (ClusterNodeProcess n : nodes.values()) {
      if (n.alive()) {
        ok(LATE, "ENTRY " + n.name() + " " + n.epochHex() + " " + STEP.toMillis());
      }
    }
    return late;
  }

  /**
   * {@code reader} opens {@code source} by name, checks the incarnation that answered is the
   * running one, and READs its {@code kv-pool} {@code rounds} times, every byte and guard checked.
   *
   * @param reader the reading engine
   * @param slot the name the reader keeps the segment under
   * @param source the engine to read
   * @param rounds READs of the whole region
   * @return what was read
   * @throws IOException when a node cannot answer
   */
  public Read read(String reader, String slot, String source, int rounds) throws IOException {
    String[] opened = ok(reader, "OPEN " + source + " " + slot + " " + ClusterNode.POOL).split(" ");
    long epoch = Long.parseUnsignedLong(opened[1], 16);
    if (epoch != node(source).epoch()) {
      throw new ScenarioFailure(
          reader
              + " opened "
              + source
              + " by name and reached epoch "
              + opened[1]
              + ", but the running incarnation is "
              + node(source).epochHex());
    }
    String[] read =
        ok(reader, "READ " + slot + " " + opened[1] + " " + STEP.toMillis() + " " + rounds)
            .split(" ");
    return new Read(reader, source, epoch, Long.parseLong(read[0]), Long.parseLong(read[1]));
  }

  /**
   * SIGKILLs the prefill, restarts it at once (same member address, same engine port, a new epoch),
   * and has each decode engine (which must have READ it into slot {@code old}) wait for the change
   * on its directory, READ its old segment (which must be refused {@code EPOCH_MISMATCH} with no
   * byte moved and its destination untouched), then open {@value #PREFILL} by name and READ the new
   * incarnation's pattern. The decode engines do this side by side.
   *
   * @param decodes the decode engines that READ the prefill before
   * @return what each saw, in ms from the kill
   * @throws IOException when a node cannot start or answer
   */
  public List<RestartSeen> killAndRestartPrefill(List<String> decodes) throws IOException {
    ClusterNodeProcess old = node(PREFILL);
    long killedAt = System.currentTimeMillis();
    old.kill();
    ClusterNodeProcess fresh = old.restart();
    nodes.put(PREFILL, fresh);
    fresh.awaitReady(STEP);
    if (fresh.epoch() == old.epoch()) {
      throw new ScenarioFailure("the restarted prefill has its old epoch " + old.epochHex());
    }
    // Most of what follows waits on this: a JVM start on the test's host.
    out.printf(
        "    prefill restarted: epoch %s -> %s; its new JVM served its regions and asked to join"
            + " %d ms after the kill%n",
        old.epochHex(), fresh.epochHex(), System.currentTimeMillis() - killedAt);
    List<CompletableFuture<RestartSeen>> seen = new ArrayList<>();
    for (String d : decodes) {
      seen.add(
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return restartSeenBy(d, old, fresh, killedAt);
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              }));
    }
    List<RestartSeen> result = new ArrayList<>();
    for (CompletableFuture<RestartSeen> f : seen) {
      try {
        result.add(f.join());
      } catch (CompletionException e) {
        if (e.getCause() instanceof UncheckedIOException io) {
          throw io.getCause();
        }
        throw (RuntimeException) e.getCause();
      }
    }
    return result;
  }

  private RestartSeen restartSeenBy(
      String decode, ClusterNodeProcess old, ClusterNodeProcess fresh, long killedAt)
      throws IOException {
    String[] change =
        ok(decode, "CHANGE " + PREFILL + " Removed,Restarted " + killedAt + " " + STEP.toMillis())
            .split(" ");
    // The old segment from the moment the change is seen: until the fence lands (the directory's
    // checkPeer, or the decode's own lanes) a READ may fail PEER_LOST; never may it move a byte.
    // The figure is when it is first refused EPOCH_MISMATCH.
    long refuseBy = System.currentTimeMillis() + STEP.toMillis();
    String refused;
    String[] r;
    while (true) {
      refused = ask(decode, "READ old " + old.epochHex() + " " + STEP.toMillis() + " 1");
      r = refused.split(" ", 5);
      boolean lost =
          r[0].equals("FAILED")
              && r[1].equals("PEER_LOST")
              && r[2].equals("0")
              && r[3].equals("untouched");
      if (!lost || System.currentTimeMillis() > refuseBy) {
        break;
      }
      pause(20);
    }
    long refusedAt = System.currentTimeMillis();
    if (!r[0].equals("FAILED")
        || !r[1].equals("EPOCH_MISMATCH")
        || !r[2].equals("0")
        || !r[3].equals("untouched")) {
      throw new ScenarioFailure(
          decode
              + ": a READ on the killed prefill's segment must be refused EPOCH_MISMATCH with 0"
              + " bytes and its destination untouched; it answered '"
              + refused
              + "'; see "
              + node(decode).log());
    }
    ok(decode, "ENTRY " + PREFILL + " " + fresh.epochHex() + " " + STEP.toMillis());
    read(decode, "new", PREFILL, 1);
    long verifiedAt = System.currentTimeMillis();
    return new RestartSeen(
        decode,
        change[0],
        Long.parseLong(change[1]) - killedAt,
        r[1],
        Long.parseLong(r[2]),
        refusedAt - killedAt,
        verifiedAt - killedAt);
  }

  /**
   * The running node named {@code name}.
   *
   * @param name an engine's name
   * @return its process
   */
  public ClusterNodeProcess node(String name) {
    ClusterNodeProcess n = nodes.get(name);
    if (n == null) {
      throw new IllegalArgumentException("no node " + name + " started");
    }
    return n;
  }

  /**
   * Sends {@code command} to {@code name} and returns its answer, whatever it is.
   *
   * @param name the node
   * @param command the command
   * @return the answer line
   * @throws IOException when the node cannot answer
   */
  public String ask(String name, String command) throws IOException {
    return node(name).ask(command, STEP.plusSeconds(30));
  }

  /**
   * Sends {@code command} to {@code name} and returns what follows its {@code OK}.
   *
   * @param name the node
   * @param command the command
   * @return the answer after {@code OK }
   * @throws IOException when the node cannot answer
   * @throws ScenarioFailure on any other answer
   */
  public String ok(String name, String command) throws IOException {
    String answer = ask(name, command);
    if (answer.equals("OK")) {
      return "";
    }
    if (answer.startsWith("OK ")) {
      return answer.substring(3);
    }
    throw new ScenarioFailure(
        name + " answered '" + answer + "' to '" + command + "'; see " + node(name).log());
  }

  /** Every node QUITs (or is killed when it does not), side by side. */
  @Override
  public void close() {
    List<Thread> closing =
        nodes.values().stream()
            .map(n -> Thread.ofPlatform().name("close-" + n.name()).start(n::close))
            .toList();
    for (Thread t : closing) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static int freePort(String host, Set<Integer> taken) {
    for (int i = 0; i < 50; i++) {
      try (ServerSocket s = new ServerSocket()) {
        s.bind(new InetSocketAddress(host, 0));
        if (taken.add(s.getLocalPort())) {
          return s.getLocalPort();
        }
      } catch (IOException e) {
        throw new UncheckedIOException("no free port on " + host, e);
      }
    }
    throw new IllegalStateException("no free port on " + host + " after 50 tries");
  }

  /** A port free on every host (bootstrap's management port, the same everywhere). */
  private static int commonFreePort(List<String> hosts, Set<Integer> taken) {
    for (int i = 0; i < 50; i++) {
      int p = freePort(hosts.get(0), taken);
      boolean everywhere = true;
      for (String h : hosts.subList(1, hosts.size())) {
        try (ServerSocket s = new ServerSocket()) {
          s.bind(new InetSocketAddress(h, p));
        } catch (IOException busy) {
          everywhere = false;
        }
      }
      if (everywhere) {
        return p;
      }
    }
    throw new IllegalStateException("no port free on every one of " + hosts);
  }

  /** A probe loop's wait between two tries. */
  private static void pause(long millis) throws IOException {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted while waiting for a refusal");
    }
  }
}
