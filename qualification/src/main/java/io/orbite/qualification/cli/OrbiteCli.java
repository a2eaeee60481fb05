package io.orbite.qualification.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.orbite.engine.BuildInfo;
import io.orbite.qualification.bench.RdmaBench;
import io.orbite.qualification.bench.ShmBench;
import io.orbite.qualification.bench.TcpBench;
import io.orbite.qualification.cluster.ClusterExample;
import io.orbite.qualification.demo.Demo;
import io.orbite.qualification.example.KvHandoff;
import java.util.List;

/**
 * The {@code ./orbite} command line: {@code demo}, {@code bench tcp|shm|rdma|file|heal [--json]}
 * and {@code example kv-handoff|cluster}.
 */
public final class OrbiteCli {
  private OrbiteCli() {}

  public static void main(String[] args) throws Exception {
    // Initialise logging on this thread before any actor system starts, so SLF4J does not have to
    // replay (and warn about) calls made by several threads during its initialisation.
    org.slf4j.LoggerFactory.getLogger(OrbiteCli.class);
    System.exit(run(args));
  }

  /**
   * Runs one command and returns its exit code ({@link ExitCodes}); a command that throws ends with
   * {@link ExitCodes#USAGE} for a configuration error, else {@link ExitCodes#FAILED}, and says why.
   */
  public static int run(String[] args) {
    List<String> rest = args.length > 1 ? List.of(args).subList(1, args.length) : List.of();
    try {
      return switch (args.length == 0 ? "help" : args[0]) {
        case "demo" -> new Demo().run(rest);
        case "bench" -> bench(rest);
        case "example" -> example(rest);
        case "version" -> version(rest);
        case "keygen" -> keygen(rest);
        case "tlsgen" -> tlsgen(rest);
        case "qualify" -> io.orbite.qualification.qualify.QualifyCommand.run(rest);
        default ->
            usage(
                args.length == 0 || args[0].equals("help") || args[0].startsWith("-")
                    ? ExitCodes.PASS
                    : ExitCodes.USAGE);
      };
    } catch (Throwable t) {
      var config = ExitCodes.configError(t);
      if (config != null) {
        System.err.println("orbite: configuration error: " + config.getMessage());
      } else {
        System.err.println("orbite: " + (args.length == 0 ? "" : args[0] + ": ") + "failed: " + t);
        t.printStackTrace();
      }
      return ExitCodes.forFailure(t);
    }
  }

  private static int bench(List<String> args) throws Exception {
    if (!args.isEmpty() && args.get(0).equals("file")) {
      return new io.orbite.qualification.bench.FileBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("latency")) {
      return new io.orbite.qualification.bench.LatencyBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("open")) {
      return new io.orbite.qualification.bench.OpenBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("idle")) {
      return new io.orbite.qualification.bench.IdleBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("heal")) {
      return new io.orbite.qualification.bench.HealBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("notify")) {
      return new io.orbite.qualification.bench.NotifyBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("layers")) {
      return new io.orbite.qualification.bench.LayersBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("rdma")) {
      return new RdmaBench().run(args.subList(1, args.size()));
    }
    if (args.isEmpty() || !(args.get(0).equals("tcp") || args.get(0).equals("shm"))) {
      System.err.println(
          "bench: name a bench: tcp, shm, rdma, file, latency, idle, heal, layers, notify, open");
      return ExitCodes.USAGE;
    }
    if (args.get(0).equals("shm")) {
      return new ShmBench().run(args.subList(1, args.size()));
    }
    return new TcpBench().run(args.subList(1, args.size()));
  }

  private static int example(List<String> args) {
    if (!args.isEmpty() && args.get(0).equals("cluster")) {
      return new ClusterExample().run(args.subList(1, args.size()));
    }
    if (args.isEmpty() || !args.get(0).equals("kv-handoff")) {
      System.err.println("example: name an example: kv-handoff, cluster");
      return ExitCodes.USAGE;
    }
    return new KvHandoff().run(args.subList(1, args.size()));
  }

  /** {@code version [--json]}: the build identity ({@link BuildInfo}). */
  /** {@code keygen NAME DIR}: an engine's Ed25519 pair for the {@code security} section. */
  static int keygen(List<String> args) throws java.io.IOException {
    if (args.size() != 2 || args.get(0).startsWith("-")) {
      System.err.println(
          "keygen: usage: ./orbite keygen NAME DIR (writes DIR/NAME.key and DIR/NAME.pem)");
      return ExitCodes.USAGE;
    }
    java.nio.file.Path key;
    try {
      key =
          io.orbite.engine.security.KeyFiles.writePair(
              args.get(0), java.nio.file.Path.of(args.get(1)));
    } catch (IllegalArgumentException | java.nio.file.FileAlreadyExistsException e) {
      System.err.println("keygen: " + e.getMessage());
      return ExitCodes.USAGE;
    }
    System.out.println(
        "wrote "
            + key
            + " (security.identityKeyFile of engine "
            + args.get(0)
            + ") and "
            + key.resolveSibling(args.get(0) + ".pem")
            + " (copy it into each peer's security.peerKeysDir)");
    return ExitCodes.PASS;
  }

  /**
   * {@code tlsgen DIR NAME...}: a private authority in DIR (made once) and a key store per engine,
   * for the {@code security.tls*} keys ({@link io.orbite.engine.security.TlsFiles}).
   */
  static int tlsgen(List<String> args) throws java.io.IOException {
    if (args.size() < 2 || args.stream().anyMatch(a -> a.startsWith("-"))) {
      System.err.println(
          "tlsgen: usage: ./orbite tlsgen DIR NAME... (writes DIR/ca.p12, DIR/trust.p12,"
              + " DIR/password and DIR/NAME.p12 per engine)");
      return ExitCodes.USAGE;
    }
    java.nio.file.Path dir = java.nio.file.Path.of(args.get(0));
    var files = io.orbite.engine.security.TlsFiles.authority(dir, 3650);
    for (String name : args.subList(1, args.size())) {
      java.nio.file.Path store;
      try {
        store = files.issue(name, 0, 365);
      } catch (IllegalArgumentException | java.nio.file.FileAlreadyExistsException e) {
        System.err.println("tlsgen: " + e.getMessage());
        return ExitCodes.USAGE;
      }
      System.out.println("wrote " + store + " (security.tlsKeyStore of engine " + name + ")");
    }
    System.out.println(
        "every engine: security.tlsTrustStore "
            + files.trustStore()
            + ", security.tlsPasswordFile "
            + files.passwordFile()
            + "; keep "
            + dir.resolve("ca.p12")
            + " off the engines' hosts");
    return ExitCodes.PASS;
  }

  static int version(List<String> args) {
    boolean json = false;
    for (String a : args) {
      if (a.equals("--json")) {
        json = true;
      } else {
        System.err.println("version: unknown option " + a + " (usage: ./orbite version [--json])");
        return ExitCodes.USAGE;
      }
    }
    BuildInfo b = BuildInfo.current();
    if (json) {
      try {
        System.out.println(
            new ObjectMapper()
                .enable(SerializationFeature.INDENT_OUTPUT)
                .writeValueAsString(b.asMap()));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException(e);
      }
    } else {
      System.out.printf(
          "OrbiTE %s%n  commit       %s%s%n  commit time  %s%n  built        %s with JDK %s%n"
              + "  running on   JDK %s%n",
          b.version(),
          b.commit(),
          b.dirty() ? " (working tree had changes)" : "",
          b.commitTime(),
          b.buildTime(),
          b.buildJdk(),
          b.runtimeJdk());
    }
    return ExitCodes.PASS;
  }

  private static int usage(int code) {
    System.err.println(
        """
        usage: ./orbite <command>
          demo               two engine processes on loopback: READ and WRITE of mixed sizes, every byte verified
          bench tcp [--json] [--tls]
                             TCP READ/WRITE throughput and 4 KiB task rate, beside the iperf3 loopback ceiling;
                             --tls adds READ/WRITE at 4 MiB and 64 MiB over mutual TLS in the same run
          bench shm [--json] same-host SHM READ/WRITE throughput, beside one thread's memcpy in the same run
          bench rdma [--json] [--quick]
                             RDMA on the software provider (2 rails): READ/WRITE throughput, 64 KiB slice
                             rate, and the null-wire slice rate (the engine's own cost), beside TCP READ
                             through the same engines; software provider: not a hardware figure
          bench latency [--json] [--quick]
                             1-task READ/WRITE round trips (4 KiB, 64 KiB; TCP and SHM; reused and fresh
                             batch), p50/p99/p99.9, beside sockperf and ucx_perftest in the same run
          bench idle [--json] [--seconds S] [--rdma-events]
                             CPU of an idle requester and source engine (lanes up), % of one core;
                             --rdma-events: RDMA lanes too, with rdma.completionEvents on
          bench heal [--json] [--trials N]
                             how fast a peer heals over TCP: a lane cut, both lanes cut, a SIGSTOPped and a
                             restarted source (median of N trials, default 5), beside the goals; every byte
                             of every READ verified
          bench open [--json] [--rounds N]
                             what the authentication handshake adds to openSegment: a fresh requester per
                             open, to a source without and one with a shared secret; p50/p99 and ratio
          bench file [--json] [--dir D] [--quick]
                             file segments over io_uring on a 1 GiB file: 1 MiB sequential WRITE/READ and
                             4 KiB random READs at depth 32, beside fio --ioengine=io_uring in the same run
          example kv-handoff [options]
                             prefill and decode processes hand off KV-cache blocks: pulled through a transfer
                             stream, pushed with a notification per request (checked on arrival), and pulled
                             layer by layer; every byte verified (--help for its options)
          keygen NAME DIR    an Ed25519 pair for engine NAME: DIR/NAME.key and DIR/NAME.pem
          tlsgen DIR NAME... a private TLS authority in DIR and a PKCS#12 key store per engine NAME
          example cluster [--join seeds|bootstrap]
                             prefill and two decode engines as processes forming one Pekko Cluster on
                             loopback: the decode engines open the prefill by name and READ its pool
                             (GB/s), the prefill is SIGKILLed and restarted, and each decode engine
                             sees the change, has its old segment refused and verifies the new one
          qualify --profile P --output DIR [--launcher local|netns|ssh]
                             runs a qualification profile (qualification/profiles/): each case's peers
                             as processes (local, in network namespaces, or on ssh hosts), their JSONL
                             receipts and the supervisor's ledger in DIR, judged by the independent
                             verifier (DIR/verdict.json); exit 0 only on a verified pass
          qualify --verify DIR
                             verifies a run's directory again, from its files alone
          version [--json]   the build identity: version, git commit, build time, JDK
          test               the whole test suite (mvn verify)
          build              build and write the class path

        exit codes: 0 pass; 1 a verification failed (a wrong byte, a failed task); 2 usage or
        configuration error; 3 the environment lacks what the command needs (a JDK >= 22, Maven,
        a bench's ceiling tool, io_uring, shared memory): the command says which""");
    return code;
  }
}
