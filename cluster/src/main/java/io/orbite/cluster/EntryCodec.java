package io.orbite.cluster;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.orbite.engine.Access;
import io.orbite.engine.SegmentDescriptor;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * An entry of the replicated map as its value: a JSON string, so that the map ({@code
 * LWWMap<String, String>}) needs no serializer of its own, and a reader of a newer format skips
 * what it does not know. Reading is defensive: a value from a buggy or hostile node is refused with
 * a sentence naming the field, never thrown at the directory.
 *
 * <p>The value carries, besides the {@link DirectoryEntry}, the uid of the cluster member that
 * published it ({@code memberUid}): a member restarted on the same host and port has the same
 * address and a new uid, and only the old incarnation's entries go when it is removed.
 */
final class EntryCodec {
  /** The format written; readers accept any version and read the fields they know. */
  static final int VERSION = 1;

  private static final ObjectMapper JSON = new ObjectMapper();

  private EntryCodec() {}

  /** An entry as the map lists it, with the uid of the member that published it. */
  record Listed(DirectoryEntry entry, long memberUid) {
    /** The member's address and uid: what membership events name. */
    String memberKey() {
      return memberKey(entry.member(), memberUid);
    }

    static String memberKey(String address, long uid) {
      return address + "#" + uid;
    }
  }

  /** The outcome of reading one value: the entry, or why it was refused. */
  record Read(Listed listed, String refusal) {}

  static String write(Listed listed) {
    DirectoryEntry e = listed.entry();
    ObjectNode root = JSON.createObjectNode();
    root.put("v", VERSION);
    root.put("name", e.name());
    root.put("host", e.segment().host());
    root.put("port", e.segment().port());
    root.put("epoch", e.segment().epoch());
    ArrayNode transports = root.putArray("transports");
    e.transports().forEach(transports::add);
    ArrayNode regions = root.putArray("regions");
    for (DirectoryRegion r : e.regions()) {
      ObjectNode region = regions.addObject();
      region.put("name", r.name());
      region.put("regionId", r.regionId());
      region.put("lengthBytes", r.lengthBytes());
      region.put("access", r.access().name());
    }
    root.put("member", e.member());
    root.put("memberUid", listed.memberUid());
    try {
      return JSON.writeValueAsString(root);
    } catch (JsonProcessingException e1) {
      throw new IllegalStateException("cannot write a directory entry: " + e1.getMessage(), e1);
    }
  }

  /**
   * Reads the value listed under {@code key}.
   *
   * @return the entry, or a refusal naming what is wrong (the name differs from the key, a field is
   *     missing or of the wrong type, a port or access out of range)
   */
  static Read read(String key, String value) {
    try {
      JsonNode root = JSON.readTree(value);
      if (root == null || !root.isObject()) {
        return refused("not a JSON object");
      }
      String name = text(root, "name");
      if (!key.equals(name)) {
        return refused("its name '" + name + "' differs from its key");
      }
      String host = text(root, "host");
      long port = integer(root, "port");
      if (port < 1 || port > 65535) {
        return refused("port " + port + " is outside 1..65535");
      }
      long epoch = integer(root, "epoch");
      List<String> transports = new ArrayList<>();
      for (JsonNode t : array(root, "transports")) {
        if (!t.isTextual()) {
          return refused("transports holds " + t.getNodeType() + ", not a string");
        }
        transports.add(t.textValue());
      }
      List<DirectoryRegion> regions = new ArrayList<>();
      for (JsonNode r : array(root, "regions")) {
        if (!r.isObject()) {
          return refused("regions holds " + r.getNodeType() + ", not an object");
        }
        long lengthBytes = integer(r, "lengthBytes");
        if (lengthBytes < 0) {
          return refused("region '" + text(r, "name") + "' has lengthBytes " + lengthBytes);
        }
        regions.add(
            new DirectoryRegion(
                text(r, "name"), integer(r, "regionId"), lengthBytes, access(text(r, "access"))));
      }
      regions.sort(Comparator.comparing(DirectoryRegion::name));
      DirectoryEntry entry =
          new DirectoryEntry(
              name,
              new SegmentDescriptor(host, (int) port, epoch),
              transports,
              regions,
              text(root, "member"));
      return new Read(new Listed(entry, integer(root, "memberUid")), null);
    } catch (JsonProcessingException e) {
      return refused("not JSON: " + e.getOriginalMessage());
    } catch (IllegalArgumentException e) {
      return refused(e.getMessage());
    }
  }

  private static Read refused(String why) {
    return new Read(null, why);
  }

  private static String text(JsonNode node, String field) {
    JsonNode v = node.get(field);
    if (v == null || !v.isTextual()) {
      throw new IllegalArgumentException("field '" + field + "' is missing or not a string");
    }
    return v.textValue();
  }

  private static long integer(JsonNode node, String field) {
    JsonNode v = node.get(field);
    if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
      throw new IllegalArgumentException(
          "field '" + field + "' is missing or not a 64-bit integer");
    }
    return v.longValue();
  }

  private static JsonNode array(JsonNode node, String field) {
    JsonNode v = node.get(field);
    if (v == null || !v.isArray()) {
      throw new IllegalArgumentException("field '" + field + "' is missing or not an array");
    }
    return v;
  }

  private static Access access(String name) {
    for (Access a : Access.values()) {
      if (a.name().equals(name)) {
        return a;
      }
    }
    throw new IllegalArgumentException("access '" + name + "' is none of READ, WRITE, READ_WRITE");
  }
}
