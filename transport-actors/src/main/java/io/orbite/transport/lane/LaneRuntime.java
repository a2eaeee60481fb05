package io.orbite.transport.lane;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;
import org.agrona.ErrorHandler;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.AgentTerminationException;
import org.agrona.concurrent.IdleStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The only place the transports make threads. A lane's duty cycle ({@link LaneAgent}) runs under
 * Agrona's {@link AgentRunner} on a daemon platform thread of its own, named {@code orbite-<lane>};
 * a blocking reader that is not a duty cycle (a control connection's reader, a QP repair) gets a
 * daemon thread here too ({@link #startBlocking}), and a worker pool its factory ({@link
 * #factory}). Daemon threads: a lane never keeps a JVM alive; the engine's close ends them.
 */
public final class LaneRuntime {
  private static final Logger LOG = LoggerFactory.getLogger(LaneRuntime.class);

  /** A lane's end is reported through {@link LaneAgent#ended}, not as an error. */
  private static final ErrorHandler ERRORS =
      e -> {
        if (!(e instanceof AgentTerminationException)) {
          LOG.error("lane runner: {}", e.toString(), e);
        }
      };

  private LaneRuntime() {}

  /**
   * Starts {@code lane}'s duty cycle on a thread of its own named {@code orbite-<lane's name>}.
   *
   * @param lane the lane
   */
  public static void start(LaneAgent<?> lane) {
    start("orbite-" + lane.name(), lane);
  }

  /**
   * Starts {@code lane}'s duty cycle on a thread of its own named {@code threadName}.
   *
   * @param threadName the thread's name
   * @param lane the lane
   */
  public static void start(String threadName, LaneAgent<?> lane) {
    IdleStrategy idle = new Idler(lane);
    AgentRunner runner = new AgentRunner(idle, ERRORS, null, lane);
    // Not AgentRunner.startOnThread: it renames the thread after the agent's role.
    Thread thread = platform(threadName).unstarted(runner);
    lane.runsOn(thread);
    thread.start();
  }

  /**
   * Starts {@code body} on a daemon thread named {@code name}: work that blocks and is not a duty
   * cycle.
   *
   * @param name the thread's name
   * @param body what it runs
   * @return the started thread
   */
  public static Thread startBlocking(String name, Runnable body) {
    return platform(name).start(body);
  }

  /**
   * A factory of daemon threads named {@code prefix-<n>}, for a worker pool.
   *
   * @param prefix the threads' name prefix
   * @return the factory
   */
  public static ThreadFactory factory(String prefix) {
    AtomicLong next = new AtomicLong();
    return r -> platform(prefix + "-" + next.incrementAndGet()).unstarted(r);
  }

  private static Thread.Builder.OfPlatform platform(String name) {
    return Thread.ofPlatform()
        .daemon()
        .name(name)
        .uncaughtExceptionHandler(
            (t, e) -> LOG.error("{} failed: {}", t.getName(), e.toString(), e));
  }

  /** Hands the runner's idle calls to the lane, which knows how it waits. */
  private static final class Idler implements IdleStrategy {
    private final LaneAgent<?> lane;

    Idler(LaneAgent<?> lane) {
      this.lane = lane;
    }

    @Override
    public void idle(int workCount) {
      lane.idle(workCount);
    }

    @Override
    public void idle() {
      lane.idle(0);
    }

    @Override
    public void reset() {}
  }
}
