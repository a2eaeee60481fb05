package io.orbite.qualification.example;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.bench.Jit;
import io.orbite.qualification.verify.Pattern;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * The prefill process of the KV-cache handoff example: an engine that "produces" the KV blocks of a
 * set of requests in one registered pool region (remote READ only) and publishes where each block
 * is, then serves the decode side's reads until told to quit. Started by {@link PrefillProcess}.
 *
 * <p>Arguments: {@code --requests N --blocks B --page-bytes P --pool-bytes Q --seed S --layered LR
 * L LP LS [--corrupt-one-block]} (see {@link KvPlan} and, for the layered region of the
 * layer-by-layer phase, {@link KvLayers}). Logs go to stderr; stdout carries only this protocol:
 *
 * <pre>
 * READY &lt;endpoint&gt; &lt;epoch-hex&gt;
 * REGION &lt;regionId&gt; &lt;bytes&gt;
 * LAYERED &lt;regionId&gt; &lt;bytes&gt;                                     the layered region, filled
 * BLOCK &lt;request&gt; &lt;block&gt; &lt;regionId&gt; &lt;offset&gt; &lt;length&gt; &lt;seed&gt;    one line per block
 * PUBLISHED &lt;blocks&gt; &lt;bytes&gt;                                    every block is in place
 * </pre>
 *
 * Then answers to the commands read from stdin:
 *
 * <pre>
 * COUNTERS  -> OK key=value ...
 * JIT       -> OK &lt;ms&gt;: this JVM's JIT compile time so far (the decode's warm-up rule)
 * PUSH &lt;endpoint&gt; &lt;epoch-hex&gt; &lt;regionId&gt; &lt;pass&gt; &lt;window&gt; &lt;timeout-s&gt;
 *           -> PUSHED ... (one line per request, see {@link PrefillPush}), then OK ...
 * QUIT      -> OK, then the engine closes and the process exits (end of input does the same)
 * </pre>
 *
 * <p>{@code --corrupt-one-block} is a test hook: after the BLOCK lines are out and before
 * PUBLISHED, one byte of {@link KvPlan#corruption()} is inverted, as a faulty producer would, and
 * one byte of {@link KvLayers#corruption()} in the layered region. The decode side is not told; it
 * must find the block (in the pull and in the push) and the layer by verifying.
 */
public final class PrefillMain {
  private PrefillMain() {}

  public static void main(String[] args) throws Exception {
    org.slf4j.LoggerFactory.getLogger(PrefillMain.class);
    PrintStream out =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err); // stdout is the protocol; anything else printed goes to the log
    int requests = 0;
    int blocks = 0;
    long page = 0;
    long pool = 0;
    long seed = 0;
    boolean corrupt = false;
    int[] layered = new int[3];
    long layerPage = 0;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--requests" -> requests = Integer.parseInt(args[++i]);
        case "--blocks" -> blocks = Integer.parseInt(args[++i]);
        case "--page-bytes" -> page = Long.parseLong(args[++i]);
        case "--pool-bytes" -> pool = Long.parseLong(args[++i]);
        case "--seed" -> seed = Long.parseLong(args[++i]);
        case "--corrupt-one-block" -> corrupt = true;
        case "--layered" -> {
          for (int k = 0; k < 3; k++) {
            layered[k] = Integer.parseInt(args[++i]);
          }
          layerPage = Long.parseLong(args[++i]);
        }
        default -> throw new IllegalArgumentException("prefill: unknown argument " + args[i]);
      }
    }
    KvPlan plan = new KvPlan(requests, blocks, page, pool, seed);
    KvLayers layers = new KvLayers(layered[0], layered[1], layered[2], layerPage, seed);

    TransferEngine engine = TransferEngine.start(EngineConfig.fromEnv().withName("prefill"));
    int code = 0;
    try {
      out.println(
          "READY "
              + engine.localSegment().endpoint()
              + " "
              + Long.toHexString(engine.localSegment().epoch()));
      RegisteredMemory kv = engine.allocate(plan.regionBytes(), Access.READ);
      out.println("REGION " + kv.regionId() + " " + kv.lengthBytes());
      RegisteredMemory layeredRegion = layered(engine, layers);
      if (corrupt) {
        KvLayers.Corruption c = layers.corruption();
        long at = layers.sourceOffset(c.request(), c.layer()) + c.byteInLayer();
        byte was = layeredRegion.segment().get(ValueLayout.JAVA_BYTE, at);
        layeredRegion.segment().set(ValueLayout.JAVA_BYTE, at, (byte) ~was);
        System.err.printf(
            "prefill: test hook: inverted byte %d of %s (layered offset %d)%n",
            c.byteInLayer(), c.name(), at);
      }
      out.println("LAYERED " + layeredRegion.regionId() + " " + layeredRegion.lengthBytes());
      List<KvBlock> placed = plan.blocks(kv.regionId());
      long bytes = 0;
      for (KvBlock b : placed) {
        // "Prefill": compute the block's KV content into its page of the pool, then publish it.
        Pattern.fill(kv.segment(), b.offset(), b.length(), b.seed(), 0);
        out.println(b.toLine());
        bytes += b.length();
      }
      if (corrupt) {
        KvPlan.Corruption c = plan.corruption();
        KvBlock victim =
            placed.stream()
                .filter(b -> b.request() == c.request() && b.block() == c.block())
                .findFirst()
                .orElseThrow();
        long at = victim.offset() + c.byteInBlock();
        byte was = kv.segment().get(ValueLayout.JAVA_BYTE, at);
        kv.segment().set(ValueLayout.JAVA_BYTE, at, (byte) ~was);
        System.err.printf(
            "prefill: test hook: inverted byte %d of %s (pool offset %d)%n",
            c.byteInBlock(), c.name(), at);
      }
      out.println("PUBLISHED " + placed.size() + " " + bytes);
      serve(engine, out, new PrefillPush(engine, kv, placed, plan.seed()));
    } catch (RuntimeException e) {
      System.err.println("prefill: " + e);
      e.printStackTrace(System.err);
      out.println("ERR " + String.valueOf(e.getMessage()).replace('\n', ' '));
      code = 1;
    } finally {
      engine.close(Duration.ofSeconds(30));
    }
    System.exit(code);
  }

  /** Answers commands until QUIT or the end of input (the decode side went away). */
  private static void serve(TransferEngine engine, PrintStream out, PrefillPush push)
      throws java.io.IOException {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String command = line.trim();
      String[] words = command.split("\\s+");
      try {
        switch (words[0]) {
          case "COUNTERS" -> out.println("OK " + counters(engine.counters()));
          case "PUSH" -> push.push(words, out);
          case "JIT" -> out.println("OK " + Jit.millis());
          case "QUIT" -> {
            out.println("OK");
            return;
          }
          case "" -> {}
          default -> out.println("ERR unknown command " + command);
        }
      } catch (RuntimeException e) {
        // A bad command is answered; the process keeps serving what it published.
        System.err.println("prefill: " + command + ": " + e);
        e.printStackTrace(System.err);
        out.println("ERR " + String.valueOf(e.getMessage()).replace('\n', ' '));
      }
    }
  }

  /**
   * The layered region of the layer-by-layer phase (remote READ only), filled request by request as
   * {@link KvLayers} says.
   */
  private static RegisteredMemory layered(TransferEngine engine, KvLayers plan) {
    RegisteredMemory region = engine.allocate(plan.sourceBytes(), Access.READ);
    for (int r = 0; r < plan.requests(); r++) {
      Pattern.fill(
          region.segment(), plan.sourceOffset(r, 0), plan.requestBytes(), plan.contentSeed(r), 0);
    }
    return region;
  }

  static String counters(EngineCounters c) {
    return "sourceBytesRead="
        + c.sourceBytesRead()
        + " sourceRefusals="
        + c.sourceRefusals()
        + " connectionsAccepted="
        + c.connectionsAccepted()
        + " framesRejected="
        + c.framesRejected();
  }
}
