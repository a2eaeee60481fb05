package io.orbite.qualification.contract;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;

/**
 * A source and a requester engine in this JVM, talking over loopback TCP. Tests reach into the
 * source's memory directly to prepare and check its bytes, so both sides are checked in full.
 */
public final class EnginePair implements AutoCloseable {
  final TransferEngine source;
  final TransferEngine requester;

  EnginePair(EngineConfig sourceConfig, EngineConfig requesterConfig) {
    this.source = TransferEngine.start(sourceConfig.withName("test-source"));
    TransferEngine r;
    try {
      r = TransferEngine.start(requesterConfig.withName("test-requester"));
    } catch (RuntimeException e) {
      source.close();
      throw e;
    }
    this.requester = r;
  }

  EnginePair() {
    this(EngineConfig.defaults(), EngineConfig.defaults());
  }

  RemoteSegment open() {
    return requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
  }

  /** A region on {@code engine} filled with the guard pattern {@code seed}. */
  static RegisteredMemory guarded(TransferEngine engine, long bytes, Access access, long seed) {
    RegisteredMemory m = engine.allocate(bytes, access);
    Pattern.fill(m.segment(), 0, bytes, seed, 0);
    return m;
  }

  /**
   * Asserts that every byte of {@code region} is right: spans hold their data, the rest its guards.
   */
  public static void assertRegion(
      java.lang.foreign.MemorySegment region,
      java.util.List<io.orbite.qualification.verify.Span> spans,
      long guardSeed,
      String what) {
    long bad = io.orbite.qualification.verify.RegionCheck.check(region, spans, guardSeed);
    org.junit.jupiter.api.Assertions.assertEquals(
        -1, bad, () -> what + ": first wrong byte at " + bad + " of " + region.byteSize());
  }

  @Override
  public void close() {
    try {
      requester.close(Duration.ofSeconds(20));
    } finally {
      source.close(Duration.ofSeconds(20));
    }
  }
}
