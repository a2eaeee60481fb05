package io.orbite.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * What the directory's cluster tests share: the payload and guard layout, READs and their checks.
 */
final class Fixtures {
  private Fixtures() {}

  static final Duration WAIT = Duration.ofSeconds(20);
  static final long LEN = 256 * 1024;
  static final long GUARD = 4096;
  static final long SOURCE_SEED = 0x40_0001L;
  static final long GUARD_SEED = 0x40_0002L;
  static final String POOL = "kv-pool";

  /** Changes a directory's stream delivers, collected as they come. */
  static ConcurrentLinkedQueue<DirectoryChange> collect(
      PeerDirectory directory, ActorSystem<?> system) {
    ConcurrentLinkedQueue<DirectoryChange> seen = new ConcurrentLinkedQueue<>();
    directory.changes().runForeach(seen::add, system);
    return seen;
  }

  static boolean lists(PeerDirectory directory, TransferEngine engine) {
    return directory.entry(engine.config().name()).stream()
        .anyMatch(e -> e.segment().equals(engine.localSegment()));
  }

  /** A source region named {@value #POOL}, filled with the pattern. */
  static RegisteredMemory sourceRegion(TransferEngine source) {
    RegisteredMemory region = source.allocate(LEN, Access.READ_WRITE, POOL);
    Bytes.fill(region.segment(), 0, LEN, SOURCE_SEED);
    return region;
  }

  /** A local buffer of guard, payload, guard, all filled with the guard pattern. */
  static RegisteredMemory guarded(TransferEngine requester) {
    RegisteredMemory local = requester.allocate(GUARD + LEN + GUARD, Access.READ_WRITE);
    Bytes.fill(local.segment(), 0, GUARD + LEN + GUARD, GUARD_SEED);
    return local;
  }

  static void assertReadWhole(RegisteredMemory local, RegisteredMemory source, String what) {
    assertEquals(
        -1, Bytes.mismatch(local.segment(), GUARD, LEN, SOURCE_SEED, 0), what + ": payload");
    assertEquals(
        -1, Bytes.mismatch(local.segment(), 0, GUARD, GUARD_SEED, 0), what + ": guard before");
    assertEquals(
        -1,
        Bytes.mismatch(local.segment(), GUARD + LEN, GUARD, GUARD_SEED, GUARD + LEN),
        what + ": guard after");
    assertEquals(-1, Bytes.mismatch(source.segment(), 0, LEN, SOURCE_SEED, 0), what + ": source");
  }

  static void assertUntouched(RegisteredMemory local, String what) {
    assertEquals(-1, Bytes.mismatch(local.segment(), 0, GUARD + LEN + GUARD, GUARD_SEED, 0), what);
  }

  static BatchStatus read(
      TransferEngine requester, RegisteredMemory local, RemoteSegment remote, long regionId) {
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(TransferRequest.read(local, GUARD, remote, regionId, 0, LEN)));
      return batch.await(WAIT);
    } finally {
      batch.free();
    }
  }

  static void assertRefusedWithNoByte(
      TransferEngine requester, RegisteredMemory local, RemoteSegment remote, long regionId) {
    Batch batch = requester.allocateBatch(1);
    try {
      BatchStatus status;
      try {
        batch.submit(List.of(TransferRequest.read(local, GUARD, remote, regionId, 0, LEN)));
        status = batch.await(WAIT);
      } catch (TransferException refused) {
        assertTrue(
            refused.kind() == ErrorKind.EPOCH_MISMATCH || refused.kind() == ErrorKind.PEER_LOST,
            refused::toString);
        assertUntouched(local, "refused at submit");
        return;
      }
      TaskResult task = status.tasks().get(0);
      assertTrue(
          task.errorKind() == ErrorKind.EPOCH_MISMATCH || task.errorKind() == ErrorKind.PEER_LOST,
          status::toString);
      assertEquals(0, task.bytes(), status::toString);
      assertUntouched(local, "refused READ");
    } finally {
      batch.free();
    }
  }
}
