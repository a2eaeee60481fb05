package io.orbite.qualification.example;

import io.orbite.engine.ReceivedNotification;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.bench.Jit;
import io.orbite.qualification.verify.Pattern;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.apache.pekko.Done;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;

/**
 * The push phase of {@link KvHandoff}, on the decode side: the prefill WRITEs every request's KV
 * blocks into the decode's landing region, one submission per request with a notification attached
 * ({@link PrefillPush}), and the decode consumes {@link TransferEngine#notifications()}. When
 * request r's notification arrives, the decode checks THAT request's blocks and the guard gaps
 * around them at once, before it takes the next notification: the engine sends a submission's
 * notification only after every WRITE of it was applied (C16), so every byte must already be there.
 * Every request must be notified exactly once, its bytes right, and the prefill's {@code
 * SubmissionStatus.notification()} DELIVERED; anything else fails the run. The landing region is
 * the streamed pull's destination, reset to its guard pattern before each pass: the same layout,
 * now written by the peer. An untimed warm-up pass runs first (unless {@code --no-warmup}).
 */
final class PushPhase {
  /**
   * What the timed pass found (and every problem of every pass).
   *
   * @param requests requests pushed
   * @param notified requests whose notification arrived (once or more)
   * @param verified requests notified exactly once, DELIVERED, and every byte right on arrival
   * @param problems one line per wrong byte, missing, duplicate or stray notification, or
   *     notification the prefill did not see DELIVERED
   * @param badBlocks the blocks named in MISMATCH problems ("request r block b")
   */
  record Result(
      int requests, int notified, int verified, List<String> problems, List<String> badBlocks) {}

  private final PrintStream out;
  private final Map<String, Double> figures;
  private final TransferEngine decode;
  private final PrefillProcess prefill;
  private final List<KvBlock> blocks;
  private final RegisteredMemory landing;
  private final KvDestination dst;
  private final long guardSeed;
  private final KvOptions o;

  /** Index of each request's first block in {@code blocks}; one more entry: the block count. */
  private final int[] firstBlock;

  /** The pass whose notifications are expected now. */
  private volatile PassState current;

  PushPhase(
      PrintStream out,
      Map<String, Double> figures,
      TransferEngine decode,
      PrefillProcess prefill,
      List<KvBlock> blocks,
      RegisteredMemory landing,
      KvDestination dst,
      long guardSeed,
      KvOptions o) {
    this.out = out;
    this.figures = figures;
    this.decode = decode;
    this.prefill = prefill;
    this.blocks = blocks;
    this.landing = landing;
    this.dst = dst;
    this.guardSeed = guardSeed;
    this.o = o;
    int requests = blocks.isEmpty() ? 0 : blocks.getLast().request() + 1;
    this.firstBlock = new int[requests + 1];
    for (int i = blocks.size() - 1; i >= 0; i--) {
      firstBlock[blocks.get(i).request()] = i;
    }
    firstBlock[requests] = blocks.size();
  }

  /** What one pass's notifications did, written by the consumer and read by the phase. */
  private static final class PassState {
    final int pass;
    final AtomicIntegerArray count;
    final AtomicLongArray receivedAt;
    final AtomicLongArray verifiedAt;
    final AtomicReferenceArray<List<String>> found;
    final AtomicInteger arrived = new AtomicInteger();

    /** Every notification the consumer took while this pass was current. */
    final AtomicInteger taken = new AtomicInteger();

    final ConcurrentLinkedQueue<String> strays = new ConcurrentLinkedQueue<>();

    PassState(int pass, int requests) {
      this.pass = pass;
      this.count = new AtomicIntegerArray(requests);
      this.receivedAt = new AtomicLongArray(requests);
      this.verifiedAt = new AtomicLongArray(requests);
      this.found = new AtomicReferenceArray<>(requests);
    }
  }

  /** What the prefill said about one request's submission. */
  private record Pushed(
      int request,
      String state,
      String writes,
      long submitted,
      long writesDone,
      long decided,
      String detail) {
    static Pushed parse(String line) {
      String[] t = line.split(" ", 8);
      return new Pushed(
          Integer.parseInt(t[1]),
          t[2],
          t[3],
          Long.parseLong(t[4]),
          Long.parseLong(t[5]),
          Long.parseLong(t[6]),
          t.length > 7 ? t[7] : "-");
    }
  }

  Result run() throws IOException, InterruptedException {
    int requests = firstBlock.length - 1;
    Warmup warmup = o.warmup() ? new Warmup() : null;
    current = new PassState(-1, requests);
    out.printf(
        Locale.ROOT,
        "push     the prefill WRITEs each request's blocks into the destination region (reset to "
            + "its guards), one submission per request with Notification \"request-<r>\" "
            + "attached, up to %d requests in flight; the decode checks a request's blocks and "
            + "guards when its notification arrives (decode.notifications())%n",
        o.pushWindow());
    // One consumer for the whole phase. The source takes a notification from the inbox only on
    // demand, and the sink checks it before it asks for the next: a slow check holds the rest in
    // the inbox (backpressure), it never drops one.
    Pair<UniqueKillSwitch, CompletionStage<Done>> consumer =
        decode
            .notifications()
            .viaMat(KillSwitches.single(), Keep.right())
            .toMat(Sink.foreach(this::arrived), Keep.both())
            .run(decode.system());
    List<String> problems = new ArrayList<>();
    List<String> badBlocks = new ArrayList<>();
    List<PassState> states = new ArrayList<>();
    int notified = 0;
    int verified = 0;
    try {
      for (int pass = 0; ; pass++) {
        boolean timed = warmup == null || !warmup.more();
        long jitBefore = timed ? 0 : Jit.millis() + prefill.jitMillis();
        Pattern.fill(landing.segment(), 0, dst.bytes(), guardSeed, 0);
        PassState s = new PassState(pass, requests);
        states.add(s);
        current = s;
        List<String> lines =
            prefill.callLines(
                String.join(
                    " ",
                    "PUSH",
                    decode.localSegment().endpoint(),
                    Long.toHexString(decode.localSegment().epoch()),
                    Long.toString(landing.regionId()),
                    Integer.toString(pass),
                    Integer.toString(o.pushWindow()),
                    Long.toString(o.timeout().toSeconds()),
                    timed && o.notificationFault() ? "1" : "0"),
                "PUSHED");
        Pushed[] pushed = new Pushed[requests];
        for (String line : lines.subList(0, lines.size() - 1)) {
          Pushed p = Pushed.parse(line);
          pushed[p.request()] = p;
        }
        int delivered = 0;
        for (Pushed p : pushed) {
          delivered += p != null && p.state().equals("DELIVERED") ? 1 : 0;
        }
        String summary = lines.getLast();
        int extra = Integer.parseInt(summary.substring(summary.indexOf("extra_delivered=") + 16));
        // Every DELIVERED notification is in the inbox by now; the consumer may still be checking.
        long deadline = System.nanoTime() + o.timeout().toNanos();
        while (s.taken.get() < delivered + extra && System.nanoTime() < deadline) {
          Thread.sleep(1);
        }
        String label = timed ? "" : "untimed pass " + (pass + 1) + ": ";
        int passVerified = 0;
        for (int r = 0; r < requests; r++) {
          Pushed p = pushed[r];
          List<String> found = s.found.get(r);
          if (p == null) {
            problems.add(label + "request " + r + ": the prefill did not report its submission");
          } else if (!p.state().equals("DELIVERED")) {
            problems.add(
                String.format(
                    Locale.ROOT,
                    "%sNOT DELIVERED request-%d: the prefill's submission says %s (%s WRITEs "
                        + "completed): %s",
                    label,
                    r,
                    p.state(),
                    p.writes(),
                    p.detail()));
          }
          if (s.count.get(r) == 0) {
            problems.add(label + "MISSING notification request-" + r);
          } else if (found != null && !found.isEmpty()) {
            found.forEach(line -> problems.add(label + line));
            for (String line : found) {
              if (line.startsWith("MISMATCH ")) {
                badBlocks.add(line.substring(9, line.indexOf(':')));
              }
            }
          } else if (p != null && p.state().equals("DELIVERED") && s.count.get(r) == 1) {
            passVerified++;
          }
        }
        if (timed) {
          for (int r = 0; r < requests; r++) {
            notified += s.count.get(r) > 0 ? 1 : 0;
          }
          verified = passVerified;
          if (warmup != null) {
            out.printf(
                Locale.ROOT,
                "warm-up  %d untimed push pass(es) until the JIT was quiet (%.1f s), every request "
                    + "checked on arrival; landing reset to its guards%n",
                warmup.passes(),
                warmup.seconds());
          }
          report(s, pushed, delivered, passVerified);
          break;
        }
        warmup.passed(Jit.millis() + prefill.jitMillis() - jitBefore, 2);
      }
      // A notification sent twice would arrive after its first: give it time to show.
      Thread.sleep(200);
    } finally {
      consumer.first().shutdown();
    }
    try {
      consumer.second().toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      problems.add("the notification consumer did not end cleanly: " + e);
    }
    for (PassState s : states) {
      s.strays.forEach(problems::add);
    }
    for (ReceivedNotification n : decode.pollNotifications(1024)) {
      problems.add("UNEXPECTED notification after the phase: " + describe(n));
    }
    return new Result(requests, notified, verified, problems, badBlocks);
  }

  /**
   * The consumer: checks one notification's request at once (its blocks, and the guard gaps before
   * each block and after the last), and records what it found.
   */
  private void arrived(ReceivedNotification n) {
    PassState s = current;
    s.taken.incrementAndGet();
    String payload = new String(n.bytes(), StandardCharsets.UTF_8);
    int r = -1;
    if (n.tag().startsWith("request-")) {
      try {
        r = Integer.parseInt(n.tag().substring("request-".length()));
      } catch (NumberFormatException e) {
        r = -1;
      }
    }
    if (r < 0 || r >= s.count.length() || !payload.startsWith("pass=" + s.pass + " ")) {
      s.strays.add("UNEXPECTED notification in push pass " + (s.pass + 1) + ": " + describe(n));
      return;
    }
    if (s.count.incrementAndGet(r) > 1) {
      s.strays.add("DUPLICATE notification in push pass " + (s.pass + 1) + ": " + describe(n));
      return;
    }
    s.receivedAt.set(r, n.receivedAtNanos());
    List<String> found = new ArrayList<>();
    int first = firstBlock[r];
    int end = firstBlock[r + 1];
    long bytes = 0;
    for (int i = first; i < end; i++) {
      bytes += blocks.get(i).length();
    }
    String expected =
        new String(PrefillPush.payload(s.pass, end - first, bytes), StandardCharsets.UTF_8);
    if (!payload.equals(expected)) {
      found.add("PAYLOAD request-" + r + ": '" + payload + "', expected '" + expected + "'");
    }
    MemorySegment seg = landing.segment();
    for (int i = first; i <= end; i++) {
      long gapFrom = dst.gapFrom(blocks, i);
      long bad = Pattern.verify(seg, gapFrom, dst.gapTo(i) - gapFrom, guardSeed, gapFrom);
      if (bad >= 0) {
        found.add(
            String.format(
                Locale.ROOT,
                "GUARD damaged %s, seen on request-%d's notification: destination byte %d is "
                    + "0x%02x, expected 0x%02x",
                i == blocks.size() ? "after the last block" : "before " + blocks.get(i).name(),
                r,
                bad,
                seg.get(ValueLayout.JAVA_BYTE, bad),
                Pattern.at(guardSeed, bad)));
      }
      if (i == end) {
        break;
      }
      KvBlock b = blocks.get(i);
      long off = dst.offsets()[i];
      bad = Pattern.verify(seg, off, b.length(), b.seed(), 0);
      if (bad >= 0) {
        long k = bad - off;
        found.add(
            String.format(
                Locale.ROOT,
                "MISMATCH %s: on its notification, byte %d of %d is 0x%02x, expected 0x%02x",
                b.name(),
                k,
                b.length(),
                seg.get(ValueLayout.JAVA_BYTE, bad),
                Pattern.at(b.seed(), k)));
      }
    }
    s.found.set(r, found);
    s.verifiedAt.set(r, System.nanoTime());
    s.arrived.incrementAndGet();
  }

  private static String describe(ReceivedNotification n) {
    return "tag '"
        + n.tag()
        + "', payload '"
        + new String(n.bytes(), StandardCharsets.UTF_8)
        + "' from "
        + n.senderName();
  }

  private void report(PassState s, Pushed[] pushed, int delivered, int verified) {
    int requests = pushed.length;
    long bytes = 0;
    long firstSubmit = Long.MAX_VALUE;
    long lastDecided = Long.MIN_VALUE;
    long lastReceived = Long.MIN_VALUE;
    long[] afterWrite = new long[requests];
    long[] toVerified = new long[requests];
    int timed = 0;
    for (int r = 0; r < requests; r++) {
      for (int i = firstBlock[r]; i < firstBlock[r + 1]; i++) {
        bytes += blocks.get(i).length();
      }
      Pushed p = pushed[r];
      if (p == null) {
        continue;
      }
      firstSubmit = Math.min(firstSubmit, p.submitted());
      lastDecided = Math.max(lastDecided, p.decided());
      if (s.count.get(r) > 0) {
        lastReceived = Math.max(lastReceived, s.receivedAt.get(r));
        if (p.writesDone() > 0) {
          afterWrite[timed] = s.receivedAt.get(r) - p.writesDone();
          toVerified[timed++] = s.verifiedAt.get(r) - s.receivedAt.get(r);
        }
      }
    }
    long[] a = Arrays.copyOf(afterWrite, timed);
    long[] v = Arrays.copyOf(toVerified, timed);
    Arrays.sort(a);
    Arrays.sort(v);
    double seconds = lastReceived > firstSubmit ? (lastReceived - firstSubmit) / 1e9 : Double.NaN;
    double senderSeconds =
        lastDecided > firstSubmit ? (lastDecided - firstSubmit) / 1e9 : Double.NaN;
    out.printf(
        Locale.ROOT,
        "pushed   %d/%d requests notified (%d DELIVERED by the prefill's account), %s from the "
            + "first submit to the last notification received in %.3f s = %.2f GB/s (the "
            + "prefill's first submit to its last submission done: %.2f GB/s)%n",
        s.arrived.get(),
        requests,
        delivered,
        KvHandoff.size(bytes),
        seconds,
        bytes / 1e9 / seconds,
        bytes / 1e9 / senderSeconds);
    out.printf(
        Locale.ROOT,
        "notify   a request's last WRITE done at the prefill -> its notification in the decode's "
            + "inbox: p50 %.0f us, p99 %.0f us; inbox -> the request's bytes checked: p50 %.0f "
            + "us, p99 %.0f us%n",
        LayerPhase.percentileMicros(a, 50),
        LayerPhase.percentileMicros(a, 99),
        LayerPhase.percentileMicros(v, 50),
        LayerPhase.percentileMicros(v, 99));
    out.printf(
        Locale.ROOT,
        "verified %d/%d requests on their notification: every block byte for byte and the guard "
            + "gaps around them%n",
        verified,
        requests);
    figures.put("push_requests", (double) requests);
    figures.put("push_notified_requests", (double) s.arrived.get());
    figures.put("push_delivered", (double) delivered);
    figures.put("push_verified_requests", (double) verified);
    figures.put("push_bytes", (double) bytes);
    figures.put("push_seconds", seconds);
    figures.put("push_notified_GBps", bytes / 1e9 / seconds);
    figures.put("push_sender_GBps", bytes / 1e9 / senderSeconds);
    figures.put("notify_after_write_p50_us", LayerPhase.percentileMicros(a, 50));
    figures.put("notify_after_write_p99_us", LayerPhase.percentileMicros(a, 99));
    figures.put("notify_to_verified_p50_us", LayerPhase.percentileMicros(v, 50));
  }
}
