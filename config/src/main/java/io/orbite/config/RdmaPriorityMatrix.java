package io.orbite.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

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

  /** A device name as written, and the JSON path where it was written. */
  record Named(String name, String path) {}

  private final Map<String, List<List<String>>> rows;
  private final List<Named> named;
  private final boolean nativeForm;
  private final String origin;

  RdmaPriorityMatrix(
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
    return RdmaPriorityMatrixParser.inline(node, path);
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
    return RdmaPriorityMatrixParser.file(file);
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
