package io.orbite.qualification.contract.suite;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.contract.EnginePair;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The far side of a check: the region a request names, whose every byte the check reads back
 * through the side that owns it, never through the transport under test.
 */
interface Far {
  /** The segment requests name. */
  RemoteSegment segment();

  /** The region of {@link #segment()} requests name. */
  long regionId();

  long lengthBytes();

  /** Fills the whole region with pattern {@code seed}. */
  void fill(long seed) throws IOException;

  /**
   * Asserts every byte of the region: each span holds its pattern, every other byte the guard
   * pattern {@code guardSeed}.
   */
  void assertHolds(List<Span> spans, long guardSeed, String what) throws IOException;

  /**
   * A region of a source engine process, filled and read back by the process itself ({@code FILL},
   * {@code VERIFY}).
   */
  record OfProcess(EngineProcess source, long regionId, long lengthBytes, RemoteSegment segment)
      implements Far {
    @Override
    public void fill(long seed) throws IOException {
      source.call("FILL " + regionId + " " + seed);
    }

    @Override
    public void assertHolds(List<Span> spans, long guardSeed, String what) throws IOException {
      assertEquals(
          "OK", source.verify(regionId, guardSeed, spans), what + " (the source's region)");
    }
  }

  /**
   * A file, filled and read back through a shared mapping of it, which sees what the file
   * transport's reads and writes of the page cache do.
   */
  record OfFile(MemorySegment mapped, RemoteSegment segment) implements Far {
    @Override
    public long regionId() {
      return TransferEngine.FILE_REGION_ID;
    }

    @Override
    public long lengthBytes() {
      return mapped.byteSize();
    }

    @Override
    public void fill(long seed) {
      Pattern.fill(mapped, 0, mapped.byteSize(), seed, 0);
    }

    @Override
    public void assertHolds(List<Span> spans, long guardSeed, String what) {
      EnginePair.assertRegion(mapped, spans, guardSeed, what + " (the file)");
    }
  }
}
