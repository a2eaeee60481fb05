package io.orbite.qualification.firsthour;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A newcomer's program whose {@code main} throws before it closes anything, run as a child JVM by
 * {@link ThrowingMainIT}. Two engines, each in an ActorSystem of its own ({@code
 * TransferEngine.start}): the source allocates and fills a region (shared with same-host peers),
 * the requester registers memory of its own, opens the source and reads the region (every byte
 * checked), opens a file segment (so the file ring lanes run too) and leaves it all open. Then it
 * prints {@code NON-DAEMON <name>} for each non-daemon thread other than {@code main}, {@code
 * THROWING}, and throws.
 *
 * <p>Argument: the path of a file for the file segment.
 */
public final class ThrowingApp {
  static final String FAILURE = "ThrowingApp: main fails before close()";
  private static final long LEN = 1 << 20;
  private static final long SEED = 0x7A80_0001L;

  private ThrowingApp() {}

  public static void main(String[] args) throws Exception {
    Path file = Path.of(args[0]);
    TransferEngine source =
        TransferEngine.start(
            EngineConfig.fromJson(
                """
        {"name":"throwing-source","listen":{"host":"127.0.0.1","port":0},"shm":{"enabled":true},
         "rdma":{"enabled":true,"provider":"software","softwareDevices":1}}"""));
    TransferEngine requester =
        TransferEngine.start(
            EngineConfig.fromJson(
                """
        {"name":"throwing-requester","listen":{"host":"127.0.0.1","port":0},
         "rdma":{"enabled":true,"provider":"software","softwareDevices":1}}"""));
    RegisteredMemory src = source.allocate(LEN, Access.READ);
    Pattern.fill(src.segment(), 0, LEN, SEED, 0);
    MemorySegment mine = Arena.ofShared().allocate(LEN, 4096);
    RegisteredMemory local = requester.register(mine, Access.READ_WRITE);
    RemoteSegment remote =
        requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
    Batch batch = requester.allocateBatch(1);
    batch.submit(List.of(TransferRequest.read(local, 0, remote, src.regionId(), 0, LEN)));
    BatchStatus status = batch.await(Duration.ofSeconds(15));
    long bad = Pattern.verify(mine, 0, LEN, SEED, 0);
    if (!status.allCompleted() || bad != -1) {
      System.out.println("FAILED " + status + " first bad byte " + bad);
      System.exit(2);
    }
    System.out.println("VERIFIED " + LEN + " B");
    requester.openFileSegment(file, Access.READ_WRITE, Duration.ofSeconds(10));
    Thread.getAllStackTraces().keySet().stream()
        .filter(t -> !t.isDaemon() && t.isAlive() && t != Thread.currentThread())
        .forEach(t -> System.out.println("NON-DAEMON " + t.getName()));
    System.out.println("THROWING");
    System.out.flush();
    throw new IllegalStateException(FAILURE);
  }
}
