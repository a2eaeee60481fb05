package io.orbite.qualification.cli;

import io.orbite.qualification.bench.ShmBench;
import io.orbite.qualification.bench.TcpBench;
import io.orbite.qualification.demo.Demo;
import io.orbite.qualification.example.KvHandoff;
import java.util.List;

/**
 * The {@code ./orbite} command line: {@code demo}, {@code bench tcp|shm|file [--json]} and {@code example kv-handoff}.
 */
public final class OrbiteCli {
  private OrbiteCli() {}

  public static void main(String[] args) throws Exception {
    // Initialise logging on this thread before any actor system starts, so SLF4J does not have to
    // replay (and warn about) calls made by several threads during its initialisation.
    org.slf4j.LoggerFactory.getLogger(OrbiteCli.class);
    List<String> rest = args.length > 1 ? List.of(args).subList(1, args.length) : List.of();
    int code = switch (args.length == 0 ? "help" : args[0]) {
      case "demo" -> new Demo().run(rest);
      case "bench" -> bench(rest);
      case "example" -> example(rest);
      default -> usage(args.length == 0 || args[0].equals("help") || args[0].startsWith("-") ? 0 : 2);
    };
    System.exit(code);
  }

  private static int bench(List<String> args) throws Exception {
    if (!args.isEmpty() && args.get(0).equals("file")) {
      return new io.orbite.qualification.bench.FileBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("latency")) {
      return new io.orbite.qualification.bench.LatencyBench().run(args.subList(1, args.size()));
    }
    if (!args.isEmpty() && args.get(0).equals("idle")) {
      return new io.orbite.qualification.bench.IdleBench().run(args.subList(1, args.size()));
    }
    if (args.isEmpty() || !(args.get(0).equals("tcp") || args.get(0).equals("shm"))) {
      System.err.println("bench: name a bench: tcp, shm, file, latency, idle");
      return 2;
    }
    if (args.get(0).equals("shm")) {
      return new ShmBench().run(args.subList(1, args.size()));
    }
    return new TcpBench().run(args.subList(1, args.size()));
  }

  private static int example(List<String> args) {
    if (args.isEmpty() || !args.get(0).equals("kv-handoff")) {
      System.err.println("example: name an example: kv-handoff");
      return 2;
    }
    return new KvHandoff().run(args.subList(1, args.size()));
  }

  private static int usage(int code) {
    System.err.println("""
        usage: ./orbite <command>
          demo               two engine processes on loopback: READ and WRITE of mixed sizes, every byte verified
          bench tcp [--json] TCP READ/WRITE throughput and 4 KiB task rate, beside the iperf3 loopback ceiling
          bench shm [--json] same-host SHM READ/WRITE throughput, beside one thread's memcpy in the same run
          bench latency [--json] [--quick]
                             1-task READ/WRITE round trips (4 KiB, 64 KiB; TCP and SHM; reused and fresh
                             batch), p50/p99/p99.9, beside sockperf and ucx_perftest in the same run
          bench idle [--json] [--seconds S]
                             CPU of an idle requester and source engine (lanes up), % of one core
          bench file [--json] [--dir D] [--quick]
                             file segments over io_uring on a 1 GiB file: 1 MiB sequential WRITE/READ and
                             4 KiB random READs at depth 32, beside fio --ioengine=io_uring in the same run
          example kv-handoff [options]
                             prefill and decode processes hand off KV-cache blocks through a transfer stream,
                             every byte verified (--help for its options)
          test               the whole test suite (mvn verify)
          build              build and write the class path""");
    return code;
  }
}
