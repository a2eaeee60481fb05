package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.engine.RegisteredMemory;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.util.ArrayList;
import java.util.List;

/**
 * A round of READs and one of WRITEs over TCP from a requester process to a source engine of the
 * test's own JVM, every byte checked on both sides: the destination's payload and the guard bytes
 * around it, and the other side untouched.
 */
final class ProcessRounds {
  private static final int TASKS = 8;
  private static final long CHUNK = 128 * 1024 + 5;
  private static final long STRIDE = CHUNK + 333;

  private ProcessRounds() {}

  /**
   * READs of the source's region {@code served} into the requester's {@code local}, then WRITEs
   * back; both regions must be at least {@code TASKS * STRIDE + 128} bytes.
   */
  static void readAndWrite(EngineProcess requester, long local, RegisteredMemory served, long seed)
      throws Exception {
    long data = seed * 3;
    long guard = seed * 3 + 1;
    long written = seed * 3 + 2;
    long size = served.lengthBytes();

    Pattern.fill(served.segment(), 0, size, data, 0);
    requester.call("FILL " + local + " " + guard);
    assertEquals(
        String.valueOf(TASKS * CHUNK), requester.call(xfer("READ", local, 17, served, 29)));
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      lines.add((17 + i * STRIDE) + " " + CHUNK + " " + data + " " + (29 + i * STRIDE));
    }
    assertEquals(
        "OK",
        requester.ask("VERIFY " + local + " " + guard + " " + TASKS, lines),
        "the requester's region after the READs: payload and guards");
    assertEquals(
        -1, Pattern.verify(served.segment(), 0, size, data, 0), "the source untouched by READs");

    requester.call("FILL " + local + " " + written);
    Pattern.fill(served.segment(), 0, size, guard, 0);
    assertEquals(
        String.valueOf(TASKS * CHUNK), requester.call(xfer("WRITE", local, 3, served, 101)));
    List<Span> spans = new ArrayList<>();
    for (int i = 0; i < TASKS; i++) {
      spans.add(new Span(101 + i * STRIDE, CHUNK, written, 3 + i * STRIDE));
    }
    assertRegion(served.segment(), spans, guard, "the source's region after the WRITEs");
    assertEquals(
        "OK",
        requester.ask("VERIFY " + local + " " + written + " 0", List.of()),
        "the requester's region untouched by the WRITEs");
  }

  private static String xfer(
      String op, long local, long localBase, RegisteredMemory served, long remoteBase) {
    return String.join(
        " ",
        "XFER",
        op,
        "TCP",
        String.valueOf(local),
        String.valueOf(TASKS),
        String.valueOf(CHUNK),
        String.valueOf(STRIDE),
        String.valueOf(localBase),
        String.valueOf(served.regionId()),
        String.valueOf(remoteBase));
  }
}
