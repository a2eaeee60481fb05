package io.orbite.qualification.qualify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Profiles are read strictly: every shipped profile parses, and each kind of mistake is an error
 * that names the value's path and what is wrong with it.
 */
class ProfileTest {
  private static final String CASE =
      "{\"name\":\"c\",\"transport\":\"tcp\",\"operation\":\"read\",\"mode\":\"healthy\","
          + "\"parents\":2,\"payload\":4096%s}";

  private static Profile parse(String json) throws Exception {
    return Profile.parse(new ObjectMapper().readTree(json));
  }

  private static String profile(String caseExtra) {
    return "{\"profile\":\"p\",\"cases\":[" + String.format(CASE, caseExtra) + "]}";
  }

  private static void assertRefused(String json, String... parts) {
    ProfileException e = assertThrows(ProfileException.class, () -> parse(json));
    for (String part : parts) {
      assertTrue(e.getMessage().contains(part), () -> "'" + part + "' not in: " + e.getMessage());
    }
  }

  @Test
  void everyShippedProfileParsesAndNamesAtLeastOneCase() throws Exception {
    List<Path> files;
    try (Stream<Path> s = Files.list(Path.of("profiles"))) {
      files = s.filter(p -> p.toString().endsWith(".json")).sorted().toList();
    }
    assertTrue(files.size() >= 3, "shipped profiles: " + files);
    for (Path f : files) {
      Profile p = Profile.read(f);
      assertTrue(!p.cases().isEmpty(), f.toString());
    }
  }

  @Test
  void aMinimalCaseTakesTheDocumentedDefaults() throws Exception {
    Profile.Case c = parse(profile("")).cases().get(0);
    assertEquals("TCP", c.transport());
    assertEquals("READ", c.operation());
    assertEquals(65536, c.block());
    assertEquals(2, c.lanes());
    assertEquals(3, c.rounds());
    assertEquals(1, c.generations());
    assertEquals(new Profile.Side("b", "allocated"), c.source());
    assertEquals(new Profile.Side("a", "allocated"), c.requester());
    assertEquals(8192, c.roundBytes());
    assertEquals("local", parse(profile("")).launcher());
  }

  @Test
  void anUnknownKeyIsRefusedNamingItsPathAndTheKeysAllowed() {
    assertRefused(profile(",\"paylod\":3"), "cases[0].paylod: unknown key", "payload");
    assertRefused(
        "{\"profile\":\"p\",\"extra\":1,\"cases\":[" + String.format(CASE, "") + "]}",
        "extra: unknown key");
    assertRefused(
        profile(",\"source\":{\"host\":\"b\",\"mem\":\"x\"}"), "cases[0].source.mem: unknown key");
  }

  @Test
  void aWrongTypeOrARangeIsRefusedNamingThePath() {
    assertRefused(profile(",\"lanes\":\"two\""), "cases[0].lanes: must be a whole number");
    assertRefused(profile(",\"lanes\":2.5"), "cases[0].lanes: must be a whole number");
    assertRefused(profile(",\"lanes\":17"), "cases[0].lanes: 17 is outside 1..16");
    assertRefused(profile(",\"block\":12288"), "cases[0].block: 12288 is not a power of two");
    assertRefused(
        "{\"profile\":\"p\",\"cases\":[{\"name\":\"c\",\"transport\":\"tcp\",\"operation\":\"read\","
            + "\"mode\":\"healthy\",\"parents\":0,\"payload\":1}]}",
        "cases[0].parents: 0 is outside 1..256");
    assertRefused(
        "{\"profile\":\"p\",\"cases\":[{\"name\":\"c\",\"transport\":\"file\",\"operation\":\"read\","
            + "\"mode\":\"healthy\",\"parents\":1,\"payload\":1}]}",
        "cases[0].transport: 'file' is not one of tcp, shm, rdma");
    assertRefused(
        "{\"profile\":\"p\",\"cases\":[{\"name\":\"c\",\"operation\":\"read\","
            + "\"mode\":\"healthy\",\"parents\":1,\"payload\":1}]}",
        "cases[0].transport: required, and missing");
    assertRefused("{\"profile\":\"p\",\"cases\":[]}", "cases: must be a non-empty array");
    assertRefused("[1]", "the profile: must be a JSON object");
  }

  @Test
  void fieldsThatDoNotFitTheModeOrTransportAreRefused() {
    assertRefused(profile(",\"railMask\":1"), "cases[0].railMask: only an rdma case has rails");
    assertRefused(profile(",\"provider\":\"native\""), "cases[0].provider: only an rdma case");
    assertRefused(profile(",\"faultRole\":\"source\""), "a healthy case has no fault role");
    assertRefused(
        profile(",\"generations\":2"),
        "cases[0].generations: a healthy case has one generation, not 2");
    assertRefused(
        profile("").replace("healthy", "restart"), "cases[0].faultRole: mode restart needs");
    assertRefused(
        profile(",\"faultRole\":\"source\"").replace("healthy", "restart"),
        "cases[0].generations: required, and missing");
    assertRefused(
        profile(",\"faultRole\":\"source\",\"generations\":1").replace("healthy", "restart"),
        "a restart runs 2 or 3 generations");
    assertRefused(
        profile(",\"faultRole\":\"source\"")
            .replace("healthy", "link-down")
            .replace("\"tcp\"", "\"shm\""),
        "cases[0].mode: link-down runs TCP READs");
    assertRefused(
        profile(",\"faultRole\":\"source\",\"rounds\":2").replace("healthy", "link-down"),
        "cases[0].rounds: 2 is outside 3..100");
    assertRefused(
        profile(",\"faultRole\":\"source\",\"source\":{\"host\":\"a\"}")
            .replace("healthy", "link-down"),
        "cases[0].requester.host: a link-down case needs two hosts");
    assertRefused(
        profile(",\"faultRole\":\"source\",\"operation\":\"write\"")
            .replace("\"operation\":\"read\",", "")
            .replace("healthy", "link-down"),
        "link-down runs TCP READs");
    assertRefused(
        profile(",\"source\":{\"memory\":\"external\"}").replace("\"tcp\"", "\"shm\""),
        "cases[0].transport: SHM maps engine-allocated memory only");
  }

  @Test
  void theProviderFaultModesRunOnlyWhereTheirFaultIsExact() {
    String lost = profile(",\"faultRole\":\"source\"").replace("healthy", "lost-completion");
    assertRefused(lost, "cases[0].mode: lost-completion runs through the software RDMA provider");
    String lostRdma = lost.replace("\"tcp\"", "\"rdma\"");
    Profile.Case c;
    try {
      c = parse(lostRdma).cases().get(0);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    assertEquals(2, c.generations(), "a lost-completion case runs two source generations");
    assertRefused(
        lostRdma.replace("\"source\"", "\"requester\""),
        "cases[0].faultRole: a lost-completion case kills the source");
    assertRefused(
        lostRdma.replace("\"faultRole\":\"source\"", "\"faultRole\":\"source\",\"generations\":3"),
        "cases[0].generations: a lost-completion case runs 2 generations");
    String err =
        profile(",\"faultRole\":\"requester\",\"lanes\":1,\"railMask\":1,\"block\":4096")
            .replace("healthy", "inflight-err")
            .replace("\"tcp\"", "\"rdma\"")
            .replace("\"read\"", "\"write\"")
            .replace("\"parents\":2", "\"parents\":1");
    try {
      assertEquals("inflight-err", parse(err).cases().get(0).mode());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    assertRefused(
        err.replace("\"parents\":1", "\"parents\":2"),
        "inflight-err runs one WRITE of one work request");
    assertRefused(err.replace("\"railMask\":1", "\"railMask\":3"), "railMask 1 or 2");
    assertRefused(err.replace("\"write\"", "\"read\""), "operation write");
    assertRefused(err.replace("\"block\":4096", "\"block\":2048"), "2048 is outside");
    assertRefused(
        err.replace("\"requester\"", "\"source\""),
        "cases[0].faultRole: an inflight-err case faults the requester's QP");
    assertRefused(
        err.replace("\"railMask\":1", "\"railMask\":1,\"provider\":\"native\""),
        "inflight-err runs through the software RDMA provider's fault table");
  }

  @Test
  void everyModeOfTheReferenceIsKnownAndAnyOtherIsRefusedNamingThem() {
    assertEquals(
        List.of(
            "healthy",
            "restart",
            "interruption",
            "link-down",
            "lost-completion",
            "cleanup-failure",
            "inflight-err"),
        Profile.MODES);
    assertRefused(
        profile("").replace("healthy", "sunny"),
        "cases[0].mode: 'sunny' is not one of healthy, restart, interruption, link-down,"
            + " lost-completion, cleanup-failure, inflight-err");
  }

  @Test
  void interruptionAndCleanupFailureTakeTheirRolesAndShapes() {
    String rdma = profile("").replace("\"tcp\"", "\"rdma\"");
    assertRefused(
        rdma.replace("healthy", "interruption").replace("}]}", ",\"faultRole\":\"requester\"}]}"),
        "cases[0].faultRole: a interruption case kills the source");
    assertRefused(
        rdma.replace("healthy", "interruption").replace("}]}", ",\"faultRole\":\"source\"}]}"),
        "interruption holds the one QP's first post: lanes 1, railMask 1 or 2");
    String cleanup =
        rdma.replace("healthy", "cleanup-failure")
            .replace("\"parents\":2", "\"parents\":1")
            .replace("}]}", ",\"faultRole\":\"requester\",\"lanes\":1,\"railMask\":1}]}");
    try {
      Profile.Case c = parse(cleanup).cases().get(0);
      assertEquals(2, c.generations(), "the requester is replaced once");
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    assertRefused(
        cleanup.replace("\"read\"", "\"write\""), "cleanup-failure runs one READ on the one QP");
    assertRefused(
        cleanup.replace("\"railMask\":1", "\"railMask\":2"),
        "cleanup-failure runs one READ on the one QP of one device");
    assertRefused(
        cleanup.replace("\"faultRole\":\"requester\"", "\"faultRole\":\"source\""),
        "a cleanup-failure case faults the requester's QP");
    assertRefused(
        cleanup.replace("\"lanes\":1", "\"lanes\":1,\"rounds\":1"),
        "cases[0].rounds: 1 is outside 2..100");
    assertRefused(
        cleanup.replace("\"lanes\":1", "\"lanes\":1,\"generations\":3"),
        "a cleanup-failure case runs 2 generations of its fault role");
  }

  @Test
  void namesMustBeDirectoryNamesAndUnique() {
    assertRefused(profile("").replace("\"name\":\"c\"", "\"name\":\"../x\""), "cases[0].name");
    String one = String.format(CASE, "");
    assertRefused(
        "{\"profile\":\"p\",\"cases\":[" + one + "," + one + "]}",
        "cases[1].name: 'c' names two cases");
  }

  @Test
  void aDuplicateKeyOrBrokenJsonIsRefusedNamingTheFile(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("p.json");
    Files.writeString(f, profile(",\"lanes\":1,\"lanes\":2"));
    ProfileException e = assertThrows(ProfileException.class, () -> Profile.read(f));
    assertTrue(e.getMessage().contains("Duplicate field 'lanes'"), e.getMessage());
    Files.writeString(f, "{\"profile\":");
    e = assertThrows(ProfileException.class, () -> Profile.read(f));
    assertTrue(e.getMessage().startsWith(f + ": not valid JSON"), e.getMessage());
  }

  @Test
  void anSshHostNamesEveryIdentityFieldAndCasesNameOnlyKnownHosts() {
    String ssh =
        "{\"profile\":\"p\",\"hosts\":{\"a\":{\"ssh\":{\"address\":\"10.0.0.1\",\"user\":\"root\"}}},"
            + "\"cases\":["
            + String.format(CASE, "")
            + "]}";
    assertRefused(ssh, "hosts.a.ssh.identityFile: required, and missing");
    String hosts =
        "{\"profile\":\"p\",\"hosts\":{\"a\":{},\"b\":{}},\"cases\":["
            + String.format(CASE, ",\"source\":{\"host\":\"c\"}")
            + "]}";
    assertRefused(hosts, "cases[0].source.host: 'c' is not one of the profile's hosts");
  }
}
