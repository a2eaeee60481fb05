package io.orbite.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.function.Function;

/**
 * Reads the keys of one JSON object (one configuration section) with type and range checks,
 * tracking the path for messages. A missing key yields the given default; a missing section reads
 * as an empty object, so every key in it takes its default.
 *
 * <p>The keys a section may hold are the component names of its record, so the list of known keys
 * cannot drift from the schema. Unknown keys are reported before any value is read.
 */
final class ConfigReader {
  private final ObjectNode object;
  private final String path;

  private ConfigReader(ObjectNode object, String path, Class<? extends Record> schema) {
    this(object, path, Arrays.stream(schema.getRecordComponents()).map(c -> c.getName()).toList());
  }

  private ConfigReader(ObjectNode object, String path, List<String> known) {
    this.object = object;
    this.path = path;
    rejectUnknownKeys(known);
  }

  /** A reader for the document root. */
  static ConfigReader root(ObjectNode document, Class<? extends Record> schema) {
    return new ConfigReader(document, ConfigException.ROOT_PATH, schema);
  }

  /**
   * A reader for an object that sits at {@code path} (an element of an array, say {@code
   * policies[2]}) whose keys may only be {@code known}.
   */
  static ConfigReader at(ObjectNode object, String path, List<String> known) {
    return new ConfigReader(object, path, known);
  }

  /** The path of this reader's object. */
  String path() {
    return path;
  }

  /** The raw value under {@code key}, or null when absent. */
  JsonNode raw(String key) {
    return object.get(key);
  }

  /**
   * Reads the nested object under {@code key} with {@code read}; an absent key reads as an empty
   * object.
   */
  <T extends Record> T section(String key, Class<T> schema, Function<ConfigReader, T> read) {
    JsonNode value = object.get(key);
    String keyPath = Checks.child(path, key);
    if (value == null) {
      return read.apply(new ConfigReader(JsonNodeFactory.instance.objectNode(), keyPath, schema));
    }
    if (!value.isObject()) {
      throw wrongType(keyPath, "an object", value);
    }
    return read.apply(new ConfigReader((ObjectNode) value, keyPath, schema));
  }

  /**
   * The integer under {@code key}, or {@code fallback} when absent; must lie in {@code min..max}.
   */
  int intValue(String key, int fallback, int min, int max) {
    return (int) longValue(key, fallback, min, max);
  }

  /**
   * The integer under {@code key}, or {@code fallback} when absent; must lie in {@code min..max}.
   */
  long longValue(String key, long fallback, long min, long max) {
    JsonNode value = object.get(key);
    if (value == null) {
      return fallback;
    }
    String keyPath = Checks.child(path, key);
    if (!value.isIntegralNumber()) {
      throw wrongType(keyPath, "an integer", value);
    }
    BigInteger number = value.bigIntegerValue();
    if (number.compareTo(BigInteger.valueOf(min)) < 0
        || number.compareTo(BigInteger.valueOf(max)) > 0) {
      throw Checks.outOfRange(keyPath, min, max, number.toString());
    }
    return number.longValueExact();
  }

  /**
   * The boolean under {@code key}, or {@code fallback} when absent; only JSON {@code true}/{@code
   * false}.
   */
  boolean booleanValue(String key, boolean fallback) {
    JsonNode value = object.get(key);
    if (value == null) {
      return fallback;
    }
    if (!value.isBoolean()) {
      throw wrongType(Checks.child(path, key), "a boolean", value);
    }
    return value.booleanValue();
  }

  /**
   * The string under {@code key}, or {@code fallback} when absent. Content checks are the record's
   * job.
   */
  String stringValue(String key, String fallback) {
    JsonNode value = object.get(key);
    if (value == null) {
      return fallback;
    }
    if (!value.isTextual()) {
      throw wrongType(Checks.child(path, key), "a string", value);
    }
    return value.textValue();
  }

  /**
   * The array of strings under {@code key}, or {@code fallback} when absent; an element that is not
   * a string is reported at its index ({@code rdma.devices[1]}). Content checks are the record's
   * job.
   */
  List<String> stringListValue(String key, List<String> fallback) {
    JsonNode value = object.get(key);
    if (value == null) {
      return fallback;
    }
    String keyPath = Checks.child(path, key);
    if (!value.isArray()) {
      throw wrongType(keyPath, "an array of strings", value);
    }
    List<String> strings = new ArrayList<>(value.size());
    for (int i = 0; i < value.size(); i++) {
      JsonNode element = value.get(i);
      if (!element.isTextual()) {
        throw wrongType(keyPath + "[" + i + "]", "a string", element);
      }
      strings.add(element.textValue());
    }
    return strings;
  }

  /**
   * The inline priority matrix under {@code key} (classic form), or {@link RdmaPriorityMatrix#NONE}
   * when absent; its shape is checked here, its names when the transport starts.
   */
  RdmaPriorityMatrix priorityMatrixValue(String key) {
    JsonNode value = object.get(key);
    if (value == null) {
      return RdmaPriorityMatrix.NONE;
    }
    return RdmaPriorityMatrix.read(value, Checks.child(path, key));
  }

  /**
   * The transport policies under {@code key} (an array of rules), or {@link TransportPolicies#NONE}
   * when absent; read and checked strictly, each error naming its path ({@code
   * policies[2].choose.transports[1]}).
   */
  TransportPolicies policiesValue(String key) {
    JsonNode value = object.get(key);
    if (value == null) {
      return TransportPolicies.NONE;
    }
    return PolicyReader.read(value, Checks.child(path, key));
  }

  private void rejectUnknownKeys(List<String> known) {
    for (Iterator<String> keys = object.fieldNames(); keys.hasNext(); ) {
      String key = keys.next();
      if (!known.contains(key)) {
        throw new ConfigException(
            Checks.child(path, key), "unknown key (known: " + String.join(", ", known) + ")");
      }
    }
  }

  static ConfigException wrongType(String path, String expected, JsonNode got) {
    return new ConfigException(path, "expected " + expected + ", got " + ConfigJson.describe(got));
  }
}
