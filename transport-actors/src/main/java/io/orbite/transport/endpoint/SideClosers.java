package io.orbite.transport.endpoint;

import io.orbite.engine.spi.TransportCommand.SideClosed;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The closes of one side of a transport (C8) that wait for its workers (endpoints, source lanes,
 * source sessions) to end: each is answered once none is left. Used on its transport actor's thread
 * only.
 */
public final class SideClosers {
  private final String transport;
  private final List<ActorRef<SideClosed>> waiting = new ArrayList<>();

  /**
   * The closers of one side of {@code transport}.
   *
   * @param transport what the answer names ({@code TCP}, {@code SHM}, {@code RDMA})
   */
  public SideClosers(String transport) {
    this.transport = transport;
  }

  /**
   * A close that waits.
   *
   * @param replyTo told {@link SideClosed} once the side's workers have all ended
   */
  public void add(ActorRef<SideClosed> replyTo) {
    waiting.add(replyTo);
  }

  /**
   * Answers every waiting close when {@code drained}.
   *
   * @param drained whether none of the side's workers is left
   */
  public void answerIf(boolean drained) {
    if (drained && !waiting.isEmpty()) {
      waiting.forEach(r -> r.tell(new SideClosed(transport)));
      waiting.clear();
    }
  }
}
