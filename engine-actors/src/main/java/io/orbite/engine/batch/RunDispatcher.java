package io.orbite.engine.batch;

import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.TaskWork;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a batch hands its admitted tasks to their channels: in runs of consecutive tasks for one
 * channel, each channel flushed after its first run (so its lanes start while the rest of a big
 * submission is dispatched) and at the end. On the submitting thread, outside the batch's monitor.
 */
final class RunDispatcher {
  private static final Logger LOG = LoggerFactory.getLogger(RunDispatcher.class);

  private RunDispatcher() {}

  /**
   * The most tasks of a submission's first run for a channel: small, so that the lanes start on a
   * big submission while the rest of it is still being dispatched (each channel is flushed after
   * its first run).
   */
  static final int FIRST_RUN = 64;

  /**
   * The most tasks handed to a channel in one later {@link PeerChannel#dispatchRun}: a run's lock
   * and lane hand-off are spread over many tasks, and a transport that merges neighbouring tasks
   * (TCP) can merge no further than its run, so a longer run makes fewer, larger wire requests.
   */
  static final int RUN = 512;

  /**
   * Hands admitted tasks to their channels, on the caller's thread and outside this monitor: a
   * channel may copy a small task right away and deliver its receipt on this thread. Consecutive
   * tasks for one channel go in runs: the first of at most {@link #FIRST_RUN}, the later ones of at
   * most {@link #RUN}; each channel is flushed after its first run (so it starts while the rest are
   * dispatched) and at the end. The receipt counts are recorded together at the end, under one
   * lock: receipts that arrive meanwhile are counted, and their tasks end then. Adjacent tasks are
   * first merged into physical transfers where their channel allows ({@link RequestMerger}).
   */
  static void dispatch(BatchCore core, BatchCore.Admitted admitted, EngineTally counters) {
    PeerSegment.Routing[] routings = admitted.routings();
    TaskWork[] work = admitted.work();
    RequestMerger.Plan plan = RequestMerger.plan(work, routings);
    if (plan != null) {
      // Recorded before the first dispatch: a merged transfer's receipt can arrive at once.
      core.merged(plan);
      work = plan.work();
      routings = plan.routings();
    }
    int[] owed = new int[work.length];
    Arrays.fill(owed, -1);
    List<PeerChannel> touched = null;
    int k = 0;
    while (k < work.length) {
      if (work[k] == null) {
        k++;
        continue;
      }
      PeerChannel channel = routings[k].channel();
      int runLimit = touched == null || !touched.contains(channel) ? FIRST_RUN : RUN;
      int end = k + 1;
      long bytes = work[k].lengthBytes();
      while (end < work.length
          && end - k < runLimit
          && work[end] != null
          && routings[end].channel() == channel) {
        bytes += work[end].lengthBytes();
        end++;
      }
      try {
        counters.dispatched(channel.transport(), end - k, bytes);
        if (work.length == 1) {
          owed[k] = channel.dispatchAlone(work[k]);
        } else {
          channel.dispatchRun(work, k, end, owed);
        }
      } catch (RuntimeException e) {
        // A transport that breaks its contract: the tasks it did not take are failed as never sent.
        LOG.error(
            "batch {}: dispatch of tasks {}..{} to {} failed: {}",
            core.name(),
            work[k].taskIndex(),
            work[end - 1].taskIndex(),
            channel.transport(),
            e.toString(),
            e);
        for (int j = k; j < end; j++) {
          if (owed[j] < 0) {
            core.failUnsent(
                work[j].taskIndex(),
                "the " + channel.transport() + " transport refused the task: " + e);
          }
        }
      }
      if (touched == null) {
        touched = new ArrayList<>(2);
      }
      if (!touched.contains(channel)) {
        touched.add(channel);
        channel.flush();
      }
      k = end;
    }
    core.sealed(work, owed);
    if (touched != null && work.length > 1) {
      for (PeerChannel channel : touched) {
        channel.flush();
      }
    }
  }
}
