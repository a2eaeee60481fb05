package io.orbite.engine.wire;

/**
 * The rule every region name follows, on the registering side and in a Describe answer: 1 to
 * {@value #MAX_NAME_BYTES} bytes of {@code [A-Za-z0-9._:/-]} (ASCII, so characters and bytes are
 * the same). Names are compared byte for byte.
 */
public final class RegionNames {
  /** The longest region name, in bytes. */
  public static final int MAX_NAME_BYTES = 128;

  private RegionNames() {}

  /**
   * Why {@code name} is not a region name.
   *
   * @param name the name to check; null is not a name
   * @return a phrase naming what is wrong (for example {@code "region name 'a b' has ' ' at index
   *     1; allowed: A-Z a-z 0-9 . _ : / -"}), or null when it is a valid name
   */
  public static String invalidBecause(String name) {
    if (name == null) {
      return "region name is null";
    }
    if (name.isEmpty()) {
      return "region name is empty; a name is 1.." + MAX_NAME_BYTES + " characters";
    }
    if (name.length() > MAX_NAME_BYTES) {
      return "region name '"
          + name.substring(0, 16)
          + "...' is "
          + name.length()
          + " characters long; at most "
          + MAX_NAME_BYTES;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (!allowed(c)) {
        return "region name '"
            + name
            + "' has "
            + (c < 0x20 || c > 0x7e ? String.format("U+%04X", (int) c) : "'" + c + "'")
            + " at index "
            + i
            + "; allowed: A-Z a-z 0-9 . _ : / -";
      }
    }
    return null;
  }

  private static boolean allowed(char c) {
    return (c >= 'A' && c <= 'Z')
        || (c >= 'a' && c <= 'z')
        || (c >= '0' && c <= '9')
        || c == '.'
        || c == '_'
        || c == ':'
        || c == '/'
        || c == '-';
  }
}
