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
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * A newcomer's program with observability on, run as a child JVM by {@link JvmExitIT}: an engine of
 * its own with metrics and dashboard, one spawned in the application's system with metrics, a
 * transfer between them with every byte checked, then {@code close()}, {@code terminate()} and the
 * end of {@code main}. Prints {@code CLOSED} when it returns, after the non-daemon threads still
 * alive then.
 */
public final class ObservedApp {
  private static final long LEN = 1 << 20;
  private static final long SEED = 0x0B5E_0001L;

  private ObservedApp() {}

  public static void main(String[] args) throws Exception {
    TransferEngine source =
        TransferEngine.start(
            EngineConfig.fromJson(
                """
        {"name":"observed-source","observability":{"metrics":{"enabled":true,"host":"127.0.0.1","port":0},
         "dashboard":{"enabled":true,"host":"127.0.0.1","port":0}}}"""));
    ActorSystem<Void> app = ActorSystem.create(Behaviors.empty(), "observed-app");
    TransferEngine requester =
        TransferEngine.spawn(
            app,
            EngineConfig.fromJson(
                """
        {"name":"observed-requester","observability":{"metrics":{"enabled":true,"host":"127.0.0.1","port":0}}}"""));
    RegisteredMemory src = source.allocate(LEN, Access.READ_WRITE);
    Pattern.fill(src.segment(), 0, LEN, SEED, 0);
    RegisteredMemory local = requester.allocate(LEN, Access.READ_WRITE);
    try (RemoteSegment remote =
        requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10))) {
      Batch batch = requester.allocateBatch(1);
      batch.submit(List.of(TransferRequest.read(local, 0, remote, src.regionId(), 0, LEN)));
      BatchStatus status = batch.await(Duration.ofSeconds(15));
      long bad = Pattern.verify(local.segment(), 0, LEN, SEED, 0);
      if (!status.allCompleted() || bad != -1) {
        System.out.println("FAILED " + status + " first bad byte " + bad);
        System.exit(2);
      }
      batch.free();
    }
    System.out.println(
        "VERIFIED "
            + LEN
            + " B; endpoints "
            + source.observabilityUrls()
            + " "
            + requester.observabilityUrls());
    requester.close(Duration.ofSeconds(20));
    app.terminate();
    app.getWhenTerminated().toCompletableFuture().get();
    source.close(Duration.ofSeconds(20));
    Thread.getAllStackTraces().keySet().stream()
        .filter(
            t ->
                !t.isDaemon()
                    && t.isAlive()
                    && t != Thread.currentThread()
                    && !t.getName().equals("DestroyJavaVM"))
        .forEach(t -> System.out.println("NON-DAEMON " + t.getName()));
    System.out.println("CLOSED");
  }
}
