package io.orbite.qualification.bench;

import io.orbite.config.EngineConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.harness.EngineProcess;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The trials of {@code ./orbite bench heal}, against one source engine process (and its
 * replacements, at the same port) from the requester in this JVM: cut lanes under a running READ
 * loop, a SIGSTOPped source, a SIGKILLed and restarted one. Each trial adds one sample to its
 * figure; a heal that does not happen (an event that never comes, a READ that fails after the peer
 * is back) or a wrong byte is a failure, and ends the phase.
 *
 * <p>The phase order matters: {@code CUT n} closes the n source lanes that started <em>last</em>,
 * dead ones included. Cutting both lanes first leaves the two newest lanes the live ones; cutting
 * one lane then always hits the newest, live, lane.
 */
final class HealTrials implements AutoCloseable {
  /** Loop time before each cut, untouched, so the window before the cut has completions. */
  private static final long BEFORE_CUT_MILLIS = 300;

  /** Loop time after the lanes are back, inside the window a cut's stall is looked for in. */
  private static final long AFTER_RESTORE_MILLIS = 200;

  /** Idle time before a SIGSTOP or a SIGKILL: no task is running when the peer goes. */
  private static final long IDLE_MILLIS = 300;

  private static final Duration HEAL_TIMEOUT = Duration.ofSeconds(15);

  private final PrintStream human;
  private final TransferEngine requester;
  private final HealEvents events = new HealEvents();
  private final AutoCloseable subscription;
  private final List<String> failures = new CopyOnWriteArrayList<>();
  private final HealReads reads;
  private final Map<String, List<Double>> samples = new LinkedHashMap<>();
  private EngineProcess source;
  private RemoteSegment peer;
  private long remote;
  private long seed;

  private HealTrials(PrintStream human, EngineProcess source, TransferEngine requester)
      throws IOException {
    this.human = human;
    this.source = source;
    this.requester = requester;
    this.subscription = requester.onPeerEvent(events);
    RegisteredMemory local = requester.allocate(HealReads.LOCAL_BYTES, Access.READ_WRITE);
    this.reads = new HealReads(requester, local, failures);
    openSource();
  }

  /**
   * Starts the source process (engine defaults, at a port picked now, so its replacements take the
   * same endpoint) and the requester ({@code ORBITE_CONF}, with {@code tcp.lanes} held at 2).
   */
  static HealTrials start(PrintStream human, Path logDir) throws IOException {
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    EngineConfig base = EngineConfig.fromEnv();
    EngineConfig config = base.withName("bench-heal-requester").withTcp(base.tcp().withLanes(2));
    EngineProcess source = EngineProcess.startAt("bench-heal-source", logDir, port, Map.of());
    TransferEngine requester;
    try {
      requester = TransferEngine.start(config);
    } catch (RuntimeException e) {
      source.close();
      throw e;
    }
    try {
      return new HealTrials(human, source, requester);
    } catch (IOException | RuntimeException e) {
      requester.close(Duration.ofSeconds(30));
      source.close();
      throw e;
    }
  }

  TcpConfig tcp() {
    return requester.config().tcp();
  }

  EngineProcess source() {
    return source;
  }

  List<String> failures() {
    return failures;
  }

  Map<String, List<Double>> samples() {
    return samples;
  }

  long readsVerified() {
    return reads.readsVerified();
  }

  long readsFailed() {
    return reads.readsFailed();
  }

  /** A region in the source (filled with a pattern of its incarnation) and a segment open to it. */
  private void openSource() throws IOException {
    remote = Long.parseLong(source.call("ALLOC " + HealReads.REMOTE_BYTES + " READ"));
    seed = 0x4EA1L + source.generation();
    source.call("FILL " + remote + " " + seed);
    peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
  }

  /**
   * {@code all_lanes_cut_resume_ms}: both lanes' sockets cut under the READ loop; from the cut to
   * the completion of the first round submitted after the source said the sockets were closed (it
   * waited while the channel reconnected). The round in flight at the cut drains first (its READs
   * may fail PEER_LOST, counted), so the figure may include one round's own time.
   */
  void allLanesCut(int trials) throws Exception {
    try (HealReads.Loop loop = reads.new Loop(peer, remote, seed)) {
      for (int t = 1; t <= trials && failures.isEmpty(); t++) {
        long failedBefore = reads.readsFailed();
        Thread.sleep(BEFORE_CUT_MILLIS);
        int mark = events.mark();
        long cut = System.nanoTime();
        source.call("CUT 2");
        long cutDone = System.nanoTime();
        var none =
            events.await(mark, PeerEvent.LaneLost.class, e -> e.lanesLeft() == 0, HEAL_TIMEOUT);
        if (none == null) {
          fail("all lanes cut, trial " + t + ": no LaneLost left 0 lanes", mark);
          break;
        }
        if (!events.awaitHealed(mark, HEAL_TIMEOUT)) {
          fail("all lanes cut, trial " + t + ": the lanes did not come back", mark);
          break;
        }
        long first = loop.firstCompletedSubmittedAfter(cutDone, HEAL_TIMEOUT);
        if (first < 0) {
          fail("all lanes cut, trial " + t + ": no READ completed after the cut", mark);
          break;
        }
        double ms = (first - cut) / 1e6;
        sample("all_lanes_cut_resume_ms", ms);
        human.printf(Locale.ROOT, "  all lanes cut, trial %d: resumed after %.1f ms%n", t, ms);
        failedSince(failedBefore);
      }
      ended(loop);
    }
  }

  /**
   * {@code lane_cut_stall_ms}: one of the two lanes' sockets cut under the READ loop; the longest
   * time between consecutive completed rounds from the cut until {@link #AFTER_RESTORE_MILLIS}
   * after the lane is back. Beside it, the longest such time in the {@link #BEFORE_CUT_MILLIS}
   * before the cut ({@code lane_cut_gap_before_ms}: the loop's own pace and the host's noise) and
   * the lane's outage as the engine reports it.
   */
  void laneCut(int trials) throws Exception {
    try (HealReads.Loop loop = reads.new Loop(peer, remote, seed)) {
      for (int t = 1; t <= trials && failures.isEmpty(); t++) {
        long failedBefore = reads.readsFailed();
        Thread.sleep(BEFORE_CUT_MILLIS);
        int mark = events.mark();
        long cut = System.nanoTime();
        source.call("CUT 1");
        var lost = events.await(mark, PeerEvent.LaneLost.class, e -> true, HEAL_TIMEOUT);
        var back = events.await(mark, PeerEvent.LaneRestored.class, e -> true, HEAL_TIMEOUT);
        if (lost == null || back == null) {
          fail("lane cut, trial " + t + ": no lane was lost and restored", mark);
          break;
        }
        if (lost.lanesLeft() != 1) {
          fail("lane cut, trial " + t + ": CUT 1 left " + lost.lanesLeft() + " lanes", mark);
          break;
        }
        Thread.sleep(AFTER_RESTORE_MILLIS);
        double stall = loop.longestGapAcross(cut, System.nanoTime());
        double before = loop.longestGapWithin(cut - BEFORE_CUT_MILLIS * 1_000_000L, cut);
        sample("lane_cut_stall_ms", stall);
        sample("lane_cut_gap_before_ms", before);
        sample("lane_cut_outage_ms", (double) back.outageMillis());
        human.printf(
            Locale.ROOT,
            "  lane cut, trial %d: longest gap %.1f ms (before the cut %.1f ms), lane back after"
                + " %d ms%n",
            t,
            stall,
            before,
            back.outageMillis());
        failedSince(failedBefore);
        if (!events.awaitHealed(mark, HEAL_TIMEOUT)) {
          fail("lane cut, trial " + t + ": the lanes did not all come back", mark);
        }
      }
      ended(loop);
    }
  }

  /**
   * {@code sigstop_detect_ms}: the idle source SIGSTOPped; from {@code stop()} returning (every
   * thread stopped) to the first {@code LaneLost} (a keepalive unanswered past the liveness bound).
   * Then {@code sigcont_restore_ms}: from SIGCONT to the first {@code LaneRestored}; a READ round
   * must verify after, and every lost lane must come back.
   */
  void sigstop(int trials) throws Exception {
    for (int t = 1; t <= trials && failures.isEmpty(); t++) {
      long failedBefore = reads.readsFailed();
      if (!roundBefore("sigstop, trial " + t)) {
        break;
      }
      Thread.sleep(IDLE_MILLIS);
      int mark = events.mark();
      source.stop();
      Instant stopped = Instant.now();
      var lost =
          events.await(
              mark,
              PeerEvent.LaneLost.class,
              e -> true,
              Duration.ofMillis(tcp().livenessTimeoutMillis()).plus(HEAL_TIMEOUT));
      source.resume();
      Instant resumed = Instant.now();
      if (lost == null) {
        fail("sigstop, trial " + t + ": no lane was lost while the source was stopped", mark);
        break;
      }
      var back = events.await(mark, PeerEvent.LaneRestored.class, e -> true, HEAL_TIMEOUT);
      if (back == null) {
        fail("sigstop, trial " + t + ": no lane came back after SIGCONT", mark);
        break;
      }
      double detect = millis(stopped, lost.at());
      double restore = millis(resumed, back.at());
      sample("sigstop_detect_ms", detect);
      sample("sigcont_restore_ms", restore);
      human.printf(
          Locale.ROOT,
          "  sigstop, trial %d: lane lost after %.1f ms, back %.1f ms after SIGCONT%n",
          t,
          detect,
          restore);
      failedSince(failedBefore);
      if (!reads.once(peer, remote, seed)) {
        fail("sigstop, trial " + t + ": the READ round after SIGCONT did not verify", mark);
        break;
      }
      if (!events.awaitHealed(mark, HEAL_TIMEOUT)) {
        fail("sigstop, trial " + t + ": the lanes did not all come back", mark);
      }
      if (events.count(mark, PeerEvent.PeerFenced.class)
              + events.count(mark, PeerEvent.PeerLost.class)
          > 0) {
        fail("sigstop, trial " + t + ": the stopped peer was fenced or lost", mark);
      }
    }
  }

  /**
   * {@code restart_detect_ms}: the idle source SIGKILLed and started again at the same port; from
   * {@code restart()} returning (the replacement printed READY) to {@code PeerFenced} (a
   * reconnecting lane's HELLO refused by the new epoch). Negative when the requester learned it
   * before the bench read READY. The old segment must then be refused without a byte moved, and the
   * new incarnation, opened again, must verify.
   */
  void restart(int trials) throws Exception {
    for (int t = 1; t <= trials && failures.isEmpty(); t++) {
      long failedBefore = reads.readsFailed();
      if (!roundBefore("restart, trial " + t)) {
        break;
      }
      Thread.sleep(IDLE_MILLIS);
      RemoteSegment old = peer;
      long oldRemote = remote;
      long oldEpoch = source.epoch();
      int mark = events.mark();
      source.kill();
      Instant killed = Instant.now();
      source = source.restart();
      Instant ready = Instant.now();
      long newEpoch = source.epoch();
      var fenced =
          events.await(
              mark,
              PeerEvent.PeerFenced.class,
              e -> e.peer().epoch() == oldEpoch,
              Duration.ofMillis(tcp().livenessTimeoutMillis()).plus(HEAL_TIMEOUT));
      if (fenced == null) {
        // Whether the engine knows it and did not say so, or does not know it at all.
        fail(
            "restart, trial "
                + t
                + ": no PeerFenced for the replaced incarnation (the requester's table now: "
                + requester.peers()
                + ")",
            mark);
        break;
      }
      if (fenced.replacement().epoch() != newEpoch) {
        fail(
            "restart, trial "
                + t
                + ": PeerFenced names epoch "
                + Long.toHexString(fenced.replacement().epoch())
                + ", the replacement runs "
                + Long.toHexString(newEpoch),
            mark);
        break;
      }
      double detect = millis(ready, fenced.at());
      sample("restart_detect_ms", detect);
      String refused = reads.refusedThroughStale(old, oldRemote);
      // Its table entry retires once no segment refers to it.
      old.close();
      human.printf(
          Locale.ROOT,
          "  restart, trial %d: replacement READY %.0f ms after the kill, PeerFenced %.1f ms after"
              + " READY; the old segment: %s%n",
          t,
          millis(killed, ready),
          detect,
          refused);
      failedSince(failedBefore);
      openSource();
      if (!reads.once(peer, remote, seed)) {
        fail("restart, trial " + t + ": the READ round from the replacement did not verify", mark);
      }
    }
  }

  /** A READ round before a trial, so the lanes are known to work before the peer goes. */
  private boolean roundBefore(String trial) {
    if (reads.once(peer, remote, seed)) {
      return true;
    }
    fail(trial + ": the READ round before it did not verify", events.mark());
    return false;
  }

  /** Says so when READs failed (after drain, C5) since {@code before} failed ones. */
  private void failedSince(long before) {
    long n = reads.readsFailed() - before;
    if (n > 0) {
      human.printf(
          Locale.ROOT, "    %d READ(s) failed after drain; the last: %s%n", n, reads.lastFailed());
    }
  }

  private void ended(HealReads.Loop loop) {
    if (!loop.running() && failures.isEmpty()) {
      failures.add("the READ loop ended early");
    }
  }

  private void fail(String what, int mark) {
    failures.add(what + "; events since: " + events.since(mark));
  }

  private void sample(String figure, double value) {
    samples.computeIfAbsent(figure, k -> new ArrayList<>()).add(value);
  }

  private static double millis(Instant from, Instant to) {
    return Duration.between(from, to).toNanos() / 1e6;
  }

  @Override
  public void close() throws Exception {
    try {
      subscription.close();
      try {
        reads.free();
      } catch (RuntimeException busy) {
        // A round that never finished holds its batch; the engine's close below ends it.
      }
      requester.close(Duration.ofSeconds(30));
    } finally {
      source.close();
    }
  }
}
