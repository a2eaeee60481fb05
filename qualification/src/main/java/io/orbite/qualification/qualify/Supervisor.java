package io.orbite.qualification.qualify;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.qualification.ledger.LedgerVerifier;
import io.orbite.qualification.ledger.Verdict;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Runs a profile: for each case it sets up the launcher's hosts, starts the source and the
 * requester ({@link QualifyPeer}), drives the case's rounds and faults, and writes its own ledger
 * ({@code supervisor.jsonl}) beside the peers' receipts: the plan, every child spawned (its PID),
 * killed and reaped (its exit status), every round's workload and seeds, the stale-epoch checks and
 * link faults it made, and any failure. Then the independent {@link LedgerVerifier} judges the run
 * from those files alone; {@code verdict.json} is its answer.
 *
 * <p>Each round refills both whole regions: the side that gives the payload with a fresh pattern,
 * the side that takes it with a guard pattern. The payload goes to odd offsets with odd gaps, so
 * both ends of every range, and every guard byte between, are checked by the peer that holds them.
 *
 * <p>Longer than 500 lines: each mode's round is a method here (healthy, link-down and the four
 * provider faults), each with the ledger lines it writes, so that what a mode does to the peers and
 * what the ledger says it did are read in one place.
 */
public final class Supervisor {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long LOCAL_BASE = 4093;
  private static final long REMOTE_BASE = 8191;
  private static final long GAP = 4099;
  private static final Duration REAP = Duration.ofSeconds(60);

  private final Launcher launcher;
  private final PrintStream progress;

  /**
   * The run's shared secret (every engine of the run authenticates its peers with it), random per
   * run and sent to each peer on its standard input only.
   */
  private final String secret = java.util.HexFormat.of().formatHex(randomBytes());

  private Supervisor(Launcher launcher, PrintStream progress) {
    this.launcher = launcher;
    this.progress = progress;
  }

  /**
   * Runs every case of {@code profile} with the launcher named {@code launcherName}, writing into
   * {@code out} (which must be empty), then verifies the run.
   *
   * @return the verifier's verdict, also written to {@code out/verdict.json}
   */
  public static Verdict run(Profile profile, String launcherName, Path out, PrintStream progress)
      throws IOException {
    try (Launcher launcher = Launcher.named(launcherName, profile)) {
      Supervisor s = new Supervisor(launcher, progress);
      for (Profile.Case c : profile.cases()) {
        s.runCase(c, out.resolve(c.name()));
      }
    }
    Verdict verdict = LedgerVerifier.verify(out);
    verdict.write(out.resolve("verdict.json"));
    return verdict;
  }

  /** The state of one case while it runs. */
  private final class Run implements AutoCloseable {
    final Profile.Case c;
    final Path dir;
    final BufferedWriter ledger;
    final long regionBytes;
    final long stride;
    final List<PeerProcess> live = new ArrayList<>();
    PeerProcess source;
    PeerProcess requester;
    int sourceGeneration = 1;
    int requesterGeneration = 1;
    int sourcePort;
    long remoteRegion;
    long localRegion;
    int segment;

    Run(Profile.Case c, Path dir) throws IOException {
      this.c = c;
      this.dir = dir;
      Files.createDirectories(dir);
      this.ledger =
          Files.newBufferedWriter(
              dir.resolve("supervisor.jsonl"),
              StandardCharsets.UTF_8,
              StandardOpenOption.CREATE_NEW,
              StandardOpenOption.WRITE);
      this.stride = c.payload() + GAP;
      this.regionBytes = REMOTE_BASE + c.parents() * stride + GAP;
    }

    ObjectNode line(String type) {
      ObjectNode n = JSON.createObjectNode();
      n.put("type", type);
      n.put("case", c.name());
      return n;
    }

    void record(ObjectNode n) throws IOException {
      ledger.write(JSON.writeValueAsString(n));
      ledger.newLine();
      ledger.flush();
    }

    @Override
    public void close() throws IOException {
      ledger.close();
    }
  }

  private void runCase(Profile.Case c, Path dir) throws IOException {
    try (Run run = new Run(c, dir)) {
      ObjectNode plan = run.line("plan");
      plan.put("mode", c.mode());
      plan.put("launcher", launcher.name());
      plan.put("transport", c.transport());
      plan.put("provider", c.provider());
      plan.put("operation", c.operation());
      plan.put("parents", c.parents());
      plan.put("payload", c.payload());
      plan.put("block", c.block());
      plan.put("lanes", c.lanes());
      plan.put("rounds", c.rounds());
      plan.put("generations", c.generations());
      plan.put("faultRole", c.faultRole());
      plan.put("regionBytes", run.regionBytes);
      plan.put("sourceHost", c.source().host());
      plan.put("requesterHost", c.requester().host());
      plan.put("sourceMemory", c.source().memory());
      plan.put("requesterMemory", c.requester().memory());
      var rails = plan.putArray("rails");
      // The rail mask names the software provider's devices; on native hardware the engine's own
      // device list stands (docs/qualification.md), and the verifier then checks no mask.
      if (c.transport().equals("RDMA") && c.provider().equals("software")) {
        c.rails().forEach(rails::add);
      }
      run.record(plan);
      progress.println(
          "qualify: case "
              + c.name()
              + " ("
              + c.mode()
              + ", "
              + c.transport()
              + " "
              + c.operation()
              + ", "
              + launcher.name()
              + ")");
      try {
        launcher.setUp(c);
        drive(run);
      } catch (IOException | RuntimeException e) {
        ObjectNode f = run.line("failure");
        f.put("message", String.valueOf(e.getMessage()));
        run.record(f);
        progress.println("qualify: case " + c.name() + " failed: " + e.getMessage());
      } finally {
        for (PeerProcess p : List.copyOf(run.live)) {
          // A peer still running here is one the case could not end in order: it is killed, and
          // the ledger says so (the verifier then rejects the case: the plan killed no one).
          try {
            ObjectNode kill = run.line("kill");
            String[] key = p.key().split("-g");
            kill.put("role", key[0]);
            kill.put("generation", Integer.parseInt(key[1]));
            kill.put("pid", p.pid());
            kill.put("signal", 9);
            kill.put("reason", "cleanup after a failure");
            run.record(kill);
            p.stop();
            reaped(run, p);
          } catch (IOException | RuntimeException e) {
            // Not reaped: the ledger has no exit for it, and the verifier names it unreaped.
            ObjectNode f = run.line("failure");
            f.put("message", "cleanup of " + p.key() + " (pid " + p.pid() + "): " + e.getMessage());
            run.record(f);
          }
        }
        launcher.close();
        run.record(run.line("end"));
      }
    }
  }

  private void drive(Run run) throws IOException {
    Profile.Case c = run.c;
    run.source = spawn(run, "source", 1, 0);
    run.sourcePort = port(run.source.endpoint());
    run.requester = spawn(run, "requester", 1, 0);
    run.remoteRegion = alloc(run.source, c.source().memory(), run.regionBytes);
    run.localRegion = alloc(run.requester, c.requester().memory(), run.regionBytes);
    run.segment = open(run);
    int round = 0;
    for (int g = 1; g <= c.generations(); g++) {
      for (int r = 1; r <= c.rounds(); r++) {
        round++;
        round(run, round, fault(c, g, r));
      }
      if (g < c.generations() && c.mode().equals("cleanup-failure")) {
        // Both died in the fault round: a fresh pair, the requester's first open of the source.
        run.sourceGeneration++;
        run.source = spawn(run, "source", run.sourceGeneration, run.sourcePort);
        run.remoteRegion = alloc(run.source, run.c.source().memory(), run.regionBytes);
        replace(run, "requester", true);
      } else if (g < c.generations()) {
        // A fault round that ends a process kills it itself.
        replace(run, c.faultRole(), !c.mode().equals("restart"));
      }
    }
    for (PeerProcess p : List.of(run.requester, run.source)) {
      p.call("END");
      p.call("QUIT");
      reaped(run, p);
    }
  }

  /**
   * The fault of round {@code r} of generation {@code g}, or null: link-down and inflight-err fault
   * round 2; the modes whose fault ends a process, the last round of the first generation.
   */
  private static String fault(Profile.Case c, int g, int r) {
    return switch (c.mode()) {
      case "link-down", "inflight-err" -> r == 2 && g == 1 ? c.mode() : null;
      case "lost-completion", "interruption", "cleanup-failure" ->
          g == 1 && r == c.rounds() ? c.mode() : null;
      default -> null;
    };
  }

  /**
   * SIGKILL the role's child (unless the round's fault did), reap it, start its next generation and
   * reconnect the pair.
   */
  private void replace(Run run, String role, boolean killed) throws IOException {
    PeerProcess victim = role.equals("source") ? run.source : run.requester;
    int generation = role.equals("source") ? run.sourceGeneration : run.requesterGeneration;
    if (!killed) {
      kill(run, victim, "restart");
    }
    if (role.equals("source")) {
      run.sourceGeneration++;
      run.source = spawn(run, "source", run.sourceGeneration, run.sourcePort);
      run.remoteRegion = alloc(run.source, run.c.source().memory(), run.regionBytes);
      // The survivor opens the new incarnation (and so has seen its epoch); its segment of the
      // killed one must then be refused EPOCH_MISMATCH, admitting nothing and moving no byte.
      int oldSegment = run.segment;
      run.segment = open(run);
      ObjectNode stale = run.line("stale");
      stale.put("requesterGeneration", run.requesterGeneration);
      stale.put("staleSourceGeneration", generation);
      run.record(stale);
      run.requester.call(
          "STALE "
              + oldSegment
              + " "
              + run.localRegion
              + " "
              + run.remoteRegion
              + " "
              + run.c.operation()
              + " "
              + run.c.transport()
              + " 4096");
      return;
    }
    run.requesterGeneration++;
    run.requester = spawn(run, "requester", run.requesterGeneration, 0);
    run.localRegion = alloc(run.requester, run.c.requester().memory(), run.regionBytes);
    run.segment = open(run);
  }

  /** SIGKILL of {@code victim}'s exact PID, recorded first, then reaped. */
  private void kill(Run run, PeerProcess victim, String reason) throws IOException {
    String[] key = victim.key().split("-g");
    ObjectNode kill = run.line("kill");
    kill.put("role", key[0]);
    kill.put("generation", Integer.parseInt(key[1]));
    kill.put("pid", victim.pid());
    kill.put("signal", 9);
    kill.put("reason", reason);
    run.record(kill);
    victim.kill();
    reaped(run, victim);
  }

  private static long alloc(PeerProcess p, String memory, long bytes) throws IOException {
    return Long.parseLong(p.call("ALLOC " + memory + " " + bytes));
  }

  /** The requester opens the source's current incarnation; returns the segment's index. */
  private static int open(Run run) throws IOException {
    return Integer.parseInt(run.requester.call("OPEN " + run.source.endpoint()).split(" ")[0]);
  }

  /** One round: fresh patterns, the batch, then both whole regions checked by their owners. */
  private void round(Run run, int k, String fault) throws IOException {
    Profile.Case c = run.c;
    long data = seed(c.name(), k);
    long guard = data ^ 0x5DEECE66DL;
    ObjectNode line = run.line("round");
    line.put("round", k);
    line.put("requesterGeneration", run.requesterGeneration);
    line.put("sourceGeneration", run.sourceGeneration);
    line.put("dataSeed", data);
    line.put("guardSeed", guard);
    line.put("expectedBytes", c.roundBytes());
    line.put("stride", run.stride);
    line.put("localBase", LOCAL_BASE);
    line.put("remoteBase", REMOTE_BASE);
    long landed = Math.max(1, c.payload() / 3);
    if (fault != null) {
      line.put("fault", fault);
    }
    if ("inflight-err".equals(fault)) {
      line.put("landedBytes", landed);
    }
    run.record(line);
    boolean read = c.operation().equals("READ");
    PeerProcess giver = read ? run.source : run.requester;
    PeerProcess taker = read ? run.requester : run.source;
    long giverRegion = read ? run.remoteRegion : run.localRegion;
    long takerRegion = read ? run.localRegion : run.remoteRegion;
    giver.call("FILL " + giverRegion + " " + data);
    taker.call("FILL " + takerRegion + " " + guard);
    String command =
        "ROUND "
            + k
            + " "
            + c.operation()
            + " "
            + c.transport()
            + " "
            + run.segment
            + " "
            + run.localRegion
            + " "
            + run.remoteRegion
            + " "
            + c.parents()
            + " "
            + c.payload()
            + " "
            + run.stride
            + " "
            + LOCAL_BASE
            + " "
            + REMOTE_BASE;
    List<String> spans = new ArrayList<>();
    for (int i = 0; i < c.parents(); i++) {
      long l = LOCAL_BASE + i * run.stride;
      long r = REMOTE_BASE + i * run.stride;
      spans.add(
          read
              ? l + " " + c.payload() + " " + data + " " + r
              : r + " " + c.payload() + " " + data + " " + l);
    }
    if ("lost-completion".equals(fault)) {
      lostCompletion(run, k, command, data, guard, spans);
      return;
    }
    if ("interruption".equals(fault)) {
      interruption(run, k, command, data, guard);
      return;
    }
    if ("cleanup-failure".equals(fault)) {
      cleanupFailure(run, k, command, data, guard, spans);
      return;
    }
    if ("inflight-err".equals(fault)) {
      // One WRITE of one work request, its copy cut after `landed` bytes by the provider.
      run.requester.call("ARM interrupt " + landed);
      run.requester.call(command);
      run.requester.call("ARM none 0");
      long l = LOCAL_BASE;
      long r = REMOTE_BASE;
      run.source.call(
          "VERIFY " + k + " " + run.remoteRegion + " " + guard + " 1",
          List.of(r + " " + landed + " " + data + " " + l));
      run.requester.call("VERIFY " + k + " " + run.localRegion + " " + data + " 0");
      progress.println(
          "qualify:   round " + k + ": the WRITE's copy cut after " + landed + " bytes");
      return;
    }
    if ("link-down".equals(fault)) {
      run.requester.forgetReceipts();
      run.requester.send(command, List.of());
      run.requester.receipt("round-start", Duration.ofSeconds(30));
      String host = c.faultRole().equals("source") ? c.source().host() : c.requester().host();
      link(run, k, host, false);
      // Longer than the lanes' liveness timeout (1 s here): the lanes are lost, not just slow.
      java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(2500).toNanos());
      link(run, k, host, true);
      run.requester.result(command);
      // Some READs may have failed with the link: their ranges hold old or new bytes, each.
      verifyReads(run, k, data, guard, spans);
      run.source.call("VERIFY " + k + " " + run.remoteRegion + " " + data + " 0");
      progress.println("qualify:   round " + k + ": the link went down and up under it");
      return;
    }
    run.requester.call(command);
    taker.call("VERIFY " + k + " " + takerRegion + " " + guard + " " + spans.size(), spans);
    giver.call("VERIFY " + k + " " + giverRegion + " " + data + " 0");
    progress.println(
        "qualify:   round " + k + ": " + c.roundBytes() + " bytes, both regions whole");
  }

  /**
   * A lost-completion round: the provider withholds the completion of every payload work request of
   * the round; once every byte of the payload has landed, the source is killed; every task must
   * then fail drained with no byte counted, a WRITE UNKNOWN.
   */
  private void lostCompletion(
      Run run, int k, String command, long data, long guard, List<String> spans)
      throws IOException {
    Profile.Case c = run.c;
    boolean read = c.operation().equals("READ");
    run.requester.forgetReceipts();
    run.requester.call("ARM withhold 0");
    run.requester.call(command.replaceFirst("^ROUND ", "ROUNDBG "));
    // The payload lands (only its completions are withheld): on the requester for a READ, on the
    // source for a WRITE.
    awaitLanded(run, k, data, spans);
    kill(run, run.source, "lost-completion: every payload completion withheld, the payload landed");
    var receiptAnswer = run.requester.call("AWAIT " + k);
    progress.println(
        "qualify:   round "
            + k
            + ": source killed, the round reported "
            + receiptAnswer
            + " bytes");
    run.requester.call("ARM none 0");
    if (read) {
      verifyReads(run, k, data, guard, spans);
    } else {
      run.requester.call("VERIFY " + k + " " + run.localRegion + " " + data + " 0");
    }
  }

  /**
   * An interruption round: the requester's first payload post, its grant given by the source, is
   * held; the source is killed; once the requester's RDMA channel has closed on the loss, the post
   * goes on (and is not sent). No task may have moved a byte: every one fails drained with no
   * effect.
   */
  private void interruption(Run run, int k, String command, long data, long guard)
      throws IOException {
    run.requester.forgetReceipts();
    run.requester.call("ARM hold 0");
    run.requester.call(command.replaceFirst("^ROUND ", "ROUNDBG "));
    awaitAnswer(run.requester, "FAULTS", a -> Integer.parseInt(a.split(" ")[1]) >= 1, "a grant");
    // The held post goes on by itself once the requester's channel has closed on the loss.
    kill(run, run.source, "interruption: a grant given, its payload post held");
    String bytes = run.requester.call("AWAIT " + k);
    run.requester.call("ARM none 0");
    // Nothing landed: the requester's whole region is as it was.
    boolean read = run.c.operation().equals("READ");
    run.requester.call("VERIFY " + k + " " + run.localRegion + " " + (read ? guard : data) + " 0");
    progress.println(
        "qualify:   round " + k + ": source killed under a held grant, " + bytes + " bytes");
  }

  /**
   * A cleanup-failure round: every payload completion of the READ withheld (its bytes land) and the
   * requester's next QP destroy failing EIO for good; the source is killed, so the requester's
   * endpoint drains its QP and cannot destroy it. The READ must end UNQUIESCED, undrained, its
   * batch busy, its memory and the QP kept, the endpoint quarantined. The requester keeps that QP
   * for its life: it is killed after its owners are recorded; both roles start a next generation.
   */
  private void cleanupFailure(
      Run run, int k, String command, long data, long guard, List<String> spans)
      throws IOException {
    run.requester.forgetReceipts();
    run.requester.call("ARM cleanup 0");
    run.requester.call(command.replaceFirst("^ROUND ", "ROUNDBG "));
    awaitLanded(run, k, data, spans);
    kill(run, run.source, "cleanup-failure: the source dies so that the requester drains its QP");
    run.requester.call("AWAIT " + k);
    awaitAnswer(
        run.requester,
        "QUARANTINED",
        a -> a.contains("RdmaEndpoint"),
        "the requester's RDMA endpoint to be quarantined");
    verifyReads(run, k, data, guard, spans);
    run.requester.call("END");
    run.requester.call("ARM none 0");
    kill(run, run.requester, "cleanup-failure: its QP could not be destroyed and is kept for life");
    progress.println(
        "qualify:   round " + k + ": the QP's destroy failed; both peers start a next generation");
  }

  /**
   * The requester checks its whole region after a READ round some of whose tasks may have failed
   * ({@code VERIFYREADS}): each completed task's range the source's bytes, each failed one's the
   * guard's or the source's byte by byte, the rest the guard. The tasks' states come from the
   * round's own receipt.
   */
  private static void verifyReads(Run run, int k, long data, long guard, List<String> spans)
      throws IOException {
    var tasks = run.requester.receipt("round", Duration.ofSeconds(5)).path("tasks");
    List<String> ranges = new ArrayList<>();
    for (int i = 0; i < spans.size(); i++) {
      // A READ's span is "local length seed remote".
      String[] f = spans.get(i).split(" ");
      boolean done = tasks.path(i).path("state").asText().equals("COMPLETED");
      ranges.add(f[0] + " " + f[1] + " " + f[3] + " " + (done ? 1 : 0));
    }
    run.requester.call(
        "VERIFYREADS " + k + " " + run.localRegion + " " + guard + " " + data + " " + ranges.size(),
        ranges);
  }

  /** Waits until every byte of the round's payload has landed on the side that takes it. */
  private void awaitLanded(Run run, int k, long data, List<String> spans) throws IOException {
    boolean read = run.c.operation().equals("READ");
    PeerProcess taker = read ? run.requester : run.source;
    long region = read ? run.localRegion : run.remoteRegion;
    for (String span : spans) {
      String[] f = span.split(" ");
      awaitAnswer(
          taker,
          "PEEK " + region + " " + data + " " + f[3] + " " + f[0] + " " + f[1],
          a -> a.equals("1"),
          "round " + k + "'s payload to land");
    }
  }

  /** Asks {@code peer} {@code command} until its answer satisfies {@code done} (60 s at most). */
  private static void awaitAnswer(
      PeerProcess peer, String command, java.util.function.Predicate<String> done, String what)
      throws IOException {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!done.test(peer.call(command))) {
      if (System.nanoTime() - deadline > 0) {
        throw new IOException("waited 60 s for " + what + " ('" + command + "')");
      }
      java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
    }
  }

  private void link(Run run, int k, String host, boolean up) throws IOException {
    launcher.link(host, up);
    ObjectNode l = run.line("link");
    l.put("round", k);
    l.put("host", host);
    l.put("state", up ? "up" : "down");
    l.put("atMillis", System.currentTimeMillis());
    run.record(l);
  }

  private PeerProcess spawn(Run run, String role, int generation, int port) throws IOException {
    Profile.Side side = role.equals("source") ? run.c.source() : run.c.requester();
    String key = role + "-g" + generation;
    List<String> args =
        new ArrayList<>(
            List.of(run.c.name() + "-" + role, role, run.c.name(), Integer.toString(generation)));
    if (role.equals("requester") && Profile.PROVIDER_FAULTS.contains(run.c.mode())) {
      // The requester's provider carries the fault table the round arms.
      args.add("faults");
    }
    PeerProcess p =
        PeerProcess.start(
            launcher,
            side.host(),
            key,
            args,
            Map.of("ORBITE_CONF", conf(run.c, launcher.address(side.host()), port, role)),
            run.dir,
            secret);
    run.live.add(p);
    ObjectNode s = run.line("spawn");
    s.put("role", role);
    s.put("generation", generation);
    s.put("pid", p.pid());
    s.put("host", side.host());
    String[] identity = launcher.identity(side.host());
    s.put("hostname", identity[0]);
    s.put("bootId", identity[1]);
    s.put("endpoint", p.endpoint());
    s.put("epoch", p.epoch());
    run.record(s);
    return p;
  }

  /** Records the reaped exit status of {@code p} (waiting for its wrapper to reap it). */
  private void reaped(Run run, PeerProcess p) throws IOException {
    if (!run.live.remove(p)) {
      return;
    }
    Integer status = p.reap(REAP);
    String[] key = p.key().split("-g");
    ObjectNode e = run.line("exit");
    e.put("role", key[0]);
    e.put("generation", Integer.parseInt(key[1]));
    e.put("pid", p.pid());
    if (status == null) {
      e.putNull("status");
    } else {
      e.put("status", status);
    }
    run.record(e);
  }

  /** The engine configuration of one side of {@code c}. */
  static String conf(Profile.Case c, String address, int port, String role) {
    ObjectNode root = JSON.createObjectNode();
    root.putObject("listen").put("host", address).put("port", port);
    root.putObject("slicing").put("baseBlockBytes", c.block());
    ObjectNode tcp = root.putObject("tcp").put("lanes", c.lanes());
    if (c.mode().equals("link-down")) {
      tcp.put("keepaliveIntervalMillis", 200).put("livenessTimeoutMillis", 1000);
    }
    if (c.mode().equals("cleanup-failure")) {
      // The READ's QP cannot be destroyed, so the task settles (UNQUIESCED) at its deadline: 5 s,
      // not the default 30; and an owner that cannot prove its drain within 1 s is quarantined.
      root.putObject("timeouts")
          .put("destructionWindowMillis", 1000)
          .put("defaultDeadlineMillis", 5000);
    }
    if (c.transport().equals("SHM")) {
      root.putObject("shm").put("enabled", true).put("lanes", c.lanes());
    }
    if (c.transport().equals("RDMA")) {
      ObjectNode rdma =
          root.putObject("rdma")
              .put("enabled", true)
              .put("provider", c.provider())
              .put("lanes", c.lanes());
      if (c.provider().equals("software")) {
        rdma.put("softwareAddress", address);
        if (c.mode().equals("cleanup-failure")) {
          // One device, one QP: the next QP destroy, which the fault makes fail, is the READ's.
          rdma.put("softwareDevices", 1);
        }
        var mask = rdma.putObject("selection").putArray("deviceMask");
        c.rails().forEach(mask::add);
      }
    }
    return root.toString();
  }

  private static byte[] randomBytes() {
    byte[] b = new byte[32];
    new java.security.SecureRandom().nextBytes(b);
    return b;
  }

  private static int port(String endpoint) {
    return Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
  }

  /** A pattern seed for round {@code k} of a case: fresh each round, the same on a rerun. */
  private static long seed(String caseName, int k) {
    return (caseName.hashCode() * 0x9E3779B97F4A7C15L) ^ (k * 0xBF58476D1CE4E5B9L);
  }
}
