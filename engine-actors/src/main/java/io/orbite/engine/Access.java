package io.orbite.engine;

/** What a remote peer may do with a registered range. */
public enum Access {
  /** Peers may READ from the range; remote WRITEs into it are refused. */
  READ,
  /** Peers may WRITE into the range; remote READs from it are refused. */
  WRITE,
  /** Peers may READ from and WRITE into the range. */
  READ_WRITE;

  /**
   * Whether a peer may READ from a range registered with this access.
   *
   * @return true for READ and READ_WRITE, false for WRITE
   */
  public boolean allowsRemoteRead() {
    return this != WRITE;
  }

  /**
   * Whether a peer may WRITE into a range registered with this access.
   *
   * @return true for WRITE and READ_WRITE, false for READ
   */
  public boolean allowsRemoteWrite() {
    return this != READ;
  }

  /**
   * Whether a remote operation in direction {@code op} is granted by this access.
   *
   * @param op the direction of the remote operation, seen from the requester
   * @return {@link #allowsRemoteRead()} for READ, {@link #allowsRemoteWrite()} for WRITE
   */
  public boolean allows(Op op) {
    return op == Op.READ ? allowsRemoteRead() : allowsRemoteWrite();
  }

  /**
   * The code this access travels as in a Describe answer.
   *
   * @return 1 for READ, 2 for WRITE, 3 for READ_WRITE
   */
  public int code() {
    return switch (this) {
      case READ -> 1;
      case WRITE -> 2;
      case READ_WRITE -> 3;
    };
  }

  /**
   * The access a Describe answer's code stands for; the inverse of {@link #code()}.
   *
   * @param code the code read from the wire
   * @return READ for 1, WRITE for 2, READ_WRITE for 3
   * @throws IllegalArgumentException for any other code ({@code "unknown access code <code>"})
   */
  public static Access fromCode(int code) {
    return switch (code) {
      case 1 -> READ;
      case 2 -> WRITE;
      case 3 -> READ_WRITE;
      default -> throw new IllegalArgumentException("unknown access code " + code);
    };
  }
}
