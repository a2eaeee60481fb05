package io.orbite.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.testkit.TestKeys;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the directory publishes of its engine's regions: the named ones {@code directory.publish}
 * lets through, in name order, never an unnamed one and never one registered with an allow-list
 * (every member reads the directory; such a range is for the peers it names, who find it in
 * Describe).
 */
class EngineFactsTest {
  @TempDir Path keys;

  @Test
  void regionsWithAnAllowListAreNeverPublished() throws IOException {
    TestKeys.write(keys, "facts", "decode-1");
    TransferEngine engine =
        TransferEngine.start(
            EngineConfig.defaults()
                .withName("facts")
                .withSecurity(TestKeys.security(keys, "facts")));
    try {
      RegisteredMemory b = engine.allocate(4096, Access.READ, "public-b");
      engine.allocate(4096, Access.READ_WRITE, "kv-listed", Set.of("decode-1"));
      engine.allocate(4096, Access.READ_WRITE, "kv-local", Set.of());
      engine.allocate(4096, Access.READ);
      RegisteredMemory a = engine.allocate(8192, Access.READ_WRITE, "public-a");
      assertEquals(
          List.of(
              new DirectoryRegion("public-a", a.regionId(), 8192, Access.READ_WRITE),
              new DirectoryRegion("public-b", b.regionId(), 4096, Access.READ)),
          EngineFacts.publishedRegions(engine));
    } finally {
      engine.close(Duration.ofSeconds(20));
    }
  }
}
