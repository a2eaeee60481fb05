package io.orbite.qualification.rdma;

import io.orbite.engine.fault.FaultHooks;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Fault hooks for a requester whose RDMA payload posts wait, on their lanes, until the test lets
 * them go (at most 20 s each): the slice's window stays bound at the source meanwhile, so its grant
 * and its slot are held for as long as the test needs.
 */
public final class HeldPosts implements FaultHooks {
  private final CountDownLatch posting = new CountDownLatch(1);
  private final CountDownLatch letGo = new CountDownLatch(1);

  /** Hooks that hold every payload post until {@link #letGo()}. */
  public HeldPosts() {}

  @Override
  public void beforeRdmaPost(String lane, int qpNum, long wrId, boolean write) {
    posting.countDown();
    try {
      letGo.await(20, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Whether a payload post reached its hook within 20 s (its slice's grant is bound by then). */
  public boolean awaitFirstPost() throws InterruptedException {
    return posting.await(20, TimeUnit.SECONDS);
  }

  /** Lets every held post go, and every later one through. */
  public void letGo() {
    letGo.countDown();
  }
}
