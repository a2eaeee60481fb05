package io.orbite.config;

import static io.orbite.config.ConfigAssertions.assertRejected;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link EngineConfig#fromFile(Path)} and {@link EngineConfig#fromEnv(Map)}. */
class EngineConfigSourcesTest {
  private static final int LIMIT = 1048576;

  @TempDir Path dir;

  private Path write(String name, String content) throws IOException {
    return Files.writeString(dir.resolve(name), content, StandardCharsets.UTF_8);
  }

  // ---- fromFile
  // ------------------------------------------------------------------------------------------

  @Test
  void fileIsReadLikeTheSameJsonString() throws IOException {
    Path file = write("engine.json", "{\"name\":\"from-file\",\"tcp\":{\"lanes\":4}}");
    EngineConfig config = EngineConfig.fromFile(file);
    assertEquals(
        EngineConfig.defaults().withName("from-file").withTcp(TcpConfig.defaults().withLanes(4)),
        config);
  }

  @Test
  void fileWrittenByToJsonReadsBackEqual() throws IOException {
    EngineConfig config =
        EngineConfig.defaults()
            .withName("rt")
            .withBudgets(BudgetConfig.defaults().withMaxEndpoints(3));
    assertEquals(config, EngineConfig.fromFile(write("rt.json", config.toJson())));
  }

  @Test
  void fileWithUtf8ByteOrderMarkIsAccepted() throws IOException {
    Path file = dir.resolve("bom.json");
    byte[] body = "{\"tcp\":{\"lanes\":5}}".getBytes(StandardCharsets.UTF_8);
    byte[] bytes = new byte[body.length + 3];
    bytes[0] = (byte) 0xEF;
    bytes[1] = (byte) 0xBB;
    bytes[2] = (byte) 0xBF;
    System.arraycopy(body, 0, bytes, 3, body.length);
    Files.write(file, bytes);
    assertEquals(5, EngineConfig.fromFile(file).tcp().lanes());
  }

  @Test
  void missingFileIsRejectedNamingTheFile() {
    Path file = dir.resolve("absent.json");
    ConfigException e =
        assertRejected(
            "$", "$: config file " + file + " does not exist", () -> EngineConfig.fromFile(file));
    assertInstanceOf(NoSuchFileException.class, e.getCause());
  }

  @Test
  void directoryIsRejectedNamingIt() {
    assertEquals(
        "$: config file " + dir + " is a directory",
        assertRejected("$", "$: ", () -> EngineConfig.fromFile(dir)).getMessage());
  }

  @Test
  void unreadableFileIsRejectedNamingIt() throws IOException {
    Path file = write("secret.json", "{}");
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("---------"));
    assumeFalse(Files.isReadable(file), "running with privileges that ignore file permissions");
    ConfigException e =
        assertRejected(
            "$",
            "$: config file " + file + " cannot be read: permission denied",
            () -> EngineConfig.fromFile(file));
    assertInstanceOf(AccessDeniedException.class, e.getCause());
  }

  @Test
  void pathThroughARegularFileIsRejectedAsUnreadable() throws IOException {
    Path file = write("plain.json", "{}").resolve("child.json");
    // The reason after the colon comes from the operating system ("Not a directory" on Linux).
    assertRejected(
        "$", "$: config file " + file + " cannot be read: ", () -> EngineConfig.fromFile(file));
  }

  @Test
  void fileThatIsNotUtf8IsRejected() throws IOException {
    Path file = dir.resolve("latin1.json");
    Files.write(file, "{\"listen\":{\"host\":\"\u00e9\"}}".getBytes(StandardCharsets.ISO_8859_1));
    assertEquals(
        "$: config file " + file + " is not valid UTF-8",
        assertRejected("$", "$: ", () -> EngineConfig.fromFile(file)).getMessage());
  }

  @Test
  void problemInsideAFileNamesThePathAndTheFile() throws IOException {
    Path file = write("bad.json", "{\"tcp\":{\"lanes\":0}}");
    ConfigException e =
        assertRejected(
            "tcp.lanes", "tcp.lanes: must be 1..64, got 0", () -> EngineConfig.fromFile(file));
    assertEquals("tcp.lanes: must be 1..64, got 0 (in " + file + ")", e.getMessage());
  }

  @Test
  void duplicateKeyInsideAFileNamesItsPath() throws IOException {
    Path file = write("dup.json", "{\"budgets\":{\"maxBatches\":1,\"maxBatches\":2}}");
    assertRejected(
        "budgets.maxBatches",
        "budgets.maxBatches: duplicate key",
        () -> EngineConfig.fromFile(file));
  }

  @Test
  void emptyFileIsRejected() throws IOException {
    Path file = write("empty.json", "");
    assertRejected("$", "$: document is empty", () -> EngineConfig.fromFile(file));
  }

  @Test
  void fileOfExactlyOneMebibyteIsAccepted() throws IOException {
    Path file = write("limit.json", EngineConfigStrictnessTest.paddedDocument(LIMIT));
    assertEquals(LIMIT, Files.size(file));
    assertEquals(4, EngineConfig.fromFile(file).tcp().lanes());
  }

  @Test
  void fileOneByteOverOneMebibyteIsRejectedBeforeParsing() throws IOException {
    Path file = write("over.json", EngineConfigStrictnessTest.paddedDocument(LIMIT + 1));
    assertEquals(LIMIT + 1, Files.size(file));
    assertEquals(
        "$: document is 1048577 bytes, over the 1 MiB limit (in " + file + ")",
        assertRejected(
                "$",
                "$: document is 1048577 bytes, over the 1 MiB limit",
                () -> EngineConfig.fromFile(file))
            .getMessage());
  }

  @Test
  void hugeFileIsRejectedBySizeWithoutReadingIt() throws IOException {
    Path file = dir.resolve("sparse.json");
    try (var channel =
        java.nio.channels.FileChannel.open(
            file,
            java.nio.file.StandardOpenOption.CREATE_NEW,
            java.nio.file.StandardOpenOption.WRITE)) {
      channel.write(
          java.nio.ByteBuffer.wrap(new byte[] {'{'}), 5L * 1024 * 1024 * 1024); // sparse 5 GiB
    }
    assertRejected(
        "$",
        "$: document is 5368709121 bytes, over the 1 MiB limit",
        () -> EngineConfig.fromFile(file));
  }

  // ---- fromEnv
  // -------------------------------------------------------------------------------------------

  @Test
  void unsetVariableGivesTheDefaults() {
    assertEquals(EngineConfig.defaults(), EngineConfig.fromEnv(Map.of()));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "\t\n  "})
  void blankVariableGivesTheDefaults(String value) {
    assertEquals(EngineConfig.defaults(), EngineConfig.fromEnv(Map.of("ORBITE_CONF", value)));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"tcp\":{\"lanes\":4}}",
        "  {\"tcp\":{\"lanes\":4}}\n",
        "\n{ \"tcp\" : { \"lanes\" : 4 } }"
      })
  void inlineJsonIsParsed(String value) {
    assertEquals(4, EngineConfig.fromEnv(Map.of("ORBITE_CONF", value)).tcp().lanes());
  }

  @Test
  void inlineJsonProblemNamesItsPathAndTheVariable() {
    ConfigException e =
        assertRejected(
            "tcp.lanez",
            "tcp.lanez: unknown key (known: lanes, ",
            () -> EngineConfig.fromEnv(Map.of("ORBITE_CONF", "{\"tcp\":{\"lanez\":4}}")));
    assertEquals(
        "tcp.lanez: unknown key (known: lanes, socketBufferBytes, maxFramePayloadBytes, "
            + "connectTimeoutMillis, laneWindowFrames, laneWindowBytes, retryReadOnOtherLane, reconnectInitialBackoffMillis, reconnectMaxBackoffMillis, reconnectGiveUpMillis, waitWhileReconnecting, keepaliveIntervalMillis, livenessTimeoutMillis, sourceIdleTimeoutMillis) (in $ORBITE_CONF)",
        e.getMessage());
  }

  @Test
  void inlineJsonOverTheLimitIsRejected() {
    String value = EngineConfigStrictnessTest.paddedDocument(LIMIT + 1);
    assertRejected(
        "$",
        "$: document is 1048577 bytes, over the 1 MiB limit",
        () -> EngineConfig.fromEnv(Map.of("ORBITE_CONF", value)));
  }

  @Test
  void otherValueIsAFilePath() throws IOException {
    Path file = write("env.json", "{\"timeouts\":{\"defaultDeadlineMillis\":1234}}");
    assertEquals(
        1234L,
        EngineConfig.fromEnv(Map.of("ORBITE_CONF", file.toString()))
            .timeouts()
            .defaultDeadlineMillis());
  }

  @Test
  void filePathIsTrimmed() throws IOException {
    Path file = write("trim.json", "{\"listen\":{\"port\":8080}}");
    assertEquals(
        8080, EngineConfig.fromEnv(Map.of("ORBITE_CONF", "  " + file + "\n")).listen().port());
  }

  @Test
  void filePathToAMissingFileIsRejectedNamingTheFile() {
    Path file = dir.resolve("nope.json");
    assertRejected(
        "$",
        "$: config file " + file + " does not exist",
        () -> EngineConfig.fromEnv(Map.of("ORBITE_CONF", file.toString())));
  }

  @Test
  void filePathToAnInvalidFileIsRejectedWithTheFileContentPath() throws IOException {
    Path file = write("bad-env.json", "{\"slicing\":{\"baseBlockBytes\":100000}}");
    assertEquals(
        "slicing.baseBlockBytes: must be a power of two, got 100000 (in " + file + ")",
        assertRejected(
                "slicing.baseBlockBytes",
                "slicing.baseBlockBytes: must be a power of two",
                () -> EngineConfig.fromEnv(Map.of("ORBITE_CONF", file.toString())))
            .getMessage());
  }

  @Test
  void valueThatIsNotAValidPathIsRejected() {
    assertRejected(
        "$",
        "$: ORBITE_CONF is neither inline JSON nor a valid file path",
        () -> EngineConfig.fromEnv(Map.of("ORBITE_CONF", "bad\u0000path")));
  }

  @Test
  void valueLookingLikeAnArrayIsTreatedAsAFilePath() {
    assertRejected(
        "$",
        "$: config file [] does not exist",
        () -> EngineConfig.fromEnv(Map.of("ORBITE_CONF", "[]")));
  }

  @Test
  void noOtherVariableIsConsulted() {
    Map<String, String> env =
        Map.of(
            "ORBITE_TCP_LANES", "9",
            "ORBITE_NAME", "ignored",
            "orbite_conf", "{\"name\":\"lowercase\"}");
    assertEquals(EngineConfig.defaults(), EngineConfig.fromEnv(env));
  }

  @Test
  void fromEnvWithoutArgumentsReadsTheProcessEnvironment() {
    assertEquals(EngineConfig.fromEnv(System.getenv()), EngineConfig.fromEnv());
  }
}
