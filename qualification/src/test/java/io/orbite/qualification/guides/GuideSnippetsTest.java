package io.orbite.qualification.guides;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.streams.TransferResult;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code ```java} block of docs/guides/streams.md, docs/guides/embedding.md,
 * docs/guides/kv-connector.md and docs/guides/cluster.md compiles (the convention is in {@link
 * GuideSnippets} and at the top of each guide), and the guides' example classes do what the guides
 * say when run against real engines.
 *
 * <p>Longer than 500 lines: one class runs every guide's snippets and their behaviour checks, so
 * that a guide's compile harness and its engines are set up once; each guide's part is a group of
 * its own methods.
 */
class GuideSnippetsTest {
  private static final long KIB = 1024;
  private static final long SEED_SRC = 0x6D1D_0001L;
  private static final long SEED_LOCAL = 0x6D1D_0002L;

  private static final Duration STREAM_DEADLINE = Duration.ofSeconds(15);
  private static final String STAGE_HANG =
      "The stream never completed: the transfer stage (engine-actors "
          + "streams/TransferStage.java) did not finish after its last result, so neither its materialized drain stage nor "
          + "Sink.seq/writeSink completed. (One known cause: onPull() pushing the last results without calling "
          + "maybeFinish() afterwards.)";

  /** {@code ```java} blocks in docs/guides/kv-connector.md. */
  private static final int KV_GUIDE_SNIPPETS = 9;

  @TempDir Path out;

  @Test
  void everyJavaSnippetOfTheStreamsGuideCompiles() throws Exception {
    compileGuide("streams.md", 6);
  }

  @Test
  void everyJavaSnippetOfTheEmbeddingGuideCompiles() throws Exception {
    compileGuide("embedding.md", 6);
  }

  @Test
  void everyJavaSnippetOfTheClusterGuideCompiles() throws Exception {
    compileGuide("cluster.md", 4);
  }

  @Test
  void everyJavaSnippetOfTheKvConnectorGuideCompiles() throws Exception {
    compileGuide("kv-connector.md", KV_GUIDE_SNIPPETS);
  }

  /**
   * The KV connector guide's LayerPuller pulls 8 layers of 4 adjacent 16 KiB pages, one submission
   * per layer on one batch, into layers with odd guard gaps between them: every layer byte and
   * every guard byte is right, the source is untouched, and the requester's counters show each
   * layer's 4 pages travelled as one merged transfer.
   */
  @Test
  void theKvConnectorGuidesLayerPullerPullsEveryLayerMerged() throws Exception {
    Class<?> puller = compileGuide("kv-connector.md", KV_GUIDE_SNIPPETS).loadClass("LayerPuller");
    TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("guide-kv-src"));
    try {
      TransferEngine requester =
          TransferEngine.start(EngineConfig.defaults().withName("guide-kv-requester"));
      try {
        int layers = 8;
        int pages = 4;
        long page = 16 * KIB;
        long layer = pages * page;
        long gap = 4099;
        RegisteredMemory src = guarded(source, layers * layer, SEED_SRC);
        RegisteredMemory local = guarded(requester, layers * (layer + gap) + gap, SEED_LOCAL);
        RemoteSegment remote =
            requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
        List<List<TransferRequest>> plan = new ArrayList<>();
        List<Span> spans = new ArrayList<>();
        for (int k = 0; k < layers; k++) {
          long to = gap + k * (layer + gap);
          List<TransferRequest> reads = new ArrayList<>();
          for (int p = 0; p < pages; p++) {
            reads.add(
                TransferRequest.read(
                    local, to + p * page, remote, src.regionId(), k * layer + p * page, page));
          }
          plan.add(reads);
          spans.add(new Span(to, layer, SEED_SRC, k * layer));
        }
        io.orbite.engine.Batch batch = requester.allocateBatch(layers * pages);
        io.orbite.engine.EngineCounters before = requester.counters();
        long bytes = (long) invoke(puller, "pullLayers", batch, plan, Duration.ofSeconds(10));
        io.orbite.engine.EngineCounters after = requester.counters();
        batch.free();
        assertEquals(layers * layer, bytes, "every layer's bytes counted once");
        assertRegion(local.segment(), spans, SEED_LOCAL, "requester region after pullLayers");
        assertRegion(src.segment(), List.of(), SEED_SRC, "source region after pullLayers");
        assertEquals(
            layers * pages,
            after.tasksMerged() - before.tasksMerged(),
            "every page travelled merged");
        assertEquals(layers, after.mergedTransfers() - before.mergedTransfers(), "one per layer");
        assertEquals(
            layers,
            after.tasksDispatched(io.orbite.engine.Transport.TCP)
                - before.tasksDispatched(io.orbite.engine.Transport.TCP),
            "one physical transfer per layer");
      } finally {
        requester.close(Duration.ofSeconds(20));
      }
    } finally {
      source.close(Duration.ofSeconds(20));
    }
  }

  /**
   * The KV connector guide's KvPush writes 4 blocks of 64 KiB + 3 with a notification into a
   * receiver whose KvArrivals handler checks its whole region the moment the notification arrives:
   * five rounds, each with bytes of its own (a notification ahead of its WRITEs would find the
   * previous round's), every block and guard right on arrival, each notification DELIVERED and
   * received once with its tag and payload.
   */
  @Test
  void theKvConnectorGuidesPushIsReadWhenItsNotificationArrives() throws Exception {
    ClassLoader guide = compileGuide("kv-connector.md", KV_GUIDE_SNIPPETS);
    Class<?> push = guide.loadClass("KvPush");
    Class<?> arrivals = guide.loadClass("KvArrivals");
    TransferEngine receiver =
        TransferEngine.start(EngineConfig.defaults().withName("guide-kv-receiver"));
    try {
      TransferEngine sender =
          TransferEngine.start(EngineConfig.defaults().withName("guide-kv-sender"));
      try {
        int blocks = 4;
        long block = 64 * KIB + 3;
        long gap = 1001;
        RegisteredMemory landing = guarded(receiver, blocks * (block + gap) + gap, SEED_SRC);
        RegisteredMemory local = sender.allocate(blocks * block, Access.READ_WRITE);
        RemoteSegment remote =
            sender.openSegment(receiver.localSegment().endpoint(), Duration.ofSeconds(10));
        java.util.concurrent.BlockingQueue<String> seen =
            new java.util.concurrent.LinkedBlockingQueue<>();
        long[] roundSeed = new long[1];
        java.util.function.Consumer<io.orbite.engine.ReceivedNotification> check =
            n -> {
              List<Span> spans = new ArrayList<>();
              for (int i = 0; i < blocks; i++) {
                spans.add(new Span(gap + i * (block + gap), block, roundSeed[0], i * block));
              }
              long bad = RegionCheck.check(landing.segment(), spans, SEED_SRC);
              int count = java.nio.ByteBuffer.wrap(n.bytes()).getInt();
              seen.add(n.tag() + " blocks=" + count + " bad=" + bad);
            };
        @SuppressWarnings("unchecked")
        Pair<UniqueKillSwitch, CompletionStage<?>> running =
            (Pair<UniqueKillSwitch, CompletionStage<?>>)
                invoke(arrivals, "start", receiver, receiver.system(), check);
        io.orbite.engine.Batch batch = sender.allocateBatch(blocks);
        for (int round = 0; round < 5; round++) {
          roundSeed[0] = SEED_LOCAL + round;
          Pattern.fill(local.segment(), 0, blocks * block, roundSeed[0], 0);
          List<TransferRequest> writes = new ArrayList<>();
          for (int i = 0; i < blocks; i++) {
            writes.add(
                TransferRequest.write(
                    local, i * block, remote, landing.regionId(), gap + i * (block + gap), block));
          }
          Object told =
              invoke(
                  push, "pushRequest", batch, writes, "request-" + round, Duration.ofSeconds(10));
          assertEquals(io.orbite.engine.NotificationResult.DELIVERED, told, "round " + round);
          assertEquals(
              "request-" + round + " blocks=4 bad=-1",
              seen.poll(10, TimeUnit.SECONDS),
              "round " + round + ": the receiver read every block and guard on arrival");
          batch.reset();
        }
        batch.free();
        running.first().shutdown();
        running.second().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertEquals(List.of(), List.copyOf(seen), "each notification arrived once");
        assertEquals(List.of(), receiver.pollNotifications(16), "nothing left in the inbox");
      } finally {
        sender.close(Duration.ofSeconds(20));
      }
    } finally {
      receiver.close(Duration.ofSeconds(20));
    }
  }

  /**
   * The checker itself: a snippet that does not compile fails with a diagnostic naming its guide
   * line.
   */
  @Test
  void aSnippetThatDoesNotCompileIsReportedWithItsGuideLine() throws Exception {
    Path guide = out.resolve("broken.md");
    Files.writeString(
        guide,
        "# t\n\ntext\n\n```java\nint ok = 1;\nString s = ok;\n```\n\n```text\nnot java\n```\n");
    List<GuideSnippets.Snippet> snippets = GuideSnippets.extract(guide);
    assertEquals(1, snippets.size(), "only ```java blocks are extracted");
    String errors =
        GuideSnippets.compile(snippets, Files.createDirectories(out.resolve("broken-classes")));
    assertTrue(errors.contains("broken.md line 7"), errors);
  }

  @Test
  void theStreamsGuidesBlockReaderAndBlockWriterMoveExactlyTheirBlocks() throws Exception {
    ClassLoader guide = compileGuide("streams.md", 6);
    Class<?> reader = guide.loadClass("BlockReader");
    Class<?> writer = guide.loadClass("BlockWriter");
    TransferEngine source =
        TransferEngine.start(EngineConfig.defaults().withName("guide-stream-source"));
    try {
      TransferEngine requester =
          TransferEngine.start(EngineConfig.defaults().withName("guide-stream-requester"));
      try {
        long srcLen = 1024 * KIB;
        long localLen = 1024 * KIB;
        RegisteredMemory src = guarded(source, srcLen, SEED_SRC);
        RegisteredMemory local = guarded(requester, localLen, SEED_LOCAL);
        RemoteSegment remote =
            requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));

        // 40 unaligned, scattered reads of 12 KiB + 3 B: results in request order, bytes exact.
        long len = 12 * KIB + 3;
        List<TransferRequest> reads = new ArrayList<>();
        List<Span> spans = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
          long localOff = 7 + i * (len + 101);
          long remoteOff = srcLen - (i + 1) * (len + 37);
          reads.add(TransferRequest.read(local, localOff, remote, src.regionId(), remoteOff, len));
          spans.add(new Span(localOff, len, SEED_SRC, remoteOff));
        }
        @SuppressWarnings("unchecked")
        List<TransferResult> results =
            (List<TransferResult>)
                invokeWithin(
                    STREAM_DEADLINE,
                    STAGE_HANG,
                    reader,
                    "readAll",
                    requester.system(),
                    requester,
                    reads);
        assertEquals(reads.size(), results.size(), "one result per read");
        for (int i = 0; i < reads.size(); i++) {
          assertSame(
              reads.get(i),
              results.get(i).request(),
              "IN_ORDER: result " + i + " is for request " + i);
        }
        assertEquals(List.of(), invoke(reader, "failures", results), "every read completed");
        assertRegion(local.segment(), spans, SEED_LOCAL, "requester region after readAll");
        assertRegion(src.segment(), List.of(), SEED_SRC, "source region after readAll");

        // writeBlocks: 24 blocks of 8 KiB from the (now partly overwritten) local region.
        long block = 8 * KIB;
        int blocks = 24;
        byte[] expected =
            local
                .segment()
                .asSlice(0, blocks * block)
                .toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        invokeWithin(
            STREAM_DEADLINE,
            STAGE_HANG,
            writer,
            "writeBlocks",
            requester.system(),
            requester,
            remote,
            src.regionId(),
            local,
            blocks,
            block);
        assertArrayEquals(
            expected,
            src.segment()
                .asSlice(0, blocks * block)
                .toArray(java.lang.foreign.ValueLayout.JAVA_BYTE),
            "source region's first 192 KiB after writeBlocks");
        assertEquals(
            -1,
            Pattern.verify(
                src.segment(), blocks * block, srcLen - blocks * block, SEED_SRC, blocks * block),
            "source bytes after the written blocks are untouched");
        assertRegion(local.segment(), spans, SEED_LOCAL, "requester region after writeBlocks");

        EngineOwed owed = requester.owed();
        assertTrue(
            owed.isIdle() && owed.batches() == 0, () -> "the streams freed every batch: " + owed);
      } finally {
        requester.close(Duration.ofSeconds(20));
      }
    } finally {
      source.close(Duration.ofSeconds(20));
    }
  }

  @Test
  void theEmbeddingGuidesFetcherFetchesExactBytesAndItsEngineClosesWithTheHost() throws Exception {
    ClassLoader guide = compileGuide("embedding.md", 6);
    Class<?> fetcher = guide.loadClass("EmbeddedFetcher");
    TransferEngine source =
        TransferEngine.start(EngineConfig.defaults().withName("guide-embed-source"));
    ActorSystem<Void> app = ActorSystem.create(Behaviors.empty(), "guide-app");
    try {
      long srcLen = 512 * KIB;
      RegisteredMemory src = guarded(source, srcLen, SEED_SRC);
      TransferEngine engine = (TransferEngine) invoke(fetcher, "startIn", app, "guide-fetcher");
      assertSame(app, engine.system(), "startIn spawns into the application's system");

      int length = (int) (100 * KIB + 5);
      long offset = 4093;
      byte[] bytes =
          (byte[])
              invoke(
                  fetcher,
                  "fetch",
                  engine,
                  source.localSegment().endpoint(),
                  src.regionId(),
                  offset,
                  length);
      assertEquals(length, bytes.length);
      assertEquals(
          -1,
          Pattern.verify(MemorySegment.ofArray(bytes), 0, length, SEED_SRC, offset),
          "fetched bytes are the source's");
      assertRegion(src.segment(), List.of(), SEED_SRC, "source region after fetch");
      EngineOwed owed = engine.owed();
      assertTrue(
          owed.isIdle() && owed.batches() == 0 && owed.registrations() == 0,
          () -> "fetch freed its batch and buffer: " + owed);

      // A peer region that does not exist: fetch throws a TransferException, and frees what it
      // took.
      Throwable refused =
          assertThrows(
                  InvocationTargetException.class,
                  () ->
                      invoke(
                          fetcher,
                          "fetch",
                          engine,
                          source.localSegment().endpoint(),
                          999_999L,
                          0L,
                          64))
              .getCause();
      assertTrue(
          refused instanceof io.orbite.engine.TransferException, () -> "fetch failure: " + refused);
      assertEquals(
          0, engine.owed().registrations(), "the buffer was unregistered after the failure");

      int port = engine.localSegment().port();
      CoordinatedShutdown.get(Adapter.toClassic(app))
          .runAll(CoordinatedShutdown.unknownReason())
          .toCompletableFuture()
          .get(30, TimeUnit.SECONDS);
      assertThrows(
          ConnectException.class,
          () -> {
            try (Socket s = new Socket()) {
              s.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
            }
          },
          "the fetcher's engine closed with its host");
      EngineOwed after = engine.owed();
      assertEquals(EngineOwed.Phase.CLOSED, after.phase(), after::toString);
      assertTrue(after.isClear(), after::toString);
      assertEquals(
          EngineOwed.Phase.RUNNING, source.owed().phase(), "the source engine is not affected");
    } finally {
      app.terminate();
      source.close(Duration.ofSeconds(20));
    }
  }

  /**
   * The embedding guide parses the configuration before it creates the actor system: run as its own
   * JVM with a bad {@code ORBITE_CONF}, its spawning snippet fails naming the key and the JVM exits
   * (created first, the system's threads would keep it running for ever).
   */
  @Test
  void theEmbeddingGuidesSpawnSnippetExitsOnABadConfiguration() throws Exception {
    compileGuide("embedding.md", 6);
    List<GuideSnippets.Snippet> snippets =
        GuideSnippets.extract(GuideSnippets.guidesDir().resolve("embedding.md"));
    GuideSnippets.Snippet spawning =
        snippets.stream()
            .filter(x -> !x.wholeUnit() && x.code().contains("EngineConfig.fromEnv()"))
            .findFirst()
            .orElseThrow(
                () -> new AssertionError("embedding.md has no snippet that reads ORBITE_CONF"));
    Path classes = out.resolve("embedding_md");
    List<String> cmd =
        io.orbite.qualification.harness.EngineProcess.javaCommand(
            classes
                + java.io.File.pathSeparator
                + io.orbite.qualification.harness.EngineProcess.classPath(),
            RunSnippet.class.getName(),
            List.of(spawning.wrapperName()));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("ORBITE_CONF", "{\"tcp\":{\"lanez\":4}}");
    Process child = pb.start();
    CompletableFuture<String> output =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return new String(child.getInputStream().readAllBytes());
              } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
              }
            });
    try {
      assertTrue(
          child.waitFor(10, TimeUnit.SECONDS),
          "the JVM did not exit within 10 s of a bad ORBITE_CONF");
      String said = output.get(5, TimeUnit.SECONDS);
      assertTrue(child.exitValue() != 0, said);
      assertTrue(said.contains("ConfigException") && said.contains("tcp.lanez: unknown key"), said);
    } finally {
      child.destroyForcibly();
    }
  }

  /**
   * The README's "Use it from Maven" section: its coordinates are the modules' own, it marks the
   * consumer project's blocks .ci/consumer-pom-check builds, and its two classes, compiled from the
   * README, run as two processes. PrefillServer publishes its endpoint and region id; DecodeClient
   * pulls and checks every block (over SHM, as the README says) and exits 0; PrefillServer exits 0
   * once its stdin closes.
   */
  @Test
  void theReadmesPrefillAndDecodeProcessesMoveEveryBlockAndExit() throws Exception {
    Path root = GuideSnippets.guidesDir().getParent().getParent();
    Path readme = root.resolve("README.md");
    String text = Files.readString(readme);
    String version = modulePomValue(root.resolve("pom.xml"), "version");
    for (String module : List.of("engine-actors", "transport-actors", "observability")) {
      String artifact = modulePomValue(root.resolve(module).resolve("pom.xml"), "artifactId");
      assertTrue(
          text.contains("<artifactId>" + artifact + "</artifactId>"), "README names " + artifact);
    }
    assertTrue(
        text.contains("<version>" + version + "</version>")
            && text.contains("<groupId>io.orbite</groupId>"),
        "README's coordinates carry the project's group and version " + version);

    List<GuideSnippets.Snippet> snippets = GuideSnippets.extract(readme);
    assertEquals(
        List.of("PrefillServer", "DecodeClient"),
        snippets.stream().map(GuideSnippets.Snippet::className).toList(),
        "README's java blocks");
    // .ci/consumer-pom-check (CI, after the tests) writes the blocks marked on the line before
    // them into a project of their own, builds it against the installed artifacts and runs it.
    assertEquals(
        List.of(
            "pom.xml",
            "src/main/resources/logback.xml",
            "src/main/java/PrefillServer.java",
            "src/main/java/DecodeClient.java"),
        text.lines()
            .filter(l -> l.startsWith("<!-- consumer: ") && l.endsWith(" -->"))
            .map(l -> l.substring("<!-- consumer: ".length(), l.length() - " -->".length()))
            .toList(),
        "README's consumer project blocks, in the order .ci/consumer-pom-check expects");
    Path classes = Files.createDirectories(out.resolve("readme"));
    String errors = GuideSnippets.compile(snippets, classes);
    if (!errors.isEmpty()) {
      fail("README: snippets do not compile\n" + errors);
    }
    String classPath =
        classes
            + java.io.File.pathSeparator
            + io.orbite.qualification.harness.EngineProcess.classPath();
    Process prefill = child(classPath, out.resolve("prefill.log"), "PrefillServer");
    try {
      var published =
          new java.io.BufferedReader(new java.io.InputStreamReader(prefill.getInputStream()));
      CompletableFuture<String> line =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return published.readLine();
                } catch (java.io.IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              });
      String announcement = line.get(60, TimeUnit.SECONDS);
      assertTrue(
          announcement != null && announcement.startsWith("PUBLISHED "),
          () -> "prefill said " + announcement + "\n" + readQuietly(out.resolve("prefill.log")));
      String[] parts = announcement.split(" ");
      Process decode =
          child(classPath, out.resolve("decode.log"), "DecodeClient", parts[1], parts[2]);
      String said = new String(decode.getInputStream().readAllBytes());
      assertTrue(decode.waitFor(60, TimeUnit.SECONDS), "decode exits");
      assertEquals(
          0, decode.exitValue(), () -> said + "\n" + readQuietly(out.resolve("decode.log")));
      assertTrue(said.startsWith("VERIFIED 64 blocks, ") && said.trim().endsWith("over SHM"), said);
      prefill.getOutputStream().close();
      assertTrue(
          prefill.waitFor(10, TimeUnit.SECONDS), "prefill exits within 10 s of its stdin closing");
      assertEquals(0, prefill.exitValue(), () -> readQuietly(out.resolve("prefill.log")));
    } finally {
      prefill.destroyForcibly();
    }
  }

  // ---------------------------------------------------------------- helpers

  private static Process child(String classPath, Path log, String main, String... args)
      throws java.io.IOException {
    List<String> cmd =
        io.orbite.qualification.harness.EngineProcess.javaCommand(classPath, main, List.of(args));
    return new ProcessBuilder(cmd).redirectError(log.toFile()).start();
  }

  private static String readQuietly(Path file) {
    try {
      return Files.readString(file);
    } catch (java.io.IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /**
   * The first {@code <tag>} of a module's pom that is its own (after its {@code <parent>} block).
   */
  private static String modulePomValue(Path pom, String tag) throws java.io.IOException {
    String xml = Files.readString(pom);
    int parentEnd = xml.indexOf("</parent>");
    String own = parentEnd < 0 ? xml : xml.substring(parentEnd);
    int from = own.indexOf("<" + tag + ">");
    int to = own.indexOf("</" + tag + ">", from);
    if (from < 0 || to < 0) {
      // The version of a module is its parent's.
      from = xml.indexOf("<" + tag + ">");
      to = xml.indexOf("</" + tag + ">", from);
      return xml.substring(from + tag.length() + 2, to);
    }
    return own.substring(from + tag.length() + 2, to);
  }

  /**
   * Compiles one guide's snippets (expecting {@code expected} of them) and returns a loader for the
   * classes.
   */
  private ClassLoader compileGuide(String name, int expected) throws Exception {
    Path guide = GuideSnippets.guidesDir().resolve(name);
    List<GuideSnippets.Snippet> snippets = GuideSnippets.extract(guide);
    assertEquals(
        expected,
        snippets.size(),
        () ->
            name
                + ": ```java blocks found at lines "
                + snippets.stream().map(GuideSnippets.Snippet::line).toList());
    Path classes = Files.createDirectories(out.resolve(name.replace('.', '_')));
    String errors = GuideSnippets.compile(snippets, classes);
    if (!errors.isEmpty()) {
      fail(name + ": snippets do not compile\n" + errors);
    }
    return new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader());
  }

  /**
   * Runs {@link #invoke} on another thread and fails with {@code bug} if it has not returned within
   * {@code deadline}.
   */
  private static Object invokeWithin(
      Duration deadline, String bug, Class<?> type, String method, Object... args)
      throws Exception {
    CompletableFuture<Object> call = new CompletableFuture<>();
    Thread.ofPlatform()
        .daemon()
        .name("guide-" + method)
        .start(
            () -> {
              try {
                call.complete(invoke(type, method, args));
              } catch (Throwable t) {
                call.completeExceptionally(t);
              }
            });
    try {
      return call.get(deadline.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(
          type.getSimpleName() + "." + method + " did not return within " + deadline + ". " + bug);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Exception x) {
        throw x;
      }
      throw new AssertionError(e.getCause());
    }
  }

  private static Object invoke(Class<?> type, String method, Object... args) throws Exception {
    Method m =
        Arrays.stream(type.getMethods())
            .filter(x -> x.getName().equals(method) && x.getParameterCount() == args.length)
            .findFirst()
            .orElseThrow(
                () ->
                    new AssertionError(
                        type.getName() + " has no public method " + method + "/" + args.length));
    return m.invoke(null, args);
  }

  private static RegisteredMemory guarded(TransferEngine engine, long bytes, long seed) {
    RegisteredMemory m = engine.allocate(bytes, Access.READ_WRITE);
    Pattern.fill(m.segment(), 0, bytes, seed, 0);
    return m;
  }

  private static void assertRegion(
      MemorySegment region, List<Span> spans, long guardSeed, String what) {
    long bad = RegionCheck.check(region, spans, guardSeed);
    assertEquals(-1, bad, () -> what + ": first wrong byte at " + bad + " of " + region.byteSize());
  }
}
