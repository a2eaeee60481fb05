package io.orbite.config;

import static io.orbite.config.ConfigAssertions.assertJsonRejected;
import static io.orbite.config.ConfigAssertions.assertRejected;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.TransportPolicy.Memory;
import io.orbite.config.TransportPolicy.Op;
import io.orbite.config.TransportPolicy.Priority;
import io.orbite.config.TransportPolicy.Transport;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The {@code policies} list: what it accepts, how it reads back, and every rejection, by JSON and
 * by the typed API, each with the exact path of the offending key.
 */
class TransportPoliciesTest {
  /** A document whose {@code policies} is {@code list}, written with ' for ". */
  private static String doc(String list) {
    return "{\"policies\":" + list.replace('\'', '"') + "}";
  }

  private static final String OK_RULE = "{'choose':{'transports':['TCP']}}";

  private static TransportPolicy rule(PolicyMatch match, PolicyChoice choose) {
    return new TransportPolicy(match, choose);
  }

  private static TransportPolicy tcp() {
    return rule(PolicyMatch.any(), PolicyChoice.of(Transport.TCP));
  }

  // ---- accepted ---------------------------------------------------------------------------------

  @Test
  void aDocumentWithRulesReadsAsTheTypedRulesAndWritesBackEqual() {
    EngineConfig read =
        EngineConfig.fromJson(
            doc(
                "[{'match':{'op':'READ','maxBytes':65536,'memory':'SHARED'},"
                    + "'choose':{'transports':['SHM','TCP']}},"
                    + "{'match':{'minBytes':65537,'priority':'HIGH','peer':'10.0.*:*'},"
                    + "'choose':{'transports':['RDMA','TCP'],'priority':'LOW'}},"
                    + OK_RULE
                    + "]"));
    TransportPolicies expected =
        TransportPolicies.of(
            rule(
                PolicyMatch.any().withOp(Op.READ).withMaxBytes(65536).withMemory(Memory.SHARED),
                PolicyChoice.of(Transport.SHM, Transport.TCP)),
            rule(
                PolicyMatch.any()
                    .withMinBytes(65537)
                    .withPriority(Priority.HIGH)
                    .withPeer("10.0.*:*"),
                PolicyChoice.of(Transport.RDMA, Transport.TCP).withPriority(Priority.LOW)),
            tcp());
    assertEquals(expected, read.policies());
    assertEquals(3, read.policies().rules().size());
    assertNull(read.policies().rules().get(2).match().op(), "no match: every direction");
    EngineConfig typed = EngineConfig.defaults().withPolicies(expected);
    assertEquals(read, typed);
    assertEquals(typed, EngineConfig.fromJson(typed.toJson()), typed.toJson());
  }

  @Test
  void masksReadAsUnsignedBitsAndWriteBackEqual() {
    EngineConfig read =
        EngineConfig.fromJson(
            "{\"tcp\":{\"lanes\":64},\"policies\":"
                + ("[{'match':{'op':'WRITE'},'choose':{'transports':['RDMA','TCP'],"
                        + "'laneMask':2,'railMask':5}},"
                        + "{'choose':{'transports':['TCP'],'laneMask':18446744073709551615}},"
                        + "{'choose':{'transports':['RDMA'],'railMask':9223372036854775808}}]")
                    .replace('\'', '"')
                + "}");
    TransportPolicies expected =
        TransportPolicies.of(
            rule(
                PolicyMatch.any().withOp(Op.WRITE),
                PolicyChoice.of(Transport.RDMA, Transport.TCP).withLaneMask(2L).withRailMask(5L)),
            rule(PolicyMatch.any(), PolicyChoice.of(Transport.TCP).withLaneMask(-1L)),
            rule(PolicyMatch.any(), PolicyChoice.of(Transport.RDMA).withRailMask(Long.MIN_VALUE)));
    assertEquals(expected, read.policies());
    assertEquals(-1L, read.policies().rules().get(1).choose().laneMask(), "all 64 lanes");
    assertEquals(Long.MIN_VALUE, read.policies().rules().get(2).choose().railMask(), "rail 63");
    assertNull(read.policies().rules().get(1).choose().railMask(), "absent: every rail");
    String json = read.toJson();
    assertTrue(json.contains("\"laneMask\": 18446744073709551615"), json);
    assertTrue(json.contains("\"railMask\": 9223372036854775808"), json);
    assertEquals(read, EngineConfig.fromJson(json), json);
  }

  @Test
  void aLaneMaskWithinTcpLanesIsAcceptedAndLoweringTheLanesLaterIsRefused() {
    TransportPolicies lane1 =
        TransportPolicies.of(
            tcp(), rule(PolicyMatch.any(), PolicyChoice.of(Transport.TCP).withLaneMask(2L)));
    EngineConfig config = EngineConfig.defaults().withPolicies(lane1);
    assertEquals(2L, config.policies().rules().get(1).choose().laneMask());
    // The check spans two sections: whichever is set last, the mask's path is named.
    assertRejected(
        "policies[1].choose.laneMask",
        "policies[1].choose.laneMask: names lane 1, but tcp.lanes is 1 (lanes 0..0; 2 is more"
            + " than 1)",
        () -> config.withTcp(config.tcp().withLanes(1)));
    EngineConfig oneLane = EngineConfig.defaults().withTcp(TcpConfig.defaults().withLanes(1));
    assertRejected(
        "policies[1].choose.laneMask",
        "policies[1].choose.laneMask: names lane 1, but tcp.lanes is 1",
        () -> oneLane.withPolicies(lane1));
  }

  @Test
  void withoutTheKeyThereIsNoRuleAndTheDefaultsDocumentSaysSo() {
    assertTrue(EngineConfig.fromJson("{}").policies().isEmpty());
    assertEquals(TransportPolicies.NONE, EngineConfig.fromJson(doc("[]")).policies());
    assertTrue(EngineConfig.defaults().toJson().contains("\"policies\": []"));
  }

  @Test
  void sixtyFourRulesAreAccepted() {
    assertEquals(
        TransportPolicies.MAX_RULES,
        TransportPolicies.of(Collections.nCopies(TransportPolicies.MAX_RULES, tcp()))
            .rules()
            .size());
  }

  @ParameterizedTest
  @CsvSource({
    "*,            10.0.0.1:7000, true",
    "10.0.*:*,     10.0.3.4:7000, true",
    "10.0.*:*,     10.1.3.4:7000, false",
    "*:7000,       host-a:7000,   true",
    "*:7000,       host-a:17000,  false",
    "*:7000,       host-a:7001,   false",
    "Host-A:70*,   host-a:7042,   true",
    "host-a:70*,   host-b:7042,   false",
    "*.rack2.*:*,  n1.rack2.dc:9, true",
    "*.rack2.*:*,  n1.rack3.dc:9, false",
    "127.0.0.1:7,  127.0.0.1:7,   true",
    "127.0.0.1:7,  127.0.0.1:70,  false",
  })
  void peerPatternsMatchTheWholeEndpoint(String pattern, String endpoint, boolean matches) {
    PolicyMatch match = PolicyMatch.any().withPeer(pattern);
    TransportPolicies.of(rule(match, PolicyChoice.of(Transport.TCP)));
    assertEquals(matches, match.peerMatches(endpoint), pattern + " ~ " + endpoint);
  }

  @Test
  void noPeerPatternMatchesEveryPeer() {
    assertTrue(PolicyMatch.any().peerMatches("anything:1"));
    assertFalse(PolicyMatch.any().withPeer("a:1").peerMatches("b:1"));
  }

  // ---- rejected from JSON -----------------------------------------------------------------------

  static Stream<Arguments> jsonRejections() {
    String many = String.join(",", Collections.nCopies(TransportPolicies.MAX_RULES + 1, OK_RULE));
    return Stream.of(
        Arguments.of("{}", "policies", "policies: expected an array of rules, got object"),
        Arguments.of("null", "policies", "policies: expected an array of rules, got null"),
        Arguments.of("[" + many + "]", "policies", "policies: must hold at most 64 rules, got 65"),
        Arguments.of("[1]", "policies[0]", "policies[0]: expected an object with match and choose"),
        Arguments.of(
            "[" + OK_RULE + ",{'chose':{}}]",
            "policies[1].chose",
            "policies[1].chose: unknown key (known: match, choose)"),
        Arguments.of(
            "[{'match':[],'choose':{'transports':['TCP']}}]",
            "policies[0].match",
            "policies[0].match: expected an object, got array"),
        Arguments.of(
            "[{'match':{'size':1},'choose':{'transports':['TCP']}}]",
            "policies[0].match.size",
            "policies[0].match.size: unknown key (known: op, minBytes, maxBytes, priority, peer,"
                + " memory)"),
        Arguments.of(
            "[{'match':{'op':'read'},'choose':{'transports':['TCP']}}]",
            "policies[0].match.op",
            "policies[0].match.op: must be one of \"READ\", \"WRITE\", got \"read\""),
        Arguments.of(
            "[{'match':{'op':1},'choose':{'transports':['TCP']}}]",
            "policies[0].match.op",
            "policies[0].match.op: expected a string, got integer 1"),
        Arguments.of(
            "[{'match':{'minBytes':-1},'choose':{'transports':['TCP']}}]",
            "policies[0].match.minBytes",
            "policies[0].match.minBytes: must be 0..9223372036854775807, got -1"),
        Arguments.of(
            "[{'match':{'maxBytes':0},'choose':{'transports':['TCP']}}]",
            "policies[0].match.maxBytes",
            "policies[0].match.maxBytes: must be 1..9223372036854775807, got 0"),
        Arguments.of(
            "[{'match':{'maxBytes':99999999999999999999},'choose':{'transports':['TCP']}}]",
            "policies[0].match.maxBytes",
            "policies[0].match.maxBytes: must be 1..9223372036854775807, got 99999999999999999999"),
        Arguments.of(
            "[{'match':{'maxBytes':65536.0},'choose':{'transports':['TCP']}}]",
            "policies[0].match.maxBytes",
            "policies[0].match.maxBytes: expected an integer, got float 65536.0"),
        Arguments.of(
            "["
                + OK_RULE
                + ",{'match':{'minBytes':65537,'maxBytes':65536},"
                + "'choose':{'transports':['TCP']}}]",
            "policies[1].match.minBytes",
            "policies[1].match.minBytes: must be at most maxBytes (65536), got 65537"),
        Arguments.of(
            "[{'match':{'priority':'URGENT'},'choose':{'transports':['TCP']}}]",
            "policies[0].match.priority",
            "policies[0].match.priority: must be one of \"HIGH\", \"MEDIUM\", \"LOW\", got"
                + " \"URGENT\""),
        Arguments.of(
            "[{'match':{'peer':'10.0.*'},'choose':{'transports':['TCP']}}]",
            "policies[0].match.peer",
            "policies[0].match.peer: must be \"*\" or host:port"),
        Arguments.of(
            "[{'match':{'peer':'host:70a'},'choose':{'transports':['TCP']}}]",
            "policies[0].match.peer",
            "policies[0].match.peer: must be \"*\" or host:port"),
        Arguments.of(
            "[{'match':{'peer':'a b:1'},'choose':{'transports':['TCP']}}]",
            "policies[0].match.peer",
            "policies[0].match.peer: must be 1..255 characters without whitespace, got \"a b:1\""),
        Arguments.of(
            "[{'match':{'peer':''},'choose':{'transports':['TCP']}}]",
            "policies[0].match.peer",
            "policies[0].match.peer: must be 1..255 characters without whitespace, got \"\""),
        Arguments.of(
            "[{'match':{'memory':'GPU'},'choose':{'transports':['TCP']}}]",
            "policies[0].match.memory",
            "policies[0].match.memory: must be one of \"REGISTERED\", \"ALLOCATED\", \"SHARED\","
                + " got \"GPU\""),
        Arguments.of(
            "[{'match':{}}]",
            "policies[0].choose",
            "policies[0].choose: missing; every rule must choose its transports"),
        Arguments.of(
            "[{'choose':'TCP'}]",
            "policies[0].choose",
            "policies[0].choose: expected an object, got string \"TCP\""),
        Arguments.of(
            "[{'choose':{'transport':'TCP'}}]",
            "policies[0].choose.transport",
            "policies[0].choose.transport: unknown key (known: transports, priority, laneMask,"
                + " railMask)"),
        Arguments.of(
            "[{'choose':{}}]",
            "policies[0].choose.transports",
            "policies[0].choose.transports: must name at least one transport"),
        Arguments.of(
            "[{'choose':{'transports':[]}}]",
            "policies[0].choose.transports",
            "policies[0].choose.transports: must name at least one transport"),
        Arguments.of(
            "[{'choose':{'transports':'TCP'}}]",
            "policies[0].choose.transports",
            "policies[0].choose.transports: expected an array of strings, got string \"TCP\""),
        Arguments.of(
            "[{'choose':{'transports':['SHM',2]}}]",
            "policies[0].choose.transports[1]",
            "policies[0].choose.transports[1]: expected a string, got integer 2"),
        Arguments.of(
            "[" + OK_RULE + "," + OK_RULE + ",{'choose':{'transports':['SHM','UDP']}}]",
            "policies[2].choose.transports[1]",
            "policies[2].choose.transports[1]: must be one of \"TCP\", \"SHM\", \"RDMA\", got"
                + " \"UDP\""),
        Arguments.of(
            "[{'choose':{'transports':['UNSPEC']}}]",
            "policies[0].choose.transports[0]",
            "policies[0].choose.transports[0]: must be one of \"TCP\", \"SHM\", \"RDMA\""),
        Arguments.of(
            "[{'choose':{'transports':['FILE']}}]",
            "policies[0].choose.transports[0]",
            "policies[0].choose.transports[0]: must be one of \"TCP\", \"SHM\", \"RDMA\""),
        Arguments.of(
            "[{'choose':{'transports':['SHM','TCP','SHM']}}]",
            "policies[0].choose.transports[2]",
            "policies[0].choose.transports[2]: must differ from every other transport, got"
                + " \"SHM\" again (first at policies[0].choose.transports[0])"),
        Arguments.of(
            "[{'choose':{'transports':['SHM','TCP','RDMA','TCP']}}]",
            "policies[0].choose.transports",
            "policies[0].choose.transports: must name at most 3 transports, got 4"),
        Arguments.of(
            "[{'choose':{'transports':['TCP'],'priority':'low'}}]",
            "policies[0].choose.priority",
            "policies[0].choose.priority: must be one of \"HIGH\", \"MEDIUM\", \"LOW\""),
        Arguments.of(
            "[{'choose':{'transports':['TCP'],'laneMask':0}}]",
            "policies[0].choose.laneMask",
            "policies[0].choose.laneMask: must name at least one lane (bit i stands for lane i;"
                + " leave the key out for every lane), got 0"),
        Arguments.of(
            "[" + OK_RULE + ",{'choose':{'transports':['RDMA','TCP'],'railMask':0}}]",
            "policies[1].choose.railMask",
            "policies[1].choose.railMask: must name at least one rail (bit i stands for rail i;"
                + " leave the key out for every rail), got 0"),
        Arguments.of(
            "[{'choose':{'transports':['TCP'],'laneMask':-1}}]",
            "policies[0].choose.laneMask",
            "policies[0].choose.laneMask: must be 1..18446744073709551615 (a mask of at most 64"
                + " bits), got -1"),
        Arguments.of(
            "[{'choose':{'transports':['RDMA'],'railMask':18446744073709551616}}]",
            "policies[0].choose.railMask",
            "policies[0].choose.railMask: must be 1..18446744073709551615 (a mask of at most 64"
                + " bits), got 18446744073709551616"),
        Arguments.of(
            "[{'choose':{'transports':['TCP'],'laneMask':1.0}}]",
            "policies[0].choose.laneMask",
            "policies[0].choose.laneMask: expected an integer (a bit mask), got float 1.0"),
        Arguments.of(
            "[{'choose':{'transports':['TCP'],'laneMask':'1'}}]",
            "policies[0].choose.laneMask",
            "policies[0].choose.laneMask: expected an integer (a bit mask), got string \"1\""),
        Arguments.of(
            "[{'choose':{'transports':['RDMA'],'railMask':[0]}}]",
            "policies[0].choose.railMask",
            "policies[0].choose.railMask: expected an integer (a bit mask), got array"),
        Arguments.of(
            "[{'choose':{'transports':['SHM','RDMA'],'laneMask':1}}]",
            "policies[0].choose.laneMask",
            "policies[0].choose.laneMask: restricts TCP lanes, but the rule's transports (SHM,"
                + " RDMA) do not include TCP"),
        Arguments.of(
            "["
                + OK_RULE
                + ","
                + OK_RULE
                + ",{'choose':{'transports':['SHM','TCP'],'railMask':1}}]",
            "policies[2].choose.railMask",
            "policies[2].choose.railMask: restricts RDMA rails, but the rule's transports (SHM,"
                + " TCP) do not include RDMA"),
        Arguments.of(
            "[{'choose':{'transports':['TCP'],'laneMask':4}}]",
            "policies[0].choose.laneMask",
            "policies[0].choose.laneMask: names lane 2, but tcp.lanes is 2 (lanes 0..1; 4 is"
                + " more than 3)"),
        Arguments.of(
            "[{'choose':{'transports':['TCP'],'laneMask':18446744073709551615}}]",
            "policies[0].choose.laneMask",
            "policies[0].choose.laneMask: names lane 63, but tcp.lanes is 2"),
        Arguments.of(
            "[{'match':{'op':'READ','op':'WRITE'},'choose':{'transports':['TCP']}}]",
            "policies[0].match.op",
            "policies[0].match.op: duplicate key"));
  }

  @ParameterizedTest(name = "{1}: {0}")
  @MethodSource("jsonRejections")
  void jsonRejectionNamesThePath(String list, String path, String messageStart) {
    assertJsonRejected(doc(list), path, messageStart);
  }

  @Test
  void aRuleIsCheckedBeforeTheNextIsRead() {
    // Rule 0's range error comes before rule 1's unknown transport: document order.
    assertJsonRejected(
        doc(
            "[{'match':{'minBytes':9,'maxBytes':8},'choose':{'transports':['TCP']}},"
                + "{'choose':{'transports':['UDP']}}]"),
        "policies[0].match.minBytes",
        "policies[0].match.minBytes: must be at most maxBytes (8), got 9");
  }

  // ---- rejected by the typed API, with the same paths -------------------------------------------

  private static ConfigException typed(String path, String start, TransportPolicy... rules) {
    return assertRejected(path, start, () -> TransportPolicies.of(Arrays.asList(rules)));
  }

  @Test
  void typedNullListOrTooManyRules() {
    assertRejected(
        "policies",
        "policies: must not be null",
        () -> TransportPolicies.of((List<TransportPolicy>) null));
    assertRejected(
        "policies",
        "policies: must hold at most 64 rules, got 65",
        () -> TransportPolicies.of(Collections.nCopies(65, tcp())));
    assertRejected(
        "policies", "policies: must not be null", () -> EngineConfig.defaults().withPolicies(null));
  }

  @Test
  void typedNullRuleMatchOrChoice() {
    typed("policies[1]", "policies[1]: must not be null", tcp(), null);
    typed(
        "policies[0].match",
        "policies[0].match: must not be null",
        rule(null, PolicyChoice.of(Transport.TCP)));
    typed(
        "policies[0].choose",
        "policies[0].choose: must not be null",
        rule(PolicyMatch.any(), null));
  }

  @Test
  void typedSizeBounds() {
    PolicyChoice tcp = PolicyChoice.of(Transport.TCP);
    typed(
        "policies[0].match.minBytes",
        "policies[0].match.minBytes: must be 0..9223372036854775807, got -1",
        rule(PolicyMatch.any().withMinBytes(-1), tcp));
    typed(
        "policies[1].match.maxBytes",
        "policies[1].match.maxBytes: must be 1..9223372036854775807, got 0",
        tcp(),
        rule(PolicyMatch.any().withMaxBytes(0), tcp));
    typed(
        "policies[0].match.minBytes",
        "policies[0].match.minBytes: must be at most maxBytes (65536), got 65537",
        rule(PolicyMatch.any().withMinBytes(65537).withMaxBytes(65536), tcp));
  }

  @Test
  void typedPeerPattern() {
    PolicyChoice tcp = PolicyChoice.of(Transport.TCP);
    typed(
        "policies[0].match.peer",
        "policies[0].match.peer: must be \"*\" or host:port",
        rule(PolicyMatch.any().withPeer(":7000"), tcp));
    typed(
        "policies[0].match.peer",
        "policies[0].match.peer: must be 1..255 characters without whitespace",
        rule(PolicyMatch.any().withPeer("h:" + "1".repeat(255)), tcp));
  }

  @Test
  void typedMasks() {
    PolicyMatch any = PolicyMatch.any();
    typed(
        "policies[0].choose.laneMask",
        "policies[0].choose.laneMask: must name at least one lane",
        rule(any, PolicyChoice.of(Transport.TCP).withLaneMask(0L)));
    typed(
        "policies[1].choose.railMask",
        "policies[1].choose.railMask: must name at least one rail",
        tcp(),
        rule(any, PolicyChoice.of(Transport.RDMA).withRailMask(0L)));
    typed(
        "policies[0].choose.laneMask",
        "policies[0].choose.laneMask: restricts TCP lanes, but the rule's transports (SHM) do not"
            + " include TCP",
        rule(any, PolicyChoice.of(Transport.SHM).withLaneMask(1L)));
    typed(
        "policies[0].choose.railMask",
        "policies[0].choose.railMask: restricts RDMA rails, but the rule's transports (TCP) do not"
            + " include RDMA",
        rule(any, PolicyChoice.of(Transport.TCP).withRailMask(1L)));
    // Every nonzero bit pattern is a mask; lanes beyond tcp.lanes are EngineConfig's to refuse.
    assertEquals(
        -1L,
        TransportPolicies.of(rule(any, PolicyChoice.of(Transport.RDMA).withRailMask(-1L)))
            .rules()
            .get(0)
            .choose()
            .railMask());
  }

  @Test
  void typedTransportLists() {
    PolicyMatch any = PolicyMatch.any();
    typed(
        "policies[0].choose.transports",
        "policies[0].choose.transports: must not be null",
        rule(any, new PolicyChoice(null, null)));
    typed(
        "policies[0].choose.transports",
        "policies[0].choose.transports: must name at least one transport",
        rule(any, new PolicyChoice(List.of(), null)));
    List<Transport> withNull = new ArrayList<>();
    withNull.add(Transport.SHM);
    withNull.add(null);
    typed(
        "policies[2].choose.transports[1]",
        "policies[2].choose.transports[1]: must not be null",
        tcp(),
        tcp(),
        rule(any, new PolicyChoice(withNull, null)));
    typed(
        "policies[0].choose.transports[1]",
        "policies[0].choose.transports[1]: must differ from every other transport, got \"RDMA\""
            + " again (first at policies[0].choose.transports[0])",
        rule(any, PolicyChoice.of(Transport.RDMA, Transport.RDMA)));
    typed(
        "policies[0].choose.transports",
        "policies[0].choose.transports: must name at most 3 transports, got 4",
        rule(
            any,
            new PolicyChoice(
                List.of(Transport.TCP, Transport.SHM, Transport.RDMA, Transport.TCP), null)));
  }
}
