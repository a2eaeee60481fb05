package io.orbite.qualification.example;

import io.orbite.engine.Batch;
import io.orbite.engine.Notification;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Submission;
import io.orbite.engine.SubmissionStatus;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The prefill side of the push phase: on {@code PUSH <endpoint> <epoch-hex> <regionId> <pass>
 * <window> <timeout-s> <fault>} it WRITEs every request's KV blocks from its pool into the decode
 * side's landing region {@code regionId} (at the offsets {@link KvDestination#layout} gives both
 * sides), one submission per request with a notification attached: {@code batch.submit(writes,
 * Notification.of("request-<r>", "pass=<p> blocks=<b> bytes=<n>"))}. The engine sends the
 * notification only after every WRITE of the submission completed, so the decode side may read the
 * request's blocks when it arrives. At most {@code window} requests are in flight: the oldest is
 * awaited before the next is submitted.
 *
 * <p>The answer is one line per request, then a summary:
 *
 * <pre>
 * PUSHED &lt;r&gt; &lt;notification state&gt; &lt;completed&gt;/&lt;tasks&gt; &lt;submit-ns&gt; &lt;writes-done-ns&gt; &lt;decided-ns&gt; &lt;detail&gt;
 * OK requests=&lt;R&gt; bytes=&lt;B&gt; extra_delivered=&lt;n&gt;
 * </pre>
 *
 * where the times are this process's {@link System#nanoTime()} (comparable with the decode's on one
 * Linux host): the submit call, the last WRITE's completion (submit time plus the longest task's
 * {@link TaskResult#elapsedNanos()}, 0 when a WRITE failed), and when the submission was done (its
 * notification decided). The state is the sender's {@link NotificationResult.State}: DELIVERED,
 * REFUSED, NOT_SENT or UNKNOWN, or SUBMIT_REFUSED when the engine refused the submission itself.
 *
 * <p>{@code fault} 1 is a test hook ({@code --notification-fault}): request {@link
 * #missingHook(int)} is submitted without its notification (state NONE), and once every submission
 * is done, request {@link #duplicateHook(int)}'s notification is sent a second time with {@code
 * Engine.notify}, the same tag and payload; {@code extra_delivered} counts such standalone
 * notifications the decode's inbox accepted. The decode must report one missing and one duplicate.
 */
final class PrefillPush {
  private final TransferEngine engine;
  private final RegisteredMemory pool;
  private final List<KvBlock> blocks;
  private final KvDestination landing;

  /** Index of each request's first block in {@code blocks}; one more entry: the block count. */
  private final int[] firstBlock;

  private RemoteSegment decode;

  PrefillPush(TransferEngine engine, RegisteredMemory pool, List<KvBlock> blocks, long seed) {
    this.engine = engine;
    this.pool = pool;
    this.blocks = blocks;
    this.landing = KvDestination.layout(blocks, seed);
    List<Integer> starts = new ArrayList<>();
    for (int i = 0; i < blocks.size(); i++) {
      if (i == 0 || blocks.get(i).request() != blocks.get(i - 1).request()) {
        starts.add(i);
      }
    }
    starts.add(blocks.size());
    this.firstBlock = starts.stream().mapToInt(Integer::intValue).toArray();
  }

  /** The payload of request {@code r}'s notification in pass {@code pass}. */
  static byte[] payload(int pass, int blocks, long bytes) {
    return ("pass=" + pass + " blocks=" + blocks + " bytes=" + bytes)
        .getBytes(StandardCharsets.UTF_8);
  }

  /** The request the {@code fault} hook submits without its notification. */
  static int missingHook(int requests) {
    return Math.min(1, requests - 1);
  }

  /** The request whose notification the {@code fault} hook sends twice. */
  static int duplicateHook(int requests) {
    return requests - 1;
  }

  /** One request in flight. */
  private record Pending(int request, Submission submission) {}

  /** Runs one PUSH command; writes its answer to {@code out}. */
  void push(String[] words, PrintStream out) {
    if (words.length != 8) {
      throw new IllegalArgumentException(
          "PUSH <endpoint> <epoch-hex> <regionId> <pass> <window> <timeout-s> <fault>");
    }
    boolean fault = words[7].equals("1");
    long epoch = Long.parseUnsignedLong(words[2], 16);
    long regionId = Long.parseLong(words[3]);
    int pass = Integer.parseInt(words[4]);
    int window = Integer.parseInt(words[5]);
    Duration timeout = Duration.ofSeconds(Long.parseLong(words[6]));
    if (decode == null || decode.descriptor().epoch() != epoch) {
      decode = engine.openSegment(words[1], Duration.ofSeconds(10));
      if (decode.descriptor().epoch() != epoch) {
        throw new IllegalStateException(
            "opened decode epoch "
                + Long.toHexString(decode.descriptor().epoch())
                + ", but PUSH named "
                + words[2]);
      }
    }
    int requests = firstBlock.length - 1;
    Notification[] sent = new Notification[requests];
    long[] submitted = new long[requests];
    AtomicLongArray decided = new AtomicLongArray(requests);
    SubmissionStatus[] status = new SubmissionStatus[requests];
    String[] refused = new String[requests];
    long bytes = 0;
    Batch batch = engine.allocateBatch(blocks.size());
    try {
      ArrayDeque<Pending> inFlight = new ArrayDeque<>();
      for (int r = 0; r < requests; r++) {
        if (inFlight.size() >= window) {
          Pending p = inFlight.poll();
          status[p.request()] = p.submission().await(timeout);
        }
        List<TransferRequest> writes = new ArrayList<>(firstBlock[r + 1] - firstBlock[r]);
        long requestBytes = 0;
        for (int i = firstBlock[r]; i < firstBlock[r + 1]; i++) {
          KvBlock b = blocks.get(i);
          writes.add(
              TransferRequest.write(
                  pool, b.offset(), decode, regionId, landing.offsets()[i], b.length()));
          requestBytes += b.length();
        }
        int request = blocks.get(firstBlock[r]).request();
        Notification n =
            Notification.of("request-" + request, payload(pass, writes.size(), requestBytes));
        sent[r] = n;
        submitted[r] = System.nanoTime();
        try {
          Submission s =
              fault && r == missingHook(requests) ? batch.submit(writes) : batch.submit(writes, n);
          int index = r;
          s.completion().thenRun(() -> decided.set(index, System.nanoTime()));
          inFlight.add(new Pending(r, s));
          bytes += requestBytes;
        } catch (TransferException e) {
          refused[r] = e.getMessage();
        }
      }
      while (!inFlight.isEmpty()) {
        Pending p = inFlight.poll();
        status[p.request()] = p.submission().await(timeout);
      }
    } finally {
      batch.free();
    }
    int extraDelivered = 0;
    if (fault) {
      Notification again = sent[duplicateHook(requests)];
      extraDelivered += engine.notify(decode, again.tag(), again.bytes()).delivered() ? 1 : 0;
    }
    for (int r = 0; r < requests; r++) {
      int request = blocks.get(firstBlock[r]).request();
      int tasks = firstBlock[r + 1] - firstBlock[r];
      if (refused[r] != null) {
        out.println(line(request, "SUBMIT_REFUSED", 0, tasks, submitted[r], 0, 0, refused[r]));
        continue;
      }
      SubmissionStatus s = status[r];
      long longest = 0;
      int completed = 0;
      for (TaskResult t : s.tasks()) {
        completed += t.completed() ? 1 : 0;
        longest = Math.max(longest, t.elapsedNanos());
      }
      long writesDone = completed == tasks ? submitted[r] + longest : 0;
      NotificationResult nr = s.notification();
      String state = s.done() ? nr.state().name() : "PENDING";
      String detail = nr.errorKind() == null ? nr.detail() : nr.errorKind() + " " + nr.detail();
      // The completion callback may not have run yet when await returned: the await is the bound.
      long done = decided.get(r) == 0 ? System.nanoTime() : decided.get(r);
      out.println(line(request, state, completed, tasks, submitted[r], writesDone, done, detail));
    }
    out.println(
        "OK requests=" + requests + " bytes=" + bytes + " extra_delivered=" + extraDelivered);
  }

  private static String line(
      int request,
      String state,
      int completed,
      int tasks,
      long submitted,
      long writesDone,
      long decided,
      String detail) {
    return "PUSHED "
        + request
        + " "
        + state
        + " "
        + completed
        + "/"
        + tasks
        + " "
        + submitted
        + " "
        + writesDone
        + " "
        + decided
        + " "
        + (detail == null || detail.isEmpty() ? "-" : detail.replace('\n', ' '));
  }
}
