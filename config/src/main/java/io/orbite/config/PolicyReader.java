package io.orbite.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Reads the JSON form of {@link TransportPolicies} strictly: types and names here, at their full
 * path ({@code policies[2].choose.transports[1]}), then each rule through the same check as the
 * typed API ({@link TransportPolicies#check}), rule by rule, so that the first error in document
 * order is the one reported.
 */
final class PolicyReader {
  private static final List<String> RULE_KEYS = List.of("match", "choose");
  private static final List<String> MATCH_KEYS =
      Arrays.stream(PolicyMatch.class.getRecordComponents()).map(c -> c.getName()).toList();

  private static final List<String> CHOOSE_KEYS =
      Arrays.stream(PolicyChoice.class.getRecordComponents()).map(c -> c.getName()).toList();

  private PolicyReader() {}

  static TransportPolicies read(JsonNode node, String path) {
    if (!node.isArray()) {
      throw ConfigReader.wrongType(path, "an array of rules", node);
    }
    TransportPolicies.checkCount(node.size());
    List<TransportPolicy> rules = new ArrayList<>(node.size());
    for (int i = 0; i < node.size(); i++) {
      String at = TransportPolicies.path(i);
      JsonNode element = node.get(i);
      if (!element.isObject()) {
        throw ConfigReader.wrongType(at, "an object with match and choose", element);
      }
      ConfigReader rule = ConfigReader.at((ObjectNode) element, at, RULE_KEYS);
      PolicyMatch match = match(rule);
      PolicyChoice choose = choose(rule);
      TransportPolicy policy = new TransportPolicy(match, choose);
      TransportPolicies.check(i, policy);
      rules.add(policy);
    }
    return TransportPolicies.of(rules);
  }

  private static PolicyMatch match(ConfigReader rule) {
    String at = Checks.child(rule.path(), "match");
    JsonNode node = rule.raw("match");
    if (node == null) {
      return PolicyMatch.any();
    }
    if (!node.isObject()) {
      throw ConfigReader.wrongType(at, "an object", node);
    }
    ConfigReader r = ConfigReader.at((ObjectNode) node, at, MATCH_KEYS);
    return new PolicyMatch(
        name(r, "op", TransportPolicy.Op.class),
        r.longValue(
            "minBytes",
            PolicyMatch.DEFAULT_MIN_BYTES,
            PolicyMatch.MIN_MIN_BYTES,
            PolicyMatch.MAX_MIN_BYTES),
        r.longValue(
            "maxBytes",
            PolicyMatch.DEFAULT_MAX_BYTES,
            PolicyMatch.MIN_MAX_BYTES,
            PolicyMatch.MAX_MAX_BYTES),
        name(r, "priority", TransportPolicy.Priority.class),
        r.stringValue("peer", null),
        name(r, "memory", TransportPolicy.Memory.class));
  }

  private static PolicyChoice choose(ConfigReader rule) {
    String at = Checks.child(rule.path(), "choose");
    JsonNode node = rule.raw("choose");
    if (node == null) {
      throw new ConfigException(
          at, "missing; every rule must choose its transports ({\"transports\": [\"TCP\"]})");
    }
    if (!node.isObject()) {
      throw ConfigReader.wrongType(at, "an object", node);
    }
    ConfigReader r = ConfigReader.at((ObjectNode) node, at, CHOOSE_KEYS);
    List<String> names = r.stringListValue("transports", List.of());
    List<TransportPolicy.Transport> transports = new ArrayList<>(names.size());
    String listPath = Checks.child(at, "transports");
    for (int i = 0; i < names.size(); i++) {
      transports.add(
          parse(listPath + "[" + i + "]", names.get(i), TransportPolicy.Transport.class));
    }
    return new PolicyChoice(
        transports,
        name(r, "priority", TransportPolicy.Priority.class),
        mask(r, "laneMask"),
        mask(r, "railMask"));
  }

  /**
   * The unsigned 64-bit mask under {@code key}, or null when absent: a JSON integer 0..2^64-1 (0 is
   * let through for {@link PolicyChoice#check} to refuse with the rule's words).
   */
  private static Long mask(ConfigReader r, String key) {
    JsonNode value = r.raw(key);
    if (value == null) {
      return null;
    }
    String at = Checks.child(r.path(), key);
    if (!value.isIntegralNumber()) {
      throw ConfigReader.wrongType(at, "an integer (a bit mask)", value);
    }
    BigInteger number = value.bigIntegerValue();
    if (number.signum() < 0 || number.bitLength() > PolicyChoice.MAX_MASK_BITS) {
      throw new ConfigException(
          at,
          "must be 1.."
              + PolicyChoice.unsigned(-1L)
              + " (a mask of at most "
              + PolicyChoice.MAX_MASK_BITS
              + " bits), got "
              + number);
    }
    return number.longValue();
  }

  /** The constant named by the string under {@code key}, or null when absent. */
  private static <E extends Enum<E>> E name(ConfigReader r, String key, Class<E> type) {
    String value = r.stringValue(key, null);
    return value == null ? null : parse(Checks.child(r.path(), key), value, type);
  }

  /** The constant {@code value} names exactly (case included). */
  private static <E extends Enum<E>> E parse(String path, String value, Class<E> type) {
    for (E constant : type.getEnumConstants()) {
      if (constant.name().equals(value)) {
        return constant;
      }
    }
    throw new ConfigException(
        path,
        "must be one of "
            + Arrays.stream(type.getEnumConstants())
                .map(c -> "\"" + c.name() + "\"")
                .collect(Collectors.joining(", "))
            + ", got "
            + Checks.quote(value));
  }
}
