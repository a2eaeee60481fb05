package io.orbite.qualification.qualify;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One JSON object of a profile, read strictly: every key must be one the reader asks for (an
 * unknown key is an error naming it, its path and the keys allowed), and every value must have its
 * type and range. Every error names the value's path from the document's root ({@code
 * cases[1].payload}).
 */
final class JsonFields {
  private final JsonNode node;
  private final String path;
  private final Set<String> allowed = new LinkedHashSet<>();

  private JsonFields(JsonNode node, String path) {
    this.node = node;
    this.path = path;
  }

  /** The object at {@code path}; anything else is an error. */
  static JsonFields of(JsonNode node, String path) {
    if (node == null || !node.isObject()) {
      throw new ProfileException(where(path) + "must be a JSON object");
    }
    return new JsonFields(node, path);
  }

  private static String where(String path) {
    return path.isEmpty() ? "the profile: " : path + ": ";
  }

  private String at(String key) {
    return path.isEmpty() ? key : path + "." + key;
  }

  private JsonNode value(String key, boolean required) {
    allowed.add(key);
    JsonNode v = node.get(key);
    if ((v == null || v.isNull()) && required) {
      throw new ProfileException(at(key) + ": required, and missing");
    }
    return v == null || v.isNull() ? null : v;
  }

  /** A string; null when absent and not required. */
  String string(String key, boolean required) {
    JsonNode v = value(key, required);
    if (v == null) {
      return null;
    }
    if (!v.isTextual() || v.asText().isBlank()) {
      throw new ProfileException(at(key) + ": must be a non-blank string, not " + v);
    }
    return v.asText();
  }

  /** A string that must be one of {@code choices}; {@code fallback} when absent. */
  String choice(String key, String fallback, String... choices) {
    String s = string(key, fallback == null);
    if (s == null) {
      return fallback;
    }
    if (!Arrays.asList(choices).contains(s)) {
      throw new ProfileException(
          at(key) + ": '" + s + "' is not one of " + String.join(", ", choices));
    }
    return s;
  }

  /** An integral number in {@code [min, max]}; {@code fallback} when absent (null: required). */
  long number(String key, Long fallback, long min, long max) {
    JsonNode v = value(key, fallback == null);
    if (v == null) {
      return fallback;
    }
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw new ProfileException(at(key) + ": must be a whole number, not " + v);
    }
    long n = v.asLong();
    if (n < min || n > max) {
      throw new ProfileException(at(key) + ": " + n + " is outside " + min + ".." + max);
    }
    return n;
  }

  /** Whether the key is present (and not null). */
  boolean has(String key) {
    allowed.add(key);
    JsonNode v = node.get(key);
    return v != null && !v.isNull();
  }

  /** The object under {@code key}. */
  JsonFields object(String key, boolean required) {
    JsonNode v = value(key, required);
    return v == null ? null : of(v, at(key));
  }

  /** The non-empty array under {@code key}, each element's path given. */
  List<JsonNode> array(String key) {
    JsonNode v = value(key, true);
    if (!v.isArray() || v.isEmpty()) {
      throw new ProfileException(at(key) + ": must be a non-empty array");
    }
    return java.util.stream.StreamSupport.stream(v.spliterator(), false).toList();
  }

  /** The keys of this object (for maps keyed by name). */
  List<String> keys() {
    List<String> keys = new java.util.ArrayList<>();
    node.fieldNames().forEachRemaining(keys::add);
    allowed.addAll(keys);
    return keys;
  }

  /** The path of the value under {@code key}. */
  String pathOf(String key) {
    return at(key);
  }

  /** Fails on any key the reader did not ask for. Call it after reading every field. */
  void noOthers() {
    node.fieldNames()
        .forEachRemaining(
            k -> {
              if (!allowed.contains(k)) {
                throw new ProfileException(
                    at(k) + ": unknown key; the keys here are " + String.join(", ", allowed));
              }
            });
  }
}
