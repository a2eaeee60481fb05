package io.orbite.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The engine's first-match transport policies: the JSON key {@code policies}, an ordered list of
 * {@link TransportPolicy rules}. For a request that lets the engine choose ({@code UNSPEC}) to a
 * peer segment, the first rule whose match accepts it decides its transport; without rules, or when
 * none matches, the engine's own choice applies unchanged (SHM for an exported region, else RDMA
 * with a healthy rail, else TCP). A request that names its transport, and any request to a file
 * segment, is never changed by a rule. Immutable; checked on creation.
 *
 * <p>JSON form: <code>
 * "policies": [{"match": {"maxBytes": 65536}, "choose": {"transports": ["SHM", "TCP"]}},
 * {"match": {"op": "WRITE", "peer": "10.0.*:*"}, "choose": {"transports": ["TCP"], "priority":
 * "LOW", "laneMask": 1}}]</code>. A rule without {@code match} matches every request; {@code
 * choose} is required.
 */
public final class TransportPolicies {
  /** JSON key of the list, and the path prefix of its messages. */
  static final String SECTION = "policies";

  /** Most rules a configuration may hold. */
  public static final int MAX_RULES = 64;

  /** No rules: the engine's own choice for every request. The default. */
  public static final TransportPolicies NONE = new TransportPolicies(List.of());

  private final List<TransportPolicy> rules;

  private TransportPolicies(List<TransportPolicy> rules) {
    this.rules = rules;
  }

  /**
   * The rules, checked as the JSON loader checks them, every message naming the rule's path.
   *
   * @param rules the rules, first match first; at most {@value #MAX_RULES}
   * @return the policies
   * @throws ConfigException naming {@code policies} for a null or too long list, or the path of the
   *     first error in a rule: {@code policies[i]} (a null rule), {@code policies[i].match} or
   *     {@code policies[i].choose} (null), {@code policies[i].match.minBytes} (out of range, or
   *     above {@code maxBytes}), {@code policies[i].match.maxBytes}, {@code policies[i].match.peer}
   *     (not a pattern), {@code policies[i].choose.transports} (null, empty or too long), {@code
   *     policies[i].choose.transports[j]} (null or repeated), {@code policies[i].choose.laneMask}
   *     (0, or on a rule without TCP), {@code policies[i].choose.railMask} (0, or on a rule without
   *     RDMA). A lane mask naming a lane at or above {@code tcp.lanes} is refused by {@link
   *     EngineConfig}, which knows the lanes
   */
  public static TransportPolicies of(List<TransportPolicy> rules) {
    Checks.requireNonNull(SECTION, rules);
    checkCount(rules.size());
    List<TransportPolicy> copy = new ArrayList<>(rules.size());
    for (int i = 0; i < rules.size(); i++) {
      TransportPolicy rule = rules.get(i);
      check(i, rule);
      copy.add(rule);
    }
    return copy.isEmpty() ? NONE : new TransportPolicies(Collections.unmodifiableList(copy));
  }

  /**
   * {@link #of(List)} over {@code rules}.
   *
   * @param rules the rules, first match first
   * @return the policies
   * @throws ConfigException as {@link #of(List)}
   */
  public static TransportPolicies of(TransportPolicy... rules) {
    Checks.requireNonNull(SECTION, rules);
    return of(Arrays.asList(rules));
  }

  /** The path of rule {@code index}: {@code policies[2]}. */
  static String path(int index) {
    return SECTION + "[" + index + "]";
  }

  static void checkCount(int size) {
    if (size > MAX_RULES) {
      throw new ConfigException(SECTION, "must hold at most " + MAX_RULES + " rules, got " + size);
    }
  }

  /** Checks rule {@code index}, naming {@code policies[index]...}. */
  static void check(int index, TransportPolicy rule) {
    String at = path(index);
    Checks.requireNonNull(at, rule);
    Checks.requireNonNull(Checks.child(at, "match"), rule.match());
    Checks.requireNonNull(Checks.child(at, "choose"), rule.choose());
    rule.match().check(at);
    rule.choose().check(at);
  }

  /**
   * Checks each rule's lane mask against the lanes each peer gets, naming {@code
   * policies[i].choose.laneMask}: a bit at or above {@code lanes} names a lane no channel has.
   */
  void checkLanes(int lanes) {
    for (int i = 0; i < rules.size(); i++) {
      rules.get(i).choose().checkLanes(path(i), lanes);
    }
  }

  /**
   * The rules, first match first.
   *
   * @return an unmodifiable list; empty for {@link #NONE}
   */
  public List<TransportPolicy> rules() {
    return rules;
  }

  /**
   * Whether there is no rule.
   *
   * @return true for {@link #NONE}
   */
  public boolean isEmpty() {
    return rules.isEmpty();
  }

  /** The JSON form, as the loader reads it back: a condition left open is left out. */
  JsonNode toJson() {
    ArrayNode array = JsonNodeFactory.instance.arrayNode();
    for (TransportPolicy rule : rules) {
      ObjectNode object = array.addObject();
      PolicyMatch m = rule.match();
      ObjectNode match = object.putObject("match");
      if (m.op() != null) {
        match.put("op", m.op().name());
      }
      match.put("minBytes", m.minBytes());
      match.put("maxBytes", m.maxBytes());
      if (m.priority() != null) {
        match.put("priority", m.priority().name());
      }
      if (m.peer() != null) {
        match.put("peer", m.peer());
      }
      if (m.memory() != null) {
        match.put("memory", m.memory().name());
      }
      ObjectNode choose = object.putObject("choose");
      ArrayNode transports = choose.putArray("transports");
      rule.choose().transports().forEach(t -> transports.add(t.name()));
      if (rule.choose().priority() != null) {
        choose.put("priority", rule.choose().priority().name());
      }
      if (rule.choose().laneMask() != null) {
        choose.put("laneMask", new BigInteger(PolicyChoice.unsigned(rule.choose().laneMask())));
      }
      if (rule.choose().railMask() != null) {
        choose.put("railMask", new BigInteger(PolicyChoice.unsigned(rule.choose().railMask())));
      }
    }
    return array;
  }

  /**
   * Equal when both hold equal rules in the same order.
   *
   * @param o another object
   * @return whether it holds the same rules
   */
  @Override
  public boolean equals(Object o) {
    return o instanceof TransportPolicies p && rules.equals(p.rules);
  }

  /**
   * A hash of the rules.
   *
   * @return the hash code
   */
  @Override
  public int hashCode() {
    return rules.hashCode();
  }

  /**
   * The rules, as their JSON form.
   *
   * @return for example {@code [{"match":{...},"choose":{"transports":["SHM"]}}]}
   */
  @Override
  public String toString() {
    return toJson().toString();
  }
}
