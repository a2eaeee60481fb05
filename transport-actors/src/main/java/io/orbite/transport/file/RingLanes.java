package io.orbite.transport.file;

import io.orbite.config.FileConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.spi.TransportContext;
import io.orbite.nativebind.uring.IoUring;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a file transport's ring lanes, on its first open: picks the engine ({@code file.engine}:
 * io_uring where it is available, else FileChannel), sets up each lane's {@link FileIo} (through
 * {@link FileIoFaults}, the tests' seam) and names the lanes' threads after the engine: {@code
 * orbite-<engine>-file-ring-<i>}, and {@code orbite-<engine>-file-channel-<i>-<n>} for a
 * FileChannel lane's workers. The lanes are not started: each lane's owner starts it.
 */
final class RingLanes {
  private static final Logger LOG = LoggerFactory.getLogger(RingLanes.class);

  /**
   * The lanes made.
   *
   * @param lanes one per {@code file.lanes}, not started
   * @param uring whether they run io_uring (files are then opened as descriptors), else FileChannel
   */
  record Made(List<RingLane> lanes, boolean uring) {}

  private RingLanes() {}

  /**
   * Makes {@code file.lanes} lanes; nothing is left open when it fails.
   *
   * @param context the transport's context
   * @return the lanes
   * @throws FileOpener.Refused (UNAVAILABLE) when io_uring is required and unavailable, or a lane's
   *     {@code FileIo} cannot be set up
   */
  static Made make(TransportContext context) throws FileOpener.Refused {
    FileConfig config = context.config().file();
    String engine = config.engine();
    if (engine.equals("io_uring") && !IoUring.isAvailable()) {
      throw new FileOpener.Refused(
          ErrorKind.UNAVAILABLE,
          "file.engine is io_uring but io_uring is unavailable: "
              + IoUring.unavailabilityCause().orElse("?"));
    }
    boolean uring = !engine.equals("channel") && IoUring.isAvailable();
    if (engine.equals("auto") && !uring) {
      LOG.info(
          "file transport: io_uring unavailable ({}); using FileChannel positioned I/O",
          IoUring.unavailabilityCause().orElse("?"));
    }
    String threads = "orbite-" + context.config().name() + "-file-";
    List<FileIo> made = new ArrayList<>();
    for (int i = 0; i < config.lanes(); i++) {
      try {
        made.add(
            FileIoFaults.apply(
                uring
                    ? new UringFileIo(config.queueDepth())
                    : new ChannelFileIo(
                        config.queueDepth(), config.channelThreads(), threads + "channel-" + i)));
      } catch (RuntimeException e) {
        made.forEach(FileIo::close); // nothing was submitted to them
        throw new FileOpener.Refused(
            ErrorKind.UNAVAILABLE, "cannot set up ring lane " + i + ": " + e.getMessage());
      }
    }
    Duration window = Duration.ofMillis(context.config().timeouts().destructionWindowMillis());
    List<RingLane> lanes = new ArrayList<>();
    for (int i = 0; i < made.size(); i++) {
      lanes.add(
          new RingLane(
              "file-" + i, threads + "ring-" + i, made.get(i), context.counters(), window));
    }
    LOG.debug(
        "file transport: {} {} lane(s), queue depth {}",
        lanes.size(),
        uring ? "io_uring" : "FileChannel",
        config.queueDepth());
    return new Made(List.copyOf(lanes), uring);
  }
}
