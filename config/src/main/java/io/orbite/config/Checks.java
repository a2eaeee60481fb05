package io.orbite.config;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.regex.Pattern;

/**
 * Shared validation helpers, so that constructors and the JSON reader word their messages
 * identically.
 */
final class Checks {
  /** Longest part of a rejected string value that is echoed in a message. */
  private static final int MAX_ECHOED_CHARS = 80;

  /** One part of a dotted IPv4 literal: 0..255, no leading zero. */
  private static final String IPV4_PART = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])";

  private static final Pattern IPV4 =
      Pattern.compile(IPV4_PART + "\\." + IPV4_PART + "\\." + IPV4_PART + "\\." + IPV4_PART);

  private Checks() {}

  /**
   * Joins a parent path and a key: {@code $} + {@code tcp} is {@code tcp}; {@code tcp} + {@code
   * lanes} is {@code tcp.lanes}.
   */
  static String child(String parent, String key) {
    return ConfigException.ROOT_PATH.equals(parent) ? key : parent + "." + key;
  }

  static ConfigException outOfRange(String path, long min, long max, String got) {
    return new ConfigException(path, "must be " + min + ".." + max + ", got " + got);
  }

  static int requireRange(String path, int value, int min, int max) {
    if (value < min || value > max) {
      throw outOfRange(path, min, max, Integer.toString(value));
    }
    return value;
  }

  static long requireRange(String path, long value, long min, long max) {
    if (value < min || value > max) {
      throw outOfRange(path, min, max, Long.toString(value));
    }
    return value;
  }

  static long requirePowerOfTwo(String path, long value) {
    if (Long.bitCount(value) != 1 || value < 0) {
      throw new ConfigException(path, "must be a power of two, got " + value);
    }
    return value;
  }

  /**
   * A host name or interface address: 1..{@value ListenConfig#MAX_HOST_LENGTH} characters, no
   * whitespace or control characters.
   */
  static String requireHost(String path, String host) {
    requireNonNull(path, host);
    if (host.isEmpty()
        || host.length() > ListenConfig.MAX_HOST_LENGTH
        || host.codePoints()
            .anyMatch(c -> Character.isWhitespace(c) || Character.isISOControl(c))) {
      throw new ConfigException(
          path,
          "must be 1.."
              + ListenConfig.MAX_HOST_LENGTH
              + " characters without whitespace, got "
              + quote(host));
    }
    return host;
  }

  /**
   * A dotted IPv4 literal: four parts {@code 0..255} joined by {@code .}, no leading zeros (so
   * {@code 010} cannot be mistaken for octal), no host names.
   */
  static String requireIpv4(String path, String address) {
    requireNonNull(path, address);
    if (!IPV4.matcher(address).matches()) {
      throw new ConfigException(
          path, "must be a dotted IPv4 address such as \"127.0.0.1\", got " + quote(address));
    }
    return address;
  }

  static <T> T requireNonNull(String path, T value) {
    if (value == null) {
      throw new ConfigException(path, "must not be null");
    }
    return value;
  }

  /** The value as a JSON string literal, cut short if long, for echoing in messages. */
  static String quote(String value) {
    String shown =
        value.length() > MAX_ECHOED_CHARS ? value.substring(0, MAX_ECHOED_CHARS) + "..." : value;
    return "\"" + new String(JsonStringEncoder.getInstance().quoteAsString(shown)) + "\"";
  }

  /**
   * A list of names, checked and copied: at most {@code max}, none {@code null}, blank or repeated.
   *
   * @throws ConfigException naming {@code path} for a null or too long list, or {@code path[<i>]}
   *     for the first bad name
   */
  static List<String> requireNames(String path, List<String> names, int max) {
    return requireDistinct(
        path,
        names,
        max,
        "device names",
        "device",
        (namePath, name) -> {
          requireNonNull(namePath, name);
          if (name.isBlank()) {
            throw new ConfigException(namePath, "must not be blank, got " + quote(name));
          }
        });
  }

  /**
   * A list of dotted IPv4 literals, checked and copied: at most {@code max}, none {@code null},
   * malformed or repeated.
   *
   * @throws ConfigException naming {@code path} for a null or too long list, or {@code path[<i>]}
   *     for the first bad address
   */
  static List<String> requireIpv4s(String path, List<String> addresses, int max) {
    return requireDistinct(path, addresses, max, "addresses", "address", Checks::requireIpv4);
  }

  /**
   * A list checked and copied: at most {@code max} values ({@code plural} in the message), each
   * passing {@code check} (given its path {@code path[<i>]}), none equal to an earlier one.
   */
  private static List<String> requireDistinct(
      String path,
      List<String> values,
      int max,
      String plural,
      String singular,
      BiConsumer<String, String> check) {
    requireNonNull(path, values);
    if (values.size() > max) {
      throw new ConfigException(
          path, "must hold at most " + max + " " + plural + ", got " + values.size());
    }
    // Checked one by one (List.copyOf would throw a bare NullPointerException on a null value).
    for (int i = 0; i < values.size(); i++) {
      String value = values.get(i);
      String valuePath = path + "[" + i + "]";
      check.accept(valuePath, value);
      int first = values.indexOf(value);
      if (first < i) {
        throw new ConfigException(
            valuePath,
            "must differ from every other "
                + singular
                + ", got "
                + quote(value)
                + " again (first at "
                + path
                + "["
                + first
                + "])");
      }
    }
    return List.copyOf(values);
  }
}
