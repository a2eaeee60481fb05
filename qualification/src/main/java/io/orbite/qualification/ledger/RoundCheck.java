package io.orbite.qualification.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The {@link LedgerVerifier}'s checks of one case's rounds: each round the supervisor planned,
 * joined with the requester's round receipt and both peers' region checks. A round the supervisor
 * faulted (its {@code fault}) is held to what that fault allows, and no more:
 *
 * <ul>
 *   <li>none: every task {@code COMPLETED} with its whole payload on the planned transport, with
 *       its operation's effect; the counters moved by exactly the workload;
 *   <li>{@code link-down}: the round was running when the link went down and lost a lane; each task
 *       completed whole or failed {@code PEER_LOST}/{@code TIMEOUT} with 0 bytes, no effect,
 *       drained; the round after it found the lanes restored;
 *   <li>{@code lost-completion}: the provider withheld a payload completion of every task, the
 *       source was killed, and every task failed {@code PEER_LOST}, 0 bytes, drained, a READ with
 *       no effect, a WRITE {@code UNKNOWN}, no byte counted; the dead source's region is not
 *       checked;
 *   <li>{@code inflight-err}: the provider cut the one WRITE's copy: it failed {@code UNKNOWN}, 0
 *       bytes, drained, and the source's region holds exactly the bytes the cut let through;
 *   <li>{@code interruption}: the first payload post was held with its grant given, the source
 *       killed; every task failed {@code PEER_LOST}, 0 bytes, no effect, drained, and the
 *       requester's region is as it was;
 *   <li>{@code cleanup-failure}: every completion withheld and the QP's destroy failing for good:
 *       the READ ended {@code UNQUIESCED}, undrained, 0 bytes, its batch busy, the destroy asked
 *       once, and the requester showed the quarantined QP and the kept loan before its replacement.
 * </ul>
 *
 * <p>Longer than 500 lines: each check is written out beside the failure message it gives, so that
 * a verdict's message leads to its check; the formatter puts each part of a message on a line.
 */
final class RoundCheck {
  private static final String[] TRANSPORTS = {"TCP", "SHM", "RDMA"};

  private final JsonNode plan;
  private final Ledger supervisor;
  private final Map<String, Ledger> receipts;
  private final Map<String, String> epochs;
  private final Consumer<String> fail;
  private int failures;
  private int roundsVerified;
  private long bytesVerified;

  RoundCheck(
      JsonNode plan,
      Ledger supervisor,
      Map<String, Ledger> receipts,
      Map<String, String> epochs,
      Consumer<String> fail) {
    this.plan = plan;
    this.supervisor = supervisor;
    this.receipts = receipts;
    this.epochs = epochs;
    this.fail = fail;
  }

  private void fail(String message) {
    failures++;
    fail.accept(message);
  }

  int roundsVerified() {
    return roundsVerified;
  }

  long bytesVerified() {
    return bytesVerified;
  }

  /** Every planned round: its tasks, bytes, counters and both whole regions. */
  void run(int planned) {
    List<JsonNode> rounds = supervisor.ofType("round");
    Set<Integer> seen = new HashSet<>();
    for (JsonNode round : rounds) {
      if (!seen.add(round.path("round").asInt())) {
        fail("round " + round.path("round").asInt() + " planned twice in the supervisor's ledger");
      }
    }
    for (int k = 1; k <= planned; k++) {
      if (!seen.contains(k)) {
        fail(
            "round "
                + k
                + " is missing from the supervisor's ledger (the plan has "
                + planned
                + ")");
      }
    }
    for (JsonNode round : rounds) {
      int before = failures;
      long completed = round(round, rounds);
      if (failures == before) {
        roundsVerified++;
        bytesVerified += completed;
      }
    }
  }

  /** One round; returns the bytes of its completed tasks. */
  private long round(JsonNode round, List<JsonNode> rounds) {
    String op = plan.path("operation").asText();
    String transport = plan.path("transport").asText();
    int parents = plan.path("parents").asInt();
    long payload = plan.path("payload").asLong();
    long regionBytes = plan.path("regionBytes").asLong();
    int k = round.path("round").asInt();
    String fault = round.path("fault").asText("");
    String req = "requester-g" + round.path("requesterGeneration").asInt();
    String src = "source-g" + round.path("sourceGeneration").asInt();
    long expected = round.path("expectedBytes").asLong();
    if (expected != parents * payload) {
      fail(
          "round "
              + k
              + ": the supervisor planned "
              + expected
              + " bytes, not parents x payload = "
              + parents * payload);
    }
    Ledger r = receipts.get(req);
    Ledger s = receipts.get(src);
    if (r == null || s == null) {
      fail("round " + k + ": no receipts from " + (r == null ? req : src));
      return 0;
    }
    List<JsonNode> results = withRound(r.ofType("round"), k);
    if (results.isEmpty()) {
      fail("round " + k + ": no round receipt from " + req);
      return 0;
    }
    if (results.size() > 1) {
      fail("round " + k + ": " + req + " reported the round " + results.size() + " times");
    }
    JsonNode result = results.get(0);
    long completed = tasks(k, result, parents, payload, op, transport, fault);
    long sum = 0;
    int failedTasks = 0;
    for (JsonNode t : result.path("tasks")) {
      sum += t.path("bytes").asLong();
      failedTasks += t.path("state").asText().equals("COMPLETED") ? 0 : 1;
    }
    if (fault.isEmpty() && sum != expected) {
      fail("round " + k + ": the tasks report " + sum + " bytes, the workload is " + expected);
    }
    if (result.path("bytes").asLong() != sum) {
      fail(
          "round "
              + k
              + ": the round receipt says "
              + result.path("bytes").asLong()
              + " bytes, its tasks "
              + sum);
    }
    counters(k, result, transport, expected, completed);
    if (!result.path("peerEpoch").asText().equals(epochs.get(src))) {
      fail(
          "round "
              + k
              + " ran against epoch "
              + result.path("peerEpoch").asText()
              + ", not "
              + src
              + "'s "
              + epochs.get(src));
    }
    boolean read = op.equals("READ");
    // What each side's whole-region check must have covered: payload spans, failed READ spans,
    // and the bytes inside the spans.
    int takerSpans = parents;
    long takerSpanBytes = expected;
    if (fault.equals("inflight-err")) {
      takerSpans = 1;
      takerSpanBytes = round.path("landedBytes").asLong();
    }
    if (fault.equals("interruption")) {
      // Nothing was posted: the requester's region is checked as it was, with no payload span.
      wholeRegion(k, r, req, regionBytes, 0, 0, 0);
    } else {
      wholeRegion(
          k,
          r,
          req,
          regionBytes,
          read ? takerSpans : 0,
          read ? failedTasks : 0,
          read ? takerSpanBytes : 0);
    }
    if (fault.equals("lost-completion")
        || fault.equals("interruption")
        || fault.equals("cleanup-failure")) {
      // The source was killed in the round: its memory is gone with it.
      if (!withRound(s.ofType("verify"), k).isEmpty()) {
        fail("round " + k + ": " + src + " checked its region after the supervisor killed it");
      }
    } else {
      wholeRegion(k, s, src, regionBytes, read ? 0 : takerSpans, 0, read ? 0 : takerSpanBytes);
    }
    switch (fault) {
      case "" -> {}
      case "link-down" -> linkFault(k, result, round, rounds);
      case "lost-completion" -> injected(k, result, "withhold", parents, Integer.MAX_VALUE);
      case "interruption" -> {
        injected(k, result, "hold", 1, 1);
        if (!result.path("fault").path("released").asText().equals("peer-lost")) {
          fail(
              "round "
                  + k
                  + ": the held post went on by "
                  + result.path("fault").path("released").asText()
                  + ", not after the channel closed on the peer's loss");
        }
      }
      case "cleanup-failure" -> cleanupFailure(k, result, r, req);
      case "inflight-err" -> {
        injected(k, result, "interrupt", 1, 1);
        long landed = round.path("landedBytes").asLong();
        if (landed < 1 || landed >= payload) {
          fail(
              "round "
                  + k
                  + ": the cut lets "
                  + landed
                  + " of "
                  + payload
                  + " bytes through: not part-way");
        }
        if (withRound(r.ofType("round"), k + 1).isEmpty()) {
          fail("round " + k + ": no round after the interrupted WRITE");
        }
      }
      default -> fail("round " + k + ": fault '" + fault + "' is not one the verifier knows");
    }
    return completed;
  }

  private static List<JsonNode> withRound(List<JsonNode> lines, int round) {
    return lines.stream().filter(n -> n.path("round").asInt() == round).toList();
  }

  /**
   * Each task 0..parents-1 exactly once, as the round's fault allows it to end.
   *
   * @return the bytes of the completed tasks
   */
  private long tasks(
      int k,
      JsonNode result,
      int parents,
      long payload,
      String op,
      String transport,
      String fault) {
    Set<Integer> indices = new HashSet<>();
    String effect = op.equals("READ") ? "NONE" : "APPLIED";
    long completed = 0;
    for (JsonNode t : result.path("tasks")) {
      int i = t.path("index").asInt(-1);
      if (i < 0 || i >= parents) {
        fail("round " + k + ": task index " + i + " is outside 0.." + (parents - 1));
      } else if (!indices.add(i)) {
        fail("round " + k + ": task " + i + " reported twice");
      }
      boolean failed =
          t.path("state")
              .asText()
              .equals(fault.equals("cleanup-failure") ? "UNQUIESCED" : "FAILED");
      if (!fault.isEmpty() && !fault.equals("link-down") && !failed) {
        fail(
            "round "
                + k
                + " task "
                + i
                + ": "
                + t.path("state").asText()
                + " under fault "
                + fault
                + ", which every task must fail");
      }
      if (!fault.isEmpty() && failed) {
        failedHonestly(k, i, t, op, fault);
        continue;
      }
      completed += t.path("bytes").asLong();
      if (!t.path("state").asText().equals("COMPLETED")) {
        fail(
            "round "
                + k
                + " task "
                + i
                + ": "
                + t.path("state").asText()
                + " ("
                + t.path("errorKind").asText()
                + "), not COMPLETED");
      }
      if (t.path("bytes").asLong() != payload) {
        fail(
            "round "
                + k
                + " task "
                + i
                + ": "
                + t.path("bytes").asLong()
                + " bytes, the workload says "
                + payload);
      }
      if (!t.path("transport").asText().equals(transport)) {
        fail(
            "round "
                + k
                + " task "
                + i
                + ": ran on "
                + t.path("transport").asText()
                + ", the plan asks "
                + transport);
      }
      if (!t.path("effect").asText().equals(effect)) {
        fail(
            "round "
                + k
                + " task "
                + i
                + ": remote effect "
                + t.path("effect").asText()
                + ", a completed "
                + op
                + " has "
                + effect);
      }
    }
    for (int i = 0; i < parents; i++) {
      if (!indices.contains(i)) {
        fail("round " + k + ": task " + i + " has no result");
      }
    }
    return completed;
  }

  /**
   * A task the round's fault ended: 0 bytes; drained (but UNQUIESCED under a cleanup failure, whose
   * work requests may still be pending); with the kind and the effect that fault leaves.
   */
  private void failedHonestly(int k, int i, JsonNode t, String op, String fault) {
    String kind = t.path("errorKind").asText();
    String effect = t.path("effect").asText();
    boolean drained = !fault.equals("cleanup-failure");
    if (t.path("bytes").asLong() != 0 || t.path("drained").asBoolean(!drained) != drained) {
      fail(
          "round "
              + k
              + " task "
              + i
              + ": a task its fault ended must report 0 bytes and drained "
              + drained
              + "; it says "
              + t);
    }
    String due =
        switch (fault) {
          case "lost-completion" -> op.equals("READ") ? "NONE" : "UNKNOWN";
          case "inflight-err" -> "UNKNOWN";
          default -> "NONE";
        };
    if (!effect.equals(due)) {
      String why =
          switch (fault) {
            case "lost-completion" -> "a " + op + " whose payload landed unconfirmed is " + due;
            case "inflight-err" -> "a WRITE cut part-way is UNKNOWN";
            case "interruption" -> "nothing was posted before the source died: NONE";
            case "cleanup-failure" -> "a READ has no remote effect: NONE";
            default -> "a failed READ has effect NONE";
          };
      fail("round " + k + " task " + i + ": effect " + effect + "; " + why);
    }
    switch (fault) {
      case "link-down" -> {
        if (!kind.equals("PEER_LOST") && !kind.equals("TIMEOUT")) {
          fail(
              "round "
                  + k
                  + " task "
                  + i
                  + ": failed "
                  + kind
                  + " under a link loss, not PEER_LOST or TIMEOUT");
        }
      }
      case "lost-completion", "interruption" -> {
        if (!kind.equals("PEER_LOST")) {
          fail(
              "round "
                  + k
                  + " task "
                  + i
                  + ": failed "
                  + kind
                  + " when its source died, not PEER_LOST");
        }
      }
      default -> {}
    }
  }

  /**
   * The requester's counters moved by the bytes its completed tasks hold (the workload, but in a
   * faulted round), the transport was handed the whole workload, and on RDMA the rails carried the
   * completed bytes, on the planned rails only.
   */
  private void counters(
      int k, JsonNode result, String transport, long expected, long completedBytes) {
    JsonNode before = result.path("countersBefore");
    JsonNode after = result.path("countersAfter");
    long completed = after.path("bytesCompleted").asLong() - before.path("bytesCompleted").asLong();
    if (completed != completedBytes) {
      fail(
          "round "
              + k
              + ": bytesCompleted moved by "
              + completed
              + ", the completed tasks hold "
              + completedBytes);
    }
    for (String t : TRANSPORTS) {
      String key = "bytesDispatched." + t;
      long moved = after.path(key).asLong() - before.path(key).asLong();
      long want = t.equals(transport) ? expected : 0;
      if (moved != want) {
        fail("round " + k + ": " + key + " moved by " + moved + ", expected " + want);
      }
    }
    if (!transport.equals("RDMA")) {
      return;
    }
    long rails = 0;
    Set<String> allowed = new HashSet<>();
    plan.path("rails").forEach(n -> allowed.add("rdma/" + n.asText()));
    var names = after.path("lanes").fieldNames();
    while (names.hasNext()) {
      String lane = names.next();
      if (!lane.startsWith("rdma/")) {
        continue;
      }
      long moved =
          after.path("lanes").path(lane).asLong() - before.path("lanes").path(lane).asLong();
      if (moved != 0 && !allowed.isEmpty() && !allowed.contains(lane)) {
        fail(
            "round "
                + k
                + ": "
                + moved
                + " bytes on rail "
                + lane
                + ", outside the plan's rails "
                + allowed);
      }
      rails += moved;
    }
    if (rails != completedBytes) {
      fail(
          "round "
              + k
              + ": the RDMA rails carried "
              + rails
              + " bytes, the completed tasks hold "
              + completedBytes);
    }
  }

  /** The side's whole allocation checked for the round: its spans and every guard byte. */
  private void wholeRegion(
      int k, Ledger r, String key, long regionBytes, int spans, int failedSpans, long spanBytes) {
    List<JsonNode> checks = withRound(r.ofType("verify"), k);
    if (checks.size() != 1) {
      fail("round " + k + ": " + key + " has " + checks.size() + " region checks, not 1");
      return;
    }
    JsonNode c = checks.get(0);
    if (!c.path("ok").asBoolean(false)) {
      fail("round " + k + ": " + key + "'s region is wrong at byte " + c.path("firstBad").asLong());
    }
    if (c.path("bytes").asLong() != regionBytes) {
      fail(
          "round "
              + k
              + ": "
              + key
              + " checked "
              + c.path("bytes").asLong()
              + " bytes, not the whole region of "
              + regionBytes);
    }
    if (c.path("spans").asInt() != spans) {
      fail(
          "round "
              + k
              + ": "
              + key
              + " checked "
              + c.path("spans").asInt()
              + " payload spans, the workload puts "
              + spans
              + " there");
    }
    if (c.path("spanBytes").asLong() != spanBytes) {
      fail(
          "round "
              + k
              + ": "
              + key
              + "'s spans hold "
              + c.path("spanBytes").asLong()
              + " bytes, the workload puts "
              + spanBytes
              + " there");
    }
    if (c.path("failedSpans").asInt(0) != failedSpans) {
      fail(
          "round "
              + k
              + ": "
              + key
              + " checked "
              + c.path("failedSpans").asInt(0)
              + " spans as failed READs, the round failed "
              + failedSpans);
    }
  }

  /**
   * A cleanup failure: the QP's destroy was asked for once and never again, the batch stayed busy,
   * and the requester still held the task's memory and a quarantined owner when it was recorded.
   */
  private void cleanupFailure(int k, JsonNode result, Ledger r, String req) {
    injected(k, result, "cleanup", 1, Integer.MAX_VALUE);
    if (!result.path("free").asText().equals("BATCH_BUSY")) {
      fail(
          "round "
              + k
              + ": the batch of an UNQUIESCED task was freed ("
              + result.path("free").asText()
              + "), not kept BATCH_BUSY");
    }
    List<JsonNode> owners = r.ofType("owners");
    JsonNode last = owners.isEmpty() ? null : owners.get(owners.size() - 1);
    if (last == null || last.path("quarantined").asInt() < 1 || last.path("loans").asLong() < 1) {
      fail(
          "round "
              + k
              + ": "
              + req
              + " did not show the quarantined QP and the kept loan before it was replaced: "
              + last);
      return;
    }
    if (last.path("qpDestroys").asInt(-1) != 1) {
      fail(
          "round "
              + k
              + ": the failing QP destroy was asked for "
              + last.path("qpDestroys").asInt(-1)
              + " times, not once");
    }
  }

  /** The provider's fault was armed for the round and injected as many times as it must be. */
  private void injected(int k, JsonNode result, String kind, int least, int most) {
    JsonNode f = result.path("fault");
    int n = f.path("injected").asInt(0);
    if (!f.path("kind").asText().equals(kind) || n < least || n > most) {
      fail(
          "round "
              + k
              + ": the provider's fault "
              + kind
              + " was injected "
              + n
              + " times ("
              + f
              + "), not "
              + (least == most ? "" + least : "at least " + least));
    }
  }

  /**
   * A round the supervisor faulted with a link down was still running when the link went, lost a
   * lane, and the round after it found the lanes back.
   */
  private void linkFault(int k, JsonNode result, JsonNode round, List<JsonNode> rounds) {
    JsonNode down = null;
    boolean up = false;
    for (JsonNode link : supervisor.ofType("link")) {
      if (link.path("round").asInt() == k) {
        down = link.path("state").asText().equals("down") ? link : down;
        up |= link.path("state").asText().equals("up");
      }
    }
    if (down == null || !up) {
      fail("round " + k + ": the ledger has no link taken down and brought up again for it");
      return;
    }
    if (result.path("endedAtMillis").asLong() <= down.path("atMillis").asLong()) {
      fail("round " + k + " ended before the link went down: the fault hit no transfer");
    }
    JsonNode before = result.path("countersBefore");
    if (result.path("countersAfter").path("lanesLost").asLong() - before.path("lanesLost").asLong()
        < 1) {
      fail("round " + k + ": the link went down and no lane was lost");
    }
    String req = "requester-g" + round.path("requesterGeneration").asInt();
    List<JsonNode> next = withRound(receipts.get(req).ofType("round"), k + 1);
    if (next.isEmpty()) {
      fail("round " + k + ": no round after the link came back");
    } else if (next.get(0).path("countersAfter").path("lanesRestored").asLong()
        <= before.path("lanesRestored").asLong()) {
      fail("round " + (k + 1) + ": no lane was restored after the link came back");
    }
  }
}
