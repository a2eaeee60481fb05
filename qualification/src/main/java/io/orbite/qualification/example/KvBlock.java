package io.orbite.qualification.example;

/**
 * Where one KV block of one request lives on the prefill side, and what it holds: the bytes of
 * {@code [offset, offset + length)} of region {@code regionId} are pattern {@code seed} from
 * pattern position 0 (see {@link io.orbite.qualification.verify.Pattern}).
 *
 * <p>On the wire (prefill stdout) a block is one line: {@code BLOCK <request> <block> <regionId>
 * <offset> <length> <seed>}.
 */
public record KvBlock(int request, int block, long regionId, long offset, long length, long seed) {
  static final String TAG = "BLOCK";

  public KvBlock {
    if (request < 0 || block < 0 || offset < 0 || length <= 0) {
      throw new IllegalArgumentException(
          "bad block: request "
              + request
              + " block "
              + block
              + " offset "
              + offset
              + " length "
              + length);
    }
  }

  /** This block as a protocol line. */
  String toLine() {
    return TAG + " " + request + " " + block + " " + regionId + " " + offset + " " + length + " "
        + seed;
  }

  /** Parses a {@link #toLine()} line. */
  static KvBlock parse(String line) {
    String[] t = line.trim().split("\\s+");
    if (t.length != 7 || !t[0].equals(TAG)) {
      throw new IllegalArgumentException("not a BLOCK line: '" + line + "'");
    }
    return new KvBlock(
        Integer.parseInt(t[1]),
        Integer.parseInt(t[2]),
        Long.parseLong(t[3]),
        Long.parseLong(t[4]),
        Long.parseLong(t[5]),
        Long.parseLong(t[6]));
  }

  /** "request 12 block 3", as reports name a block. */
  public String name() {
    return "request " + request + " block " + block;
  }
}
