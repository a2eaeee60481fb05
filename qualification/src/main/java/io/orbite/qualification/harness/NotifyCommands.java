package io.orbite.qualification.harness;

import io.orbite.engine.Batch;
import io.orbite.engine.Notification;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.ReceivedNotification;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.SubmissionStatus;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;

/**
 * {@link EngineMain}'s notification commands, to the peer that {@code OPEN} opened:
 *
 * <pre>
 * NOTIFY tag length seed        -> OK state kind detail   (a standalone notify of length bytes of
 *                                                  pattern seed; kind is - when there is none)
 * XFERN transport local n length stride localBase remote remoteBase tag length seed
 *                               -> OK bytes state kind detail   (one submission of n WRITEs, as
 *                                                  XFER lays them out, with a notification of the
 *                                                  tag and length bytes of pattern seed; bytes are
 *                                                  the completed bytes, state the notification's)
 * XFERNT (the arguments of XFERN)
 *                               -> OK bytes state kind writeDoneNanos roundTripNanos   (XFERN,
 *                                                  timed for bench notify: when the last WRITE
 *                                                  completed, in this process's nanoTime, and the
 *                                                  longest WRITE's submit-to-receipt time)
 * NOTIFICATIONS max             -> OK n tag/length/crc32-hex/sender-epoch-hex ...   (polls up to
 *                                                  max notifications this engine received)
 * </pre>
 */
final class NotifyCommands {
  private NotifyCommands() {}

  /** Runs one of the commands above. */
  static String run(
      TransferEngine engine, RemoteSegment peer, Map<Long, RegisteredMemory> regions, String[] t) {
    return switch (t[0]) {
      case "NOTIFY" ->
          "OK "
              + result(
                  engine.notify(peer, t[1], payload(Long.parseLong(t[3]), Integer.parseInt(t[2]))));
      case "XFERN" -> writeAndNotify(engine, peer, regions, t, false);
      case "XFERNT" -> writeAndNotify(engine, peer, regions, t, true);
      case "NOTIFICATIONS" -> {
        List<ReceivedNotification> got = engine.pollNotifications(Integer.parseInt(t[1]));
        StringBuilder b = new StringBuilder("OK ").append(got.size());
        for (ReceivedNotification n : got) {
          b.append(' ')
              .append(n.tag())
              .append('/')
              .append(n.length())
              .append('/')
              .append(Long.toHexString(crc(n.bytes())))
              .append('/')
              .append(Long.toHexString(n.sender().epoch()));
        }
        yield b.toString();
      }
      default -> "ERR unknown command " + t[0];
    };
  }

  /** {@code length} bytes of the pattern {@code seed}, from position 0. */
  static byte[] payload(long seed, int length) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) {
      b[i] = Pattern.at(seed, i);
    }
    return b;
  }

  /** The CRC-32 of {@code bytes}, as NOTIFICATIONS prints it. */
  static long crc(byte[] bytes) {
    CRC32 c = new CRC32();
    c.update(bytes);
    return c.getValue();
  }

  private static String result(NotificationResult r) {
    return r.state()
        + " "
        + (r.errorKind() == null ? "-" : r.errorKind().name())
        + " "
        + r.detail().replace('\n', ' ');
  }

  private static String writeAndNotify(
      TransferEngine engine,
      RemoteSegment peer,
      Map<Long, RegisteredMemory> regions,
      String[] t,
      boolean timed) {
    Transport transport = Transport.valueOf(t[1]);
    RegisteredMemory local = regions.get(Long.parseLong(t[2]));
    int n = Integer.parseInt(t[3]);
    long length = Long.parseLong(t[4]);
    long stride = Long.parseLong(t[5]);
    long localBase = Long.parseLong(t[6]);
    long remote = Long.parseLong(t[7]);
    long remoteBase = Long.parseLong(t[8]);
    Notification notification =
        Notification.of(t[9], payload(Long.parseLong(t[11]), Integer.parseInt(t[10])));
    List<TransferRequest> requests = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      requests.add(
          TransferRequest.write(
                  local, localBase + i * stride, peer, remote, remoteBase + i * stride, length)
              .withTransport(transport));
    }
    Batch batch = engine.allocateBatch(n);
    try {
      // Batch.submit reads the clock as it starts: a task's elapsed time runs from there, so
      // submitted + the longest elapsed is when the last WRITE completed (within a microsecond).
      long submitted = System.nanoTime();
      SubmissionStatus s = batch.submit(requests, notification).await(Duration.ofSeconds(120));
      long longest = 0;
      for (TaskResult r : s.tasks()) {
        longest = Math.max(longest, r.elapsedNanos());
        if (r.completed()
            && (r.bytes() != length
                || r.remoteEffect() != RemoteEffect.APPLIED
                || r.transport() != transport)) {
          return "ERR " + r;
        }
      }
      if (timed) {
        NotificationResult sent = s.notification();
        return "OK "
            + s.completedBytes()
            + " "
            + sent.state()
            + " "
            + (sent.errorKind() == null ? "-" : sent.errorKind().name())
            + " "
            + (submitted + longest)
            + " "
            + longest;
      }
      return "OK " + s.completedBytes() + " " + result(s.notification());
    } finally {
      batch.free();
    }
  }
}
