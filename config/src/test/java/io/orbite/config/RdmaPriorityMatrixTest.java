package io.orbite.config;

import static io.orbite.config.ConfigAssertions.assertJsonRejected;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The priority matrix: {@code rdma.selection.priorityMatrix} inline, and the topology file. */
class RdmaPriorityMatrixTest {
  @TempDir Path dir;

  private static final List<String> OPENED = List.of("soft0", "soft1");

  private Path file(String text) throws IOException {
    Path f = dir.resolve("topology.json");
    Files.writeString(f, text);
    return f;
  }

  @Test
  void anInlineMatrixIsReadKeptInOrderAndWrittenBackAsItWasGiven() {
    EngineConfig c =
        EngineConfig.fromJson(
            """
            {"rdma": {"selection": {"priorityMatrix":
              {"cpu:1": [["soft1"], ["soft0"]], "*": [["soft0"], [], ["soft1"]]}}}}
            """);
    RdmaPriorityMatrix m = c.rdma().selection().priorityMatrix();
    assertEquals(List.of("cpu:1", "*"), List.copyOf(m.rows().keySet()));
    assertEquals(List.of(List.of("soft1"), List.of("soft0")), m.rows().get("cpu:1"));
    assertEquals(List.of(List.of("soft0"), List.of(), List.of("soft1")), m.rows().get("*"));
    assertEquals(c, EngineConfig.fromJson(c.toJson()));
    assertTrue(c.toJson().contains("\"priorityMatrix\": {\n        \"cpu:1\": ["), c.toJson());
    assertEquals(m, RdmaPriorityMatrix.parse(m.toString()));
  }

  @Test
  void anAbsentOrEmptyMatrixIsNone() {
    assertEquals(
        RdmaPriorityMatrix.NONE, EngineConfig.defaults().rdma().selection().priorityMatrix());
    RdmaPriorityMatrix empty =
        EngineConfig.fromJson("{\"rdma\":{\"selection\":{\"priorityMatrix\":{}}}}")
            .rdma()
            .selection()
            .priorityMatrix();
    assertEquals(RdmaPriorityMatrix.NONE, empty);
    assertTrue(empty.isEmpty());
    assertEquals(List.of(), empty.ranksFor(0));
    assertEquals(Optional.empty(), empty.inventoryError(List.of()));
  }

  @Test
  void theRowServingARequestIsItsCpuRowElseTheStarRowElseASynthesizedOne() {
    RdmaPriorityMatrix m =
        RdmaPriorityMatrix.parse(
            "{\"cpu:0\": [[\"soft0\"], [\"soft1\"]], \"*\": [[], [\"soft1\"]]}");
    assertEquals("cpu:0", m.locationFor(0));
    assertEquals(List.of(List.of("soft0"), List.of("soft1")), m.ranksFor(0));
    assertEquals("*", m.locationFor(1));
    assertEquals(List.of(List.of(), List.of("soft1")), m.ranksFor(1));
    assertEquals("*", m.locationFor(-1));
    assertFalse(m.synthesized(-1));
    RdmaPriorityMatrix noStar =
        RdmaPriorityMatrix.parse(
            "{\"cpu:0\": [[\"soft1\"], []], \"cuda:3\": [[\"soft0\"], [\"soft1\"]]}");
    assertTrue(noStar.synthesized(5));
    assertEquals(List.of(List.of("soft1", "soft0")), noStar.ranksFor(5));
    assertEquals(List.of(List.of("soft1"), List.of()), noStar.ranksFor(0));
  }

  @Test
  void aNameThatIsNotAnOpenedDeviceIsNamedWithItsJsonPath() {
    RdmaPriorityMatrix m =
        RdmaPriorityMatrix.parse("{\"cpu:0\": [[\"soft0\"], [\"mlx5_9\"]], \"*\": [[], []]}");
    assertEquals(
        Optional.of(
            "rdma.selection.priorityMatrix[\"cpu:0\"][1][0]: \"mlx5_9\" is not an opened device"
                + " (opened: soft0, soft1)"),
        m.inventoryError(OPENED));
    assertEquals(Optional.empty(), m.inventoryError(List.of("soft0", "mlx5_9")));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"rdma":{"selection":{"priorityMatrix":[]}}}                               | rdma.selection.priorityMatrix                  | rdma.selection.priorityMatrix: expected an object (location to ranks of device names), got array
          {"rdma":{"selection":{"priorityMatrix":{"gpu:0":[[],[]]}}}}                | rdma.selection.priorityMatrix["gpu:0"]         | rdma.selection.priorityMatrix["gpu:0"]: a location is "cpu:<0..1023>", "cuda:<0..1023>" or "*", got "gpu:0"
          {"rdma":{"selection":{"priorityMatrix":{"cpu:01":[[],[]]}}}}               | rdma.selection.priorityMatrix["cpu:01"]        | rdma.selection.priorityMatrix["cpu:01"]: a location is "cpu:<0..1023>", "cuda:<0..1023>" or "*", got "cpu:01"
          {"rdma":{"selection":{"priorityMatrix":{"cpu:1024":[[],[]]}}}}             | rdma.selection.priorityMatrix["cpu:1024"]      | rdma.selection.priorityMatrix["cpu:1024"]: a location is "cpu:<0..1023>", "cuda:<0..1023>" or "*", got "cpu:1024"
          {"rdma":{"selection":{"priorityMatrix":{"cpu:0":"soft0"}}}}                | rdma.selection.priorityMatrix["cpu:0"]         | rdma.selection.priorityMatrix["cpu:0"]: expected an array of rank arrays, got string "soft0"
          {"rdma":{"selection":{"priorityMatrix":{"cpu:0":[["soft0"]]}}}}            | rdma.selection.priorityMatrix["cpu:0"]         | rdma.selection.priorityMatrix["cpu:0"]: must hold 2 or 3 ranks ([rank 0 names], [rank 1 names], optionally [rank 2 names]), got 1
          {"rdma":{"selection":{"priorityMatrix":{"cpu:0":[[],[],[],[]]}}}}          | rdma.selection.priorityMatrix["cpu:0"]         | rdma.selection.priorityMatrix["cpu:0"]: must hold 2 or 3 ranks ([rank 0 names], [rank 1 names], optionally [rank 2 names]), got 4
          {"rdma":{"selection":{"priorityMatrix":{"*":[[],"soft0"]}}}}               | rdma.selection.priorityMatrix["*"][1]          | rdma.selection.priorityMatrix["*"][1]: expected an array of device names, got string "soft0"
          {"rdma":{"selection":{"priorityMatrix":{"*":[[],[0]]}}}}                   | rdma.selection.priorityMatrix["*"][1][0]       | rdma.selection.priorityMatrix["*"][1][0]: expected a device name, got integer 0
          {"rdma":{"selection":{"priorityMatrix":{"*":[[" "],[]]}}}}                 | rdma.selection.priorityMatrix["*"][0][0]       | rdma.selection.priorityMatrix["*"][0][0]: a device name is 1..64 characters, not blank, got " "
          {"rdma":{"selection":{"priorityMatrix":{"*":[["soft0"],["soft1","soft0"]]}}}} | rdma.selection.priorityMatrix["*"][1][1]    | rdma.selection.priorityMatrix["*"][1][1]: "soft0" is listed again in this row (first at rdma.selection.priorityMatrix["*"][0][0])
          """)
  void aBadlyShapedInlineMatrixIsRejectedAtLoadNamingItsJsonPath(
      String json, String path, String message) {
    assertEquals(message, assertJsonRejected(json, path, path + ": ").getMessage());
  }

  @Test
  void anOverLongNameOrRankIsRejected() {
    String longName = "m".repeat(65);
    ConfigException e =
        assertThrows(
            ConfigException.class,
            () -> RdmaPriorityMatrix.parse("{\"*\": [[\"" + longName + "\"], []]}"));
    assertEquals("rdma.selection.priorityMatrix[\"*\"][0][0]", e.path());
    StringBuilder names = new StringBuilder();
    for (int i = 0; i < 65; i++) {
      names.append(i == 0 ? "" : ",").append("\"d").append(i).append('"');
    }
    e =
        assertThrows(
            ConfigException.class,
            () -> RdmaPriorityMatrix.parse("{\"*\": [[" + names + "], []]}"));
    assertEquals(
        "rdma.selection.priorityMatrix[\"*\"][0]: names 65 devices, at most 64", e.getMessage());
    e = assertThrows(ConfigException.class, () -> RdmaPriorityMatrix.parse("{\"*\": [[], []"));
    assertEquals("rdma.selection.priorityMatrix", e.path());
    assertTrue(e.getMessage().contains("malformed JSON"), e.getMessage());
  }

  @Test
  void aClassicTopologyFileIsReadAndItsInventoryErrorNamesTheFile() throws IOException {
    Path f = file("{\"cpu:0\": [[\"soft1\"], [\"soft0\"]], \"*\": [[\"mlx5_9\"], []]}");
    RdmaPriorityMatrix m = RdmaPriorityMatrix.readFile(f);
    assertEquals(List.of(List.of("soft1"), List.of("soft0")), m.ranksFor(0));
    assertEquals(
        Optional.of(
            "rdma.selection.customJsonPath: "
                + f
                + ": $[\"*\"][0][0]: \"mlx5_9\" is not an opened device (opened: soft0, soft1)"),
        m.inventoryError(OPENED));
  }

  @Test
  void aNativeTopologyFileMapsIndicesToNamesAndRanks() throws IOException {
    Path f =
        file(
            """
            {"nics": [{"name": "soft1", "type": 0}, {"name": "soft0"}],
             "mems": [{"name": "cpu:0", "type": 0,
                       "device_list": {"rank0": [1], "rank1": [0], "rank2": []}},
                      {"name": "*", "type": 4, "device_list": {"rank1": [0, 1]}}]}
            """);
    RdmaPriorityMatrix m = RdmaPriorityMatrix.readFile(f);
    assertEquals(List.of(List.of("soft0"), List.of("soft1"), List.of()), m.ranksFor(0));
    assertEquals(List.of(List.of(), List.of("soft1", "soft0"), List.of()), m.ranksFor(-1));
    assertEquals(Optional.empty(), m.inventoryError(OPENED));
    assertEquals(
        Optional.of(
            "rdma.selection.customJsonPath: "
                + f
                + ": $.nics[0].name: \"soft1\" is not an opened device (opened: soft0)"),
        m.inventoryError(List.of("soft0")));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"nics": [], "mems": [], "extra": 1}                                            | $.extra: unknown key (known: nics, mems)
          {"mems": []}                                                                     | $: the key "nics" is required
          {"nics": []}                                                                     | $: the key "mems" is required
          {"nics": {}, "mems": []}                                                         | $.nics: expected an array of NIC objects, got object
          {"nics": ["soft0"], "mems": []}                                                  | $.nics[0]: expected an object, got string "soft0"
          {"nics": [{"name": "soft0", "speed": 1}], "mems": []}                            | $.nics[0].speed: unknown key (known: name, type)
          {"nics": [{"type": 0}], "mems": []}                                              | $.nics[0]: the key "name" is required
          {"nics": [{"name": "soft0"}, {"name": "soft0"}], "mems": []}                     | $.nics[1].name: "soft0" is listed again (first at $.nics[0])
          {"nics": [{"name": "soft0", "type": 1}], "mems": []}                             | $.nics[0].type: must be 0 (an RDMA NIC), got integer 1
          {"nics": [{"name": "soft0"}], "mems": [{"name": "cpu:0"}]}                       | $.mems[0]: the key "device_list" is required
          {"nics": [{"name": "soft0"}], "mems": [{"name": 0, "device_list": {}}]}          | $.mems[0].name: expected a string, got integer 0
          {"nics": [{"name": "soft0"}], "mems": [{"name": "numa0", "device_list": {}}]}    | $.mems[0].name: a location is "cpu:<0..1023>", "cuda:<0..1023>" or "*", got "numa0"
          {"nics": [{"name": "soft0"}], "mems": [{"name": "*", "type": 0, "device_list": {}}]} | $.mems[0].type: must be 4 for "*" (0 host memory, 1 CUDA, 4 for *), got integer 0
          {"nics": [{"name": "soft0"}], "mems": [{"name": "*", "device_list": {}}, {"name": "*", "device_list": {}}]} | $.mems[1].name: "*" is listed again
          {"nics": [{"name": "soft0"}], "mems": [{"name": "*", "device_list": {"rank3": []}}]} | $.mems[0].device_list.rank3: unknown key (known: rank0, rank1, rank2)
          {"nics": [{"name": "soft0"}], "mems": [{"name": "*", "device_list": {"rank0": 0}}]} | $.mems[0].device_list.rank0: expected an array of NIC indices, got integer 0
          {"nics": [{"name": "soft0"}], "mems": [{"name": "*", "device_list": {"rank0": ["soft0"]}}]} | $.mems[0].device_list.rank0[0]: expected an integer index into nics, got string "soft0"
          {"nics": [{"name": "soft0"}, {"name": "soft1"}], "mems": [{"name": "*", "device_list": {"rank0": [0, 5]}}]} | $.mems[0].device_list.rank0[1]: index 5 is out of range: nics holds 2 entries
          {"nics": [{"name": "soft0"}], "mems": [{"name": "*", "device_list": {"rank0": [-1]}}]} | $.mems[0].device_list.rank0[0]: index -1 is out of range: nics holds 1 entries
          {"nics": [{"name": "soft0"}], "mems": [{"name": "*", "device_list": {"rank0": [0], "rank1": [0]}}]} | $.mems[0].device_list.rank1[0]: NIC 0 is listed again for this location (first at $.mems[0].device_list.rank0[0])
          {"cpu:0": [["soft0"], ["soft0"]]}                                               | $["cpu:0"][1][0]: "soft0" is listed again in this row (first at $["cpu:0"][0][0])
          {"cpu:0": [["soft0"]]}                                                          | $["cpu:0"]: must hold 2 or 3 ranks ([rank 0 names], [rank 1 names], optionally [rank 2 names]), got 1
          """)
  void aBadTopologyFileIsRejectedNamingTheFileAndTheJsonPath(String json, String detail)
      throws IOException {
    Path f = file(json);
    ConfigException e = assertThrows(ConfigException.class, () -> RdmaPriorityMatrix.readFile(f));
    assertEquals("rdma.selection.customJsonPath", e.path());
    assertEquals("rdma.selection.customJsonPath: " + f + ": " + detail, e.getMessage());
  }

  @Test
  void aMissingLargeMalformedOrNonUtf8FileIsRejectedNamingTheFile() throws IOException {
    Path missing = dir.resolve("absent.json");
    ConfigException e =
        assertThrows(ConfigException.class, () -> RdmaPriorityMatrix.readFile(missing));
    assertEquals("rdma.selection.customJsonPath", e.path());
    assertTrue(
        e.getMessage()
            .startsWith(
                "rdma.selection.customJsonPath: " + missing + ": the file cannot be read: "),
        e.getMessage());

    Path big = dir.resolve("big.json");
    Files.writeString(big, "{\"*\": [[], []]}" + " ".repeat(1 << 20));
    e = assertThrows(ConfigException.class, () -> RdmaPriorityMatrix.readFile(big));
    assertEquals(
        "rdma.selection.customJsonPath: "
            + big
            + ": $: the file is "
            + Files.size(big)
            + " bytes, over the 1 MiB limit",
        e.getMessage());

    Path malformed = file("{\"*\": [[], []],}");
    e = assertThrows(ConfigException.class, () -> RdmaPriorityMatrix.readFile(malformed));
    assertTrue(
        e.getMessage()
            .startsWith("rdma.selection.customJsonPath: " + malformed + ": $: malformed JSON"),
        e.getMessage());

    Path latin1 = dir.resolve("latin1.json");
    Files.write(latin1, new byte[] {'{', '"', (byte) 0xe9, '"', ':', '1', '}'});
    e = assertThrows(ConfigException.class, () -> RdmaPriorityMatrix.readFile(latin1));
    assertEquals(
        "rdma.selection.customJsonPath: " + latin1 + ": $: the file is not valid UTF-8",
        e.getMessage());
  }

  @Test
  void theInlineMatrixIsNeverNull() {
    assertEquals(
        "rdma.selection.priorityMatrix: must not be null",
        assertThrows(
                ConfigException.class,
                () -> RdmaSelectionConfig.defaults().withPriorityMatrix(null))
            .getMessage());
  }
}
