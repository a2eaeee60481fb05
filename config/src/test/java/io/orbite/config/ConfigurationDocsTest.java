package io.orbite.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * Keeps docs/configuration.md in step with the code: every key's row, and the defaults document.
 */
class ConfigurationDocsTest {
  static final List<NumericKey> KEYS = NumericKey.ALL;
  private static final Path DOC = Path.of("..", "docs", "configuration.md");

  private static String doc() throws IOException {
    assumeTrue(Files.isRegularFile(DOC), "docs/configuration.md is not next to this module");
    return Files.readString(DOC);
  }

  private static String row(String doc, String path) {
    return doc.lines()
        .filter(l -> l.startsWith("| `" + path + "` |"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no table row for " + path));
  }

  @ParameterizedTest(name = "{0}")
  @FieldSource("KEYS")
  void everyNumericKeyHasARowWithItsDefaultAndRange(NumericKey key) throws IOException {
    String row = row(doc(), key.path());
    assertTrue(row.contains("| `" + key.defaultValue() + "`"), row);
    assertTrue(row.contains("| " + key.min() + ".." + key.max()), row);
  }

  @Test
  void stringAndListKeysHaveRows() throws IOException {
    String doc = doc();
    assertTrue(row(doc, "name").contains("`\"orbite\"`"));
    assertTrue(row(doc, "listen.host").contains("`\"127.0.0.1\"`"));
    assertTrue(row(doc, "file.engine").contains("`\"auto\"`"));
    assertTrue(row(doc, "rdma.provider").contains("`\"software\"`"));
    assertTrue(row(doc, "rdma.devices").contains("`[]`"));
    assertTrue(row(doc, "rdma.softwareAddress").contains("`\"127.0.0.1\"`"));
    String addresses = row(doc, "rdma.softwareAddresses");
    assertTrue(addresses.contains("| list of strings |"), addresses);
    assertTrue(addresses.contains("| `[]` |"), addresses);
    assertTrue(addresses.contains("at most 8 addresses"), addresses);
    assertTrue(addresses.contains("modulo"), addresses);
  }

  /** Every leaf key of the schema, as a dotted path: the record components, walked recursively. */
  private static List<String> schemaPaths(Class<?> record, String prefix) {
    List<String> paths = new java.util.ArrayList<>();
    for (RecordComponent component : record.getRecordComponents()) {
      String path = prefix + component.getName();
      if (component.getType().isRecord()) {
        paths.addAll(schemaPaths(component.getType(), path + "."));
      } else {
        paths.add(path);
      }
    }
    return paths;
  }

  @Test
  void everyKeyOfTheSchemaHasARow() throws IOException {
    String doc = doc();
    List<String> paths = schemaPaths(EngineConfig.class, "");
    assertTrue(paths.contains("rdma.maxCqes"), paths.toString());
    assertTrue(paths.contains("rdma.railProbeIntervalMillis"), paths.toString());
    assertTrue(paths.contains("rdma.priorityAgingPerEntry"), paths.toString());
    assertTrue(paths.contains("rdma.softwareAddresses"), paths.toString());
    for (String path : paths) {
      row(doc, path);
    }
  }

  @Test
  void everyKeyOfAPolicyRuleHasARow() throws IOException {
    String doc = doc();
    assertTrue(row(doc, "policies").contains("| `[]` |"));
    assertTrue(row(doc, "policies").contains("at most " + TransportPolicies.MAX_RULES + " rules"));
    for (RecordComponent c : TransportPolicy.class.getRecordComponents()) {
      row(doc, "policies[]." + c.getName());
    }
    for (RecordComponent c : PolicyMatch.class.getRecordComponents()) {
      row(doc, "policies[].match." + c.getName());
    }
    for (RecordComponent c : PolicyChoice.class.getRecordComponents()) {
      row(doc, "policies[].choose." + c.getName());
    }
    assertTrue(row(doc, "policies[].match.minBytes").contains("| `0` |"));
    assertTrue(row(doc, "policies[].match.maxBytes").contains("| `" + Long.MAX_VALUE + "`"));
    String lanes = row(doc, "policies[].choose.laneMask");
    assertTrue(lanes.contains("`tcp.lanes`"), lanes);
    assertTrue(lanes.contains("18446744073709551615"), lanes);
    String rails = row(doc, "policies[].choose.railMask");
    assertTrue(rails.contains("UNAVAILABLE"), rails);
    assertTrue(rails.contains("18446744073709551615"), rails);
  }

  @Test
  void theRailCircuitRowsNameC13AndTheCrossFieldRule() throws IOException {
    String doc = doc();
    for (String key :
        List.of(
            "railErrors",
            "railErrorWindowMillis",
            "railCooldownMillis",
            "railMaxCooldownMillis",
            "railProbeIntervalMillis")) {
      String row = row(doc, "rdma." + key);
      assertTrue(row.contains("C13"), row);
      assertTrue(row.contains("the reference's"), row);
    }
    assertTrue(
        row(doc, "rdma.railMaxCooldownMillis").contains("at least `rdma.railCooldownMillis`"));
  }

  @Test
  void thePriorityAgingRowsNameC14AndTheirDefaults() throws IOException {
    String doc = doc();
    for (String key : List.of("priorityAgingMillis", "priorityAgingPerEntry")) {
      String row = row(doc, "rdma." + key);
      assertTrue(row.contains("C14"), row);
      assertTrue(row.contains("contracts.md#c14-priority"), row);
      assertTrue(row.contains("the reference's"), row);
    }
    String perEntry = row(doc, "rdma.priorityAgingPerEntry");
    assertTrue(perEntry.contains("| boolean |"), perEntry);
    assertTrue(perEntry.contains("| `false` |"), perEntry);
    assertTrue(perEntry.contains("| `true`, `false` |"), perEntry);
  }

  @Test
  void documentedDefaultsDocumentIsWhatToJsonWrites() throws IOException {
    String doc = doc();
    String marker = "```json\n";
    int start =
        doc.indexOf(marker, doc.indexOf("## Complete document with the defaults"))
            + marker.length();
    String block = doc.substring(start, doc.indexOf("\n```", start));
    assertEquals(EngineConfig.defaults().toJson(), block);
  }
}
