package io.orbite.cluster;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;

/**
 * Where the directory actor publishes {@link DirectoryChange}s and each materialisation of {@link
 * PeerDirectory#changes()} takes them, as the engine's {@code peerEvents()} does: a bounded queue
 * per subscriber that drops its oldest change when the consumer is {@value #BACKLOG} behind, so a
 * stuck consumer costs bounded memory and never slows the actor. Publishing never blocks.
 */
final class ChangeHub {
  /** Most changes one subscriber may have waiting. */
  static final int BACKLOG = 1024;

  private final List<SourceQueueWithComplete<DirectoryChange>> queues =
      new CopyOnWriteArrayList<>();
  private volatile boolean completed;

  /** A source of the changes published from its materialisation on. */
  Source<DirectoryChange, NotUsed> source() {
    return Source.<DirectoryChange>queue(BACKLOG, OverflowStrategy.dropHead())
        .mapMaterializedValue(
            queue -> {
              queues.add(queue);
              queue.watchCompletion().whenComplete((done, failure) -> queues.remove(queue));
              if (completed) {
                queue.complete();
              }
              return NotUsed.getInstance();
            });
  }

  /** Queues {@code changes} for every subscriber, in order; any thread, never blocks. */
  void publish(List<DirectoryChange> changes) {
    for (SourceQueueWithComplete<DirectoryChange> queue : queues) {
      for (DirectoryChange change : changes) {
        queue.offer(change);
      }
    }
  }

  /** Ends every stream (the directory closed): a later materialisation ends at once. */
  void complete() {
    completed = true;
    for (SourceQueueWithComplete<DirectoryChange> queue : queues) {
      queue.complete();
    }
  }
}
