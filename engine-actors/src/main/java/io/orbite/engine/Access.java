package io.orbite.engine;

/** What a remote peer may do with a registered range. */
public enum Access {
  /** Peers may READ from the range; remote WRITEs into it are refused. */
  READ,
  /** Peers may WRITE into the range; remote READs from it are refused. */
  WRITE,
  /** Peers may READ from and WRITE into the range. */
  READ_WRITE;

  public boolean allowsRemoteRead() {
    return this != WRITE;
  }

  public boolean allowsRemoteWrite() {
    return this != READ;
  }

  /** Whether a remote operation in direction {@code op} is granted by this access. */
  public boolean allows(Op op) {
    return op == Op.READ ? allowsRemoteRead() : allowsRemoteWrite();
  }

  public int code() {
    return ordinal() + 1;
  }

  public static Access fromCode(int code) {
    return switch (code) {
      case 1 -> READ;
      case 2 -> WRITE;
      case 3 -> READ_WRITE;
      default -> throw new IllegalArgumentException("unknown access code " + code);
    };
  }
}
