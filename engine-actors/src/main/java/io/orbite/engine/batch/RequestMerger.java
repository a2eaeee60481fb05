package io.orbite.engine.batch;

import io.orbite.engine.Op;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.TaskWork;
import java.util.Arrays;

/**
 * Request merging: finds runs of adjacent tasks of one submission that can travel as one physical
 * transfer, and plans them. Tasks merge when they are consecutive in the submission, go to the same
 * channel (one peer incarnation, one transport) with the same op, priority, lane and rail masks
 * (one merged transfer goes where every one of its tasks may go), local registration and remote
 * region, and their local and remote ranges both continue where the previous task's end; a run
 * stops at the channel's {@link PeerChannel#mergeLimitBytes()} (0: the channel never merges, as
 * when {@code merge.enabled} is false). A task whose destination overlaps another task's of the
 * same submission is never merged, so which bytes land last is what it would have been unmerged.
 * Pure: it reads the submission and returns a plan; the batch records the plan in its ledger before
 * anything is dispatched.
 */
final class RequestMerger {
  private RequestMerger() {}

  /**
   * The physical transfers of a submission: {@link #work} and {@link #routings} in submission order
   * (a merged group's work in place of its tasks), and each group: its leader's task index, its
   * task count and its merged work.
   */
  record Plan(
      TaskWork[] work,
      PeerSegment.Routing[] routings,
      int[] heads,
      int[] counts,
      TaskWork[] mergedWork,
      int groups,
      int tasksMerged) {
    int head(int g) {
      return heads[g];
    }

    int count(int g) {
      return counts[g];
    }

    TaskWork merged(int g) {
      return mergedWork[g];
    }
  }

  /**
   * Plans the merges of one submission's admitted work ({@code work[k]} null: the task failed
   * unsent).
   *
   * @return the plan, or null when no two tasks merge (the common case costs one pass)
   */
  static Plan plan(TaskWork[] work, PeerSegment.Routing[] routings) {
    int n = work.length;
    int firstPair = -1;
    for (int k = 0; k + 1 < n; k++) {
      if (adjacent(work, routings, k)) {
        firstPair = k;
        break;
      }
    }
    if (firstPair < 0) {
      return null;
    }
    boolean[] overlapping = inOrder(work, routings) ? null : overlaps(work, routings);
    TaskWork[] out = new TaskWork[n];
    PeerSegment.Routing[] outRoutings = new PeerSegment.Routing[n];
    int[] heads = new int[n / 2];
    int[] counts = new int[n / 2];
    TaskWork[] merged = new TaskWork[n / 2];
    int groups = 0;
    int tasksMerged = 0;
    int size = 0;
    for (int k = 0; k < n; ) {
      if (work[k] == null) {
        k++;
        continue;
      }
      int end = k + 1;
      if (k >= firstPair && (overlapping == null || !overlapping[k])) {
        long limit = routings[k].channel().mergeLimitBytes();
        long bytes = work[k].lengthBytes();
        while (end < n
            && (overlapping == null || !overlapping[end])
            && adjacent(work, routings, end - 1)
            && bytes + work[end].lengthBytes() <= limit) {
          bytes += work[end].lengthBytes();
          end++;
        }
        if (end - k > 1) {
          TaskWork a = work[k];
          long deadline = a.deadlineNanos();
          for (int j = k + 1; j < end; j++) {
            deadline = Math.min(deadline, work[j].deadlineNanos());
          }
          TaskWork m =
              new TaskWork(
                  a.sink(),
                  a.taskIndex(),
                  a.op(),
                  a.local(),
                  a.localOffset(),
                  a.regionId(),
                  a.remoteOffset(),
                  bytes,
                  deadline,
                  a.priority(),
                  a.laneMask(),
                  a.railMask());
          heads[groups] = a.taskIndex();
          counts[groups] = end - k;
          merged[groups] = m;
          groups++;
          tasksMerged += end - k;
          out[size] = m;
          outRoutings[size++] = routings[k];
          k = end;
          continue;
        }
      }
      out[size] = work[k];
      outRoutings[size++] = routings[k];
      k = end;
    }
    if (groups == 0) {
      return null;
    }
    return new Plan(
        Arrays.copyOf(out, size),
        Arrays.copyOf(outRoutings, size),
        heads,
        counts,
        merged,
        groups,
        tasksMerged);
  }

  /** Whether tasks {@code k} and {@code k + 1} may travel in one transfer (limits aside). */
  static boolean adjacent(TaskWork[] work, PeerSegment.Routing[] routings, int k) {
    TaskWork a = work[k];
    TaskWork b = work[k + 1];
    if (a == null || b == null) {
      return false;
    }
    PeerChannel channel = routings[k].channel();
    return channel == routings[k + 1].channel()
        && channel.mergeLimitBytes() > 0
        && a.op() == b.op()
        && a.priority() == b.priority()
        && a.laneMask() == b.laneMask()
        && a.railMask() == b.railMask()
        && a.regionId() == b.regionId()
        && a.sink() == b.sink()
        && a.local().address() == b.local().address()
        && a.local().byteSize() == b.local().byteSize()
        && a.localOffset() + a.lengthBytes() == b.localOffset()
        && a.remoteOffset() + a.lengthBytes() == b.remoteOffset();
  }

  /**
   * Whether no two destinations of the submission can overlap, found in one pass without
   * allocating: every task's destination is in one space and begins at or after the end of the one
   * before it (the usual layout of pages to merge). Otherwise {@link #overlaps} sorts them.
   */
  static boolean inOrder(TaskWork[] work, PeerSegment.Routing[] routings) {
    boolean first = true;
    long space = 0;
    long end = 0;
    for (int k = 0; k < work.length; k++) {
      TaskWork w = work[k];
      if (w == null) {
        continue;
      }
      long s = space(w, routings[k]);
      long begin = start(w);
      if (!first && (s != space || begin < end)) {
        return false;
      }
      first = false;
      space = s;
      end = begin + w.lengthBytes();
    }
    return true;
  }

  /**
   * Which tasks' destinations overlap another task's destination in the submission: a READ's is its
   * local range (by address), a WRITE's its remote range (by channel and region). Such tasks keep
   * their own transfers, so that merging never changes which bytes land last.
   */
  static boolean[] overlaps(TaskWork[] work, PeerSegment.Routing[] routings) {
    int n = work.length;
    boolean[] out = new boolean[n];
    Integer[] order = new Integer[n];
    int m = 0;
    for (int k = 0; k < n; k++) {
      if (work[k] != null) {
        order[m++] = k;
      }
    }
    Integer[] sorted = Arrays.copyOf(order, m);
    Arrays.sort(
        sorted,
        (x, y) -> {
          int c = Long.compare(space(work[x], routings[x]), space(work[y], routings[y]));
          return c != 0 ? c : Long.compare(start(work[x]), start(work[y]));
        });
    // Sorted by space then start: a task overlaps another of its space when it begins before the
    // furthest end seen so far in that space.
    long furthest = Long.MIN_VALUE;
    int furthestTask = -1;
    long space = 0;
    boolean first = true;
    for (int idx : sorted) {
      long s = space(work[idx], routings[idx]);
      if (first || s != space) {
        space = s;
        furthest = Long.MIN_VALUE;
        furthestTask = -1;
        first = false;
      }
      long begin = start(work[idx]);
      if (furthestTask >= 0 && begin < furthest) {
        out[idx] = true;
        out[furthestTask] = true;
      }
      long end = begin + work[idx].lengthBytes();
      if (end > furthest) {
        furthest = end;
        furthestTask = idx;
      }
    }
    return out;
  }

  /**
   * The space a task's destination lies in: local memory for a READ (one space: addresses are
   * unique), a remote region per channel for a WRITE.
   */
  private static long space(TaskWork w, PeerSegment.Routing routing) {
    if (w.op() == Op.READ) {
      return Long.MIN_VALUE;
    }
    return w.regionId() * 31 + System.identityHashCode(routing.channel());
  }

  private static long start(TaskWork w) {
    return w.op() == Op.READ ? w.local().address() + w.localOffset() : w.remoteOffset();
  }
}
