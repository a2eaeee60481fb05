package io.orbite.config;

import static io.orbite.config.RdmaPriorityMatrix.ANY_LOCATION;
import static io.orbite.config.RdmaPriorityMatrix.MAX_FILE_BYTES;
import static io.orbite.config.RdmaPriorityMatrix.MAX_LOCATIONS;
import static io.orbite.config.RdmaPriorityMatrix.MAX_NAMES;
import static io.orbite.config.RdmaPriorityMatrix.MAX_NAME_LENGTH;
import static io.orbite.config.RdmaPriorityMatrix.MAX_RANKS;
import static io.orbite.config.RdmaPriorityMatrix.MIN_RANKS;
import static io.orbite.config.RdmaPriorityMatrix.NONE;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.config.RdmaPriorityMatrix.Named;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads the two JSON forms of an {@link RdmaPriorityMatrix} strictly (the classic form inline or in
 * a file, the native form in a file only; see the matrix's class comment for what each rejects), so
 * that the matrix itself is only the value the RDMA transport queries.
 */
final class RdmaPriorityMatrixParser {
  private static final Pattern LOCATION = Pattern.compile("(cpu|cuda):(0|[1-9][0-9]{0,3})");
  private static final int MAX_LOCATION_ORDINAL = 1023;

  private RdmaPriorityMatrixParser() {}

  /**
   * The inline matrix at {@code path} of a configuration document (classic form only).
   *
   * @throws ConfigException naming the JSON path of the first error
   */
  static RdmaPriorityMatrix inline(JsonNode node, String path) {
    Errors errors = (at, detail) -> new ConfigException(at, detail);
    if (!node.isObject()) {
      throw errors.at(
          path,
          "expected an object (location to ranks of device names), got "
              + ConfigJson.describe(node));
    }
    return classic((ObjectNode) node, path, errors, "");
  }

  /**
   * A topology file, in the classic or the native form (see {@link RdmaPriorityMatrix#readFile}).
   *
   * @throws ConfigException naming {@code rdma.selection.customJsonPath}, whose detail names the
   *     file and the JSON path of the first error
   */
  static RdmaPriorityMatrix file(Path file) {
    String key = RdmaSelectionConfig.SECTION + ".customJsonPath";
    Errors errors = (at, detail) -> new ConfigException(key, file + ": " + at + ": " + detail);
    String text;
    try {
      long size = Files.size(file);
      if (size > MAX_FILE_BYTES) {
        throw errors.at("$", "the file is " + size + " bytes, over the 1 MiB limit");
      }
      byte[] bytes = Files.readAllBytes(file);
      if (bytes.length > MAX_FILE_BYTES) {
        throw errors.at("$", "the file is " + bytes.length + " bytes, over the 1 MiB limit");
      }
      text =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(bytes))
              .toString();
    } catch (CharacterCodingException e) {
      throw new ConfigException(key, file + ": $: the file is not valid UTF-8", e);
    } catch (IOException e) {
      throw new ConfigException(key, file + ": the file cannot be read: " + e, e);
    }
    ObjectNode root;
    try {
      root = ConfigJson.parseDocument(text);
    } catch (ConfigException e) {
      throw new ConfigException(key, file + ": " + e.getMessage(), e);
    }
    if (root.has("nics") || root.has("mems")) {
      return nativeForm(root, errors, file.toString());
    }
    return classic(root, "$", errors, file.toString());
  }

  /** Makes the exception for an error at a JSON path. */
  @FunctionalInterface
  private interface Errors {
    ConfigException at(String path, String detail);
  }

  private static String key(String parent, String location) {
    return parent + "[" + Checks.quote(location) + "]";
  }

  private static RdmaPriorityMatrix classic(
      ObjectNode root, String path, Errors errors, String origin) {
    if (root.size() > MAX_LOCATIONS) {
      throw errors.at(path, "holds " + root.size() + " locations, at most " + MAX_LOCATIONS);
    }
    Map<String, List<List<String>>> rows = new LinkedHashMap<>();
    List<Named> named = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String location = e.getKey();
      String rowPath = key(path, location);
      location(location, rowPath, errors);
      JsonNode row = e.getValue();
      if (!row.isArray()) {
        throw errors.at(
            rowPath, "expected an array of rank arrays, got " + ConfigJson.describe(row));
      }
      if (row.size() < MIN_RANKS || row.size() > MAX_RANKS) {
        throw errors.at(
            rowPath,
            "must hold "
                + MIN_RANKS
                + " or "
                + MAX_RANKS
                + " ranks ([rank 0 names], [rank 1 names], optionally [rank 2 names]), got "
                + row.size());
      }
      List<List<String>> ranks = new ArrayList<>();
      Map<String, String> seen = new LinkedHashMap<>();
      for (int r = 0; r < row.size(); r++) {
        JsonNode rank = row.get(r);
        String rankPath = rowPath + "[" + r + "]";
        if (!rank.isArray()) {
          throw errors.at(
              rankPath, "expected an array of device names, got " + ConfigJson.describe(rank));
        }
        if (rank.size() > MAX_NAMES) {
          throw errors.at(rankPath, "names " + rank.size() + " devices, at most " + MAX_NAMES);
        }
        List<String> names = new ArrayList<>();
        for (int i = 0; i < rank.size(); i++) {
          String namePath = rankPath + "[" + i + "]";
          String name = name(rank.get(i), namePath, errors);
          String first = seen.putIfAbsent(name, namePath);
          if (first != null) {
            throw errors.at(
                namePath,
                Checks.quote(name) + " is listed again in this row (first at " + first + ")");
          }
          names.add(name);
          named.add(new Named(name, namePath));
        }
        ranks.add(List.copyOf(names));
      }
      rows.put(location, List.copyOf(ranks));
    }
    if (rows.isEmpty()) {
      return NONE;
    }
    return new RdmaPriorityMatrix(
        Collections.unmodifiableMap(rows), List.copyOf(named), false, origin);
  }

  private static RdmaPriorityMatrix nativeForm(ObjectNode root, Errors errors, String origin) {
    knownKeys(root, "$", errors, "nics", "mems");
    JsonNode nics = required(root, "nics", "$", errors);
    if (!nics.isArray()) {
      throw errors.at(
          "$.nics", "expected an array of NIC objects, got " + ConfigJson.describe(nics));
    }
    if (nics.size() > MAX_NAMES) {
      throw errors.at("$.nics", "lists " + nics.size() + " NICs, at most " + MAX_NAMES);
    }
    List<String> nicNames = new ArrayList<>();
    List<Named> named = new ArrayList<>();
    for (int i = 0; i < nics.size(); i++) {
      String nicPath = "$.nics[" + i + "]";
      JsonNode nic = nics.get(i);
      if (!nic.isObject()) {
        throw errors.at(nicPath, "expected an object, got " + ConfigJson.describe(nic));
      }
      knownKeys((ObjectNode) nic, nicPath, errors, "name", "type");
      String name = name(required(nic, "name", nicPath, errors), nicPath + ".name", errors);
      int first = nicNames.indexOf(name);
      if (first >= 0) {
        throw errors.at(
            nicPath + ".name",
            Checks.quote(name) + " is listed again (first at $.nics[" + first + "])");
      }
      JsonNode type = nic.get("type");
      if (type != null && !(type.isIntegralNumber() && type.bigIntegerValue().signum() == 0)) {
        throw errors.at(
            nicPath + ".type", "must be 0 (an RDMA NIC), got " + ConfigJson.describe(type));
      }
      nicNames.add(name);
      named.add(new Named(name, nicPath + ".name"));
    }
    JsonNode mems = required(root, "mems", "$", errors);
    if (!mems.isArray()) {
      throw errors.at(
          "$.mems", "expected an array of memory objects, got " + ConfigJson.describe(mems));
    }
    if (mems.size() > MAX_LOCATIONS) {
      throw errors.at("$.mems", "lists " + mems.size() + " locations, at most " + MAX_LOCATIONS);
    }
    Map<String, List<List<String>>> rows = new LinkedHashMap<>();
    for (int m = 0; m < mems.size(); m++) {
      String memPath = "$.mems[" + m + "]";
      JsonNode mem = mems.get(m);
      if (!mem.isObject()) {
        throw errors.at(memPath, "expected an object, got " + ConfigJson.describe(mem));
      }
      knownKeys((ObjectNode) mem, memPath, errors, "name", "type", "device_list");
      JsonNode nameNode = required(mem, "name", memPath, errors);
      if (!nameNode.isTextual()) {
        throw errors.at(
            memPath + ".name", "expected a string, got " + ConfigJson.describe(nameNode));
      }
      String location = nameNode.textValue();
      location(location, memPath + ".name", errors);
      if (rows.containsKey(location)) {
        throw errors.at(memPath + ".name", Checks.quote(location) + " is listed again");
      }
      JsonNode type = mem.get("type");
      int expected = location.equals(ANY_LOCATION) ? 4 : location.startsWith("cpu:") ? 0 : 1;
      if (type != null
          && !(type.isIntegralNumber()
              && type.bigIntegerValue().equals(BigInteger.valueOf(expected)))) {
        throw errors.at(
            memPath + ".type",
            "must be "
                + expected
                + " for "
                + Checks.quote(location)
                + " (0 host memory, 1 CUDA, 4 for *), got "
                + ConfigJson.describe(type));
      }
      String listPath = memPath + ".device_list";
      JsonNode list = required(mem, "device_list", memPath, errors);
      if (!list.isObject()) {
        throw errors.at(listPath, "expected an object of ranks, got " + ConfigJson.describe(list));
      }
      knownKeys((ObjectNode) list, listPath, errors, "rank0", "rank1", "rank2");
      List<List<String>> ranks = new ArrayList<>();
      Map<Integer, String> seen = new LinkedHashMap<>();
      for (int r = 0; r < MAX_RANKS; r++) {
        JsonNode rank = list.get("rank" + r);
        String rankPath = listPath + ".rank" + r;
        List<String> names = new ArrayList<>();
        if (rank != null) {
          if (!rank.isArray()) {
            throw errors.at(
                rankPath, "expected an array of NIC indices, got " + ConfigJson.describe(rank));
          }
          for (int i = 0; i < rank.size(); i++) {
            String indexPath = rankPath + "[" + i + "]";
            JsonNode index = rank.get(i);
            if (!index.isIntegralNumber()) {
              throw errors.at(
                  indexPath,
                  "expected an integer index into nics, got " + ConfigJson.describe(index));
            }
            BigInteger at = index.bigIntegerValue();
            if (at.signum() < 0 || at.compareTo(BigInteger.valueOf(nicNames.size())) >= 0) {
              throw errors.at(
                  indexPath,
                  "index " + at + " is out of range: nics holds " + nicNames.size() + " entries");
            }
            int k = at.intValue();
            String first = seen.putIfAbsent(k, indexPath);
            if (first != null) {
              throw errors.at(
                  indexPath,
                  "NIC " + k + " is listed again for this location (first at " + first + ")");
            }
            names.add(nicNames.get(k));
          }
        }
        ranks.add(List.copyOf(names));
      }
      rows.put(location, List.copyOf(ranks));
    }
    return new RdmaPriorityMatrix(
        Collections.unmodifiableMap(rows), List.copyOf(named), true, origin);
  }

  private static void location(String location, String path, Errors errors) {
    if (location.equals(ANY_LOCATION)) {
      return;
    }
    var m = LOCATION.matcher(location);
    if (!m.matches() || Integer.parseInt(m.group(2)) > MAX_LOCATION_ORDINAL) {
      throw errors.at(
          path,
          "a location is \"cpu:<0..1023>\", \"cuda:<0..1023>\" or \"*\", got "
              + Checks.quote(location));
    }
  }

  private static String name(JsonNode node, String path, Errors errors) {
    if (!node.isTextual()) {
      throw errors.at(path, "expected a device name, got " + ConfigJson.describe(node));
    }
    String name = node.textValue();
    if (name.isBlank() || name.length() > MAX_NAME_LENGTH) {
      throw errors.at(
          path,
          "a device name is 1.."
              + MAX_NAME_LENGTH
              + " characters, not blank, got "
              + Checks.quote(name));
    }
    return name;
  }

  private static JsonNode required(JsonNode object, String key, String path, Errors errors) {
    JsonNode value = object.get(key);
    if (value == null) {
      throw errors.at(path, "the key " + Checks.quote(key) + " is required");
    }
    return value;
  }

  private static void knownKeys(ObjectNode object, String path, Errors errors, String... known) {
    List<String> keys = List.of(known);
    for (Iterator<String> it = object.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!keys.contains(k)) {
        throw errors.at(path + "." + k, "unknown key (known: " + String.join(", ", keys) + ")");
      }
    }
  }
}
