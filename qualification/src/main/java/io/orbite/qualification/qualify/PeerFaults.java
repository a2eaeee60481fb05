package io.orbite.qualification.qualify;

import io.orbite.engine.fault.FaultHooks;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The software RDMA provider's fault table in a {@link QualifyPeer}, armed by the supervisor for
 * one round of a fault mode (docs/qualification.md, "Modes"): {@code withhold} withholds the
 * completion of every payload work request posted while armed (their bytes still move: {@code
 * lost-completion}); {@code interrupt} cuts the first one's copy after a given number of bytes, and
 * its QP goes to ERR ({@code inflight-err}). The faults are the provider's own ({@link
 * SoftFaults}), reached through the engine's test-only fault hooks at each payload post; a peer of
 * a mode without faults runs with no hooks at all.
 */
final class PeerFaults implements FaultHooks {
  private final AtomicReference<SoftFaults> table = new AtomicReference<>();
  private final AtomicInteger posts = new AtomicInteger();
  private final AtomicInteger injected = new AtomicInteger();
  private volatile String armed = "none";
  private volatile int interruptBytes;
  private volatile int destroysAtArm;
  private volatile String released = "-";
  private volatile java.util.concurrent.CountDownLatch held =
      new java.util.concurrent.CountDownLatch(1);

  @Override
  public Object rdmaFaults() {
    // A table serves one provider: each open of the rails gets a fresh one, and the last is armed.
    SoftFaults t = SoftFaults.create();
    table.set(t);
    return t;
  }

  @Override
  public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
    SoftFaults t = table.get();
    String kind = armed;
    if (t == null || kind.equals("none")) {
      return;
    }
    int n = posts.getAndIncrement();
    switch (kind) {
      case "withhold" -> {
        t.withholdCqe(qpNum, wrId);
        injected.incrementAndGet();
      }
      case "interrupt" -> {
        if (n == 0) {
          t.interruptCopy(qpNum, wrId, interruptBytes);
          injected.incrementAndGet();
        }
      }
      case "cleanup" -> {
        t.withholdCqe(qpNum, wrId);
        if (n == 0) {
          // EIO (5), sticky: the QP is never destroyed, so its work requests stay pending.
          t.failNextDestroy(SoftFaults.Kind.QP, 5, true);
        }
        injected.incrementAndGet();
      }
      case "hold" -> {
        if (n == 0) {
          injected.incrementAndGet();
          try {
            // The lane waits here, its grant given, until the channel's gate has closed on the
            // peer's loss (the supervisor kills the source): the payload is then never posted.
            released =
                held.await(60, java.util.concurrent.TimeUnit.SECONDS) ? "peer-lost" : "timeout";
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            released = "interrupted";
          }
        }
      }
      default -> {}
    }
  }

  @Override
  public void rdmaPeerLost(String peer) {
    // The gate of the held post's channel has closed: the post goes on, and is not sent.
    held.countDown();
  }

  /** How the held post went on: {@code peer-lost}, {@code timeout}, or {@code -} when none. */
  String released() {
    return released;
  }

  /** QP destroys the provider was asked for since the last {@link #arm}. */
  int qpDestroys() {
    SoftFaults t = table.get();
    return t == null ? 0 : t.destroyCalls(SoftFaults.Kind.QP) - destroysAtArm;
  }

  /** Arms {@code kind} (none, withhold, interrupt, hold or cleanup) from the next post. */
  void arm(String kind, int bytes) {
    if (!java.util.List.of("none", "withhold", "interrupt", "hold", "cleanup").contains(kind)) {
      throw new IllegalArgumentException(
          "fault '" + kind + "' is not none, withhold, interrupt, hold or cleanup");
    }
    armed = "none";
    held.countDown();
    held = new java.util.concurrent.CountDownLatch(1);
    posts.set(0);
    injected.set(0);
    released = "-";
    interruptBytes = bytes;
    SoftFaults t = table.get();
    destroysAtArm = t == null ? 0 : t.destroyCalls(SoftFaults.Kind.QP);
    armed = kind;
  }

  String armed() {
    return armed;
  }

  /** Payload posts seen since the last {@link #arm}. */
  int posts() {
    return posts.get();
  }

  /** Faults injected since the last {@link #arm}. */
  int injected() {
    return injected.get();
  }
}
