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
    if (kind.equals("withhold")) {
      t.withholdCqe(qpNum, wrId);
      injected.incrementAndGet();
    } else if (kind.equals("interrupt") && n == 0) {
      t.interruptCopy(qpNum, wrId, interruptBytes);
      injected.incrementAndGet();
    }
  }

  /** Arms {@code kind} ({@code none}, {@code withhold} or {@code interrupt}) from the next post. */
  void arm(String kind, int bytes) {
    if (!kind.equals("none") && !kind.equals("withhold") && !kind.equals("interrupt")) {
      throw new IllegalArgumentException("fault '" + kind + "' is not none, withhold, interrupt");
    }
    armed = "none";
    posts.set(0);
    injected.set(0);
    interruptBytes = bytes;
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
