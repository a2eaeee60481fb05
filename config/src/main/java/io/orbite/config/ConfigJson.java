package io.orbite.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.DecimalNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.util.List;

/**
 * Turns JSON text into a tree and records back into JSON text.
 *
 * <p>The tree is built token by token (rather than with {@code ObjectMapper.readTree}) so that a
 * repeated key can be reported with its full path. Jackson's defaults already reject comments,
 * single quotes, unquoted names, {@code NaN} and other non-standard JSON.
 */
final class ConfigJson {
  private static final JsonFactory FACTORY =
      JsonFactory.builder().disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION).build();
  private static final ObjectMapper MAPPER = new ObjectMapper(FACTORY);
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private ConfigJson() {}

  /**
   * Number of bytes {@code text} takes in UTF-8 (an unpaired surrogate counts as the 3 bytes of its
   * code unit).
   */
  static long utf8Length(CharSequence text) {
    long bytes = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x80) {
        bytes += 1;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        bytes += 4;
        i++;
      } else {
        bytes += 3;
      }
    }
    return bytes;
  }

  static ConfigException tooLarge(long bytes) {
    return new ConfigException(
        ConfigException.ROOT_PATH, "document is " + bytes + " bytes, over the 1 MiB limit");
  }

  /**
   * Parses a complete document whose root must be an object.
   *
   * @throws ConfigException on size, syntax, duplicate keys, an empty document, a non-object root
   *     or content after the root object
   */
  static ObjectNode parseDocument(String json) {
    long bytes = utf8Length(json);
    if (bytes > EngineConfig.MAX_DOCUMENT_BYTES) {
      throw tooLarge(bytes);
    }
    try (JsonParser parser = FACTORY.createParser(json)) {
      try {
        return parseRoot(parser);
      } catch (JacksonException e) {
        // Limit violations (nesting depth, number length) carry no location of their own.
        JsonLocation location =
            e.getLocation() != null ? e.getLocation() : parser.currentLocation();
        throw new ConfigException(
            ConfigException.ROOT_PATH,
            "malformed JSON" + at(location) + ": " + e.getOriginalMessage(),
            e);
      }
    } catch (IOException e) {
      // Parsing an in-memory string does no I/O, and syntax errors are handled above.
      throw new UncheckedIOException(e);
    }
  }

  private static ObjectNode parseRoot(JsonParser parser) throws IOException {
    JsonToken first = parser.nextToken();
    if (first == null) {
      throw new ConfigException(ConfigException.ROOT_PATH, "document is empty");
    }
    JsonNode root = readValue(parser, ConfigException.ROOT_PATH);
    if (!root.isObject()) {
      throw new ConfigException(
          ConfigException.ROOT_PATH,
          "expected an object at the document root, got " + describe(root));
    }
    if (parser.nextToken() != null) {
      throw new ConfigException(
          ConfigException.ROOT_PATH,
          "unexpected content after the root object" + at(parser.currentTokenLocation()));
    }
    return (ObjectNode) root;
  }

  /**
   * Reads the value starting at the parser's current token; {@code path} is where that value sits.
   */
  private static JsonNode readValue(JsonParser parser, String path) throws IOException {
    JsonToken token = parser.currentToken();
    switch (token) {
      case START_OBJECT:
        {
          ObjectNode object = NODES.objectNode();
          while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String key = parser.currentName();
            String keyPath = Checks.child(path, key);
            if (object.has(key)) {
              throw new ConfigException(keyPath, "duplicate key");
            }
            parser.nextToken();
            object.set(key, readValue(parser, keyPath));
          }
          return object;
        }
      case START_ARRAY:
        {
          ArrayNode array = NODES.arrayNode();
          int index = 0;
          while (parser.nextToken() != JsonToken.END_ARRAY) {
            array.add(readValue(parser, path + "[" + index++ + "]"));
          }
          return array;
        }
      case VALUE_STRING:
        return NODES.textNode(parser.getText());
      case VALUE_NUMBER_INT:
        return NODES.numberNode(parser.getBigIntegerValue());
      case VALUE_NUMBER_FLOAT:
        // Kept exactly as written (2.0 stays 2.0) so that messages echo what the document said.
        return DecimalNode.valueOf(parser.getDecimalValue());
      case VALUE_TRUE:
        return NODES.booleanNode(true);
      case VALUE_FALSE:
        return NODES.booleanNode(false);
      case VALUE_NULL:
        return NODES.nullNode();
      default:
        // The parser only yields the tokens above at a value position.
        throw new IllegalStateException("unexpected token " + token + " at " + path);
    }
  }

  private static String at(JsonLocation location) {
    if (location == null || location.getLineNr() < 0) {
      return "";
    }
    return " at line " + location.getLineNr() + ", column " + location.getColumnNr();
  }

  /**
   * Type of a JSON value for messages, with the value itself for scalars: {@code string "4"},
   * {@code float 2.5}.
   */
  static String describe(JsonNode node) {
    switch (node.getNodeType()) {
      case STRING:
        return "string " + Checks.quote(node.textValue());
      case NUMBER:
        return (node.isIntegralNumber() ? "integer " : "float ") + node.asText();
      case BOOLEAN:
        return "boolean " + node.asText();
      case NULL:
        return "null";
      case OBJECT:
        return "object";
      case ARRAY:
        return "array";
      default:
        return node.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * Writes a configuration record as pretty-printed JSON, one key per record component in
   * declaration order; nested records become nested objects, lists of strings arrays of strings.
   */
  static String write(Record config) {
    // Two-space indent, "\n" line ends on every platform, "key": value; arrays one element a line
    // like objects, an empty array as [].
    DefaultPrettyPrinter printer =
        new DefaultPrettyPrinter()
            .withSeparators(
                Separators.createDefaultInstance()
                    .withObjectFieldValueSpacing(Separators.Spacing.AFTER)
                    .withArrayEmptySeparator("")
                    .withObjectEmptySeparator(""));
    printer.indentObjectsWith(new DefaultIndenter("  ", "\n"));
    printer.indentArraysWith(new DefaultIndenter("  ", "\n"));
    try {
      return MAPPER.writer(printer).writeValueAsString(toTree(config));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static ObjectNode toTree(Record config) {
    ObjectNode object = NODES.objectNode();
    for (RecordComponent component : config.getClass().getRecordComponents()) {
      Object value;
      try {
        value = component.getAccessor().invoke(config);
      } catch (IllegalAccessException | InvocationTargetException e) {
        throw new IllegalStateException("cannot read " + component, e);
      }
      String key = component.getName();
      if (value instanceof RdmaPriorityMatrix matrix) {
        object.set(key, matrix.toJson());
      } else if (value instanceof TransportPolicies policies) {
        object.set(key, policies.toJson());
      } else if (value instanceof Record nested) {
        object.set(key, toTree(nested));
      } else if (value instanceof Integer i) {
        object.put(key, i);
      } else if (value instanceof Long l) {
        object.put(key, l);
      } else if (value instanceof String s) {
        object.put(key, s);
      } else if (value instanceof Boolean b) {
        object.put(key, b);
      } else if (value instanceof List<?> list) {
        ArrayNode array = object.putArray(key);
        for (Object element : list) {
          if (!(element instanceof String text)) {
            throw new IllegalStateException("unsupported element in " + component);
          }
          array.add(text);
        }
      } else {
        throw new IllegalStateException("unsupported component type " + component);
      }
    }
    return object;
  }
}
