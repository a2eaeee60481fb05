package io.orbite.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A NIC priority matrix (spec 002, "Custom topology and priority matrices"): for each memory
 * location ({@code cpu:<node>}, {@code cuda:<ordinal>} or {@code *}), the RDMA devices allowed to
 * carry its slices, in ranks. Rank 0 holds the preferred devices, rank 1 the available ones, an
 * optional rank 2 the last resort; the RDMA transport maps rank <i>k</i> to selection tier <i>k</i>
 * (weights 1, 5, 10), and a device a location's row does not list is not eligible for it.
 * Immutable.
 *
 * <p>Two JSON forms are read. The classic form, which {@code rdma.selection.priorityMatrix} holds
 * inline and a topology file ({@code rdma.selection.customJsonPath}) may hold: an object from
 * location to an array of two or three arrays of device names, {@code {"cpu:0": [["mlx5_0"],
 * ["mlx5_1"]], "*": [["mlx5_0", "mlx5_1"], []]}}. The native form, which only a file may hold:
 * {@code {"nics": [{"name": "mlx5_0", "type": 0}, ...], "mems": [{"name": "cpu:0", "type": 0,
 * "device_list": {"rank0": [0], "rank1": [1], "rank2": []}}]}}, the ranks as indices into {@code
 * nics}.
 *
 * <p>Both are parsed strictly: an unknown key, a wrong type, a location that is not {@code
 * cpu:<0..1023>}, {@code cuda:<0..1023>} or {@code *}, a blank or over-long name, a name or index
 * repeated within a row, an index out of {@code nics}, a {@code type} that does not match, and (for
 * a file) more than {@value #MAX_FILE_BYTES} bytes, malformed JSON or malformed UTF-8 are each
 * rejected with a {@link ConfigException} naming the JSON path of the first error. Whether the
 * names are devices the transport opened is checked when it starts ({@link #inventoryError}).
 * {@link #NONE}, the empty matrix, means no matrix.
 */
public final class RdmaPriorityMatrix {
  /** The empty matrix: no matrix (every opened device eligible, tiers from NUMA locality). */
  public static final RdmaPriorityMatrix NONE =
      new RdmaPriorityMatrix(Map.of(), List.of(), false, "");

  /** Largest topology file accepted ({@code rdma.selection.customJsonPath}): 1 MiB. */
  public static final long MAX_FILE_BYTES = 1 << 20;

  /** Most ranks a classic row may hold: rank 0, rank 1 and rank 2. */
  public static final int MAX_RANKS = 3;

  /** Fewest ranks a classic row must hold: the preferred and the available devices. */
  public static final int MIN_RANKS = 2;

  /** Most locations (rows) a matrix may hold. */
  public static final int MAX_LOCATIONS = 1024;

  /** Most devices one rank (or the native {@code nics} list) may name. */
  public static final int MAX_NAMES = 64;

  /** Longest device name accepted, in characters (the kernel's {@code IB_DEVICE_NAME_MAX}). */
  public static final int MAX_NAME_LENGTH = 64;

  /** The location used when the requester's NUMA node is unknown, and for unlisted locations. */
  public static final String ANY_LOCATION = "*";

  /** Path of the inline matrix in the configuration. */
  static final String INLINE_PATH = RdmaSelectionConfig.SECTION + ".priorityMatrix";

  private static final Pattern LOCATION = Pattern.compile("(cpu|cuda):(0|[1-9][0-9]{0,3})");
  private static final int MAX_LOCATION_ORDINAL = 1023;

  /** A device name as written, and the JSON path where it was written. */
  private record Named(String name, String path) {}

  private final Map<String, List<List<String>>> rows;
  private final List<Named> named;
  private final boolean nativeForm;
  private final String origin;

  private RdmaPriorityMatrix(
      Map<String, List<List<String>>> rows, List<Named> named, boolean nativeForm, String origin) {
    this.rows = rows;
    this.named = named;
    this.nativeForm = nativeForm;
    this.origin = origin;
  }

  /**
   * Parses an inline matrix in the classic form, as {@code rdma.selection.priorityMatrix} holds it.
   * An empty object is {@link #NONE}.
   *
   * @param json the matrix as JSON text
   * @return the matrix
   * @throws ConfigException naming {@code rdma.selection.priorityMatrix} or the JSON path inside it
   *     of the first error, for example {@code rdma.selection.priorityMatrix["cpu:0"][1][0]}
   */
  public static RdmaPriorityMatrix parse(String json) {
    Checks.requireNonNull(INLINE_PATH, json);
    ObjectNode root;
    try {
      root = ConfigJson.parseDocument(json);
    } catch (ConfigException e) {
      throw new ConfigException(INLINE_PATH, e.getMessage(), e);
    }
    return read(root, INLINE_PATH);
  }

  /**
   * Reads the inline matrix at {@code path} of a configuration document (classic form only).
   *
   * @throws ConfigException naming the JSON path of the first error
   */
  static RdmaPriorityMatrix read(JsonNode node, String path) {
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
   * Reads a topology file, in the classic or the native form (a file whose root object holds {@code
   * nics} or {@code mems} is read as the native form). Blocking: it reads the file.
   *
   * @param file the file ({@code rdma.selection.customJsonPath})
   * @return the matrix; {@link #NONE} for a classic file holding {@code {}}
   * @throws ConfigException naming {@code rdma.selection.customJsonPath}, whose detail names the
   *     file and the JSON path of the first error ({@code /etc/t.json:
   *     $.mems[0].device_list.rank0[1]: index 5 is out of range: nics holds 2 entries}); also for a
   *     file that is missing, unreadable, over {@value #MAX_FILE_BYTES} bytes or not UTF-8
   */
  public static RdmaPriorityMatrix readFile(Path file) {
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
        java.util.Collections.unmodifiableMap(rows), List.copyOf(named), false, origin);
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
              && type.bigIntegerValue().equals(java.math.BigInteger.valueOf(expected)))) {
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
            java.math.BigInteger at = index.bigIntegerValue();
            if (at.signum() < 0
                || at.compareTo(java.math.BigInteger.valueOf(nicNames.size())) >= 0) {
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
        java.util.Collections.unmodifiableMap(rows), List.copyOf(named), true, origin);
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

  /**
   * Whether this is {@link #NONE}.
   *
   * @return true when the matrix holds no location
   */
  public boolean isEmpty() {
    return rows.isEmpty();
  }

  /**
   * The rows as written: location to ranks of device names (for the native form, the indices
   * resolved to names and three ranks per location).
   *
   * @return an unmodifiable map in the order the locations were written
   */
  public Map<String, List<List<String>>> rows() {
    return rows;
  }

  /**
   * Which row serves a requester whose memory sits on NUMA node {@code preferredNumaNode}: {@code
   * cpu:<node>} when the node is known and the matrix has that row, else {@code *}.
   *
   * @param preferredNumaNode {@code rdma.selection.preferredNumaNode}, {@code -1} for unknown
   * @return the location whose row {@link #ranksFor} answers
   */
  public String locationFor(int preferredNumaNode) {
    String cpu = "cpu:" + preferredNumaNode;
    return preferredNumaNode >= 0 && rows.containsKey(cpu) ? cpu : ANY_LOCATION;
  }

  /**
   * The ranks of {@link #locationFor}'s row. Without an explicit {@code *} row, {@code *} is
   * synthesized: every device the matrix names, in the order first named, in rank 0.
   *
   * @param preferredNumaNode {@code rdma.selection.preferredNumaNode}, {@code -1} for unknown
   * @return the ranks, rank 0 first; empty for {@link #NONE}
   */
  public List<List<String>> ranksFor(int preferredNumaNode) {
    String location = locationFor(preferredNumaNode);
    List<List<String>> row = rows.get(location);
    if (row != null || rows.isEmpty()) {
      return row == null ? List.of() : row;
    }
    Set<String> all = new LinkedHashSet<>();
    named.forEach(n -> all.add(n.name()));
    return List.of(List.copyOf(all));
  }

  /**
   * Whether the {@code *} row of {@link #ranksFor} is synthesized (the matrix has no such row).
   *
   * @param preferredNumaNode {@code rdma.selection.preferredNumaNode}, {@code -1} for unknown
   * @return true when the row used is not written in the matrix
   */
  public boolean synthesized(int preferredNumaNode) {
    return !rows.isEmpty() && !rows.containsKey(locationFor(preferredNumaNode));
  }

  /**
   * The first device name this matrix writes that is not among {@code opened}.
   *
   * @param opened the devices the transport opened
   * @return for example {@code rdma.selection.priorityMatrix["cpu:0"][1][0]: "mlx5_9" is not an
   *     opened device (opened: soft0, soft1)}, prefixed by the file for a topology file; empty when
   *     every name is opened
   */
  public Optional<String> inventoryError(Collection<String> opened) {
    for (Named n : named) {
      if (!opened.contains(n.name())) {
        return Optional.of(
            (origin.isEmpty()
                    ? ""
                    : RdmaSelectionConfig.SECTION + ".customJsonPath: " + origin + ": ")
                + n.path()
                + ": "
                + Checks.quote(n.name())
                + " is not an opened device (opened: "
                + String.join(", ", opened)
                + ")");
      }
    }
    return Optional.empty();
  }

  /** The classic form of the rows (what {@code toJson} writes for the inline key). */
  JsonNode toJson() {
    ObjectNode object = JsonNodeFactory.instance.objectNode();
    rows.forEach(
        (location, ranks) -> {
          ArrayNode row = object.putArray(location);
          for (List<String> rank : ranks) {
            ArrayNode names = row.addArray();
            rank.forEach(names::add);
          }
        });
    return object;
  }

  /**
   * Equal when both hold the same rows in the same order and come from the same form.
   *
   * @param o another object
   * @return whether it is an equal matrix
   */
  @Override
  public boolean equals(Object o) {
    return o instanceof RdmaPriorityMatrix m
        && nativeForm == m.nativeForm
        && new ArrayList<>(rows.entrySet()).equals(new ArrayList<>(m.rows.entrySet()));
  }

  /**
   * A hash of the rows.
   *
   * @return the hash code
   */
  @Override
  public int hashCode() {
    return rows.hashCode();
  }

  /**
   * The rows, as the classic form's JSON.
   *
   * @return for example {@code {"cpu:0":[["soft0"],["soft1"]]}}
   */
  @Override
  public String toString() {
    return toJson().toString();
  }
}
