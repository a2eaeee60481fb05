package io.orbite.qualification.harness;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.ReadRanges;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An engine process driven over its standard input and output, one command per line, one answer
 * line per command ({@code OK ...} or {@code ERR ...}). Started by {@link EngineProcess}. The first
 * line it prints is {@code READY <endpoint> <epoch-hex>}.
 *
 * <pre>
 * ALLOC bytes access            -> OK regionId
 * ALLOCFOR bytes access p1,p2   -> OK regionId   (reachable only by the peers whose handshake
 *                                                  proves one of these names; "-": by none)
 * EXTERN bytes access           -> OK regionId   (caller-owned memory: never exported through SHM)
 * FILL regionId seed            -> OK            (whole region, pattern position = offset)
 * VERIFY regionId guardSeed n   -> OK | MISMATCH index   (then n lines: offset length seed from)
 * ONEOF regionId guard data off len -> OK n | MISMATCH index   (the whole region: outside [off, off + len)
 *                                                  the guard pattern; inside, each byte the guard's or
 *                                                  the data pattern's (a WRITE that may have landed in
 *                                                  part); n = bytes inside that differ from the guard)
 * LOANS                         -> OK n          (loans workers hold on the engine's memory now: owed())
 * CUT n                         -> OK n          (closes the sockets of the n live source lanes
 *                                                  that started last, as a network fault would)
 * UNREGISTER regionId           -> OK
 * SHM_FENCE regionId            -> OK fenced | OK busy   (fences the region's SHM export while it
 *                                                  stays registered, FaultInjection.fenceSharedExport:
 *                                                  busy while a peer's copy started before is under way)
 * OPEN endpoint                 -> OK epoch-hex  (the peer segment the later commands use)
 * XFERALL op transport local n length stride localBase remote remoteBase
 *                               -> OK r0 r1 ...  (the same batch as XFER; every task's answer, in
 *                                                  order, as state/errorKind/bytes/transport/route/
 *                                                  effect/drained/attempts, "-" for a null field)
 * READS regionId stale fresh n  -> OK | MISMATCH offset   (then n lines: offset length completed;
 *                                                  outside the n ranges the stale pattern; inside a
 *                                                  completed one (1) the fresh pattern; inside a
 *                                                  failed one (0) each byte the stale or the fresh
 *                                                  one; pattern position = offset)
 * PAYLOAD device                -> OK bytes      (the software provider's own RDMA payload bytes
 *                                                  for that device: SoftFaults.payloadBytes)
 * XFER op transport local n length stride localBase remote remoteBase
 *                               -> OK bytes | ERR first failure   (one batch of n tasks of op, READ
 *                                                  or WRITE, naming transport: task i at localBase +
 *                                                  i * stride here and remoteBase + i * stride in the
 *                                                  peer's region remote; OK only when every task
 *                                                  completed with length bytes and the effect its op
 *                                                  has: NONE for a READ, APPLIED for a WRITE)
 * NOTIFY, XFERN, XFERNT, NOTIFICATIONS  -> notifications: see {@link NotifyCommands}
 * RULES                         -> OK r0 r1 ...  (the policy rule index, TaskResult.rule, of each task
 *                                                  of the last XFER, -1 where no rule chose its
 *                                                  transport; the engine's policies come, as all its
 *                                                  configuration, from ORBITE_CONF)
 * COUNTERS                      -> OK key=value ...
 * CHARGE kind name              -> OK n          (the owner view's charge {@code name}, summed over
 *                                                  the owners of kind {@code kind})
 * ALLOCATED [threadPrefix]     -> OK bytes      (heap bytes allocated so far by all threads, or by
 *                                                  the live threads whose name starts with the prefix)
 * QUIT                          -> OK, then exit
 * </pre>
 *
 * <p>Longer than 500 lines: it is the child's whole command protocol, one case per command beside
 * the table above, so that a test reading the table finds each command's code in the same file.
 */
public final class EngineMain {
  /** The rule indices of the last XFER's tasks, for RULES (the command loop is one thread). */
  private static String lastRules = "";

  private EngineMain() {}

  /** Runs the command loop; the process exits when it ends, however it ends (no lingering JVM). */
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

  private static void serve(String[] args) throws Exception {
    org.slf4j.LoggerFactory.getLogger(EngineMain.class);
    EngineConfig config = EngineConfig.fromEnv().withName(args.length > 0 ? args[0] : "engine");
    PrintStream out =
        new PrintStream(
            new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    // Logs go to stderr; stdout carries only the protocol.
    System.setOut(System.err);
    // Source lanes are recorded so that CUT can break their sockets as a network fault would.
    java.util.Map<String, Runnable> sourceLanes =
        java.util.Collections.synchronizedMap(new java.util.LinkedHashMap<>());
    // Nothing is armed in them: a table is read for its provider's own byte counts (PAYLOAD). A
    // table serves one provider, so each open of the rails gets a fresh one; PAYLOAD reads the
    // last.
    java.util.concurrent.atomic.AtomicReference<SoftFaults> provider =
        new java.util.concurrent.atomic.AtomicReference<>();
    TransferEngine engine =
        io.orbite.engine.fault.FaultInjection.start(
            config,
            new io.orbite.engine.fault.FaultHooks() {
              @Override
              public void sourceLaneStarted(String lane, Runnable cut) {
                sourceLanes.put(lane, cut);
              }

              @Override
              public void sourceLaneEnded(String lane) {
                sourceLanes.remove(lane);
              }

              @Override
              public Object rdmaFaults() {
                SoftFaults table = SoftFaults.create();
                provider.set(table);
                return table;
              }
            });
    Map<Long, RegisteredMemory> regions = new HashMap<>();
    io.orbite.engine.RemoteSegment[] peer = new io.orbite.engine.RemoteSegment[1];
    out.println(
        "READY "
            + engine.localSegment().endpoint()
            + " "
            + Long.toHexString(engine.localSegment().epoch()));
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] t = line.trim().split("\\s+");
      try {
        switch (t[0]) {
          case "ALLOC" -> {
            RegisteredMemory m = engine.allocate(Long.parseLong(t[1]), Access.valueOf(t[2]));
            regions.put(m.regionId(), m);
            out.println("OK " + m.regionId());
          }
          case "ALLOCFOR" -> {
            // ALLOCFOR bytes access peer[,peer...] ("-" for an empty list: no peer at all)
            java.util.Set<String> peers =
                t[3].equals("-") ? java.util.Set.of() : java.util.Set.of(t[3].split(","));
            RegisteredMemory m =
                engine.allocate(Long.parseLong(t[1]), Access.valueOf(t[2]), null, peers);
            regions.put(m.regionId(), m);
            out.println("OK " + m.regionId());
          }
          case "EXTERN" -> {
            java.lang.foreign.MemorySegment own =
                java.lang.foreign.Arena.global().allocate(Long.parseLong(t[1]), 64);
            RegisteredMemory m = engine.register(own, Access.valueOf(t[2]));
            regions.put(m.regionId(), m);
            out.println("OK " + m.regionId());
          }
          case "FILL" -> {
            RegisteredMemory m = region(regions, t[1]);
            Pattern.fill(m.segment(), 0, m.lengthBytes(), Long.parseLong(t[2]), 0);
            out.println("OK");
          }
          case "VERIFY" -> {
            RegisteredMemory m = region(regions, t[1]);
            long guardSeed = Long.parseLong(t[2]);
            int n = Integer.parseInt(t[3]);
            List<Span> spans = Span.read(in, n);
            long bad = RegionCheck.check(m.segment(), spans, guardSeed);
            out.println(bad < 0 ? "OK" : "MISMATCH " + bad);
          }
          case "ONEOF" -> {
            RegisteredMemory m = region(regions, t[1]);
            out.println(
                oneOf(
                    m.segment(),
                    Long.parseLong(t[2]),
                    Long.parseLong(t[3]),
                    Long.parseLong(t[4]),
                    Long.parseLong(t[5])));
          }
          case "LOANS" -> out.println("OK " + engine.owed().loans());
          case "CUT" -> {
            // CUT n: closes the sockets of the n live source lanes that started last.
            int n = Integer.parseInt(t[1]);
            List<Runnable> live;
            synchronized (sourceLanes) {
              live = new java.util.ArrayList<>(sourceLanes.values());
            }
            java.util.Collections.reverse(live);
            List<Runnable> cut = live.subList(0, Math.min(n, live.size()));
            cut.forEach(Runnable::run);
            out.println("OK " + cut.size());
          }
          case "CLOSE_SOURCE" ->
              out.println(
                  "OK " + engine.closeSource(Duration.ofSeconds(30)).toString().replace('\n', ' '));
          case "UNREGISTER" -> {
            engine.unregister(regions.remove(Long.parseLong(t[1])));
            out.println("OK");
          }
          case "SHM_FENCE" ->
              out.println(
                  FaultInjection.fenceSharedExport(region(regions, t[1]))
                      ? "OK fenced"
                      : "OK busy");
          case "OPEN" -> {
            peer[0] = engine.openSegment(t[1], Duration.ofSeconds(30));
            out.println("OK " + Long.toHexString(peer[0].descriptor().epoch()));
          }
          case "READ" ->
              out.println(
                  readChecked(
                      engine,
                      peer[0],
                      region(regions, t[1]),
                      Long.parseLong(t[2]),
                      Long.parseLong(t[3]),
                      Integer.parseInt(t[4]),
                      Long.parseLong(t[5])));
          case "XFER" -> out.println(transfer(engine, peer[0], regions, t));
          case "XFERALL" -> out.println(transferAll(engine, peer[0], regions, t));
          case "READS" -> {
            RegisteredMemory m = region(regions, t[1]);
            int n = Integer.parseInt(t[4]);
            List<long[]> ranges = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
              String[] s = in.readLine().trim().split("\\s+");
              ranges.add(
                  new long[] {Long.parseLong(s[0]), Long.parseLong(s[1]), Long.parseLong(s[2])});
            }
            long bad =
                ReadRanges.check(m.segment(), Long.parseLong(t[2]), Long.parseLong(t[3]), ranges);
            out.println(bad < 0 ? "OK" : "MISMATCH " + bad);
          }
          case "PAYLOAD" -> {
            SoftFaults table = provider.get();
            if (table == null) {
              throw new IllegalStateException("no RDMA rails were opened: no provider to ask");
            }
            out.println("OK " + table.payloadBytes(t[1]));
          }
          case "NOTIFY", "XFERN", "XFERNT", "NOTIFICATIONS" ->
              out.println(NotifyCommands.run(engine, peer[0], regions, t));
          case "RULES" -> out.println("OK " + lastRules);
          case "LOOP" -> {
            RegisteredMemory local = region(regions, t[1]);
            io.orbite.engine.RemoteSegment target = peer[0];
            long remoteRegion = Long.parseLong(t[2]);
            long length = Long.parseLong(t[3]);
            Thread.ofPlatform()
                .daemon()
                .name("read-loop")
                .start(
                    () -> {
                      while (true) {
                        readOnce(engine, target, local, remoteRegion, length, 8);
                      }
                    });
            out.println("OK");
          }
          case "URLS" -> {
            // The observability endpoints this engine serves: "OK" then name=url pairs (none when
            // off).
            StringBuilder b = new StringBuilder("OK");
            engine
                .observabilityUrls()
                .forEach((name, url) -> b.append(' ').append(name).append('=').append(url));
            out.println(b);
          }
          case "COUNTERS" -> out.println("OK " + counters(engine.counters()));
          case "CHARGE" -> {
            long sum = 0;
            for (var o : engine.ownerView().owners()) {
              if (o.kind().equals(t[1])) {
                sum += o.charges().getOrDefault(t[2], 0L);
              }
            }
            out.println("OK " + sum);
          }
          case "ALLOCATED" ->
              out.println("OK " + (t.length > 1 ? allocatedBytes(t[1]) : allocatedBytes()));
          case "QUIT" -> {
            engine.close(Duration.ofSeconds(30));
            out.println("OK");
            return;
          }
          default -> out.println("ERR unknown command " + t[0]);
        }
      } catch (RuntimeException e) {
        out.println("ERR " + e.getMessage().replace('\n', ' '));
        if (e instanceof TransferException te && te.kind() == ErrorKind.TIMEOUT) {
          // For the log a failing test keeps: which owner was still at work when the call gave up.
          System.err.println("TIMEOUT of '" + line + "'; the owners now:");
          engine.ownerView().owners().forEach(o -> System.err.println("  " + o));
          System.err.println("  peers: " + engine.ownerView().peers());
        }
      }
    }
    engine.close(Duration.ofSeconds(30));
  }

  /** {@code n} READs of {@code length} bytes into {@code local}; returns the batch's status. */
  private static io.orbite.engine.BatchStatus readOnce(
      TransferEngine engine,
      io.orbite.engine.RemoteSegment peer,
      RegisteredMemory local,
      long remoteRegion,
      long length,
      int n) {
    List<io.orbite.engine.TransferRequest> reads = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      reads.add(
          io.orbite.engine.TransferRequest.read(
              local, i * length, peer, remoteRegion, i * length, length));
    }
    io.orbite.engine.Batch batch = engine.allocateBatch(n);
    try {
      batch.submit(reads);
      return batch.await(Duration.ofSeconds(60));
    } finally {
      batch.free();
    }
  }

  private static String readChecked(
      TransferEngine engine,
      io.orbite.engine.RemoteSegment peer,
      RegisteredMemory local,
      long remoteRegion,
      long length,
      int n,
      long seed) {
    io.orbite.engine.BatchStatus status = readOnce(engine, peer, local, remoteRegion, length, n);
    if (!status.allCompleted()) {
      return "ERR not every READ completed: "
          + status.tasks().stream().filter(r -> !r.completed()).findFirst().orElseThrow();
    }
    long bad = Pattern.verify(local.segment(), 0, n * length, seed, 0);
    return bad < 0 ? "OK " + status.completedBytes() : "MISMATCH " + bad;
  }

  /** The XFERALL command: see the class comment. */
  private static String transferAll(
      TransferEngine engine,
      io.orbite.engine.RemoteSegment peer,
      Map<Long, RegisteredMemory> regions,
      String[] t) {
    io.orbite.engine.BatchStatus status = submitAndAwait(engine, peer, regions, t);
    StringBuilder b = new StringBuilder("OK");
    for (io.orbite.engine.TaskResult r : status.tasks()) {
      b.append(' ')
          .append(r.state())
          .append('/')
          .append(r.errorKind() == null ? "-" : r.errorKind())
          .append('/')
          .append(r.bytes())
          .append('/')
          .append(r.transport() == null ? "-" : r.transport())
          .append('/')
          .append(r.route())
          .append('/')
          .append(r.remoteEffect())
          .append('/')
          .append(r.locallyDrained())
          .append('/')
          .append(r.attempts());
    }
    return b.toString();
  }

  /** The XFER command: see the class comment. */
  private static String transfer(
      TransferEngine engine,
      io.orbite.engine.RemoteSegment peer,
      Map<Long, RegisteredMemory> regions,
      String[] t) {
    io.orbite.engine.Op op = io.orbite.engine.Op.valueOf(t[1]);
    int n = Integer.parseInt(t[4]);
    long length = Long.parseLong(t[5]);
    io.orbite.engine.BatchStatus status = submitAndAwait(engine, peer, regions, t);
    lastRules =
        String.join(" ", status.tasks().stream().map(r -> Integer.toString(r.rule())).toList());
    io.orbite.engine.RemoteEffect effect =
        op == io.orbite.engine.Op.READ
            ? io.orbite.engine.RemoteEffect.NONE
            : io.orbite.engine.RemoteEffect.APPLIED;
    for (io.orbite.engine.TaskResult r : status.tasks()) {
      if (!r.completed() || r.bytes() != length || r.remoteEffect() != effect) {
        return "ERR " + r;
      }
    }
    return status.tasks().size() == n ? "OK " + status.completedBytes() : "ERR " + status;
  }

  /** The batch of an XFER or XFERALL command ({@code t} its words), submitted and awaited. */
  private static io.orbite.engine.BatchStatus submitAndAwait(
      TransferEngine engine,
      io.orbite.engine.RemoteSegment peer,
      Map<Long, RegisteredMemory> regions,
      String[] t) {
    io.orbite.engine.Op op = io.orbite.engine.Op.valueOf(t[1]);
    io.orbite.engine.Transport transport = io.orbite.engine.Transport.valueOf(t[2]);
    RegisteredMemory local = region(regions, t[3]);
    int n = Integer.parseInt(t[4]);
    long length = Long.parseLong(t[5]);
    long stride = Long.parseLong(t[6]);
    long localBase = Long.parseLong(t[7]);
    long remote = Long.parseLong(t[8]);
    long remoteBase = Long.parseLong(t[9]);
    List<io.orbite.engine.TransferRequest> requests = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      long l = localBase + i * stride;
      long r = remoteBase + i * stride;
      io.orbite.engine.TransferRequest request =
          op == io.orbite.engine.Op.READ
              ? io.orbite.engine.TransferRequest.read(local, l, peer, remote, r, length)
              : io.orbite.engine.TransferRequest.write(local, l, peer, remote, r, length);
      requests.add(request.withTransport(transport));
    }
    io.orbite.engine.Batch batch = engine.allocateBatch(n);
    try {
      batch.submit(requests);
      return batch.await(Duration.ofSeconds(120));
    } finally {
      batch.free();
    }
  }

  /** The ONEOF check: see the class comment. */
  private static String oneOf(
      java.lang.foreign.MemorySegment m, long guard, long data, long offset, long length) {
    long bad = Pattern.verify(m, 0, offset, guard, 0);
    if (bad < 0) {
      bad =
          Pattern.verify(
              m, offset + length, m.byteSize() - offset - length, guard, offset + length);
    }
    if (bad >= 0) {
      return "MISMATCH " + bad;
    }
    long changed = 0;
    for (long p = offset; p < offset + length; p++) {
      byte b = m.get(java.lang.foreign.ValueLayout.JAVA_BYTE, p);
      if (b != Pattern.at(guard, p)) {
        if (b != Pattern.at(data, p)) {
          return "MISMATCH " + p;
        }
        changed++;
      }
    }
    return "OK " + changed;
  }

  private static RegisteredMemory region(Map<Long, RegisteredMemory> regions, String id) {
    RegisteredMemory m = regions.get(Long.parseLong(id));
    if (m == null) {
      throw new IllegalArgumentException("no region " + id);
    }
    return m;
  }

  static String counters(EngineCounters c) {
    return "connectionsOpened="
        + c.connectionsOpened()
        + " lanesLost="
        + c.lanesLost()
        + " lanesRestored="
        + c.lanesRestored()
        + " keepaliveMisses="
        + c.keepaliveMisses()
        + " peersFenced="
        + c.peersFenced()
        + " transportFailovers="
        + c.transportFailovers()
        + " connectionsAccepted="
        + c.connectionsAccepted()
        + " framesRejected="
        + c.framesRejected()
        + " sourceBytesRead="
        + c.sourceBytesRead()
        + " sourceBytesWritten="
        + c.sourceBytesWritten()
        + " sourceRefusals="
        + c.sourceRefusals()
        + " bytesCompleted="
        + c.bytesCompleted()
        + " tasksCompleted="
        + c.tasksCompleted()
        + " tasksFailed="
        + c.tasksFailed()
        + " tcpTasksDispatched="
        + c.tasksDispatched(io.orbite.engine.Transport.TCP)
        + " shmTasksDispatched="
        + c.tasksDispatched(io.orbite.engine.Transport.SHM)
        + " rdmaTasksDispatched="
        + c.tasksDispatched(io.orbite.engine.Transport.RDMA)
        + " rdmaSoft0Bytes="
        + c.laneBytes().getOrDefault("rdma/soft0", 0L)
        + " rdmaSoft1Bytes="
        + c.laneBytes().getOrDefault("rdma/soft1", 0L)
        + " shmBytesRead="
        + c.shmBytesRead()
        + " shmBytesWritten="
        + c.shmBytesWritten()
        + " shmOpensRefused="
        + c.shmOpensRefused()
        + " shmMappingsOpened="
        + c.shmMappingsOpened()
        + " notificationsSent="
        + c.notificationsSent()
        + " notificationsReceived="
        + c.notificationsReceived()
        + " notificationsRefused="
        + c.notificationsRefused()
        + " peersRefused="
        + c.peersRefused()
        + " connectionsRefused="
        + c.connectionsRefused()
        + " connectionsAccepted="
        + c.connectionsAccepted();
  }

  /** Heap bytes allocated by every thread of this JVM so far (HotSpot's allocation counters). */
  public static long allocatedBytes() {
    return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
        .getTotalThreadAllocatedBytes();
  }

  /** Heap bytes allocated so far by the live threads whose name starts with {@code prefix}. */
  public static long allocatedBytes(String prefix) {
    var mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long sum = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith(prefix)) {
        long bytes = mx.getThreadAllocatedBytes(t.threadId());
        sum += Math.max(0, bytes);
      }
    }
    return sum;
  }
}
