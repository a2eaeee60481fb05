package io.orbite.qualification.qualify;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One peer of a qualification case: an engine process that the supervisor ({@link Supervisor})
 * drives over its standard input, one command per line, and that writes its own receipts. Its
 * standard output carries {@code RECEIPT <json>} lines, each one receipt of what this process did
 * and saw (what it submitted, each task's result, its counters before and after, each whole-region
 * check, its owners and its close), then the answer line of the command ({@code OK ...} or {@code
 * ERR ...}). The supervisor stores the receipts as they come, unchanged, in {@code
 * <role>-g<generation>.jsonl}; docs/qualification.md lists every field.
 *
 * <pre>
 * SECRET secret                    (first, before the engine starts: the run's shared secret)
 * (start)                          -> RECEIPT start, then READY endpoint epoch-hex
 * ALLOC memory bytes               -> OK region        (allocated: engine.allocate; external:
 *                                                        caller-owned memory, engine.register)
 * FILL region seed                 -> OK               (the whole region, pattern position = offset)
 * OPEN endpoint                    -> OK segment epoch-hex
 * ROUND k op transport segment local remote parents payload stride localBase remoteBase
 *                                  -> RECEIPT round-start, RECEIPT round, OK bytes
 * ROUNDBG (as ROUND)               -> RECEIPT round-start, OK   (the batch runs on; AWAIT k takes it)
 * AWAIT k                          -> RECEIPT round, OK bytes
 * PEEK region seed from off len    -> OK 1 | OK 0  (whether those bytes hold that pattern; no receipt)
 * ARM kind bytes                   -> OK   (a peer started with "faults" only: {@link PeerFaults})
 * FAULTS                           -> OK posts injected qpDestroys  (since the last ARM)
 * QUARANTINED                      -> OK owner,owner...  (owed().quarantined(), spaces as _)
 * STALE segment local remote op transport length
 *                                  -> RECEIPT stale, OK errorKind
 * VERIFY k region guardSeed n      -> (n lines: offset length seed from) RECEIPT verify, OK | ERR
 * VERIFYREADS k region guard data n -> (n lines: offset length from completed) RECEIPT verify,
 *                                       OK | ERR: after a round some of whose READs failed; outside
 *                                       the ranges the guard; inside a completed one the data
 *                                       pattern from position from; inside a failed one each byte
 *                                       the guard's or the data's (a failed READ's slices may have
 *                                       landed), never anything else
 * END                              -> RECEIPT owners, OK
 * QUIT                             -> RECEIPT closed, OK, then exit
 * </pre>
 *
 * <p>Longer than 500 lines: it is the peer's whole command protocol, one case per command beside
 * the table above, and each receipt is written where its command runs, so that a receipt's fields
 * can be read next to the code that measured them.
 */
public final class QualifyPeer {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final TransferEngine engine;
  private final PeerFaults faults;
  private PendingRound pending;
  private final PrintStream out;
  private final String role;
  private final String caseName;
  private final int generation;
  private final long pid = ProcessHandle.current().pid();
  private final Map<Long, RegisteredMemory> regions = new HashMap<>();
  private final List<RemoteSegment> segments = new ArrayList<>();
  private long seq;

  private QualifyPeer(
      TransferEngine engine,
      PeerFaults faults,
      PrintStream out,
      String role,
      String caseName,
      int generation) {
    this.engine = engine;
    this.faults = faults;
    this.out = out;
    this.role = role;
    this.caseName = caseName;
    this.generation = generation;
  }

  /**
   * {@code QualifyPeer name role case generation [faults]}; the engine's configuration in
   * ORBITE_CONF; with {@code faults}, the engine runs with {@link PeerFaults}' hooks.
   */
  public static void main(String[] args) {
    int status = 0;
    try {
      serve(args);
    } catch (Throwable t) {
      t.printStackTrace();
      status = 1;
    }
    System.exit(status);
  }

  private static void serve(String[] args) throws IOException {
    if (args.length != 4 && !(args.length == 5 && args[4].equals("faults"))) {
      throw new IllegalArgumentException("usage: QualifyPeer name role case generation [faults]");
    }
    org.slf4j.LoggerFactory.getLogger(QualifyPeer.class);
    PrintStream out =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    // Logs go to stderr; stdout carries only receipts and answers.
    System.setOut(System.err);
    EngineConfig config = EngineConfig.fromEnv().withName(args[0]);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    // The run's shared secret comes first on stdin, never in a command line or the environment
    // (which ssh would show to the remote host's other users): kept in a file only this user
    // reads, for as long as the engine takes to read it at start.
    String first = in.readLine();
    if (first == null || !first.startsWith("SECRET ")) {
      throw new IllegalArgumentException("the first line must be SECRET <secret>");
    }
    Path secret =
        Files.createTempFile(
            "orbite-qualify-",
            ".secret",
            java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
    PeerFaults faults = args.length == 5 ? new PeerFaults() : null;
    TransferEngine engine;
    try {
      Files.writeString(secret, first.substring("SECRET ".length()).trim());
      EngineConfig withSecret =
          config.withSecurity(config.security().withSecretFile(secret.toString()));
      engine =
          faults == null
              ? TransferEngine.start(withSecret)
              : io.orbite.engine.fault.FaultInjection.start(withSecret, faults);
    } finally {
      Files.deleteIfExists(secret);
    }
    QualifyPeer peer =
        new QualifyPeer(engine, faults, out, args[1], args[2], Integer.parseInt(args[3]));
    peer.loop(in);
  }

  private void loop(BufferedReader in) throws IOException {
    ObjectNode start = receipt("start");
    start.put("epoch", Long.toHexString(engine.localSegment().epoch()));
    start.put("endpoint", engine.localSegment().endpoint());
    start.put("hostname", proc("/proc/sys/kernel/hostname"));
    start.put("bootId", proc("/proc/sys/kernel/random/boot_id"));
    emit(start);
    out.println(
        "READY "
            + engine.localSegment().endpoint()
            + " "
            + Long.toHexString(engine.localSegment().epoch()));
    String line;
    while ((line = in.readLine()) != null) {
      String[] t = line.trim().split("\\s+");
      try {
        if (t[0].equals("QUIT")) {
          quit();
          return;
        }
        out.println(command(t, in));
      } catch (RuntimeException e) {
        out.println("ERR " + String.valueOf(e.getMessage()).replace('\n', ' '));
      }
    }
    quit();
  }

  private String command(String[] t, BufferedReader in) throws IOException {
    return switch (t[0]) {
      case "ALLOC" -> alloc(t[1], Long.parseLong(t[2]));
      case "FILL" -> {
        RegisteredMemory m = region(t[1]);
        Pattern.fill(m.segment(), 0, m.lengthBytes(), Long.parseLong(t[2]), 0);
        yield "OK";
      }
      case "OPEN" -> {
        RemoteSegment s = engine.openSegment(t[1], Duration.ofSeconds(30));
        segments.add(s);
        ObjectNode r = receipt("open");
        r.put("segment", segments.size() - 1);
        r.put("endpoint", t[1]);
        r.put("peerEpoch", Long.toHexString(s.descriptor().epoch()));
        emit(r);
        yield "OK " + (segments.size() - 1) + " " + Long.toHexString(s.descriptor().epoch());
      }
      case "ROUND" -> finish(submit(t));
      case "ROUNDBG" -> {
        pending = submit(t);
        yield "OK";
      }
      case "AWAIT" -> {
        if (pending == null || pending.round() != Integer.parseInt(t[1])) {
          throw new IllegalStateException("no round " + t[1] + " in the background");
        }
        PendingRound p = pending;
        pending = null;
        yield finish(p);
      }
      case "PEEK" -> peek(t);
      case "ARM" -> {
        faults().arm(t[1], Integer.parseInt(t[2]));
        yield "OK";
      }
      case "FAULTS" ->
          "OK " + faults().posts() + " " + faults().injected() + " " + faults().qpDestroys();
      case "QUARANTINED" -> {
        // The owners quarantined now, by name (engine.owed().quarantined()).
        List<String> names = new ArrayList<>();
        engine.owed().quarantined().forEach(q -> names.add(q.owner().replace(' ', '_')));
        yield "OK " + String.join(",", names);
      }
      case "STALE" -> stale(t);
      case "VERIFY" -> verify(t, in);
      case "VERIFYREADS" -> verifyReads(t, in);
      case "END" -> {
        EngineOwed owed = engine.owed();
        ObjectNode r = receipt("owners");
        r.put("phase", owed.phase().name());
        r.put("batches", owed.batches());
        r.put("tasksInFlight", owed.tasksInFlight());
        r.put("bytesInFlight", owed.bytesInFlight());
        r.put("endpoints", owed.endpoints());
        r.put("registrations", owed.registrations());
        r.put("loans", owed.loans());
        r.put("quarantined", owed.quarantined().size());
        if (faults != null) {
          r.put("qpDestroys", faults.qpDestroys());
        }
        emit(r);
        yield "OK";
      }
      default -> "ERR unknown command " + t[0];
    };
  }

  private String alloc(String memory, long bytes) {
    RegisteredMemory m =
        switch (memory) {
          case "allocated" -> engine.allocate(bytes, Access.READ_WRITE);
          case "external" -> engine.register(Arena.global().allocate(bytes, 64), Access.READ_WRITE);
          default -> throw new IllegalArgumentException("memory '" + memory + "' is unknown");
        };
    regions.put(m.regionId(), m);
    ObjectNode r = receipt("alloc");
    r.put("region", m.regionId());
    r.put("bytes", bytes);
    r.put("memory", memory);
    emit(r);
    return "OK " + m.regionId();
  }

  /** A round submitted in the background (ROUNDBG), awaited by AWAIT. */
  private record PendingRound(
      int round,
      Op op,
      Transport transport,
      RemoteSegment peer,
      EngineCounters before,
      java.util.concurrent.CompletableFuture<BatchStatus> status,
      java.util.concurrent.atomic.AtomicReference<String> freed) {}

  /** ROUND (or ROUNDBG): one batch of {@code parents} tasks, submitted on its own thread. */
  private PendingRound submit(String[] t) {
    int k = Integer.parseInt(t[1]);
    Op op = Op.valueOf(t[2]);
    Transport transport = Transport.valueOf(t[3]);
    RemoteSegment peer = segments.get(Integer.parseInt(t[4]));
    RegisteredMemory local = region(t[5]);
    long remote = Long.parseLong(t[6]);
    int parents = Integer.parseInt(t[7]);
    long payload = Long.parseLong(t[8]);
    long stride = Long.parseLong(t[9]);
    long localBase = Long.parseLong(t[10]);
    long remoteBase = Long.parseLong(t[11]);
    List<TransferRequest> requests = new ArrayList<>(parents);
    for (int i = 0; i < parents; i++) {
      long l = localBase + i * stride;
      long r = remoteBase + i * stride;
      TransferRequest q =
          op == Op.READ
              ? TransferRequest.read(local, l, peer, remote, r, payload)
              : TransferRequest.write(local, l, peer, remote, r, payload);
      requests.add(q.withTransport(transport));
    }
    ObjectNode started = receipt("round-start");
    started.put("round", k);
    started.put("atMillis", System.currentTimeMillis());
    EngineCounters before = engine.counters();
    emit(started);
    var status = new java.util.concurrent.CompletableFuture<BatchStatus>();
    var freed = new java.util.concurrent.atomic.AtomicReference<String>("OK");
    Thread.ofPlatform()
        .daemon()
        .name("qualify-round-" + k)
        .start(
            () -> {
              // The status is published after free(), so that the receipt can say how it went.
              BatchStatus done = null;
              RuntimeException failure = null;
              Batch batch = engine.allocateBatch(parents);
              try {
                batch.submit(requests);
                done = batch.await(Duration.ofSeconds(120));
              } catch (RuntimeException e) {
                failure = e;
              } finally {
                try {
                  batch.free();
                } catch (RuntimeException e) {
                  // A batch whose task is UNQUIESCED stays busy: the receipt says so.
                  freed.set(e instanceof TransferException te ? te.kind().name() : e.toString());
                }
              }
              if (failure != null) {
                status.completeExceptionally(failure);
              } else {
                status.complete(done);
              }
            });
    return new PendingRound(k, op, transport, peer, before, status, freed);
  }

  /** Waits for a submitted round and writes its receipt: every task's result, counters around. */
  private String finish(PendingRound p) {
    BatchStatus status;
    try {
      status = p.status().get(150, java.util.concurrent.TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e);
    } catch (java.util.concurrent.TimeoutException | InterruptedException e) {
      throw new IllegalStateException("round " + p.round() + " did not end: " + e, e);
    }
    long ended = System.currentTimeMillis();
    ObjectNode r = receipt("round");
    r.put("round", p.round());
    r.put("operation", p.op().name());
    r.put("transport", p.transport().name());
    r.put("peerEpoch", Long.toHexString(p.peer().descriptor().epoch()));
    r.put("endedAtMillis", ended);
    var tasks = r.putArray("tasks");
    long sum = 0;
    for (int i = 0; i < status.tasks().size(); i++) {
      TaskResult result = status.tasks().get(i);
      ObjectNode n = tasks.addObject();
      n.put("index", i);
      n.put("state", String.valueOf(result.state()));
      n.put("errorKind", result.errorKind() == null ? null : result.errorKind().name());
      n.put("bytes", result.bytes());
      n.put("transport", result.transport() == null ? null : result.transport().name());
      n.put("effect", String.valueOf(result.remoteEffect()));
      n.put("drained", result.locallyDrained());
      n.put("attempts", result.attempts());
      sum += result.bytes();
    }
    r.put("bytes", sum);
    r.put("free", p.freed().get());
    if (faults != null && !faults.armed().equals("none")) {
      ObjectNode f = r.putObject("fault");
      f.put("kind", faults.armed());
      f.put("posts", faults.posts());
      f.put("injected", faults.injected());
      f.put("qpDestroys", faults.qpDestroys());
      f.put("released", faults.released());
    }
    r.set("countersBefore", counters(p.before()));
    r.set("countersAfter", counters(engine.counters()));
    emit(r);
    return "OK " + sum;
  }

  /**
   * PEEK: whether {@code [offset, offset + length)} holds pattern {@code seed} from {@code from}.
   */
  private String peek(String[] t) {
    RegisteredMemory m = region(t[1]);
    long seed = Long.parseLong(t[2]);
    long from = Long.parseLong(t[3]);
    long offset = Long.parseLong(t[4]);
    long length = Long.parseLong(t[5]);
    return Pattern.verify(m.segment(), offset, length, seed, from) < 0 ? "OK 1" : "OK 0";
  }

  private PeerFaults faults() {
    if (faults == null) {
      throw new IllegalStateException("this peer was started without faults");
    }
    return faults;
  }

  /** STALE: a submission through a segment of a replaced incarnation, which must be refused. */
  private String stale(String[] t) {
    RemoteSegment peer = segments.get(Integer.parseInt(t[1]));
    RegisteredMemory local = region(t[2]);
    long remote = Long.parseLong(t[3]);
    Op op = Op.valueOf(t[4]);
    Transport transport = Transport.valueOf(t[5]);
    long length = Long.parseLong(t[6]);
    EngineCounters before = engine.counters();
    TransferRequest q =
        op == Op.READ
            ? TransferRequest.read(local, 0, peer, remote, 0, length)
            : TransferRequest.write(local, 0, peer, remote, 0, length);
    String kind = "NONE";
    int admitted;
    long bytes = 0;
    Batch batch = engine.allocateBatch(1);
    try {
      try {
        batch.submit(List.of(q.withTransport(transport)));
        BatchStatus s = batch.await(Duration.ofSeconds(30));
        kind =
            s.tasks().stream()
                .map(x -> x.errorKind() == null ? "NONE" : x.errorKind().name())
                .findFirst()
                .orElse("NONE");
      } catch (TransferException e) {
        kind = e.kind().name();
      }
      admitted = batch.status().tasks().size();
      bytes = batch.status().tasks().stream().mapToLong(TaskResult::bytes).sum();
    } finally {
      batch.free();
    }
    ObjectNode r = receipt("stale");
    r.put("segment", Integer.parseInt(t[1]));
    r.put("peerEpoch", Long.toHexString(peer.descriptor().epoch()));
    r.put("errorKind", kind);
    r.put("admitted", admitted);
    r.put("bytes", bytes);
    r.set("countersBefore", counters(before));
    r.set("countersAfter", counters(engine.counters()));
    emit(r);
    return "OK " + kind;
  }

  /** VERIFY: the whole region, each span its pattern and every other byte the guard's. */
  private String verify(String[] t, BufferedReader in) throws IOException {
    int k = Integer.parseInt(t[1]);
    RegisteredMemory m = region(t[2]);
    long guard = Long.parseLong(t[3]);
    int n = Integer.parseInt(t[4]);
    List<Span> spans = Span.read(in, n);
    long bad = RegionCheck.check(m.segment(), spans, guard);
    ObjectNode r = receipt("verify");
    r.put("round", k);
    r.put("region", m.regionId());
    r.put("bytes", m.lengthBytes());
    r.put("spans", n);
    r.put("spanBytes", spans.stream().mapToLong(Span::length).sum());
    r.put("ok", bad < 0);
    r.put("firstBad", bad);
    emit(r);
    return bad < 0 ? "OK" : "ERR MISMATCH " + bad;
  }

  /** VERIFYREADS: see the class comment. */
  private String verifyReads(String[] t, BufferedReader in) throws IOException {
    int k = Integer.parseInt(t[1]);
    RegisteredMemory m = region(t[2]);
    long guard = Long.parseLong(t[3]);
    long data = Long.parseLong(t[4]);
    int n = Integer.parseInt(t[5]);
    List<long[]> ranges = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String[] s = in.readLine().trim().split("\\s+");
      ranges.add(
          new long[] {
            Long.parseLong(s[0]), Long.parseLong(s[1]), Long.parseLong(s[2]), Long.parseLong(s[3])
          });
    }
    ranges.sort(java.util.Comparator.comparingLong(x -> x[0]));
    MemorySegment seg = m.segment();
    long bad = -1;
    long at = 0;
    int failed = 0;
    long landed = 0;
    for (long[] x : ranges) {
      if (bad < 0) {
        bad = Pattern.verify(seg, at, x[0] - at, guard, at);
      }
      if (x[3] == 1) {
        if (bad < 0) {
          bad = Pattern.verify(seg, x[0], x[1], data, x[2]);
        }
      } else {
        failed++;
        for (long j = 0; j < x[1] && bad < 0; j++) {
          byte b = seg.get(ValueLayout.JAVA_BYTE, x[0] + j);
          if (b == Pattern.at(data, x[2] + j)) {
            landed++;
          } else if (b != Pattern.at(guard, x[0] + j)) {
            bad = x[0] + j;
          }
        }
      }
      at = x[0] + x[1];
    }
    if (bad < 0) {
      bad = Pattern.verify(seg, at, seg.byteSize() - at, guard, at);
    }
    ObjectNode r = receipt("verify");
    r.put("round", k);
    r.put("region", m.regionId());
    r.put("bytes", m.lengthBytes());
    r.put("spans", n);
    r.put("spanBytes", ranges.stream().mapToLong(x -> x[1]).sum());
    r.put("failedSpans", failed);
    r.put("landedInFailed", landed);
    r.put("ok", bad < 0);
    r.put("firstBad", bad);
    emit(r);
    return bad < 0 ? "OK" : "ERR MISMATCH " + bad;
  }

  private void quit() {
    EngineOwed owed = engine.close(Duration.ofSeconds(30));
    ObjectNode r = receipt("closed");
    r.put("phase", owed.phase().name());
    r.put("clear", owed.isClear());
    r.put("registrations", owed.registrations());
    r.put("loans", owed.loans());
    r.put("quarantined", owed.quarantined().size());
    emit(r);
    out.println("OK");
  }

  private static ObjectNode counters(EngineCounters c) {
    ObjectNode n = JSON.createObjectNode();
    n.put("bytesCompleted", c.bytesCompleted());
    n.put("tasksCompleted", c.tasksCompleted());
    n.put("tasksFailed", c.tasksFailed());
    n.put("connectionsOpened", c.connectionsOpened());
    n.put("lanesLost", c.lanesLost());
    n.put("lanesRestored", c.lanesRestored());
    n.put("peersFenced", c.peersFenced());
    n.put("sourceBytesRead", c.sourceBytesRead());
    n.put("sourceBytesWritten", c.sourceBytesWritten());
    for (Transport t : List.of(Transport.TCP, Transport.SHM, Transport.RDMA)) {
      n.put("bytesDispatched." + t.name(), c.bytesDispatched(t));
      n.put("tasksDispatched." + t.name(), c.tasksDispatched(t));
    }
    ObjectNode lanes = n.putObject("lanes");
    new java.util.TreeMap<>(c.laneBytes()).forEach(lanes::put);
    return n;
  }

  private ObjectNode receipt(String type) {
    ObjectNode r = JSON.createObjectNode();
    r.put("seq", ++seq);
    r.put("type", type);
    r.put("case", caseName);
    r.put("role", role);
    r.put("generation", generation);
    r.put("pid", pid);
    return r;
  }

  private void emit(ObjectNode receipt) {
    try {
      out.println("RECEIPT " + JSON.writeValueAsString(receipt));
    } catch (IOException e) {
      throw new IllegalStateException("cannot write a receipt", e);
    }
  }

  private RegisteredMemory region(String id) {
    RegisteredMemory m = regions.get(Long.parseLong(id));
    if (m == null) {
      throw new IllegalArgumentException("no region " + id);
    }
    return m;
  }

  private static String proc(String file) {
    try {
      return Files.readString(Path.of(file)).trim();
    } catch (IOException e) {
      return "unknown";
    }
  }
}
